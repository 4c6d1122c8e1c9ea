//! Builds a path from command-line settings and holds it until standard
//! input closes (or for a given number of seconds), printing the namespace
//! names and addresses, then the counters. For manual experiments:
//!
//! ```text
//! cargo run -p pathemu --example hold -- --rate 35M --delay 52ms --queue 460000
//! ip netns exec <B> iperf3 -s &   ip netns exec <A> iperf3 -c 10.77.0.2
//! ```
//! Options: `--rate BPS` (suffix k/M/G, forward direction), `--reverse-rate BPS`,
//! `--delay D` (one way, both directions; suffix ms/us/s), `--queue BYTES`,
//! `--loss P` (forward), `--police BPS:BURST` (forward token-bucket policer,
//! burst in bytes), `--police-per-flow BPS:BURST` (the same with a bucket
//! per flow), `--shaper BPS:QUEUE` (forward shaper and its queue in
//! bytes), `--jitter D`, `--reorder P:D` (share held back, and by how
//! long), `--outage EVERY:FOR`, `--drop-over BYTES` (PMTU black hole;
//! these forward), `--veth 1` (a plain veth path, no model), `--mtu BYTES`,
//! `--seed N`, `--secs N` (hold time instead of stdin).

use std::io::Read;
use std::time::Duration;

use pathemu::{Direction, Link, Path, PathConfig, Side};

const USAGE: &str =
    "hold: builds an emulated path between two namespaces and holds it until stdin closes
usage: hold [--rate BPS] [--reverse-rate BPS] [--delay D] [--queue BYTES] [--loss P]
            [--police BPS:BURST | --police-per-flow BPS:BURST] [--shaper BPS:QUEUE]
            [--jitter D] [--reorder P:D] [--outage EVERY:FOR] [--drop-over BYTES]
            [--veth 1] [--mtu BYTES] [--seed N] [--secs N]
  BPS takes k/M/G (forward direction); D is one way, both directions (ms, us or s);
  --shaper, --jitter, --reorder, --outage and --drop-over apply to the forward
  direction; --veth 1 joins the namespaces by a veth pair with no model at all;
  --secs holds for N seconds instead of until stdin closes (end it that way, or with
  Ctrl-D: a signal leaves the namespaces for the next pathemu run to sweep)
example: hold --rate 35M --delay 52ms --queue 460000";

fn parse_rate(s: &str) -> u64 {
    let (num, mult) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1e3),
        Some('m' | 'M') => (&s[..s.len() - 1], 1e6),
        Some('g' | 'G') => (&s[..s.len() - 1], 1e9),
        _ => (s, 1.0),
    };
    (num.parse::<f64>()
        .unwrap_or_else(|_| panic!("bad rate {s}"))
        * mult) as u64
}

fn parse_duration(s: &str) -> Duration {
    let (num, unit) = s
        .find(|c: char| c.is_ascii_alphabetic())
        .map_or((s, "ms"), |i| s.split_at(i));
    let v: f64 = num.parse().unwrap_or_else(|_| panic!("bad duration {s}"));
    match unit {
        "s" => Duration::from_secs_f64(v),
        "ms" => Duration::from_secs_f64(v / 1e3),
        "us" => Duration::from_secs_f64(v / 1e6),
        _ => panic!("bad duration unit in {s}"),
    }
}

/// Splits `A:B` of option `key`.
fn split_pair<'a>(key: &str, value: &'a str) -> (&'a str, &'a str) {
    value
        .split_once(':')
        .unwrap_or_else(|| panic!("{key} wants two values separated by ':'"))
}

fn main() -> pathemu::Result<()> {
    let mut forward = Link::unlimited();
    let mut reverse = Link::unlimited();
    let mut seed = 1;
    let mut mtu = pathemu::TUN_MTU;
    let mut secs = None;
    let mut veth = false;
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return Ok(());
    }
    for pair in args.chunks(2) {
        let [key, value] = pair else {
            panic!("options come in pairs: --name value")
        };
        match key.as_str() {
            "--rate" => forward.rate_bps = parse_rate(value),
            "--reverse-rate" => reverse.rate_bps = parse_rate(value),
            "--delay" => {
                forward.delay = parse_duration(value);
                reverse.delay = forward.delay;
            }
            "--queue" => {
                forward.queue_bytes = value.parse().unwrap_or_else(|_| panic!("bad queue"));
                reverse.queue_bytes = forward.queue_bytes;
            }
            "--loss" => forward.loss = value.parse().unwrap_or_else(|_| panic!("bad loss")),
            "--police" | "--police-per-flow" => {
                let (rate, burst) = value
                    .split_once(':')
                    .unwrap_or_else(|| panic!("{key} wants BPS:BURST"));
                let burst = burst.parse().unwrap_or_else(|_| panic!("bad burst"));
                forward = if key == "--police" {
                    forward.police(parse_rate(rate), burst)
                } else {
                    forward.police_each_flow(parse_rate(rate), burst)
                };
            }
            "--shaper" => {
                let (rate, queue) = split_pair(key, value);
                let queue = queue.parse().unwrap_or_else(|_| panic!("bad shaper queue"));
                forward = forward.shaper(parse_rate(rate), queue);
            }
            "--jitter" => forward = forward.jitter(parse_duration(value)),
            "--reorder" => {
                let (share, hold) = split_pair(key, value);
                let share = share
                    .parse()
                    .unwrap_or_else(|_| panic!("bad reorder share"));
                forward = forward.reorder(share, parse_duration(hold));
            }
            "--outage" => {
                let (every, length) = split_pair(key, value);
                forward = forward.outage(parse_duration(every), parse_duration(length));
            }
            "--drop-over" => {
                forward = forward.drop_over(value.parse().unwrap_or_else(|_| panic!("bad size")));
            }
            "--veth" => veth = value != "0",
            "--mtu" => mtu = value.parse().unwrap_or_else(|_| panic!("bad mtu")),
            "--seed" => seed = value.parse().unwrap_or_else(|_| panic!("bad seed")),
            "--secs" => secs = Some(value.parse::<u64>().unwrap_or_else(|_| panic!("bad secs"))),
            other => panic!("unknown option {other}"),
        }
    }
    let mut config = PathConfig::new(forward, reverse).seed(seed).mtu(mtu);
    config.veth = veth;
    let path = Path::new(config)?;
    println!(
        "A={} {} (netns inode {})\nB={} {} (netns inode {})",
        path.netns_name(Side::A),
        path.addr(Side::A),
        path.netns_inode(Side::A),
        path.netns_name(Side::B),
        path.addr(Side::B),
        path.netns_inode(Side::B),
    );
    match secs {
        Some(s) => std::thread::sleep(Duration::from_secs(s)),
        None => {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
        }
    }
    println!("forward {:?}", path.stats(Direction::Forward));
    println!("reverse {:?}", path.stats(Direction::Reverse));
    Ok(())
}
