//! The canonical text of a parsed filter (`Display`): every keyword
//! spelled one way, ports as `:443`, `comm` and `netns` names quoted, addresses in
//! their shortest form with the prefix length always written, and
//! parentheses around every nested `and`/`or`, so parsing the text gives
//! back the same tree (a property test checks it).

use std::fmt;

use super::{
    ast::{End, Expr, Host, Term},
    rate,
};
use crate::attribution::Side;

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.prefix {
            Some(p) => write!(f, "{p}")?,
            None => f.write_str("*")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Num { field, op, value } => {
                let colon = if field.is_port() { ":" } else { "" };
                write!(f, "{} {} {colon}{value}", field.name(), op.symbol())
            }
            Term::Host { end, host } => match end {
                End::Local => write!(f, "src {host}"),
                End::Remote => write!(f, "dst {host}"),
            },
            Term::State(s) => write!(f, "state {}", s.name()),
            Term::Comm(name) => {
                let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
                write!(f, "comm \"{escaped}\"")
            }
            Term::NetnsName(name) => {
                let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
                write!(f, "netns = \"{escaped}\"")
            }
            Term::Verdict(v) => write!(f, "verdict {}", v.name()),
            Term::Side(Side::Sender) => f.write_str("side sender"),
            Term::Side(Side::Receiver) => f.write_str("side receiver"),
            Term::Rate { op, bps } => write!(f, "rate {} {}", op.symbol(), rate::text(*bps)),
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A nested and/or in parentheses; `a or b and c` needs none, but
        // writing them keeps the rule one line.
        fn operand(f: &mut fmt::Formatter<'_>, e: &Expr) -> fmt::Result {
            match e {
                Expr::And(_) | Expr::Or(_) => write!(f, "({e})"),
                _ => write!(f, "{e}"),
            }
        }
        let (list, sep) = match self {
            Expr::Term(t) => return write!(f, "{t}"),
            Expr::Not(e) => {
                f.write_str("not ")?;
                return operand(f, e);
            }
            Expr::And(list) => (list, " and "),
            Expr::Or(list) => (list, " or "),
        };
        for (i, e) in list.iter().enumerate() {
            if i > 0 {
                f.write_str(sep)?;
            }
            operand(f, e)?;
        }
        Ok(())
    }
}
