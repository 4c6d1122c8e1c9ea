//! The values users type on observer's command line: durations, rates,
//! prefix lengths, ring-buffer sizes, counts, the per-client connection
//! cap and sort columns. Every input gives a value within the documented
//! range or an error message: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use observer::{args, sink::metrics::admission, sink::tui::sort::SortKey};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    if let Ok(d) = args::parse_positive(&s) {
        assert!(!d.is_zero() && d <= args::MAX_DURATION, "{s:?} -> {d:?}");
    }
    if let Ok(r) = args::parse_rate(&s) {
        assert!((1..=args::MAX_RATE).contains(&r), "{s:?} -> {r}");
    }
    if let Ok((v4, v6)) = args::parse_prefixes(&s) {
        assert!(v4 <= 32 && v6 <= 128, "{s:?} -> {v4},{v6}");
    }
    if let Ok(n) = args::parse_ringbuf_bytes(&s) {
        assert!(
            n.is_power_of_two() && n >= args::page_size(),
            "{s:?} -> {n}"
        );
    }
    if let Ok(n) = args::parse_count(&s) {
        // A count reads back as the number it was.
        assert_eq!(args::parse_count(&n.to_string()), Ok(n), "{s:?}");
    }
    if let Ok(a) = args::parse_listen(&s) {
        // What it parsed reads back as the same address.
        assert_eq!(args::parse_listen(&a.to_string()), Ok(a), "{s:?}");
    }
    if let Ok(n) = admission::parse_per_client(&s) {
        assert!((1..=admission::SHARED_SLOTS).contains(&n), "{s:?} -> {n}");
    }
    if let Some(k) = SortKey::from_name(&s) {
        assert_eq!(k.name(), s);
    }
});
