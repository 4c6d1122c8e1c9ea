//! Property tests: no text panics the parser; the canonical text of any
//! expression parses back to it; `not X` selects exactly what `X` does not.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use proptest::{collection::vec, option, prelude::*, sample::select};

use super::{
    Filter,
    ast::{Cmp, End, Expr, Field, Host, Prefix, StateSel, Term},
    eval::KNOWN,
    parse::parse,
    tests::{attribution, v4_flow},
};
use crate::{
    attribution::{Attribution, Side, Verdict},
    model::flow::Flow,
};

/// Addresses close together, so prefixes of random lengths often hold them.
fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        (0u8..3, 0u8..3).prop_map(|(c, d)| IpAddr::V4(Ipv4Addr::new(10, 0, c, d))),
        (0u16..3, 0u16..3)
            .prop_map(|(a, x)| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, a, 0, 0, 0, 0, x))),
    ]
}

const PORTS: [u16; 5] = [0, 80, 443, 5201, 40000];
const NAMES: [&str; 8] = [
    "iperf3", "curl", "my app", "a\"b\\", "", "and", "not", "(x)",
];

/// Namespace names: a plain one, a numeric one (quoted to be a name),
/// keywords and quotes.
const NETNS_NAMES: [&str; 5] = ["blue", "123", "and", "a\"b\\", "(x)"];

fn term() -> impl Strategy<Value = Term> {
    let field = select(Field::ALL.map(|(_, f)| f).to_vec());
    let cmp = select(vec![Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Gt, Cmp::Le, Cmp::Ge]);
    let cmp2 = cmp.clone();
    let value = prop_oneof![
        select(vec![0u64, 80, 443, 1234, 5201, 5555, 40000]),
        any::<u64>()
    ];
    let prefix = (ip(), 0u8..=128).prop_map(|(ip, len)| {
        let len = if ip.is_ipv4() { len % 33 } else { len };
        Prefix::new(ip, len)
    });
    let host = (option::of(prefix), option::of(select(PORTS.to_vec())))
        .prop_map(|(prefix, port)| Host { prefix, port });
    let pattern = prop_oneof![
        select(NAMES.to_vec()).prop_map(str::to_string),
        select(vec!["*", "?url", "iperf*", "*p*"]).prop_map(str::to_string),
        any::<String>(),
    ];
    prop_oneof![
        (field, cmp, value).prop_map(|(field, op, v)| Term::Num {
            field,
            op,
            value: v.min(field.max()),
        }),
        (any::<bool>(), host).prop_map(|(local, host)| Term::Host {
            end: if local { End::Local } else { End::Remote },
            host,
        }),
        select(StateSel::NAMES.map(|(_, s)| s).to_vec()).prop_map(Term::State),
        pattern.prop_map(Term::Comm),
        select(NETNS_NAMES.to_vec()).prop_map(|n| Term::NetnsName(n.to_string())),
        select(Verdict::ALL.to_vec()).prop_map(Term::Verdict),
        select(vec![Side::Sender, Side::Receiver]).prop_map(Term::Side),
        (cmp2, rate()).prop_map(|(op, bps)| Term::Rate { op, bps }),
    ]
}

/// Rates near the ones [`judged`] gives flows, and any up to the largest.
fn rate() -> impl Strategy<Value = u64> {
    prop_oneof![
        select(RATES.map(|r| r as u64).to_vec()),
        0..=crate::args::MAX_RATE,
    ]
}

/// Rates (bits/s) the judged flows move at.
const RATES: [f64; 5] = [0.0, 999.6, 1e3, 12e6, 1.5e9];

fn expr() -> impl Strategy<Value = Expr> {
    term()
        .prop_map(Expr::Term)
        .prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
                vec(inner.clone(), 2..4).prop_map(Expr::And),
                vec(inner, 2..4).prop_map(Expr::Or),
            ]
        })
}

