//! The one place numbers become text for people: bytes, rates and
//! durations, in one convention everywhere (explanations, the `flows`
//! table, `observer top`): SI units, as network engineers quote windows
//! (KB = 1000 bytes) and rates (Mbit/s), always with the unit. Narrow
//! columns use [`compact`] of the same text, so one window reads `80.5 KB`
//! in a sentence and `80.5KB` in a column, never `78.6K`.

/// Bytes with an SI prefix: `80.5 KB`, `4.19 MB`, `512 B`.
pub fn bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} KB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

/// Bits per second with an SI prefix: `6.1 Mbit/s`.
pub fn rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.1} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.1} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

/// A duration given in microseconds, as milliseconds, `104.5 ms`; below a
/// millisecond as microseconds, `41 µs` (loopback and LAN RTTs).
pub fn time_us(us: f64) -> String {
    if us > 0.0 && us < 1000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.1} ms", us / 1000.0)
    }
}

/// An age given in milliseconds, as `ss` prints `lastsnd`: `340 ms`
/// under a second, `12.3 s` under a minute, then `5 min`.
pub fn age_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} min", ms / 60_000)
    }
}

/// A share (0 to 1) as a whole percentage: `0.56` -> `56%`.
pub fn share(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// Whether [`share`] prints `x` as more than `0%`: a clause quoting it
/// says something.
pub fn share_shows(x: f64) -> bool {
    share(x) != share(0.0)
}

/// The same figure for a narrow column: the space before the unit
/// removed (`80.5 KB` -> `80.5KB`).
pub fn compact(figure: &str) -> String {
    figure.replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(bytes(80_480.0), "80.5 KB");
        assert_eq!(bytes(4_194_240.0), "4.19 MB");
        assert_eq!(bytes(300.0), "300 B");
        assert_eq!(rate(6_130_000.0), "6.1 Mbit/s");
        assert_eq!(rate(1_500_000_000.0), "1.50 Gbit/s");
        assert_eq!(time_us(104_500.0), "104.5 ms");
        assert_eq!(time_us(41.0), "41 µs");
        assert_eq!(time_us(0.0), "0.0 ms");
        assert_eq!(compact(&bytes(80_480.0)), "80.5KB");
        assert_eq!(compact(&time_us(41.0)), "41µs");
        assert_eq!(share(0.556), "56%");
        assert!(!share_shows(0.004) && share_shows(0.006));
        assert_eq!(age_ms(340), "340 ms");
        assert_eq!(age_ms(12_345), "12.3 s");
        assert_eq!(age_ms(301_000), "5 min");
    }
}
