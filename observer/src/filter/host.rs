//! The `HOST` of a `src`/`dst` term, one word: `*`, `*:80`, `:80`,
//! `10.0.0.1`, `10.0.0.0/8`, `10.0.0.0/8:80`, `[2001:db8::1]:443`,
//! `[2001:db8::]/32`, `[2001:db8::/32]:443`, or a bare IPv6 address or
//! prefix (`2001:db8::/32`), which takes no port: its colons are the
//! address's. A port of `*` is any port; a port may be a service name
//! (`10.0.0.1:https`). Host names are not resolved.

use std::net::IpAddr;

use super::{
    ParseError,
    ast::{Host, Prefix},
    number::number,
    services::Services,
};

/// What a host looks like, for errors.
pub(super) const EXPECTED: &str = "an address like 10.0.0.0/8 or [2001:db8::1]:443, or \"*\"";

/// Parses `word`, which starts at column `column`, its port names
/// looked up in `services`.
///
/// # Errors
/// The part that is wrong, at its own column.
pub(super) fn parse(word: &str, column: usize, services: &Services) -> Result<Host, ParseError> {
    // The column of the byte offset `at` (a char boundary) of `word`.
    let col = |at: usize| column + word.get(..at).map_or(0, |s| s.chars().count());
    let err = |at: usize, expected: &str, found: &str| ParseError {
        column: col(at),
        expected: expected.to_string(),
        found: format!("{found:?}"),
    };
    // Split into the address, the prefix length and the port, each with
    // its byte offset in `word`.
    let (addr, len, port) = if let Some(inner) = word.strip_prefix('[') {
        let Some(close) = inner.find(']') else {
            return Err(err(0, "\"]\" to close the IPv6 address", word));
        };
        let (addr, mut len) = split_len(&inner[..close], 1);
        let after = close + 2;
        let mut rest = (&word[after..], after);
        if let Some(r) = rest.0.strip_prefix('/') {
            if len.is_some() {
                return Err(err(
                    after,
                    "\":\" and a port, or nothing after \"]\"",
                    rest.0,
                ));
            }
            let end = r.find(':').unwrap_or(r.len());
            len = Some((&r[..end], after + 1));
            rest = (&r[end..], after + 1 + end);
        }
        let port = match rest.0.strip_prefix(':') {
            Some(p) => Some((p, rest.1 + 1)),
            None if rest.0.is_empty() => None,
            None => {
                let expected =
                    "\"/\" and a prefix length, \":\" and a port, or nothing after \"]\"";
                return Err(err(rest.1, expected, rest.0));
            }
        };
        (addr, len, port)
    } else if word.matches(':').count() >= 2 {
        // Bare IPv6: no port.
        let (addr, len) = split_len(word, 0);
        (addr, len, None)
    } else {
        let (host, port) = match word.find(':') {
            Some(i) => (&word[..i], Some((&word[i + 1..], i + 1))),
            None => (word, None),
        };
        let (addr, len) = split_len(host, 0);
        (addr, len, port)
    };
    let port = match port {
        None | Some(("*", _)) => None,
        Some((text, at)) => match services.resolve(text) {
            Ok(p) => Some(p),
            Err(expected) => return Err(err(at, &format!("{expected}, or \"*\""), text)),
        },
    };
    let prefix = match addr {
        ("*", _) if len.is_none() => None,
        ("", _) if len.is_none() && port.is_some() => None,
        (text, at) => {
            let Ok(ip) = text.parse::<IpAddr>() else {
                // Letters past hex digits: a host name, most likely.
                if text
                    .bytes()
                    .any(|b| b.is_ascii_alphabetic() && !b.is_ascii_hexdigit())
                {
                    let expected = format!("{EXPECTED} (host names are not resolved)");
                    return Err(err(at, &expected, text));
                }
                return Err(err(at, EXPECTED, text));
            };
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let bits = match len {
                None => max,
                Some((text, at)) => match number(text).filter(|n| *n <= u64::from(max)) {
                    Some(n) => n as u8,
                    None => {
                        let expected = format!("a prefix length from 0 to {max}");
                        return Err(err(at, &expected, text));
                    }
                },
            };
            Some(Prefix::new(ip, bits))
        }
    };
    Ok(Host { prefix, port })
}

/// `text` (at byte `at` of the word) split at its `/`: the address and
/// the length, each with its offset.
fn split_len(text: &str, at: usize) -> ((&str, usize), Option<(&str, usize)>) {
    match text.find('/') {
        Some(i) => ((&text[..i], at), Some((&text[i + 1..], at + i + 1))),
        None => ((text, at), None),
    }
}
