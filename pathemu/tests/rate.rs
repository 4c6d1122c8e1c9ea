//! Root test: a TCP bulk transfer is held to the bottleneck rate.
//!
//! Header accounting: the rate applies to IP packet bytes. A bulk transfer
//! sends full-sized segments, each a 1500-byte IP packet (the MTU) carrying
//! MSS payload bytes (1448 with TCP timestamps: 1500 - 20 IP - 20 TCP - 12
//! options), so the expected goodput is `rate * MSS / 1500`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use common::{report, root_or_skip, tcp_mss};
use pathemu::{Direction, Path, PathConfig, Side, TUN_MTU};

const RATE_BPS: u64 = 20_000_000;
const WARMUP: Duration = Duration::from_millis(1500);
const MEASURE: Duration = Duration::from_secs(3);

#[test]
fn tcp_goodput_matches_bottleneck_rate() {
    if !root_or_skip("tcp_goodput_matches_bottleneck_rate") {
        return;
    }
    // 10 ms each way, queue of 2x BDP so the link never idles.
    let path = Path::new(PathConfig::bottleneck(
        RATE_BPS,
        Duration::from_millis(10),
        100_000,
    ))
    .unwrap();
    let listen_addr = SocketAddr::new(path.ip(Side::B), 5001);
    let listener = path
        .run_in(Side::B, move || TcpListener::bind(listen_addr))
        .unwrap()
        .unwrap();
    let sender = path
        .run_in(Side::A, move || TcpStream::connect(listen_addr))
        .unwrap()
        .unwrap();
    let (mut receiver, _) = listener.accept().unwrap();
    let mss = tcp_mss(&sender);
    eprintln!("MSS {mss}");
    assert!(mss > 1400 && mss <= TUN_MTU - 40, "MSS {mss}");

    let done = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&done);
    let writer = thread::spawn(move || {
        let mut sender = sender;
        let chunk = vec![0x5au8; 64 * 1024];
        while !stop.load(Ordering::Relaxed) {
            if sender.write_all(&chunk).is_err() {
                break;
            }
        }
    });

    // Count received bytes in the measurement window only.
    let start = Instant::now();
    let mut buf = vec![0u8; 256 * 1024];
    let mut window_bytes = 0u64;
    let mut window_start = None;
    let mut stats_start = None;
    receiver
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    loop {
        let n = receiver.read(&mut buf).unwrap_or(0) as u64;
        let now = start.elapsed();
        if now >= WARMUP {
            match window_start {
                None => {
                    window_start = Some(Instant::now());
                    stats_start = Some(path.stats(Direction::Forward));
                }
                Some(_) => window_bytes += n,
            }
        }
        if now >= WARMUP + MEASURE {
            break;
        }
    }
    let elapsed = window_start.unwrap().elapsed().as_secs_f64();
    let ip = path.stats(Direction::Forward).since(&stats_start.unwrap());
    done.store(true, Ordering::Relaxed);
    drop(receiver);
    writer.join().unwrap();

    let goodput = window_bytes as f64 * 8.0 / elapsed;
    let expected = RATE_BPS as f64 * f64::from(mss) / f64::from(TUN_MTU);
    let ip_rate = ip.bytes_forwarded as f64 * 8.0 / elapsed;
    eprintln!(
        "goodput {:.3} Mbit/s (expected {:.3}), IP-level {:.3} Mbit/s (rate {})",
        goodput / 1e6,
        expected / 1e6,
        ip_rate / 1e6,
        RATE_BPS as f64 / 1e6
    );
    report("forward (window)", &ip);
    assert!(
        (goodput / expected - 1.0).abs() <= 0.05,
        "goodput {goodput:.0} bit/s vs expected {expected:.0} bit/s"
    );
    assert!(
        (ip_rate / RATE_BPS as f64 - 1.0).abs() <= 0.05,
        "IP rate {ip_rate:.0} bit/s vs {RATE_BPS}"
    );
}
