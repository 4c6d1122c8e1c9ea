//! The flow filter language: which flows `observer flows`, `top` and `run`
//! show (`--filter 'EXPR'`). It is the part of `ss`'s FILTER language
//! (iproute2 `ss(8)`) network engineers type every day, plus observer's
//! own terms, so `ss -tn 'dport = :443'` and `observer flows --filter
//! 'dport = :443'` select the same connections.
//!
//! ```text
//! expr  := or
//! or    := and ( ("or" | "||" | "|") and )*
//! and   := run ( ["and" | "&&" | "&"] run )*     juxtaposition is "and", but
//! run   := st st+ | unary      juxtaposed st's are one operand: their "or"
//! st    := "state" ["=" | "=="] STATE               (as ss's repeated state)
//! unary := ("not" | "!") unary | "(" expr ")" | term
//! term  := ("sport" | "dport" | "port") [OP] PORT   PORT: :443, 443, :ssh, ssh
//!        | ("pid" | "netns" | "cgroup") [OP] NUMBER      cgroup: cgroup v2 id
//!        | "netns" [EQ] NAME        an `ip netns` name; "123" quotes a numeric one
//!        | ("src" | "dst") [EQ] HOST
//!        | "state" [EQ] STATE | "comm" [EQ] NAME
//!        | "verdict" [EQ] VERDICT | "side" [EQ] ("sender" | "receiver")
//!        | "rate" [OP] RATE [UNIT]    RATE: 10M, 1.5G, 500k, 1.5Mbit/s, 0
//! OP    := = | == | != | < | > | <= | >= | eq | neq | ne | lt | gt | le | ge
//! EQ    := = | == | !=               (!= is "not ..."; src/dst: eq, neq, ne too)
//! HOST  := * | *:PORT | :PORT | A.B.C.D[/LEN][:PORT] | [V6][/LEN][:PORT]
//!        | [V6/LEN][:PORT] | V6[/LEN]     (bare IPv6: no port; PORT * is any)
//! ```
//!
//! Precedence is `not` > `and` > `or`. Two or more `state NAME` terms
//! in a row with nothing between them (`state established state
//! time-wait`) are one operand, the `or` of those states, as `ss`'s
//! repeated `state` options add up; joined by an explicit `and` (`state a
//! and state b`), or written `state != NAME`, `not state NAME` or
//! `(state NAME)`, they are `and`ed like any other terms. Keywords,
//! operators and the names of states, verdicts, sides and services are
//! case-insensitive; a `comm` name is exact, with `*` (any run) and `?`
//! (one character) wildcards, quoted with `"..."` (`\"` and `\\` inside)
//! to hold spaces or operators.
//!
//! A port may be a TCP service name (`:ssh`, `https`, `10.0.0.1:http`),
//! as `ss` resolves them: from `/etc/services` (read once), or where it is
//! missing from a small built-in table (`services.rs`). Host names are
//! not resolved: a host is an address or prefix.
//!
//! `src`/`sport` are the local end and `dst`/`dport` the remote one, as in
//! `ss`; `port` is either end, as tcpdump's `port` (`port = :22` selects
//! an ssh server's flows and a client's alike), save that `port != 22` is
//! neither end, as tcpdump's `not port 22` (an either-end `!=` would hold
//! for nearly every flow, by its other end): `port != X` is `not port X`. Addresses are compared in one shape, IPv6 with IPv4 as
//! IPv4-mapped (`::ffff:a.b.c.d`), the shape of the kernel's flow key: an
//! IPv4 prefix matches an IPv4 socket and an IPv6 socket with a mapped
//! address alike, while a prefix written as IPv6 (`::ffff:10.0.0.1` and
//! `::/0` too) matches IPv6 sockets only ([`Flow::family`]), as `ss`
//! does. Host bits set past the prefix (`10.0.0.1/8`) are masked off,
//! as `ss` does.
//!
//! A flow's state is `closed` once it has closed, whatever state its last
//! record carried. The state groups are `ss`'s: `all`; `connected` (all
//! but `listening` and `closed`); `synchronized` (`connected` but not
//! `syn-sent`); `bucket` (`syn-recv`, `time-wait`); `big` (all but
//! `bucket`). A flow in a state observer cannot name (`unknown`) is
//! selected only by `all`.
//!
//! `netns = NAME` compares the flow's namespace name as
//! [`crate::track::netns`] resolves it from `/run/netns` ([`Flow::netns_name`]),
//! exactly: a namespace without a name, or a name no namespace has, selects
//! nothing (`netns != NAME` selects every flow then). A word that is a
//! number is an inode; a name written in quotes is always a name.
//!
//! `verdict`, `side` and `rate` need the flow's [`Attribution`]: on a
//! flow not judged yet they are false, so `not verdict path` selects it.
//! `rate` compares the larger of the attribution's send (acked) and
//! receive rates in bits/s, rounded to a whole one, with `RATE` as
//! `--target-rate` takes it ([`crate::args::parse_rate`]), or with
//! observer's own unit (`1.5Mbit/s`, or `1.5 Mbit/s` as two words), or
//! `0`. Its span is the attribution's: the run for `observer flows`, the
//! verdict window for `observer top`, as each table's RATE column.
//! `observer run` refuses it ([`Filter::parse_for_counters`]).
//!
//! The parser is written by hand rather than generated: the grammar has a
//! dozen terms, and a hand-written one reports the exact column and what
//! it expected there, which a user at a shell prompt needs more than
//! anything else. Nesting (parentheses, `not`) is bounded at
//! [`MAX_DEPTH`] so no input can exhaust the stack.

