//! The grammar: precedence, canonical text, errors and their columns,
//! nesting, the API.

use super::{
    services::Services,
    tests::{err, sel, v4_flow},
    *,
};

#[test]
fn precedence_implicit_and_not_and_parentheses() {
    let f = v4_flow();
    // not > and > or: `T or F and F` is T; `(T or F) and F` is F.
    assert!(sel("dport 443 or dport 80 and pid 1", &f));
    assert!(!sel("(dport 443 or dport 80) and pid 1", &f));
    assert!(!sel("not dport 443 or pid 1", &f));
    assert!(sel("not (dport 80 or pid 1)", &f));
    assert!(sel("! dport 80 && !pid 1", &f));
    assert!(sel("!(dport 80) & pid 1234", &f));
    assert!(sel("dport 80 || pid 1234", &f) && sel("dport 80 | pid 1234", &f));
    // Juxtaposition is `and`, as in `ss`.
    assert!(sel("sport = :40000 dport = :443", &f));
    assert!(!sel("sport = :40000 dport = :80", &f));
    assert!(sel("dport = :80 or sport = :40000 comm iperf3", &f));
    assert!(sel("NOT NOT dport 443 AND (comm iperf3 OR comm curl)", &f));
    assert!(sel("((((dport 443))))", &f));
}

/// `ss state established state time-wait` shows both: repeated `state`s
/// add up. Juxtaposed `state NAME` terms here are their `or`; anything
/// between them (an explicit `and`, `not`, `!=`, parentheses, another
/// term) leaves them `and`ed.
#[test]
fn juxtaposed_states_are_their_or_as_in_ss() {
    let same = |a: &str, b: &str| {
        assert_eq!(
            parse::parse(a).unwrap(),
            parse::parse(b).unwrap(),
            "{a} vs {b}"
        );
    };
    same(
        "state established state time-wait",
        "state established or state time-wait",
    );
    same(
        "state = established state == time-wait STATE listening",
        "state established or state time-wait or state listening",
    );
    same(
        "dport 443 state established state time-wait",
        "dport 443 and (state established or state time-wait)",
    );
    same(
        "state established state time-wait dport 443 pid 1",
        "(state established or state time-wait) and dport 443 and pid 1",
    );
    same(
        "state established state time-wait and state listening",
        "(state established or state time-wait) and state listening",
    );
    same(
        "state established and state time-wait state listening",
        "state established and (state time-wait or state listening)",
    );
    same(
        "state established state time-wait or state closed state closing",
        "(state established or state time-wait) or (state closed or state closing)",
    );
    same(
        "(state established state time-wait) dport 443",
        "(state established or state time-wait) and dport 443",
    );
    // Explicit `and`, or something between them: `and`.
    for (juxtaposed, anded) in [
        (
            "state established && state time-wait",
            "state established and state time-wait",
        ),
        (
            "state established & state time-wait",
            "state established and state time-wait",
        ),
        (
            "state established dport 443 state time-wait",
            "state established and dport 443 and state time-wait",
        ),
        (
            "state != established state time-wait",
            "not state established and state time-wait",
        ),
        (
            "state established state != time-wait",
            "state established and not state time-wait",
        ),
        (
            "not state established state time-wait",
            "(not state established) and state time-wait",
        ),
        (
            "(state established) state time-wait",
            "state established and state time-wait",
        ),
        (
            "state established (state time-wait)",
            "state established and state time-wait",
        ),
    ] {
        same(juxtaposed, anded);
    }
    assert_eq!(
        parse::parse("state established state time-wait")
            .unwrap()
            .to_string(),
        "state established or state time-wait"
    );
    // On flows: either state is selected; `and` selects neither.
    for (state, yes) in [
        ("established", true),
        ("time-wait", true),
        ("listen", false),
    ] {
        let mut f = v4_flow();
        f.state = state;
        assert_eq!(sel("state established state time-wait", &f), yes, "{state}");
        assert_eq!(
            sel("dport = :443 state established state time-wait", &f),
            yes,
            "{state}"
        );
        assert!(!sel("dport = :80 state established state time-wait", &f));
        assert!(!sel("state established and state time-wait", &f), "{state}");
    }
}

#[test]
fn canonical_text_parses_to_the_same_tree() {
    for text in [
        "dport 443 or dport 80 and pid 1",
        "!(src 10.0.0.1/8:80 || dst [2001:db8::]/32) comm \"my app\" state listen",
        "src ::ffff:10.0.0.0/104 and dst :443 and verdict path and side receiver",
    ] {
        let e = parse::parse(text).unwrap();
        let canonical = e.to_string();
        assert_eq!(
            parse::parse(&canonical).unwrap(),
            e,
            "{text} -> {canonical}"
        );
    }
    let e = parse::parse("dport 443 or dport 80 and not (pid 1 or comm x)").unwrap();
    assert_eq!(
        e.to_string(),
        "dport = :443 or (dport = :80 and not (pid = 1 or comm \"x\"))"
    );
    assert_eq!(
        parse::parse("src 10.1.2.3/8:80 dst [::ffff:1.2.3.4]/128")
            .unwrap()
            .to_string(),
        // Written as IPv6 it stays IPv6: it selects IPv6 sockets only.
        "src 10.0.0.0/8:80 and dst [::ffff:1.2.3.4]/128"
    );
}

