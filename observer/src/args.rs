//! Parsers of the values users type on observer's command line (durations,
//! rates, prefix lengths, sizes). They live in the library, not the binary,
//! so the fuzz targets (`fuzz/`) can reach them; the subcommands use them as
//! clap `value_parser`s, so each error reads like clap's own:
//! `invalid value 'X' for '--flag': MESSAGE`. None of them panics, whatever
//! the input.

use std::time::Duration;

/// Longest duration any option takes: a year. Longer values are typos, and
/// adding them to a clock would overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// Largest rate `--target-rate` takes (bits/s): 1 Pbit/s.
pub const MAX_RATE: u64 = 1_000_000_000_000_000;

/// Largest ring buffer observer asks the kernel for (bytes).
pub const MAX_RINGBUF_BYTES: u32 = 1 << 30;

/// Parses a duration above zero and at most [`MAX_DURATION`] (`5s`,
/// `250ms`, `1m`); a bare number is seconds (`7`, `0.5`), as `iperf3 -t`,
/// `timeout` and `sleep` read it.
///
/// # Errors
/// A message saying what is wrong with `s`.
pub fn parse_positive(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bare = t
        .parse::<f64>()
        .ok()
        .filter(|_| t.bytes().all(|b| b.is_ascii_digit() || b == b'.'));
    let d = match bare {
        Some(secs) if secs > MAX_DURATION.as_secs_f64() => {
            return Err("must be at most a year (365d)".to_string());
        }
        Some(secs) => Duration::from_secs_f64(secs),
        None => humantime::parse_duration(t).map_err(|_| {
            format!("'{s}' is not a duration (use e.g. 5s, 250ms, 1m, or 7 for seconds)")
        })?,
    };
    if d.is_zero() {
        return Err("must be greater than zero".to_string());
    }
    if d > MAX_DURATION {
        return Err("must be at most a year (365d)".to_string());
    }
    Ok(d)
}

/// Parses a duration like [`parse_positive`] that may also be zero (`0`,
/// `0s`), for options where zero means "never".
///
/// # Errors
/// A message saying what is wrong with `s`.
pub fn parse_duration_or_zero(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.bytes().all(|b| b == b'0' || b == b'.') && t.contains('0')
        || humantime::parse_duration(t).is_ok_and(|d| d.is_zero())
    {
        return Ok(Duration::ZERO);
    }
    parse_positive(s)
}

/// The port `--listen` uses when given an address without one.
pub const DEFAULT_PORT: u16 = 19190;

/// Parses where to serve `/metrics`: `ADDR:PORT` (`[V6]:PORT` for IPv6), a
/// bare address (`10.0.0.5`, `fd00::5`: port [`DEFAULT_PORT`]), which is
/// what a DaemonSet can hand over from the node's `status.hostIP` whatever
/// its family, or `:PORT` (every address, IPv4 and IPv6, as `[::]:PORT`).
///
/// # Errors
/// A message saying what is wrong with `s`.
pub fn parse_listen(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::{IpAddr, Ipv6Addr, SocketAddr};
    let t = s.trim();
    let bare = t
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(t);
    let parsed = t
        .parse::<SocketAddr>()
        .ok()
        .or_else(|| {
            bare.parse::<IpAddr>()
                .ok()
                .map(|ip| SocketAddr::new(ip, DEFAULT_PORT))
        })
        .or_else(|| {
            let port = t.strip_prefix(':')?.parse::<u16>().ok()?;
            Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port))
        });
    if let Some(a) = parsed {
        let ip = a.ip();
        let v4_broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
        if ip.is_multicast() || v4_broadcast {
            return Err(format!(
                "'{s}' is a multicast or broadcast address, which no client can connect to"
            ));
        }
        return Ok(a);
    }
    Err(format!(
        "'{s}' is not an address to listen on (use e.g. 127.0.0.1:{DEFAULT_PORT}, \
         [::1]:{DEFAULT_PORT}, 10.0.0.5 or :{DEFAULT_PORT})"
    ))
}

/// Parses a rate in bits/s: `35M`, `1.5G`, `800k`, `2000000`.
///
/// # Errors
/// A message saying what is wrong with `s`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix(['k', 'K']) {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix(['m', 'M']) {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix(['g', 'G']) {
        (n, 1e9)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a rate (use e.g. 35M, 1.5G, 800k)"))?;
    if v.is_nan() {
        return Err(format!("'{s}' is not a rate (use e.g. 35M, 1.5G, 800k)"));
    }
    let bps = v * mult;
    if bps <= 0.0 {
        return Err("must be greater than zero".to_string());
    }
    if bps > MAX_RATE as f64 {
        return Err("must be at most 1000000G (1 Pbit/s)".to_string());
    }
    Ok((bps.round() as u64).max(1))
}

