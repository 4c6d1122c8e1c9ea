//! Recursive descent over the tokens, one function per level of the
//! grammar in the module docs. Every error names the column of the token
//! where the text stopped making sense and what would have made sense,
//! the language's own tokens in quotes (`"not" or "("`) so they do not
//! read as words of the sentence.

use super::{
    MAX_DEPTH, ParseError,
    ast::{Cmp, End, Expr, Field, StateSel, Term},
    host,
    lex::{self, Tok, Token},
    rate,
    services::Services,
};
use crate::attribution::{Side, Verdict};

/// What may start a term, for errors.
const TERM: &str = "a term (sport, dport, port, src, dst, state, comm, pid, cgroup, \
                    netns, verdict, side, rate), \"not\" or \"(\"";

/// Parses a whole filter, port names from the system's services.
///
/// # Errors
/// The first place the text stops making sense.
pub(super) fn parse(text: &str) -> Result<Expr, ParseError> {
    parse_with(text, Services::system())
}

/// Parses a whole filter, port names from `services`.
///
/// # Errors
/// The first place the text stops making sense.
pub(super) fn parse_with(text: &str, services: &Services) -> Result<Expr, ParseError> {
    let toks = lex::tokens(text)?;
    let mut p = Parser {
        services,
        end: toks.last().cloned().unwrap_or(Token {
            tok: Tok::End,
            column: 1,
            text: String::new(),
        }),
        toks,
        pos: 0,
        depth: 0,
    };
    if p.peek().tok == Tok::End {
        return Err(ParseError {
            column: 1,
            expected: TERM.to_string(),
            found: "empty filter".to_string(),
        });
    }
    let expr = p.or()?;
    let t = p.peek();
    match t.tok {
        Tok::End => Ok(expr),
        _ => Err(error(t, "end of filter (no \"(\" is open)")),
    }
}

struct Parser<'s> {
    /// Where port names are looked up.
    services: &'s Services,
    toks: Vec<Token>,
    /// The [`Tok::End`] token, for reads past the last one.
    end: Token,
    pos: usize,
    /// Parentheses and `not`s open.
    depth: usize,
}

fn error(t: &Token, expected: impl Into<String>) -> ParseError {
    ParseError {
        column: t.column,
        expected: expected.into(),
        found: t.found(),
    }
}

