//! Inside a test VM (`xtask vm-guest netem`): the same path built twice,
//! once by pathemu (TUN relay in user space) and once by the kernel's
//! `sch_netem` (three namespaces, A - router - B, over veth), and one
//! cubic transfer across each. Prints both sets of figures and fails if
//! throughput or RTT differ by more than [`TOLERANCE`].
//!
//! The two models agree by construction: pathemu delivers a packet at
//! `max(arrival, previous) + size/rate + delay`; netem with `rate` and
//! `delay` sends it at `max(arrival + delay, previous) + size/rate`, the
//! same instant. They count different things, which the settings undo:
//! - netem's `rate` counts the Ethernet header; `-14` bytes of packet
//!   overhead makes it count IP bytes, as pathemu does;
//! - netem's `limit` is in packets and counts those in the delay line too,
//!   so it is pathemu's queue in packets plus the packets one delay holds
//!   at full rate;
//! - veth hands over 64 KB GSO packets, which netem would queue and time as
//!   one; `gso_max_segs 1` on the sender's veth makes TCP send one segment
//!   per packet, as it does over a TUN.

use std::{
    io::{Read as _, Write as _},
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream},
    os::fd::AsRawFd as _,
    process::Command,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use pathemu::{Direction, Path, PathConfig, Side};

use super::guest_script::MARK;

/// Bottleneck rate A to B (bit/s of IP bytes): modest, for an emulated CPU.
const RATE_BPS: u64 = 20_000_000;
/// One-way delay, both directions (RTT 50 ms).
const ONE_WAY: Duration = Duration::from_millis(25);
/// Drop-tail queue: one bandwidth-delay product (20 Mbit/s x 50 ms).
const QUEUE_BYTES: u64 = 125_000;
/// Full-size IP packet on a 1500-byte MTU.
const PACKET: u64 = 1500;
/// Transfer length, and the start-up (slow start, first loss) left out.
const RUN: Duration = Duration::from_secs(20);
const WARMUP: Duration = Duration::from_secs(5);
/// Largest relative difference accepted between the two paths.
const TOLERANCE: f64 = 0.10;

/// Figures of one path.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    /// Shortest connect() time (one SYN round trip) of 8 idle connections:
    /// neither path delivers early, so emulation delays only add to it.
    connect_rtt_ms: f64,
    /// The bulk flow's `tcpi_min_rtt`.
    min_rtt_ms: f64,
    /// Mean `tcpi_rtt` after warm-up (base RTT plus standing queue).
    srtt_mean_ms: f64,
    /// Bytes acknowledged per second after warm-up, in Mbit/s.
    throughput_mbps: f64,
    /// `tcpi_total_retrans` at the end.
    retrans: u32,
    /// Of those, the ones after warm-up.
    retrans_steady: u32,
}

/// `xtask vm-guest ARGS`, run by the VM's init.
///
/// # Errors
/// An unknown command, or a failed comparison.
pub fn guest(args: &[String]) -> anyhow::Result<()> {
    match args.first().map(String::as_str) {
        Some("netem") => compare(),
        other => bail!("unknown vm-guest command {other:?} (known: netem)"),
    }
}

fn compare() -> anyhow::Result<()> {
    let delay_pkts = (RATE_BPS * ONE_WAY.as_micros() as u64 / 8 / 1_000_000).div_ceil(PACKET);
    let limit = QUEUE_BYTES.div_ceil(PACKET) + delay_pkts;
    println!(
        "{MARK}note netem setup: {} Mbit/s, {} ms each way, queue {} bytes (pathemu) = netem \
         limit {limit} packets; cubic, {} s, first {} s left out",
        RATE_BPS / 1_000_000,
        ONE_WAY.as_millis(),
        QUEUE_BYTES,
        RUN.as_secs(),
        WARMUP.as_secs()
    );

    let path = Path::new(PathConfig::bottleneck(RATE_BPS, ONE_WAY, QUEUE_BYTES).ipv6(false))
        .context("building the pathemu path")?;
    let pe = measure(
        path.netns_name(Side::A),
        path.netns_name(Side::B),
        path.addr(Side::B),
    )?;
    let fwd = path.stats(Direction::Forward);
    println!(
        "{MARK}note netem pathemu: {} | relay: {} packets, {} queue drops, mean lateness {} us, \
         {:.1}% later than 1 ms",
        show(&pe),
        fwd.packets_forwarded,
        fwd.packets_dropped_queue,
        fwd.mean_lateness_ns() / 1000,
        100.0 * fwd.late_fraction(1_000_000)
    );
    drop(path);

    let net = Netem::new(limit)?;
    let ne = measure(Netem::A, Netem::B, Netem::B_ADDR)?;
    let drops = net.drops();
    println!("{MARK}note netem netem: {} | qdisc: {drops}", show(&ne));
    drop(net);

    let mut bad = Vec::new();
    for (what, a, b) in [
        ("throughput", pe.throughput_mbps, ne.throughput_mbps),
        ("connect RTT", pe.connect_rtt_ms, ne.connect_rtt_ms),
        ("mean srtt", pe.srtt_mean_ms, ne.srtt_mean_ms),
    ] {
        let diff = (a - b).abs() / b.max(f64::MIN_POSITIVE);
        let verdict = if diff <= TOLERANCE { "ok" } else { "DIFFERS" };
        println!(
            "{MARK}note netem compare {what}: pathemu {a:.2} vs netem {b:.2} ({:.1}%) {verdict}",
            100.0 * diff
        );
        if diff > TOLERANCE {
            bad.push(what);
        }
    }
    if !bad.is_empty() {
        bail!(
            "pathemu and netem differ by more than {}% in {}",
            TOLERANCE * 100.0,
            bad.join(", ")
        );
    }
    Ok(())
}