/// Parses `V4[,V6]` prefix lengths (IPv6 defaults to 64).
///
/// # Errors
/// A message saying what is wrong with `s`.
pub fn parse_prefixes(s: &str) -> Result<(u8, u8), String> {
    let (v4, v6) = s.split_once(',').unwrap_or((s, "64"));
    let v4: u8 = v4
        .trim()
        .parse()
        .map_err(|_| format!("'{v4}' is not a prefix length"))?;
    let v6: u8 = v6
        .trim()
        .parse()
        .map_err(|_| format!("'{v6}' is not a prefix length"))?;
    if v4 > 32 || v6 > 128 {
        return Err("IPv4 prefix must be 0-32 and IPv6 0-128".to_string());
    }
    Ok((v4, v6))
}

/// The kernel's page size (4096 where it cannot be read).
pub fn page_size() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u32::try_from(n).ok().filter(|n| *n > 0).unwrap_or(4096)
}

/// Parses a ring-buffer size in bytes: a power of two, at least one page,
/// at most [`MAX_RINGBUF_BYTES`] (the kernel's rule for
/// `BPF_MAP_TYPE_RINGBUF`; a power of two at least a page is a multiple of it).
///
/// # Errors
/// A message saying what is wrong with `s`.
pub fn parse_ringbuf_bytes(s: &str) -> Result<u32, String> {
    let page = page_size();
    let n: u32 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a size in bytes"))?;
    if !n.is_power_of_two() || n < page || n > MAX_RINGBUF_BYTES {
        return Err(format!(
            "must be a power of two from the page size ({page}) to {MAX_RINGBUF_BYTES}"
        ));
    }
    Ok(n)
}

/// Parses a size in bytes: a whole number, or one with a unit as the
/// `bytesize` crate reads them (`100M`, `100MiB` and `1G` are powers of
/// 1024; `100MB` is 10^8), at least 1 KiB (a record is about 2 KB).
///
/// # Errors
/// A message saying what is wrong with `s`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    // bytesize reads a bare K, M or G as a decimal unit; a size on a
    // command line means powers of 1024, as `ls -h` and `du` print them.
    let binary = match t.strip_suffix(['k', 'K', 'm', 'M', 'g', 'G']) {
        Some(n) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.') => {
            format!("{n}{}iB", t[n.len()..].to_ascii_uppercase())
        }
        _ => t.to_string(),
    };
    let n = binary
        .parse::<bytesize::ByteSize>()
        .map_err(|_| format!("'{s}' is not a size: give bytes, e.g. 104857600 or 100M"))?
        .as_u64();
    if n < 1024 {
        return Err(format!(
            "'{s}' is under 1 KiB: a flow record alone is about 2 KB"
        ));
    }
    Ok(n)
}