/// The words a term or a negation begins with (case-insensitive): what
/// tells an expression from other text (`observer top`'s `/` also takes
/// plain words).
pub const KEYWORDS: [&str; 14] = [
    "sport", "dport", "port", "src", "dst", "state", "comm", "pid", "cgroup", "netns", "verdict",
    "side", "rate", "not",
];

/// The language in brief, for `--help` and the manual pages of the
/// subcommands that take `--filter`.
pub const SYNTAX: &str = "\
FILTERS (--filter EXPR, as ss(8) writes them):
  sport|dport [OP] PORT    PORT: :443, 443 or a service name (:https)
  port [OP] PORT           either end's port, as tcpdump's; port != 22: neither end
  src|dst HOST             10.0.0.1, 10.0.0.0/8, 10.0.0.0/8:80, [2001:db8::1]:443,
                           2001:db8::/32, *:80 (IPv4 also matches IPv4-mapped flows)
  state NAME               established, syn-sent, syn-recv, fin-wait-1, fin-wait-2,
                           time-wait, close-wait, last-ack, listening, closing,
                           closed; groups all, connected, synchronized, bucket, big
  comm NAME                process name; * and ? are wildcards
  pid|cgroup|netns OP N    owner's pid, cgroup v2 id, network namespace inode
  netns [=|!=] NAME        network namespace by its ip netns name (/run/netns)
  verdict NAME             receive_window, send_buffer, application,
                           congestion_window, path, receiver_application,
                           sender, unknown
  side sender|receiver     the end the flow is judged from
  rate [OP] RATE           the RATE column, in bit/s: 10M, 1.5Mbit/s, 500k, 0
                           (flows: over the run; top: the verdict window; not run)
  OP is = == != < > <= >= or eq neq ne lt gt le ge. Terms combine with and
  (&&, &, or nothing between them), or (||, |), not (!) and parentheses;
  state terms side by side add up (state established state time-wait).
  Examples: 'dport = :443'  'dst 10.0.0.0/8 and not state closed'
            'comm nginx and verdict receive_window'";

mod ast;
mod eval;
mod host;
mod lex;
mod number;
mod parse;
#[cfg(test)]
mod port_rate_tests;
mod print;
#[cfg(test)]
mod prop_tests;
mod rate;
mod services;
#[cfg(test)]
mod services_tests;
#[cfg(test)]
mod syntax_tests;
#[cfg(test)]
mod tests;

use std::{fmt, str::FromStr};

use unicode_width::UnicodeWidthChar as _;

