//! The kernel's BTF as observer's own reader parses it
//! (`observer::kernel::load::btf::Btf::parse`), then every lookup observer makes on it:
//! the offsets the probes need (`offsets::resolve`), and struct/member
//! lookups by names taken from the input itself, so nested, anonymous,
//! array and bitfield members are reached. Malformed input must give an
//! error: never a panic, an overflow, or a hang (cycles in typedefs,
//! anonymous members or arrays).
#![no_main]

use libfuzzer_sys::fuzz_target;
use observer::{kernel::load::btf::Btf, kernel::load::offsets};

/// Printable runs of the input (the string section's names, mostly).
fn names(data: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = data
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty() && s.len() <= 40)
        .filter(|s| s.iter().all(|b| b.is_ascii_graphic()))
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    out.dedup();
    out.truncate(10);
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(btf) = Btf::parse(data) else {
        return;
    };
    let _ = offsets::resolve(&btf);
    let names = names(data);
    for ty in &names {
        if !btf.has_struct(ty) {
            continue;
        }
        for a in &names {
            if let Ok(f) = btf.member(ty, a) {
                let _ = f.byte_offset();
            }
            for b in names.iter().take(4) {
                let _ = btf.member(ty, &format!("{a}.{b}"));
            }
        }
        let _ = btf.member(ty, "");
        let _ = btf.member(ty, "..");
    }
});
