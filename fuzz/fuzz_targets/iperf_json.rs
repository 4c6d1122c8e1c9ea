//! iperf3's `-J` output as the scenario runner reads it
//! (`scenarios::traffic::parse_iperf`): any text gives a result or an
//! error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    if let Ok(r) = scenarios::traffic::parse_iperf(&s) {
        let _ = r.streams.len();
    }
});
