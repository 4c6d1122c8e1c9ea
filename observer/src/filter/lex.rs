//! The filter's tokens, each with the column it starts at. Words are
//! everything between spaces, parentheses and operator characters
//! (`=!<>&|`), so `dport>=1024` and `dport >= 1024` read alike; which
//! word is a keyword is the parser's business, because a `comm` name may
//! be any word.

use super::{ParseError, ast::Cmp};

/// What a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tok {
    /// A run of characters without spaces or operator characters.
    Word(String),
    /// A `"..."` string, escapes resolved.
    Quoted(String),
    /// A comparison written with symbols (`=`, `==`, `!=`, `<`, ...).
    Op(Cmp),
    /// `&&` or `&`.
    And,
    /// `||` or `|`.
    Or,
    /// `!` not followed by `=`.
    Not,
    /// `(`.
    LParen,
    /// `)`.
    RParen,
    /// After the last token.
    End,
}

/// A token, where it starts and how it was typed.
#[derive(Clone, Debug)]
pub(super) struct Token {
    /// What it is.
    pub tok: Tok,
    /// 1-based column of its first character.
    pub column: usize,
    /// The characters as typed (empty for [`Tok::End`]).
    pub text: String,
}

impl Token {
    /// The token as a [`ParseError::found`]: quoted, or `end of filter`.
    pub fn found(&self) -> String {
        match self.tok {
            Tok::End => "end of filter".to_string(),
            _ => format!("{:?}", self.text),
        }
    }
}

/// Characters that end a word (besides whitespace).
fn is_special(c: char) -> bool {
    matches!(c, '(' | ')' | '!' | '&' | '|' | '=' | '<' | '>' | '"')
}

/// Splits `text` into tokens, the last one [`Tok::End`].
///
/// # Errors
/// A quote left open.
pub(super) fn tokens(text: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let start = i;
        let (tok, len) = match (c, next) {
            (c, _) if c.is_whitespace() => {
                i += 1;
                continue;
            }
            ('(', _) => (Tok::LParen, 1),
            (')', _) => (Tok::RParen, 1),
            ('&', Some('&')) => (Tok::And, 2),
            ('&', _) => (Tok::And, 1),
            ('|', Some('|')) => (Tok::Or, 2),
            ('|', _) => (Tok::Or, 1),
            ('!', Some('=')) => (Tok::Op(Cmp::Ne), 2),
            ('!', _) => (Tok::Not, 1),
            ('=', Some('=')) => (Tok::Op(Cmp::Eq), 2),
            ('=', _) => (Tok::Op(Cmp::Eq), 1),
            ('<', Some('=')) => (Tok::Op(Cmp::Le), 2),
            ('<', _) => (Tok::Op(Cmp::Lt), 1),
            ('>', Some('=')) => (Tok::Op(Cmp::Ge), 2),
            ('>', _) => (Tok::Op(Cmp::Gt), 1),
            ('"', _) => quoted(&chars, i)?,
            _ => {
                let len = chars[i..]
                    .iter()
                    .take_while(|c| !c.is_whitespace() && !is_special(**c))
                    .count();
                (Tok::Word(chars[i..i + len].iter().collect()), len)
            }
        };
        i += len;
        out.push(Token {
            tok,
            column: start + 1,
            text: chars[start..i].iter().collect(),
        });
    }
    out.push(Token {
        tok: Tok::End,
        column: chars.len() + 1,
        text: String::new(),
    });
    Ok(out)
}

/// The quoted string opening at `chars[open]`: its value and its length
/// with both quotes. `\"` is a quote and `\\` a backslash; any other
/// backslash is itself.
fn quoted(chars: &[char], open: usize) -> Result<(Tok, usize), ParseError> {
    let mut value = String::new();
    let mut i = open + 1;
    while let Some(&c) = chars.get(i) {
        match (c, chars.get(i + 1)) {
            ('"', _) => return Ok((Tok::Quoted(value), i + 1 - open)),
            ('\\', Some(&e @ ('"' | '\\'))) => {
                value.push(e);
                i += 2;
            }
            _ => {
                value.push(c);
                i += 1;
            }
        }
    }
    Err(ParseError {
        column: chars.len() + 1,
        expected: format!("a closing quote for the one at column {}", open + 1),
        found: "end of filter".to_string(),
    })
}
