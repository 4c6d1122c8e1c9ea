//! The grammar: precedence, canonical text, errors and their columns,
//! nesting, the API.

use super::{
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
        "src 10.0.0.0/8:80 and dst 1.2.3.4/32"
    );
}

#[test]
fn errors_point_at_the_column_and_say_what_was_expected() {
    // (text, column, expected starts with, found)
    let cases = [
        ("", 1, "a term", "empty filter"),
        ("   ", 1, "a term", "empty filter"),
        ("dport = foo", 9, "a port like :443 or 443", "\"foo\""),
        (
            "dport = :70000",
            9,
            "a port like :443 or 443 (0 to 65535)",
            "\":70000\"",
        ),
        ("pid = -1", 7, "a process id", "\"-1\""),
        ("dprot = :443", 1, "a term (sport, dport", "\"dprot\""),
        ("dport 443 bogus", 11, "a term", "\"bogus\""),
        (
            "(dport 443",
            11,
            ") to close the ( at column 1",
            "end of filter",
        ),
        ("dport 443)", 10, "end of filter (no ( is open)", "\")\""),
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
        ("src 10.0.0.1:http", 14, "a port like 443", "\"http\""),
        ("src 10.0.0", 5, "an address like", "\"10.0.0\""),
        ("src [::1", 5, "a ] to close", "\"[::1\""),
        ("src < 10.0.0.1", 5, "an address like", "\"<\""),
        (
            "comm \"my app",
            13,
            "a \" to close the quote at column 6",
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

#[test]
fn error_text_is_one_line_with_a_caret_under_the_column() {
    let e = err("dport = foo");
    assert_eq!(
        e.to_string(),
        "at column 9: expected a port like :443 or 443, found \"foo\""
    );
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