/// Whether `t` is the word `keyword`, in any case.
fn is_word(t: &Token, keyword: &str) -> bool {
    matches!(&t.tok, Tok::Word(w) if w.eq_ignore_ascii_case(keyword))
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        self.toks.get(self.pos).unwrap_or(&self.end)
    }

    /// The next token, consumed (the end is never passed).
    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if t.tok != Tok::End {
            self.pos += 1;
        }
        t
    }

    /// One level deeper, at `t`.
    fn enter(&mut self, t: &Token) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError {
                column: t.column,
                expected: format!("at most {MAX_DEPTH} levels of \"(\" and \"not\""),
                found: format!("{} (filter nested too deeply)", t.found()),
            });
        }
        Ok(())
    }

    /// `and ( or and )*`
    fn or(&mut self) -> Result<Expr, ParseError> {
        let mut list = vec![self.and()?];
        while matches!(self.peek().tok, Tok::Or) || is_word(self.peek(), "or") {
            self.bump();
            list.push(self.and()?);
        }
        Ok(one_or(list, Expr::Or))
    }

    /// `run ( [and] run )*`: anything but `or`, `)` or the end after a
    /// term is another term (an unknown word reads as a misspelt one).
    /// `state NAME` terms in a row with nothing between them are one
    /// operand, their `or`, as `ss`'s repeated `state` options add up.
    fn and(&mut self) -> Result<Expr, ParseError> {
        let mut list = Vec::new();
        // The `state NAME` terms juxtaposed so far, not yet in `list`.
        let mut states = Vec::new();
        // Whether an explicit `and` came before the operand parsed next.
        let mut explicit = false;
        loop {
            let starts_state = is_word(self.peek(), "state");
            let e = self.unary()?;
            // `state != NAME` is a `Not`, and `(state NAME)` does not start
            // with `state`: neither joins a run.
            let state = starts_state && matches!(e, Expr::Term(Term::State(_)));
            let joins_run = state && !explicit && !states.is_empty();
            if !joins_run {
                list.extend(run(&mut states));
            }
            if state {
                states.push(e);
            } else {
                list.push(e);
            }
            let t = self.peek();
            if matches!(t.tok, Tok::And) || is_word(t, "and") {
                self.bump();
                explicit = true;
            } else if matches!(t.tok, Tok::Or | Tok::RParen | Tok::End) || is_word(t, "or") {
                break;
            } else {
                explicit = false;
            }
        }
        list.extend(run(&mut states));
        Ok(one_or(list, Expr::And))
    }

    /// `not unary | ( or ) | term`
    fn unary(&mut self) -> Result<Expr, ParseError> {
        let t = self.peek().clone();
        if t.tok == Tok::Not || is_word(&t, "not") {
            self.enter(&t)?;
            self.bump();
            let e = self.unary()?;
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(e)));
        }
        if t.tok == Tok::LParen {
            self.enter(&t)?;
            self.bump();
            let e = self.or()?;
            if self.peek().tok != Tok::RParen {
                let expected = format!("\")\" to close the \"(\" at column {}", t.column);
                return Err(error(self.peek(), expected));
            }
            self.bump();
            self.depth -= 1;
            return Ok(e);
        }
        self.term()
    }

    fn term(&mut self) -> Result<Expr, ParseError> {
        let t = self.bump();
        let Tok::Word(word) = &t.tok else {
            return Err(error(&t, TERM));
        };
        let keyword = word.to_ascii_lowercase();
        if let Some((_, field)) = Field::ALL.iter().find(|(name, _)| *name == keyword) {
            return self.num(*field);
        }
        let (negate, term) = match keyword.as_str() {
            "src" | "dst" => {
                let negate = self.eq_ne(true, "an address like 10.0.0.0/8, \"*\"")?;
                let v = self.bump();
                let host = match &v.tok {
                    Tok::Word(w) => host::parse(w, v.column, self.services)?,
                    _ => return Err(error(&v, host::EXPECTED)),
                };
                let end = if keyword == "src" {
                    End::Local
                } else {
                    End::Remote
                };
                (negate, Term::Host { end, host })
            }
            "comm" => {
                let negate = self.eq_ne(false, "a command name")?;
                let v = self.bump();
                match v.tok {
                    Tok::Word(name) | Tok::Quoted(name) => (negate, Term::Comm(name)),
                    _ => return Err(error(&v, "a command name (\"in quotes\" for spaces)")),
                }
            }
            "state" => {
                let (negate, s) = self.named("a state", &StateSel::NAMES)?;
                (negate, Term::State(s))
            }
            "verdict" => {
                let names = Verdict::ALL.map(|v| (v.name(), v));
                let (negate, v) = self.named("a verdict", &names)?;
                (negate, Term::Verdict(v))
            }
            "side" => {
                let names = [("sender", Side::Sender), ("receiver", Side::Receiver)];
                let (negate, s) = self.named("a side", &names)?;
                (negate, Term::Side(s))
            }
            "rate" => return self.rate(),
            _ => {
                // A filter of one word is most often a process name, as
                // top's `/` takes one: say how a filter writes it (not of
                // a mistyped term, `dprot = :443`, or a word among terms).
                let mut e = error(&t, TERM);
                let alone = t.column == 1 && self.peek().tok == Tok::End;
                if let (Tok::Word(w), true) = (&t.tok, alone) {
                    e.found = format!("{} (a process name is written comm {w})", e.found);
                }
                return Err(e);
            }
        };
        let e = Expr::Term(term);
        Ok(if negate { Expr::Not(Box::new(e)) } else { e })
    }

    /// An optional comparison, `=` when left out (`sport :22`).
    fn op(&mut self) -> Cmp {
        let op = match &self.peek().tok {
            Tok::Op(op) => Some(*op),
            Tok::Word(w) => Cmp::from_word(w),
            _ => None,
        };
        if op.is_some() {
            self.bump();
        }
        op.unwrap_or(Cmp::Eq)
    }

    /// `rate [OP] RATE [UNIT]`: `rate > 10M`, `rate >= 1.5Mbit/s`,
    /// `rate < 6.1 Mbit/s` (the unit a word of its own, as `flows` prints
    /// the figure).
    fn rate(&mut self) -> Result<Expr, ParseError> {
        let op = self.op();
        let v = self.bump();
        let Tok::Word(number) = &v.tok else {
            return Err(error(&v, rate::EXPECTED));
        };
        let mut text = number.clone();
        if let Tok::Word(unit) = &self.peek().tok
            && rate::is_unit(unit)
        {
            text.push_str(unit);
            self.bump();
        }
        let bps = rate::rate(&text).ok_or_else(|| error(&v, rate::EXPECTED))?;
        Ok(Expr::Term(Term::Rate { op, bps }))
    }

    /// `FIELD [OP] VALUE`, the operator `=` when left out (`sport :22`).
    fn num(&mut self, field: Field) -> Result<Expr, ParseError> {
        let op = self.op();
        let v = self.bump();
        let noun = match field {
            Field::Sport | Field::Dport | Field::Port => {
                // `:443`, `443`, `:https` or `https`.
                let text = match &v.tok {
                    Tok::Word(w) => w.strip_prefix(':').unwrap_or(w),
                    _ => "",
                };
                let port = self.services.resolve(text).map_err(|e| error(&v, e))?;
                let value = u64::from(port);
                return Ok(Expr::Term(Term::Num { field, op, value }));
            }
            Field::Pid => "a process id",
            Field::Cgroup => "a cgroup v2 id",
            Field::Netns => "a network namespace inode number or name",
        };
        let text = match &v.tok {
            Tok::Word(w) => w.as_str(),
            Tok::Quoted(name) if field == Field::Netns => return netns_name(op, &v, name),
            _ => return Err(error(&v, noun)),
        };
        let Some(value) = super::number::number(text) else {
            if field == Field::Netns {
                return netns_name(op, &v, text);
            }
            return Err(error(&v, noun));
        };
        if value > field.max() {
            return Err(error(&v, format!("{noun} (0 to {})", field.max())));
        }
        Ok(Expr::Term(Term::Num { field, op, value }))
    }

    /// An optional `=`, `==` or `!=` (and with `words`, `eq`, `neq`,
    /// `ne`): whether it was `!=`. `what` is what else may follow.
    fn eq_ne(&mut self, words: bool, what: &str) -> Result<bool, ParseError> {
        let t = self.peek();
        let op = match &t.tok {
            Tok::Op(op) => *op,
            Tok::Word(w) if words => match Cmp::from_word(w) {
                Some(op) => op,
                None => return Ok(false),
            },
            _ => return Ok(false),
        };
        match op {
            Cmp::Eq | Cmp::Ne => {
                self.bump();
                Ok(op == Cmp::Ne)
            }
            _ => Err(error(t, format!("{what}, \"=\" or \"!=\""))),
        }
    }

    /// `[= | !=] NAME`, `NAME` one of `names` in any case: whether
    /// negated, and the value.
    fn named<T: Copy>(&mut self, what: &str, names: &[(&str, T)]) -> Result<(bool, T), ParseError> {
        let negate = self.eq_ne(false, what)?;
        let v = self.bump();
        let found = match &v.tok {
            Tok::Word(w) => names.iter().find(|(n, _)| n.eq_ignore_ascii_case(w)),
            _ => None,
        };
        match found {
            Some((_, value)) => Ok((negate, *value)),
            None => {
                let list: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
                Err(error(&v, format!("{what}: {}", list.join(", "))))
            }
        }
    }
}

