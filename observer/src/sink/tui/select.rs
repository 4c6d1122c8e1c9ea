//! Which rows `observer top` shows: a filter expression (the language of
//! [`crate::filter`], shared with `observer flows` and `observer run`), or,
//! for text that does not read as one, the older words filter (every word
//! must occur in the process, pid, addresses or verdict). Text that looks
//! like an expression (a term's keyword first, or an operator anywhere)
//! and does not parse is a mistake, shown with its column, never searched
//! for as words: `rate > 10M` once matched no flow that way.

use crate::{
    filter::{Filter, ParseError},
    track::netns::{NetnsNames, no_namespace_named},
};

use super::row::Row;

/// A parsed view filter.
#[derive(Clone, Debug, Default)]
pub enum Selection {
    /// Every row.
    #[default]
    All,
    /// Rows whose process, pid, addresses or verdict contain every word
    /// (lowercased).
    Words(Vec<String>),
    /// Rows the expression selects (judged with their current verdict).
    Expression(Filter),
}

impl Selection {
    /// Reads `text`: empty is every row; an expression when it parses or
    /// looks like one; else words.
    ///
    /// # Errors
    /// Text that looks like an expression and does not parse: the
    /// parser's error (column, what was expected).
    pub fn parse(text: &str) -> Result<Selection, ParseError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Selection::All);
        }
        match Filter::parse(text) {
            Ok(f) => Ok(Selection::Expression(f)),
            Err(e) if looks_like_expression(text) => Err(e),
            Err(_) => Ok(Selection::Words(
                text.split_whitespace().map(str::to_lowercase).collect(),
            )),
        }
    }

    /// Whether `row` is shown.
    pub fn shows(&self, row: &Row) -> bool {
        match self {
            Selection::All => true,
            Selection::Words(w) => row.matches(w),
            Selection::Expression(f) => f.matches(&row.flow, Some(&row.current)),
        }
    }

    /// The warning for the expression's first `netns = NAME` that names
    /// no namespace now (`names` read afresh), as `observer flows` warns.
    pub fn unnamed_netns(&self, names: &mut NetnsNames) -> Option<String> {
        let Selection::Expression(f) = self else {
            return None;
        };
        f.netns_names()
            .into_iter()
            .find(|n| names.inode_of(n).is_none())
            .map(no_namespace_named)
    }

    /// How the text was read, for the prompt and the header: `expression`
    /// or `words` (searched for as text, as the help says); `None` for
    /// every row.
    pub fn kind(&self) -> Option<&'static str> {
        match self {
            Selection::All => None,
            Selection::Words(_) => Some("words"),
            Selection::Expression(_) => Some("expression"),
        }
    }
}

/// The characters of the language's operators (`=`, `!=`, `<`, `>=`, `&&`,
/// `||`): none occurs in what words are searched in (process, pid,
/// addresses, verdict), so text holding one means an expression.
const OPERATOR: [char; 5] = ['=', '<', '>', '&', '|'];

/// Whether `text` looks like an expression: it starts with a term's
/// keyword (any case), `not`, `(` or `!`, or holds an operator. Such text
/// is one, and a mistake in it is reported rather than read as words.
fn looks_like_expression(text: &str) -> bool {
    let first = text
        .split(|c: char| c.is_whitespace() || c == '(' || c == '!' || OPERATOR.contains(&c))
        .next()
        .unwrap_or_default()
        .to_lowercase();
    text.starts_with(['(', '!'])
        || text.contains(OPERATOR)
        || crate::filter::KEYWORDS.contains(&first.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_words_and_mistakes() {
        assert!(matches!(Selection::parse("  "), Ok(Selection::All)));
        assert!(matches!(
            Selection::parse("dport = :5201"),
            Ok(Selection::Expression(_))
        ));
        match Selection::parse("iperf3 :5201") {
            Ok(Selection::Words(w)) => assert_eq!(w, ["iperf3", ":5201"]),
            other => panic!("{other:?}"),
        }
        // Starts like an expression: its mistake is reported, not searched for.
        let e = Selection::parse("dport = :nosuch").unwrap_err();
        assert_eq!(e.column, 9, "{e}");
        assert!(Selection::parse("(sport = :22").is_err());
    }

    #[test]
    fn text_that_looks_like_an_expression_is_one_or_a_mistake() {
        for text in ["rate > 10M", "port = :8099", "port 8099", "RATE>=1.5Mbit/s"] {
            let s = Selection::parse(text);
            assert!(matches!(s, Ok(Selection::Expression(_))), "{text}: {s:?}");
            assert_eq!(s.ok().and_then(|s| s.kind()), Some("expression"));
        }
        // A term's keyword first, or an operator anywhere: a mistake, with
        // its column, not a search for the words.
        for (text, column) in [
            ("rate > 10MB/s", 8),
            ("rate fast", 6),
            ("port = :nosuch", 8),
            ("iperf3 > 10M", 1),
            ("nginx = 1", 1),
            ("comm nginx && ", 14),
            ("curl || sshd", 1),
            ("side up", 6),
            ("cgroup", 7),
            ("netns < x", 9),
        ] {
            match Selection::parse(text) {
                Err(e) => assert_eq!(e.column, column, "{text}: {e}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        // Plain words search text, as before.
        for text in [
            "iperf3",
            "10.0.0.1",
            "[2001:db8::1]:443",
            "receive_window",
            "4242",
        ] {
            let s = Selection::parse(text);
            assert!(matches!(s, Ok(Selection::Words(_))), "{text}: {s:?}");
            assert_eq!(s.ok().and_then(|s| s.kind()), Some("words"));
        }
        assert_eq!(Selection::All.kind(), None);
    }
}
