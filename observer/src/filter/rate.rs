//! The rate a `rate` term compares with: what `--target-rate` takes
//! ([`crate::args::parse_rate`]: `10M`, `1.5G`, `500k`, `2000000`, in
//! bits/s, k/M/G powers of 1000), also written with the unit observer
//! prints (`1.5Mbit/s`, `800kbit`), and zero, which `--target-rate`
//! refuses but a filter may ask for (`rate = 0`: idle flows).

use crate::args::{MAX_RATE, parse_rate};

/// What a rate should look like, for errors.
pub(super) const EXPECTED: &str =
    "a rate in bit/s, like 10M, 1.5Mbit/s or 500k (k, M, G: powers of 1000; at most 1000000G)";

/// The units a rate may be followed by as a word of its own
/// (`rate > 6.1 Mbit/s`, as `observer flows` prints the figure).
const UNITS: [&str; 8] = [
    "bit/s", "kbit/s", "mbit/s", "gbit/s", "bit", "kbit", "mbit", "gbit",
];

/// Whether `word` is a unit alone (`Mbit/s`), which may follow a number.
pub(super) fn is_unit(word: &str) -> bool {
    UNITS.iter().any(|u| u.eq_ignore_ascii_case(word))
}

/// `text` in bits/s, 0 to [`MAX_RATE`]; `None` when it is no rate.
pub(super) fn rate(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let bare = lower
        .strip_suffix("bit/s")
        .or_else(|| lower.strip_suffix("bit"))
        .unwrap_or(&lower);
    if bare.is_empty() || bare.contains(char::is_whitespace) {
        return None;
    }
    let number = bare.strip_suffix(['k', 'm', 'g']).unwrap_or(bare);
    if !number.starts_with('-') && number.parse::<f64>() == Ok(0.0) {
        return Some(0);
    }
    parse_rate(bare).ok().filter(|bps| *bps <= MAX_RATE)
}

/// The canonical text of `bps`: with the largest of k, M, G that divides
/// it (`10M`), so that [`rate`] reads it back exactly.
pub(super) fn text(bps: u64) -> String {
    match bps {
        0 => "0".to_string(),
        b if b % 1_000_000_000 == 0 => format!("{}G", b / 1_000_000_000),
        b if b % 1_000_000 == 0 => format!("{}M", b / 1_000_000),
        b if b % 1_000 == 0 => format!("{}k", b / 1_000),
        b => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_in_the_forms_target_rate_takes_and_observer_prints() {
        for (text, bps) in [
            ("10M", 10_000_000),
            ("10m", 10_000_000),
            ("1.5G", 1_500_000_000),
            ("500k", 500_000),
            ("500K", 500_000),
            ("2000000", 2_000_000),
            ("1.5Mbit/s", 1_500_000),
            ("1.5mbit/s", 1_500_000),
            ("6.1MBIT/S", 6_100_000),
            ("800kbit", 800_000),
            ("300bit/s", 300),
            ("0", 0),
            ("0k", 0),
            ("0.0M", 0),
            ("0bit/s", 0),
            ("1000000G", MAX_RATE),
        ] {
            assert_eq!(rate(text), Some(bps), "{text}");
        }
        for bad in [
            "",
            "fast",
            "M",
            "bit/s",
            "Mbit/s",
            "-5M",
            "-0",
            "10MB/s",
            "10Mbps",
            "10 M",
            "nan",
            "inf",
            "1000001G",
            "1e400",
            "10MMbit/s",
        ] {
            assert_eq!(rate(bad), None, "{bad}");
        }
        assert!(is_unit("Mbit/s") && is_unit("bit/s") && is_unit("GBIT"));
        assert!(!is_unit("M") && !is_unit("Mbps") && !is_unit("MB/s"));
    }

    #[test]
    fn canonical_text_reads_back() {
        for bps in [
            0,
            1,
            999,
            1_000,
            1_500,
            10_000_000,
            1_500_000_000,
            MAX_RATE,
            123_456_789,
        ] {
            assert_eq!(rate(&text(bps)), Some(bps), "{bps}");
        }
        assert_eq!(text(10_000_000), "10M");
        assert_eq!(text(1_500_000), "1500k");
    }
}
