//! Fitting text into a table column of `observer top`: shared by the flow
//! table ([`super::draw`]) and the peers view ([`super::peers`]).

/// `s` cut to `w` characters, keeping its end (an address keeps its port).
pub fn keep_tail(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    let tail: String = s.chars().skip(n + 1 - w).collect();
    format!("…{tail}")
}
