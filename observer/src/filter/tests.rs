//! Each term on flows built with the test kit.

use std::net::SocketAddr;

use super::*;
use crate::{
    attribution::{Evidence, Side, Verdict},
    testkit::sample::{SampleBuilder, v4},
};

/// `10.0.0.1:40000 -> 192.0.2.7:443`, iperf3 pid 1234, established.
pub(super) fn v4_flow() -> Flow {
    let mut f = SampleBuilder::new(1)
        .ends(v4(10, 0, 0, 1), 40000, v4(192, 0, 2, 7), 443)
        .comm("iperf3")
        .pid(1234)
        .flow();
    f.cgroup_id = 5555;
    f.netns = 4_026_531_840;
    f
}

/// `[2001:db8::1]:5201 <- [2001:db8:1::9]:50000`, nginx pid 77.
pub(super) fn v6_flow() -> Flow {
    let mut f = v4_flow();
    f.local = addr("[2001:db8::1]:5201");
    f.remote = addr("[2001:db8:1::9]:50000");
    f.family = "inet6";
    f.comm = "nginx: worker".to_string();
    f.pid = 77;
    f
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

pub(super) fn attribution(verdict: Verdict, side: Side) -> Attribution {
    Attribution {
        verdict,
        rule: "test",
        confidence: 0.9,
        side,
        explanation: String::new(),
        evidence: Evidence::default(),
        what_if: None,
        also: None,
    }
}

pub(super) fn filter(text: &str) -> Filter {
    Filter::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}\n{}", e.caret(text)))
}

/// Whether `text` selects `flow` (not judged).
pub(super) fn sel(text: &str, flow: &Flow) -> bool {
    filter(text).matches(flow, None)
}

pub(super) fn err(text: &str) -> ParseError {
    match Filter::parse(text) {
        Ok(f) => panic!("{text:?} parsed: {f:?}"),
        Err(e) => e,
    }
}

#[test]
fn ports_with_every_operator_spelling() {
    let f = v4_flow();
    for yes in [
        "dport = :443",
        "dport == 443",
        "dport :443",
        "dport 443",
        "dport eq :443",
        "dport>=443",
        "dport ge 443",
        "dport <= :443",
        "dport le 443",
        "dport > 442",
        "dport gt 442",
        "dport < 444",
        "dport LT 444",
        "dport != 80",
        "dport neq 80",
        "dport ne 80",
        "sport = :40000",
        "SPORT > 1024",
    ] {
        assert!(sel(yes, &f), "{yes}");
    }
    for no in [
        "dport = :80",
        "dport != 443",
        "dport < 443",
        "dport > 443",
        "sport = :443",
    ] {
        assert!(!sel(no, &f), "{no}");
    }
}

#[test]
fn numbers_of_the_owner() {
    let f = v4_flow();
    for yes in [
        "pid 1234",
        "pid = 1234",
        "pid > 1000",
        "cgroup = 5555",
        "cgroup != 1",
        "netns 4026531840",
    ] {
        assert!(sel(yes, &f), "{yes}");
    }
    for no in [
        "pid 1",
        "pid < 1234",
        "cgroup = 5556",
        "netns != 4026531840",
    ] {
        assert!(!sel(no, &f), "{no}");
    }
}