#[test]
fn errors_point_at_the_column_and_say_what_was_expected() {
    // (text, column, expected starts with, found)
    let cases = [
        ("", 1, "a term", "empty filter"),
        ("   ", 1, "a term", "empty filter"),
        (
            "dport = foo",
            9,
            "a port number or a service name",
            "\"foo\"",
        ),
        (
            "dport = :nosuch",
            9,
            "a port number or a service name",
            "\":nosuch\"",
        ),
        ("dport = (", 9, "a port number or a service name", "\"(\""),
        (
            "dport = :70000",
            9,
            "a port number from 0 to 65535",
            "\":70000\"",
        ),
        ("pid = -1", 7, "a process id", "\"-1\""),
        (
            "dprot = :443",
            1,
            "a term (sport, dport, port, src, dst, state, comm, pid, cgroup, netns, verdict, \
             side, rate), \"not\" or \"(\"",
            "\"dprot\"",
        ),
        ("dport 443 bogus", 11, "a term", "\"bogus\""),
        (
            "(dport 443",
            11,
            "\")\" to close the \"(\" at column 1",
            "end of filter",
        ),
        (
            "dport 443)",
            10,
            "end of filter (no \"(\" is open)",
            "\")\"",
        ),
        ("dport 443 and", 14, "a term", "end of filter"),
        ("dport 443 or", 13, "a term", "end of filter"),
        ("not", 4, "a term", "end of filter"),
        (
            "state estab",
            7,
            "a state: established, syn-sent",
            "\"estab\"",
        ),
        (
            "verdict slow",
            9,
            "a verdict: receive_window, send_buffer",
            "\"slow\"",
        ),
        ("side both", 6, "a side: sender, receiver", "\"both\""),
        (
            "src 10.0.0.0/33",
            14,
            "a prefix length from 0 to 32",
            "\"33\"",
        ),
        (
            "dst [2001:db8::]/129",
            18,
            "a prefix length from 0 to 128",
            "\"129\"",
        ),
        (
            "src 10.0.0.1:nosuch",
            14,
            "a port number or a service",
            "\"nosuch\"",
        ),
        (
            "src 10.0.0.1:99999",
            14,
            "a port number from 0 to 65535, or \"*\"",
            "\"99999\"",
        ),
        ("src 10.0.0", 5, "an address like", "\"10.0.0\""),
        (
            "dst localhost",
            5,
            "an address like 10.0.0.0/8 or [2001:db8::1]:443, or \"*\" (host names are not \
             resolved)",
            "\"localhost\"",
        ),
        (
            "dst example.com:443",
            5,
            "an address like 10.0.0.0/8 or [2001:db8::1]:443, or \"*\" (host names",
            "\"example.com\"",
        ),
        ("src [::1", 5, "\"]\" to close", "\"[::1\""),
        (
            "src [::1]x",
            10,
            "\"/\" and a prefix length, \":\" and a port",
            "\"x\"",
        ),
        (
            "src [::1/64]/8",
            13,
            "\":\" and a port, or nothing after \"]\"",
            "\"/8\"",
        ),
        (
            "src < 10.0.0.1",
            5,
            "an address like 10.0.0.0/8, \"*\", \"=\" or \"!=\"",
            "\"<\"",
        ),
        (
            "state < established",
            7,
            "a state, \"=\" or \"!=\"",
            "\"<\"",
        ),
        (
            "comm \"my app",
            13,
            "a closing quote for the one at column 6",
            "end of filter",
        ),
        ("pid 1 &&& pid 2", 9, "a term", "\"&\""),
    ];
    for (text, column, expected, found) in cases {
        let e = err(text);
        assert_eq!(e.column, column, "{text:?}: {e}");
        assert!(e.expected.starts_with(expected), "{text:?}: {e}");
        assert_eq!(e.found, found, "{text:?}: {e}");
    }
    // The state list names every state, the verdict list every verdict.
    assert!(
        err("state x")
            .expected
            .contains("closed, all, connected, synchronized, bucket, big")
    );
    assert!(
        err("verdict x")
            .expected
            .ends_with("receiver_application, sender, unknown")
    );
}

