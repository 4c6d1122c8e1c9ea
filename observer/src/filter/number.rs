//! The one number syntax of the filter language, shared by ports, service
//! numbers and numeric comparisons (a leaf: the parsers that need it
//! import it, it imports none of them).

/// A decimal number of at most 20 digits, nothing else.
pub(super) fn number(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_up_to_twenty_digits_and_nothing_else() {
        assert_eq!(number("443"), Some(443));
        assert_eq!(number("18446744073709551615"), Some(u64::MAX));
        for bad in [
            "",
            "+1",
            "1a",
            " 1",
            "18446744073709551616",
            "123456789012345678901",
        ] {
            assert_eq!(number(bad), None, "{bad:?}");
        }
    }
}