#[test]
fn a_namespace_by_its_ip_netns_name() {
    let mut f = v4_flow();
    f.netns_name = Some("blue".into());
    for yes in [
        "netns blue",
        "netns = blue",
        "netns == \"blue\"",
        "netns eq blue",
        "NETNS = blue",
        "netns != red",
        "netns ne red",
        "not netns red",
        "netns 4026531840 and netns blue",
    ] {
        assert!(sel(yes, &f), "{yes}");
    }
    for no in [
        "netns red",
        "netns = Blue",
        "netns != blue",
        "netns \"4026531840\"",
    ] {
        assert!(!sel(no, &f), "{no}");
    }
    // A namespace without a name: no name selects it.
    let unnamed = v4_flow();
    assert!(!sel("netns blue", &unnamed));
    assert!(sel("netns != blue", &unnamed));
    // Unquoted, a number is an inode; quoted, a name.
    f.netns_name = Some("123".into());
    assert!(sel("netns \"123\"", &f));
    assert!(!sel("netns 123", &f));
    // Only = and != take a name, and a name is one `ip netns add` takes.
    assert_eq!(
        err("netns < blue").to_string(),
        "at column 9: expected a network namespace inode number (a name takes only \"=\" or \
         \"!=\"), found \"blue\""
    );
    for bad in ["netns a/b", "netns \"\"", "netns ..", "netns = \".\""] {
        assert!(err(bad).expected.contains("ip netns"), "{bad}");
    }
    // Printed quoted, and listed for the warning at start.
    let g = filter("netns blue and netns != \"r\\\"d\"");
    assert_eq!(
        g.expr.to_string(),
        "netns = \"blue\" and not netns = \"r\\\"d\""
    );
    assert_eq!(g.netns_names(), ["blue", "r\"d"]);
    assert!(filter("netns 1 or pid 2").netns_names().is_empty());
}

#[test]
fn v4_hosts_prefixes_and_ports() {
    let f = v4_flow();
    for yes in [
        "src 10.0.0.1",
        "src 10.0.0.0/8",
        "src = 10.0.0.1/8",
        "src == 10.0.0.1:40000",
        "src 10.0.0.0/24:40000",
        "dst 192.0.2.0/24",
        "dst 192.0.2.7:443",
        "dst *",
        "dst *:443",
        "dst :443",
        "dst 192.0.2.7:*",
        "src 0.0.0.0/0",
        "src != 10.0.0.2",
        "dst neq 10.0.0.0/8",
    ] {
        assert!(sel(yes, &f), "{yes}");
    }
    for no in [
        "src 10.0.0.2",
        "src 11.0.0.0/8",
        "src 10.0.0.1:80",
        "dst *:80",
        "dst 10.0.0.0/8",
        "src 2001:db8::/32",
        "src != 10.0.0.1",
        // Written as IPv6, a prefix selects IPv6 sockets only, as in ss:
        // never a plain IPv4 socket, even one it covers.
        "src ::/0",
        "src ::ffff:10.0.0.1",
        "src [::ffff:10.0.0.0]/104",
        "src [::ffff:0:0/96]",
    ] {
        assert!(!sel(no, &f), "{no}");
    }
}

#[test]
fn an_ipv4_filter_matches_an_ipv4_mapped_flow_address() {
    // An IPv6 socket with an IPv4-mapped address (a server on [::]
    // accepting an IPv4 client): IPv4 terms and IPv6 ones select it.
    let mut f = v4_flow();
    f.local = addr("[::ffff:10.0.0.1]:40000");
    f.family = "inet6";
    for yes in [
        "src 10.0.0.1",
        "src 10.0.0.0/8:40000",
        "src ::ffff:10.0.0.1",
        "src ::/0",
        "src [::ffff:0:0/96]",
    ] {
        assert!(sel(yes, &f), "{yes}");
    }
    assert!(!sel("src 10.0.0.2", &f));
}

#[test]
fn v6_hosts_prefixes_and_ports() {
    let f = v6_flow();
    for yes in [
        "src 2001:db8::1",
        "src [2001:db8::1]",
        "src [2001:db8::1]:5201",
        "src 2001:db8::/32",
        "src [2001:db8::]/32",
        "src [2001:db8::]/32:5201",
        "src [2001:db8::/32]:5201",
        "dst 2001:db8:1::/48",
        "dst [2001:DB8:1::9]:50000",
        "src 2001:db8::ffff/64",
    ] {
        assert!(sel(yes, &f), "{yes}");
    }
    for no in [
        "src [2001:db8::1]:80",
        "dst 2001:db8:2::/48",
        "src 10.0.0.0/8",
        "src 0.0.0.0/0",
        "src 2001:db8::2",
    ] {
        assert!(!sel(no, &f), "{no}");
    }
}