fn show(f: &Figures) -> String {
    format!(
        "throughput {:.2} Mbit/s, connect RTT {:.1} ms, min_rtt {:.1} ms, mean srtt {:.1} ms, \
         retrans {} ({} after warm-up)",
        f.throughput_mbps,
        f.connect_rtt_ms,
        f.min_rtt_ms,
        f.srtt_mean_ms,
        f.retrans,
        f.retrans_steady
    )
}

/// The netem path: namespaces A and B joined through router R by veth;
/// R's egress to B is the bottleneck, its egress to A only delays.
struct Netem;

impl Netem {
    const A: &'static str = "vmn-a";
    const R: &'static str = "vmn-r";
    const B: &'static str = "vmn-b";
    const B_ADDR: Ipv4Addr = Ipv4Addr::new(10, 88, 2, 1);

    fn new(limit: u64) -> anyhow::Result<Netem> {
        for ns in [Self::A, Self::R, Self::B] {
            sh(&["ip", "netns", "add", ns])?;
        }
        let me = Netem;
        let delay = format!("{}ms", ONE_WAY.as_millis());
        let rate = format!("{}bit", RATE_BPS);
        let cmds: Vec<Vec<String>> = [
            "ip link add va netns vmn-a gso_max_segs 1 type veth peer name ra netns vmn-r",
            "ip link add vb netns vmn-b type veth peer name rb netns vmn-r",
            "ip -n vmn-a addr add 10.88.1.1/24 dev va",
            "ip -n vmn-r addr add 10.88.1.254/24 dev ra",
            "ip -n vmn-r addr add 10.88.2.254/24 dev rb",
            "ip -n vmn-b addr add 10.88.2.1/24 dev vb",
            "ip -n vmn-a link set lo up",
            "ip -n vmn-r link set lo up",
            "ip -n vmn-b link set lo up",
            "ip -n vmn-a link set va up",
            "ip -n vmn-r link set ra up",
            "ip -n vmn-r link set rb up",
            "ip -n vmn-b link set vb up",
            "ip -n vmn-a route add default via 10.88.1.254",
            "ip -n vmn-b route add default via 10.88.2.254",
            "ip netns exec vmn-r sysctl -q -w net.ipv4.ip_forward=1",
        ]
        .iter()
        .map(|c| c.split(' ').map(str::to_string).collect())
        .chain([
            [
                "tc",
                "-n",
                "vmn-r",
                "qdisc",
                "add",
                "dev",
                "rb",
                "root",
                "netem",
                "limit",
                &limit.to_string(),
                "delay",
                &delay,
                "rate",
                &rate,
                "-14",
            ]
            .map(str::to_string)
            .to_vec(),
            [
                "tc", "-n", "vmn-r", "qdisc", "add", "dev", "ra", "root", "netem", "limit",
                "10000", "delay", &delay,
            ]
            .map(str::to_string)
            .to_vec(),
        ])
        .collect();
        for c in &cmds {
            let args: Vec<&str> = c.iter().map(String::as_str).collect();
            sh(&args)?;
        }
        Ok(me)
    }

    /// The bottleneck qdisc's counters (`tc -s`), one line.
    fn drops(&self) -> String {
        Command::new("tc")
            .args(["-n", Self::R, "-s", "qdisc", "show", "dev", "rb"])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(str::trim)
                    .filter(|l| l.starts_with("Sent") || l.starts_with("qdisc"))
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_default()
    }
}

