//! Human figures for explanations: SI units, as network engineers quote
//! windows (KB = 1000 bytes) and rates (Mbit/s).

/// Bytes with an SI prefix: `80.5 KB`, `4.19 MB`, `512 B`.
pub fn fmt_bytes(b: f64) -> String {
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
pub fn fmt_rate(bps: f64) -> String {
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

/// Microseconds as milliseconds, `104.5 ms`; below a millisecond as
/// microseconds, `41 µs` (loopback and LAN RTTs).
pub fn fmt_ms(us: f64) -> String {
    if us > 0.0 && us < 1000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.1} ms", us / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(fmt_bytes(80_480.0), "80.5 KB");
        assert_eq!(fmt_bytes(4_194_240.0), "4.19 MB");
        assert_eq!(fmt_bytes(300.0), "300 B");
        assert_eq!(fmt_rate(6_130_000.0), "6.1 Mbit/s");
        assert_eq!(fmt_rate(1_500_000_000.0), "1.50 Gbit/s");
        assert_eq!(fmt_ms(104_500.0), "104.5 ms");
        assert_eq!(fmt_ms(41.0), "41 µs");
        assert_eq!(fmt_ms(0.0), "0.0 ms");
    }
}