#[test]
fn states_and_groups() {
    // (state, closed, the names that select it)
    let cases: [(&str, bool, &[&str]); 6] = [
        (
            "established",
            false,
            &["established", "connected", "synchronized", "big", "all"],
        ),
        ("syn-sent", false, &["syn-sent", "connected", "big", "all"]),
        (
            "time-wait",
            false,
            &["time-wait", "connected", "synchronized", "bucket", "all"],
        ),
        ("listen", false, &["listening", "listen", "big", "all"]),
        // A closed flow is closed whatever its last state.
        ("established", true, &["closed", "close", "big", "all"]),
        ("unknown", false, &["all"]),
    ];
    for (state, closed, names) in cases {
        let mut f = v4_flow();
        f.state = state;
        f.closed = closed;
        for (name, _) in ast::StateSel::NAMES {
            let want = names.contains(&name);
            assert_eq!(
                sel(&format!("state {name}"), &f),
                want,
                "{state} {closed} {name}"
            );
        }
    }
    let mut f = v4_flow();
    f.state = "close-wait";
    assert!(sel("state CLOSE-WAIT", &f) && sel("state != established", &f));
    assert!(sel("state synchronized and not state bucket", &f));
}

#[test]
fn comm_exact_and_wildcards() {
    let f = v4_flow();
    for yes in [
        "comm iperf3",
        "comm = iperf3",
        "comm iperf*",
        "comm ?perf?",
        "comm *",
        "comm \"iperf3\"",
        "comm *3",
    ] {
        assert!(sel(yes, &f), "{yes}");
    }
    for no in [
        "comm iperf",
        "comm IPERF3",
        "comm != iperf3",
        "comm ?perf",
        "comm *x*",
    ] {
        assert!(!sel(no, &f), "{no}");
    }
    let g = v6_flow();
    assert!(sel("comm \"nginx: worker\"", &g));
    assert!(sel("comm \"nginx:*\"", &g));
    assert!(!sel("comm nginx:", &g));
    let mut h = v4_flow();
    h.comm = "a\"b\\c".to_string();
    assert!(sel(r#"comm "a\"b\\c""#, &h));
}

#[test]
fn glob_backtracks_without_blowing_up() {
    assert!(eval::glob("*a*b*c", "xxaxxbxxc"));
    assert!(!eval::glob("*a*b*c", "xxaxxbxx"));
    assert!(eval::glob("", ""));
    assert!(!eval::glob("", "a"));
    let long = "a".repeat(5000);
    assert!(!eval::glob(&format!("{}b", "*a".repeat(200)), &long));
}

#[test]
fn verdict_and_side_need_an_attribution() {
    let f = v4_flow();
    let a = attribution(Verdict::ReceiveWindow, Side::Receiver);
    let judged = |text: &str| filter(text).matches(&f, Some(&a));
    assert!(judged("verdict receive_window") && judged("VERDICT Receive_Window"));
    assert!(judged("side receiver") && judged("side != sender"));
    assert!(!judged("verdict path") && !judged("side sender"));
    for v in Verdict::ALL {
        let text = format!("verdict {v}");
        assert_eq!(
            filter(&text).matches(&f, Some(&a)),
            v == Verdict::ReceiveWindow
        );
        // Not judged: the term is false, so its negation selects.
        assert!(!sel(&text, &f));
        assert!(sel(&format!("not {text}"), &f));
    }
    assert!(!sel("side receiver", &f) && !sel("side sender", &f));
    assert!(filter("dport 443 and (verdict path or side sender)").needs_attribution());
    assert!(filter("not not side sender").needs_attribution());
    assert!(!filter("dport 443 or comm verdict").needs_attribution());
}
