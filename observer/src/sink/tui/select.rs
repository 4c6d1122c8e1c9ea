//! Which rows `observer top` shows: a filter expression (the language of
//! [`crate::filter`], shared with `observer flows` and `observer run`), or,
//! for text that does not read as one, the older words filter (every word
//! must occur in the process, pid, addresses or verdict).

use crate::filter::{Filter, ParseError};

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
    /// starts like one; else words.
    ///
    /// # Errors
    /// Text that starts like an expression and does not parse: the
    /// parser's error (column, what was expected).
    pub fn parse(text: &str) -> Result<Selection, ParseError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Selection::All);
        }
        match Filter::parse(text) {
            Ok(f) => Ok(Selection::Expression(f)),
            Err(e) if starts_like_expression(text) => Err(e),
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
}

fn starts_like_expression(text: &str) -> bool {
    let first = text
        .split(|c: char| c.is_whitespace() || c == '(' || c == '!')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    // Text starting like an expression is one, and a mistake in it is
    // reported rather than read as words.
    text.starts_with(['(', '!']) || crate::filter::KEYWORDS.contains(&first.as_str())
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
}