use crate::{attribution::Attribution, model::flow::Flow};

/// Why `observer run --filter` refuses a `rate` term, and what to do
/// instead (one line).
pub const RATE_IN_COUNTERS: &str = "run takes no rate term: a flow's rate changes from poll to \
    poll, so the counters would count each flow only in part (for 'rate > X', never its start, \
    at rate 0); leave it out, and use --top-flows N for the fastest flows' rates, or observer \
    top or flows to select by rate";

/// The deepest nesting of parentheses and `not`s a filter may have.
pub const MAX_DEPTH: usize = 64;

/// A parsed flow filter: the expression and the text it was parsed from.
#[derive(Clone, Debug)]
pub struct Filter {
    expr: ast::Expr,
    text: String,
}

impl Filter {
    /// Parses `text` (grammar in the module docs).
    ///
    /// # Errors
    /// Where the text stops making sense: the column, what was expected
    /// there and what was found. Empty text is an error too.
    pub fn parse(text: &str) -> Result<Filter, ParseError> {
        Ok(Filter {
            expr: parse::parse(text)?,
            text: text.to_string(),
        })
    }

    /// Whether `flow` (with its attribution, when judged) is selected. A
    /// `verdict`, `side` or `rate` term with `attribution == None` is false
    /// (not selected).
    pub fn matches(&self, flow: &Flow, attribution: Option<&Attribution>) -> bool {
        self.expr.matches(flow, attribution)
    }

    /// Whether any term needs the attribution (`verdict`, `side`, `rate`).
    pub fn needs_attribution(&self) -> bool {
        self.expr.needs_attribution()
    }

    /// The namespace names its `netns = NAME` terms give, in order (to
    /// say at start which name no namespace has yet).
    pub fn netns_names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.expr.netns_names(&mut out);
        out
    }

    /// Whether a `rate` term occurs.
    pub fn reads_rate(&self) -> bool {
        self.expr.reads_rate()
    }

    /// Parses `text` for `observer run --filter`, which chooses the flows
    /// its counters count: as [`Filter::parse`], but a `rate` term is
    /// refused ([`RATE_IN_COUNTERS`]). Each counter moves at its own event
    /// (a flow's start, a poll's bytes, its close), judged with the rate of
    /// that moment, so a flow whose rate crosses the threshold would be
    /// counted in some and not others: `rate > 10M` would count no flow's
    /// start (at rate 0) and the bytes of its fast polls only.
    ///
    /// # Errors
    /// The parse error, or the refusal of a `rate` term, each one line
    /// saying what is wrong and how to fix it.
    pub fn parse_for_counters(text: &str) -> Result<Filter, String> {
        let filter = Filter::parse(text).map_err(|e| e.to_string())?;
        if filter.reads_rate() {
            return Err(RATE_IN_COUNTERS.to_string());
        }
        Ok(filter)
    }

    /// The text as given (for logs and the /metrics info metric).
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl FromStr for Filter {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Filter, ParseError> {
        Filter::parse(text)
    }
}

/// Why a filter does not parse. Its `Display` is one line: `at column 9:
/// expected a port number or a service name from /etc/services, found
/// "foo"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// Where the trouble starts: 1-based, counted in characters; one past
    /// the last character when the filter ended too soon.
    pub column: usize,
    /// What would have made sense there, in words, the language's tokens
    /// quoted (`a term (...), "not" or "("`).
    pub expected: String,
    /// What is there: the token quoted (`"foo"`, escaped so the message
    /// stays one line) or `end of filter`.
    pub found: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at column {}: expected {}, found {}",
            self.column, self.expected, self.found
        )
    }
}

impl ParseError {
    /// Two lines for a terminal: `text`, with control characters shown as
    /// spaces, and a `^` under [`ParseError::column`] (aligned for wide
    /// characters).
    pub fn caret(&self, text: &str) -> String {
        let shown: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let pad: usize = shown
            .chars()
            .take(self.column.saturating_sub(1))
            .map(|c| c.width().unwrap_or(0))
            .sum();
        format!("{shown}\n{}^", " ".repeat(pad))
    }
}