/// Parses a count of things to export or show: a whole number, 0 or
/// more (`--top-flows 10`; 0 turns the thing off).
///
/// # Errors
/// A message saying what is wrong with `s`.
pub fn parse_count(s: &str) -> Result<usize, String> {
    s.trim().parse().map_err(|_| {
        format!("'{s}' is not a count: give a whole number, 0 or more (0 turns it off)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_units_in_powers_of_1024() {
        assert_eq!(parse_bytes("104857600"), Ok(104_857_600));
        assert_eq!(parse_bytes("100M"), Ok(100 << 20));
        assert_eq!(parse_bytes("100MiB"), Ok(100 << 20));
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
        assert_eq!(parse_bytes("64k"), Ok(64 << 10));
        assert_eq!(parse_bytes("100MB"), Ok(100_000_000));
        for bad in ["", "ten", "-1", "M"] {
            assert_eq!(
                parse_bytes(bad),
                Err(format!(
                    "'{bad}' is not a size: give bytes, e.g. 104857600 or 100M"
                )),
                "{bad}"
            );
        }
        assert!(parse_bytes("512").unwrap_err().contains("under 1 KiB"));
    }

    #[test]
    fn counts_are_whole_numbers_from_zero() {
        assert_eq!(parse_count("0"), Ok(0));
        assert_eq!(parse_count(" 25 "), Ok(25));
        for bad in ["-1", "1.5", "ten", ""] {
            assert_eq!(
                parse_count(bad),
                Err(format!(
                    "'{bad}' is not a count: give a whole number, 0 or more (0 turns it off)"
                )),
                "{bad}"
            );
        }
    }

    #[test]
    fn durations_that_may_be_zero() {
        for zero in ["0", "0s", "0.0", " 0ms "] {
            assert_eq!(parse_duration_or_zero(zero), Ok(Duration::ZERO), "{zero}");
        }
        assert_eq!(parse_duration_or_zero("10m"), Ok(Duration::from_secs(600)));
        assert!(parse_duration_or_zero("-1s").is_err());
        assert!(parse_duration_or_zero("soon").is_err());
        assert!(parse_duration_or_zero(".").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_positive("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_positive(" 5s "), Ok(Duration::from_secs(5)));
        assert_eq!(parse_positive("365d"), Ok(MAX_DURATION));
        assert!(
            parse_positive("0s")
                .unwrap_err()
                .contains("greater than zero")
        );
        assert!(
            parse_positive("-5s")
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(
            parse_positive("366d")
                .unwrap_err()
                .contains("at most a year")
        );
        // Would overflow Instant + Duration: was a panic.
        assert!(parse_positive("500000000000y").is_err());
        assert!(parse_positive("").is_err());
        // A bare number is seconds.
        assert_eq!(parse_positive("7"), Ok(Duration::from_secs(7)));
        assert_eq!(parse_positive("0.25"), Ok(Duration::from_millis(250)));
        assert!(
            parse_positive("0")
                .unwrap_err()
                .contains("greater than zero")
        );
        assert!(parse_positive("1e3").is_err());
        assert!(
            parse_positive("99999999999")
                .unwrap_err()
                .contains("at most a year")
        );
        assert!(parse_positive(".").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("35M"), Ok(35_000_000));
        assert_eq!(parse_rate("1.5G"), Ok(1_500_000_000));
        assert_eq!(parse_rate("800k"), Ok(800_000));
        assert_eq!(parse_rate("2000000"), Ok(2_000_000));
        assert_eq!(parse_rate(" 35M"), Ok(35_000_000));
        assert_eq!(parse_rate("35 M"), Ok(35_000_000));
        assert_eq!(parse_rate("0.0001"), Ok(1));
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("0M").is_err());
        assert!(parse_rate("-5M").is_err());
        assert!(parse_rate("M").is_err());
        assert!(parse_rate("nan").unwrap_err().contains("not a rate"));
        assert!(parse_rate("inf").unwrap_err().contains("at most"));
        assert!(parse_rate("1e400").unwrap_err().contains("at most"));
        // A multi-byte space before the number: was a slicing panic.
        assert_eq!(parse_rate("\u{3000}1k"), Ok(1000));
        assert!(parse_rate("1\u{e9}").is_err());
    }

    #[test]
    fn listen_addresses() {
        let a = |s: &str| parse_listen(s).map(|a| a.to_string());
        assert_eq!(a("127.0.0.1:19190"), Ok("127.0.0.1:19190".into()));
        assert_eq!(a("[::1]:9000"), Ok("[::1]:9000".into()));
        assert_eq!(a("10.0.0.5"), Ok("10.0.0.5:19190".into()));
        assert_eq!(a(" fd00::5 "), Ok("[fd00::5]:19190".into()));
        assert_eq!(a(":9100"), Ok("[::]:9100".into()));
        assert_eq!(a("[::1]"), Ok("[::1]:19190".into()));
        assert!(a("224.0.0.1").unwrap_err().contains("multicast"));
        assert!(a("255.255.255.255:80").unwrap_err().contains("broadcast"));
        assert!(a("[ff02::1]:80").unwrap_err().contains("multicast"));
        assert!(a("localhost:19190").unwrap_err().contains("not an address"));
        assert!(a(":99999").is_err());
        assert!(a("").is_err());
        assert!(a("10.0.0.5:").is_err());
    }

    #[test]
    fn prefixes() {
        assert_eq!(parse_prefixes("24"), Ok((24, 64)));
        assert_eq!(parse_prefixes("16,48"), Ok((16, 48)));
        assert!(parse_prefixes("33").is_err());
        assert!(parse_prefixes("24,129").is_err());
        assert!(parse_prefixes("x").is_err());
        assert!(parse_prefixes("24,").is_err());
    }

    #[test]
    fn ringbuf_sizes() {
        let page = page_size();
        assert_eq!(parse_ringbuf_bytes(&page.to_string()), Ok(page));
        assert_eq!(parse_ringbuf_bytes("4194304"), Ok(4 << 20));
        assert!(parse_ringbuf_bytes("0").is_err());
        assert!(parse_ringbuf_bytes("12288").is_err());
        assert!(parse_ringbuf_bytes(&(page / 2).to_string()).is_err());
        assert!(parse_ringbuf_bytes("2147483648").is_err());
        assert!(parse_ringbuf_bytes("-4096").is_err());
    }
}