/// Every message that lists the language's own tokens quotes them:
/// `..., "not" or "("`, never `..., not or (`, which reads like a typo.
#[test]
fn expected_messages_quote_the_tokens_they_name() {
    let services = Services::parse("ssh 22/tcp\n");
    // One text for each message the parser, the lexer and hosts give.
    let texts = [
        "",
        "dprot",
        "dport 443)",
        "(dport 443",
        &format!("{}pid 1", "(".repeat(MAX_DEPTH + 1)),
        "dport = nosuch",
        "dport = 70000",
        "pid x",
        "cgroup x",
        "netns < x",
        "netns a/b",
        "pid 99999999999",
        "comm (",
        "comm < x",
        "state < x",
        "state x",
        "verdict x",
        "side x",
        "src < 10.0.0.1",
        "src (",
        "src 10.0.0",
        "src localhost",
        "src [::1",
        "src [::1]x",
        "src [::1/64]/8",
        "src 10.0.0.1:nosuch",
        "src 10.0.0.1:70000",
        "src 10.0.0.0/33",
        "comm \"x",
    ];
    let mut messages = std::collections::BTreeSet::new();
    for text in texts {
        let e = parse::parse_with(text, &services).expect_err(text);
        messages.insert(e.expected);
    }
    // The builtin table's message too.
    let e = parse::parse_with("dport nosuch", &Services::builtin()).unwrap_err();
    messages.insert(e.expected);
    assert!(messages.len() >= 24, "{messages:#?}");
    for m in &messages {
        // A word made only of operator characters is a token left bare.
        let bare = m
            .split_whitespace()
            .map(|w| w.trim_end_matches(','))
            .find(|w| !w.is_empty() && w.chars().all(|c| "()[]=!<>*&|:/".contains(c)));
        assert_eq!(bare, None, "{m}");
        for keyword in ["not or", "and or", "nots"] {
            assert!(!m.contains(keyword), "{m}");
        }
    }
}

#[test]
fn error_text_is_one_line_with_a_caret_under_the_column() {
    let services = Services::parse("ssh 22/tcp\n");
    let e = parse::parse_with("dport = foo", &services).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at column 9: expected a port number or a service name from /etc/services, found \"foo\""
    );
    let e = parse::parse_with("dport = :nosuch", &services).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at column 9: expected a port number or a service name from /etc/services, found \
         \":nosuch\""
    );
    let e = err("dprot = :443");
    assert_eq!(
        e.to_string(),
        "at column 1: expected a term (sport, dport, port, src, dst, state, comm, pid, cgroup, \
         netns, verdict, side, rate), \"not\" or \"(\", found \"dprot\""
    );
    let e = err("dport = foo");
    assert_eq!(e.caret("dport = foo"), "dport = foo\n        ^");
    let text = "side \"a\nb\"";
    let e = err(text);
    assert_eq!(
        e.to_string(),
        r#"at column 6: expected a side: sender, receiver, found "\"a\nb\"""#
    );
    assert_eq!(e.caret(text), "side \"a b\"\n     ^");
    // Wide characters take two columns on a terminal.
    assert_eq!(
        err("comm 過濾 foo").caret("comm 過濾 foo"),
        "comm 過濾 foo\n          ^"
    );
    assert_eq!(err("pid").caret("pid"), "pid\n   ^");
}

#[test]
fn nesting_is_bounded() {
    let ok = format!(
        "{}dport 443{}",
        "(".repeat(MAX_DEPTH),
        ")".repeat(MAX_DEPTH)
    );
    assert!(sel(&ok, &v4_flow()));
    let nots = format!("{}dport 443", "not ".repeat(MAX_DEPTH));
    assert!(sel(&nots, &v4_flow()));
    let deep = format!("{}dport 443{}", "(".repeat(100_000), ")".repeat(100_000));
    let e = err(&deep);
    assert_eq!(e.column, MAX_DEPTH + 1);
    assert!(e.to_string().contains("filter nested too deeply"), "{e}");
    let e = err(&"!".repeat(100_000));
    assert_eq!(e.column, MAX_DEPTH + 1);
}

#[test]
fn filter_api() {
    let f: Filter = " dport = :443 ".parse().unwrap();
    assert_eq!(f.text(), " dport = :443 ");
    let g = f.clone();
    assert!(g.matches(&v4_flow(), None));
    assert!(format!("{g:?}").contains("Filter"));
    assert_eq!("pid x".parse::<Filter>().unwrap_err().column, 5);
}

#[test]
fn every_keyword_begins_a_term() {
    // Alone, each keyword is cut short after itself, never "expected a
    // term" at column 1: the list `top` tells expressions by is the
    // parser's own.
    for k in KEYWORDS {
        let e = parse::parse(k).unwrap_err();
        assert!(e.column > 1, "{k}: {e}");
        let upper = parse::parse(&k.to_uppercase()).unwrap_err();
        assert!(upper.column > 1, "{k}: {upper}");
    }
    assert_eq!(parse::parse("iperf3").unwrap_err().column, 1);
}

#[test]
fn a_filter_of_one_word_is_told_how_a_process_name_is_written() {
    let e = err("curl");
    assert_eq!(e.column, 1);
    assert_eq!(e.found, "\"curl\" (a process name is written comm curl)");
    // A word among terms, or a mistyped term, gets no such hint.
    assert_eq!(err("dport 443 bogus").found, "\"bogus\"");
    assert_eq!(err("dprot = :443").found, "\"dprot\"");
}