impl Drop for Netem {
    fn drop(&mut self) {
        for ns in [Self::A, Self::R, Self::B] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn sh(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .with_context(|| format!("cannot run {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "{} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Times idle connects, then runs one cubic bulk transfer from namespace
/// `a` to `b` and samples the sender's TCP_INFO every 100 ms.
fn measure(a: &str, b: &str, b_addr: Ipv4Addr) -> anyhow::Result<Figures> {
    let listener = pathemu::run_in_netns(b, || TcpListener::bind("0.0.0.0:0"))??;
    let to = SocketAddr::from((b_addr, listener.local_addr()?.port()));
    let mut fig = Figures::default();

    // Idle RTT: a connect() is one SYN / SYN-ACK round trip. The first
    // one also resolves neighbours; it is left out.
    let server = std::thread::spawn(move || {
        let mut total = 0u64;
        for _ in 0..10 {
            let Ok((mut c, _)) = listener.accept() else {
                break;
            };
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n) = c.read(&mut buf) {
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
        }
        total
    });
    let mut rtts = Vec::new();
    for i in 0..9 {
        let t = pathemu::run_in_netns(a, move || {
            let t0 = Instant::now();
            TcpStream::connect_timeout(&to, Duration::from_secs(5)).map(|s| (t0.elapsed(), s))
        })??;
        drop(t.1);
        if i > 0 {
            rtts.push(t.0.as_secs_f64() * 1e3);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    fig.connect_rtt_ms = rtts.iter().copied().fold(f64::INFINITY, f64::min);

    let client = pathemu::run_in_netns(a, move || TcpStream::connect(to))??;
    set_cubic(&client)?;
    let mut writer = client.try_clone()?;
    let stop = AtomicBool::new(false);
    let samples = std::thread::scope(|s| {
        let sender = s.spawn(|| {
            let chunk = vec![0x5au8; 1 << 16];
            while !stop.load(Ordering::Relaxed) {
                if writer.write_all(&chunk).is_err() {
                    break;
                }
            }
            let _ = writer.shutdown(std::net::Shutdown::Write);
        });
        let start = Instant::now();
        let mut samples = Vec::new();
        while start.elapsed() < RUN {
            std::thread::sleep(Duration::from_millis(100));
            if let Some(i) = tcp_info(&client) {
                samples.push((start.elapsed(), i));
            }
        }
        stop.store(true, Ordering::Relaxed);
        let _ = sender.join();
        samples
    });
    drop(client);
    let received = server.join().unwrap_or(0);
    let steady: Vec<_> = samples.iter().filter(|(t, _)| *t >= WARMUP).collect();
    let (Some(first), Some(last)) = (steady.first(), steady.last()) else {
        bail!("no TCP_INFO samples");
    };
    let secs = (last.0 - first.0).as_secs_f64();
    fig.throughput_mbps =
        (last.1.bytes_acked - first.1.bytes_acked) as f64 * 8.0 / secs.max(1e-9) / 1e6;
    fig.srtt_mean_ms =
        steady.iter().map(|(_, i)| f64::from(i.rtt_us)).sum::<f64>() / steady.len() as f64 / 1e3;
    fig.min_rtt_ms = f64::from(last.1.min_rtt_us) / 1e3;
    fig.retrans = last.1.total_retrans;
    fig.retrans_steady = last.1.total_retrans.saturating_sub(first.1.total_retrans);
    if received == 0 {
        bail!("the receiver got nothing");
    }
    Ok(fig)
}

fn set_cubic(s: &TcpStream) -> anyhow::Result<()> {
    let name = b"cubic";
    // SAFETY: passes a pointer to `name` with its length.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        bail!("TCP_CONGESTION cubic: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// The TCP_INFO fields used here.
#[derive(Debug, Clone, Copy)]
struct Info {
    rtt_us: u32,
    total_retrans: u32,
    bytes_acked: u64,
    min_rtt_us: u32,
}

/// `getsockopt(TCP_INFO)` (offsets from include/uapi/linux/tcp.h).
fn tcp_info(s: &TcpStream) -> Option<Info> {
    let mut buf = [0u8; 232];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `buf`.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 || len < 152 {
        return None;
    }
    let u32_at = |at: usize| {
        buf.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_ne_bytes)
    };
    let u64_at = |at: usize| {
        buf.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_ne_bytes)
    };
    Some(Info {
        rtt_us: u32_at(68),
        total_retrans: u32_at(100),
        bytes_acked: u64_at(120),
        min_rtt_us: u32_at(148),
    })
}
