//! Root integration test of the whole-life verdict's figures: they describe
//! the life (time-weighted over it), not the flow's last instant.

use std::{
    io::{Read, Write},
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use crate::support::{Observer, cookie, net::connect_across, root_or_skip, serial, tcp_info};
use observer::attribution::{Config, Verdict, attribute};
use pathemu::{Path, PathConfig, Side};

/// Issue 14's reverse-mode IPv6 download: 100 Mbit/s, 10 ms each way, the
/// client's tcp_rmem maximum 128 KB, so the server is held by the client's
/// window. The client stops reading 200 ms before the server stops
/// writing, as iperf3 -R's client does at the end: the window collapses.
/// The life verdict's snd_wnd must be the window over the life (TCP_INFO
/// sampled every millisecond, averaged), not the collapsed last value it
/// used to quote ("snd_wnd 18.3 KB / srtt 45.4 ms = 3.2 Mbit/s ceiling,
/// delivering 15.4 Mbit/s").
#[test]
fn a_window_that_collapses_at_the_end_does_not_describe_the_life() {
    if !root_or_skip("a_window_that_collapses_at_the_end_does_not_describe_the_life") {
        return;
    }
    let _serial = serial();
    let mut obs = Observer::start();
    let path = Path::new(PathConfig::bottleneck(
        100_000_000,
        Duration::from_millis(10),
        250_000,
    ))
    .unwrap();
    // /proc/sys/net is the writing thread's namespace's (no sysctl binary
    // needed, which the test VMs lack).
    const RMEM: &str = "/proc/sys/net/ipv4/tcp_rmem";
    let host_rmem = std::fs::read_to_string(RMEM).unwrap();
    let b_rmem = path
        .run_in(Side::B, || {
            std::fs::write(RMEM, "4096 131072 131072").unwrap();
            std::fs::read_to_string(RMEM).unwrap()
        })
        .unwrap();
    assert_eq!(b_rmem.split_whitespace().nth(2), Some("131072"));
    assert_eq!(std::fs::read_to_string(RMEM).unwrap(), host_rmem);
    let server_v6 = path.addr_v6(Side::A).expect("the path has IPv6 on");
    let (tx, mut rx) = connect_across(&path, Side::A, server_v6.into());
    let c = cookie(&tx);
    let stop_reading = AtomicBool::new(false);
    let stop_writing = AtomicBool::new(false);
    let probe = tx.try_clone().unwrap();
    let (windows, rx) = std::thread::scope(|scope| {
        let (stop_reading, stop_writing) = (&stop_reading, &stop_writing);
        let reader = scope.spawn(move || {
            let mut buf = vec![0u8; 256 * 1024];
            while !stop_reading.load(Ordering::Relaxed) {
                assert!(rx.read(&mut buf).unwrap() > 0, "the server closed early");
            }
            // Holds the socket, unread, until the test ends.
            rx
        });
        let mut writer = tx.try_clone().unwrap();
        writer
            .set_write_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        scope.spawn(move || {
            let data = vec![7u8; 64 * 1024];
            while !stop_writing.load(Ordering::Relaxed) {
                // A full window makes writes time out at the end: fine.
                let _ = writer.write(&data);
            }
        });
        let start = Instant::now();
        let mut windows = Vec::new();
        while start.elapsed() < Duration::from_millis(3_200) {
            if start.elapsed() >= Duration::from_millis(3_000) {
                stop_reading.store(true, Ordering::Relaxed);
            }
            windows.push(tcp_info(&probe).snd_wnd);
            std::thread::sleep(Duration::from_millis(1));
        }
        let end_wnd = tcp_info(&probe).snd_wnd;
        stop_writing.store(true, Ordering::Relaxed);
        stop_reading.store(true, Ordering::Relaxed);
        windows.push(end_wnd);
        (windows, reader.join().unwrap())
    });
    let end_wnd = *windows.last().unwrap();
    eprintln!("last windows: {:?}", &windows[windows.len() - 12..]);
    let point = obs.point(c).expect("observer saw the server's flow");
    let life = attribute(None, &point, &Config::default());
    let mean = windows.iter().map(|w| f64::from(*w)).sum::<f64>() / windows.len() as f64;
    let mid = windows[windows.len() / 2];
    let ours = f64::from(life.evidence.snd_wnd);
    eprintln!(
        "snd_wnd: TCP_INFO mid-run {mid}, mean {mean:.0}, at the end {end_wnd}; life verdict {ours:.0}: {}",
        life.explanation
    );
    // The test bites: the window did collapse.
    assert!(
        f64::from(end_wnd) < 0.5 * mean,
        "the client's window did not collapse: {end_wnd} at the end, mean {mean:.0}"
    );
    assert!(
        (ours - mean).abs() < 0.15 * mean,
        "life snd_wnd {ours:.0} vs TCP_INFO's mean {mean:.0}"
    );
    assert!(
        (ours - f64::from(mid)).abs() < 0.25 * f64::from(mid),
        "life snd_wnd {ours:.0} vs TCP_INFO mid-run {mid}"
    );
    assert_eq!(life.verdict, Verdict::ReceiveWindow, "{}", life.explanation);
    if let Err(e) = life.check_ceilings(&Config::default()) {
        panic!("{e}: {}", life.explanation);
    }
    drop(probe);
    drop(tx);
    drop(rx);
}