/// A flow from the same small pools, IPv4 ends written either way.
fn flow() -> impl Strategy<Value = Flow> {
    let end = || {
        (ip(), any::<bool>(), select(PORTS.to_vec())).prop_map(|(ip, mapped, port)| {
            let ip = match ip {
                IpAddr::V4(v4) if mapped => IpAddr::V6(v4.to_ipv6_mapped()),
                _ => ip,
            };
            SocketAddr::new(ip, port)
        })
    };
    // Every state the evaluator knows, and one it does not.
    let states: Vec<&str> = KNOWN.iter().copied().chain(["unknown"]).collect();
    let who = (
        select(vec![0u32, 1234, 5555]),
        select(NAMES.to_vec()),
        select(vec![1u64, 5555]),
    );
    let netns_name = option::of(select(NETNS_NAMES.to_vec()));
    (end(), end(), who, select(states), any::<bool>(), netns_name).prop_map(
        |(local, remote, (pid, comm, cgroup), state, closed, netns_name)| {
            let mut f = v4_flow();
            f.local = local;
            f.remote = remote;
            f.pid = pid;
            f.netns = pid;
            f.netns_name = netns_name.map(Into::into);
            f.comm = comm.to_string();
            f.cgroup_id = cgroup;
            f.state = state;
            f.closed = closed;
            f
        },
    )
}

fn judged() -> impl Strategy<Value = Option<Attribution>> {
    let rates = (select(RATES.to_vec()), select(RATES.to_vec()));
    option::of(
        (select(Verdict::ALL.to_vec()), any::<bool>(), rates).prop_map(|(v, s, (sent, recv))| {
            let mut a = attribution(v, if s { Side::Sender } else { Side::Receiver });
            a.evidence.rate_bps = sent;
            a.evidence.recv_rate_bps = recv;
            a
        }),
    )
}

/// Text built from the language's own words, to get past the first token.
fn soup() -> impl Strategy<Value = String> {
    let words = select(vec![
        "sport",
        "dport",
        "port",
        "src",
        "dst",
        "state",
        "comm",
        "pid",
        "cgroup",
        "netns",
        "verdict",
        "side",
        "rate",
        "and",
        "or",
        "not",
        "(",
        ")",
        "!",
        "&&",
        "||",
        "=",
        "!=",
        "<=",
        "eq",
        ":443",
        "443",
        ":ssh",
        "https",
        "10.0.0.1:http",
        ":nosuch",
        "10.0.0.0/8",
        "[::1]:80",
        "::/0",
        "*",
        "established",
        "big",
        "path",
        "sender",
        "\"a b\"",
        "\"",
        "[",
        "/",
        ":",
        "99999999999999999999999",
        ">",
        "10M",
        "1.5Mbit/s",
        "Mbit/s",
        "0",
        "500k",
    ]);
    (vec(words, 0..16), any::<bool>()).prop_map(|(w, spaced)| w.join(if spaced { " " } else { "" }))
}

/// Checks an error's shape: a column within the text, one line.
fn check_error(text: &str) {
    if let Err(e) = Filter::parse(text) {
        let chars = text.chars().count();
        assert!((1..=chars + 1).contains(&e.column), "{text:?}: {e}");
        assert!(!e.to_string().contains('\n'), "{text:?}: {e}");
        assert_eq!(e.caret(text).lines().count(), 2, "{text:?}");
    }
}

proptest! {
    #[test]
    fn any_text_parses_or_errs_without_panicking(text in any::<String>()) {
        check_error(&text);
    }

    #[test]
    fn word_soup_parses_or_errs_and_what_parses_prints_back(text in soup()) {
        check_error(&text);
        if let Ok(e) = parse(&text) {
            prop_assert_eq!(parse(&e.to_string()), Ok(e));
        }
    }

    #[test]
    fn canonical_text_parses_back_to_the_same_expression(
        e in expr(),
        flows in vec((flow(), judged()), 8),
    ) {
        let text = e.to_string();
        let f = Filter::parse(&text);
        prop_assert!(f.is_ok(), "{} -> {:?}", text, f);
        let Ok(f) = f else { return Ok(()) };
        prop_assert_eq!(&f.expr, &e, "{}", text);
        for (flow, a) in &flows {
            prop_assert_eq!(f.matches(flow, a.as_ref()), e.matches(flow, a.as_ref()));
        }
    }

    #[test]
    fn not_selects_exactly_what_is_not_selected(
        e in expr(),
        flows in vec((flow(), judged()), 8),
    ) {
        let text = e.to_string();
        let f = Filter::parse(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for neg in [format!("not ({text})"), format!("!({text})")] {
            let n = Filter::parse(&neg).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(n.needs_attribution(), f.needs_attribution());
            for (flow, a) in &flows {
                prop_assert_eq!(n.matches(flow, a.as_ref()), !f.matches(flow, a.as_ref()), "{}", neg);
            }
        }
    }
}