/// `netns OP NAME`, the name at `v`: an `ip netns` name (not empty, no
/// `/`, not `.` or `..`, as `ip netns add` takes them), compared with `=`
/// or `!=` only.
fn netns_name(op: Cmp, v: &Token, name: &str) -> Result<Expr, ParseError> {
    if !matches!(op, Cmp::Eq | Cmp::Ne) {
        return Err(error(
            v,
            "a network namespace inode number (a name takes only \"=\" or \"!=\")",
        ));
    }
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(error(
            v,
            "a network namespace name as ip netns lists it (no \"/\")",
        ));
    }
    let e = Expr::Term(Term::NetnsName(name.to_string()));
    Ok(if op == Cmp::Ne {
        Expr::Not(Box::new(e))
    } else {
        e
    })
}

/// The `or` of the juxtaposed `state` terms in `states` (emptied): none,
/// the one, or their `or`.
fn run(states: &mut Vec<Expr>) -> Option<Expr> {
    match states.len() {
        0 => None,
        _ => Some(one_or(std::mem::take(states), Expr::Or)),
    }
}

/// The one expression of `list`, or `join` of them all.
fn one_or(mut list: Vec<Expr>, join: fn(Vec<Expr>) -> Expr) -> Expr {
    match (list.pop(), list.is_empty()) {
        (Some(e), true) => e,
        (Some(e), false) => {
            list.push(e);
            join(list)
        }
        (None, _) => join(list),
    }
}
