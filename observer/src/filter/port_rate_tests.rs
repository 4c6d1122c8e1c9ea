//! The terms that are not one field of one end: `port` (either end) and
//! `rate` (the flow's rate, from its attribution).

use super::{
    Filter, RATE_IN_COUNTERS,
    tests::{attribution, err, filter, sel, v4_flow},
};
use crate::attribution::{Attribution, Side, Verdict};

#[test]
fn port_is_either_end_with_every_port_form() {
    // 10.0.0.1:40000 -> 192.0.2.7:443.
    let f = v4_flow();
    for yes in [
        "port 443",
        "port :443",
        "port = :443",
        "port == 443",
        "port eq https",
        "port https",
        "port :https",
        "PORT 40000",
        "port = :40000",
        "port > 39999 and port < 444",
        "port >= 40000",
        "port <= 443",
        "port > 1024",
        "port lt 1024",
        "port != 22",
        "port ne :ssh",
        "not port 22",
    ] {
        assert!(sel(yes, &f), "{yes}");
    }
    for no in [
        "port 22",
        "port :ssh",
        "port > 40000",
        "port < 443",
        "port != 443",
        "port != :40000",
        "not port https",
    ] {
        assert!(!sel(no, &f), "{no}");
    }
}

#[test]
fn port_ne_is_neither_end_as_not_port() {
    // An ssh server's flow (local 22) and a client's (remote 22).
    let mut server = v4_flow();
    server.local.set_port(22);
    server.remote.set_port(51000);
    let mut client = v4_flow();
    client.local.set_port(51000);
    client.remote.set_port(22);
    for f in [&server, &client] {
        assert!(sel("port = :22", f) && sel("port ssh", f));
        assert!(!sel("port != :22", f) && !sel("port neq ssh", f));
        assert!(!sel("not port 22", f));
        // As sport/dport spell it.
        assert!(sel("sport = :22 or dport = :22", f));
    }
    let other = v4_flow();
    for text in ["port = 22", "port != 22"] {
        let plain = filter(text).matches(&other, None);
        assert_eq!(
            filter(&format!("not {text}")).matches(&other, None),
            !plain,
            "{text}"
        );
    }
    assert_eq!(
        sel("port != 22", &other),
        sel("not port 22", &other),
        "port != X is not port X"
    );
}

#[test]
fn port_errors_name_the_column() {
    let e = err("port = foo");
    assert_eq!((e.column, e.found.as_str()), (8, "\"foo\""), "{e}");
    assert!(
        e.expected.starts_with("a port number or a service name"),
        "{e}"
    );
    let e = err("port = :70000");
    assert_eq!(e.column, 8, "{e}");
    assert!(
        e.expected.starts_with("a port number from 0 to 65535"),
        "{e}"
    );
    let e = err("port");
    assert_eq!((e.column, e.found.as_str()), (5, "end of filter"), "{e}");
    // What tcpdump users type also parses: `port = :8099`, `port 8099`.
    for text in ["port = :8099", "port 8099", "port :8099"] {
        assert_eq!(filter(text).expr.to_string(), "port = :8099", "{text}");
    }
}

/// An attribution that moved `sent` bits/s and received `received`.
fn moving(sent: f64, received: f64) -> Attribution {
    let mut a = attribution(Verdict::Path, Side::Sender);
    a.evidence.rate_bps = sent;
    a.evidence.recv_rate_bps = received;
    a
}

#[test]
fn rate_compares_the_larger_direction_in_every_unit_form() {
    let f = v4_flow();
    // 12 Mbit/s sent, 0.3 received: the RATE column's 12.0 Mbit/s.
    let a = moving(12e6, 3e5);
    let judged = |text: &str| filter(text).matches(&f, Some(&a));
    for yes in [
        "rate > 10M",
        "rate > 10m",
        "rate >= 12M",
        "rate = 12000000",
        "rate == 12Mbit/s",
        "rate 12M",
        "rate gt 1.5Mbit/s",
        "rate >= 1.5Mbit/s",
        "rate > 11.9 Mbit/s",
        "rate < 12.1 Mbit/s",
        "rate<13M",
        "rate < 0.5G",
        "rate > 500k",
        "rate > 11999kbit",
        "rate != 0",
        "rate > 0",
        "RATE != 500k",
        "not rate < 10M",
    ] {
        assert!(judged(yes), "{yes}");
    }
    for no in [
        "rate < 10M",
        "rate > 12M",
        "rate = 0",
        "rate != 12M",
        "rate > 1G",
        "rate le 500k",
    ] {
        assert!(!judged(no), "{no}");
    }
    // A download: its receive rate is the flow's.
    let down = moving(4e3, 80e6);
    assert!(filter("rate > 50M").matches(&f, Some(&down)));
    // Idle: rate = 0.
    let idle = moving(0.0, 0.0);
    assert!(filter("rate = 0").matches(&f, Some(&idle)));
    assert!(!filter("rate > 0").matches(&f, Some(&idle)));
}

#[test]
fn rate_is_false_on_a_flow_not_judged() {
    let f = v4_flow();
    for text in ["rate > 10M", "rate < 10M", "rate = 0", "rate != 0"] {
        assert!(!sel(text, &f), "{text}");
        assert!(sel(&format!("not {text}"), &f), "{text}");
    }
    assert!(filter("dport 443 and rate > 1M").needs_attribution());
    assert!(filter("not (rate > 1M)").reads_rate());
    assert!(!filter("comm rate").reads_rate());
    assert!(!filter("dport 443 or verdict path").reads_rate());
}

#[test]
fn rate_errors_name_the_column_and_the_forms() {
    for (text, column, found) in [
        ("rate > fast", 8, "\"fast\""),
        ("rate > 10MB/s", 8, "\"10MB/s\""),
        ("rate > 10Mbps", 8, "\"10Mbps\""),
        ("rate > -5M", 8, "\"-5M\""),
        ("rate > 2000000G", 8, "\"2000000G\""),
        ("rate > 10M Mbit/s", 8, "\"10M\""),
        ("rate > Mbit/s", 8, "\"Mbit/s\""),
        ("rate >", 7, "end of filter"),
        ("rate > (", 8, "\"(\""),
        ("rate", 5, "end of filter"),
    ] {
        let e = err(text);
        assert_eq!((e.column, e.found.as_str()), (column, found), "{text}: {e}");
        assert!(
            e.expected.starts_with("a rate in bit/s, like 10M"),
            "{text}: {e}"
        );
    }
    // A word after a rate that is no unit is the next term, as ever.
    let e = err("rate > 10M Mbps");
    assert_eq!(
        (e.column, e.expected.starts_with("a term")),
        (12, true),
        "{e}"
    );
}

#[test]
fn rate_prints_back_in_its_shortest_unit() {
    for (text, canonical) in [
        ("rate > 10M", "rate > 10M"),
        ("rate >= 1.5Mbit/s", "rate >= 1500k"),
        ("rate gt 6.1 Mbit/s", "rate > 6100k"),
        ("rate < 500K", "rate < 500k"),
        ("rate = 0bit/s", "rate = 0"),
        ("rate 1.25G", "rate = 1250M"),
        ("rate ne 1234", "rate != 1234"),
    ] {
        assert_eq!(filter(text).expr.to_string(), canonical, "{text}");
    }
}

#[test]
fn run_refuses_a_rate_term_in_one_line() {
    for text in [
        "rate > 10M",
        "not rate < 500k",
        "dport 443 and (comm x or rate >= 1.5Mbit/s)",
    ] {
        let e = Filter::parse_for_counters(text).unwrap_err();
        assert_eq!(e, RATE_IN_COUNTERS, "{text}");
    }
    assert!(!RATE_IN_COUNTERS.contains('\n'));
    assert!(RATE_IN_COUNTERS.starts_with("run takes no rate term"));
    assert!(RATE_IN_COUNTERS.contains("leave it out"));
    // Everything else parses as ever, a mistake with its column.
    let f = Filter::parse_for_counters("port 443 and verdict path").unwrap();
    assert_eq!(f.text(), "port 443 and verdict path");
    assert!(Filter::parse_for_counters("comm rate").is_ok());
    let e = Filter::parse_for_counters("port = foo").unwrap_err();
    assert!(e.starts_with("at column 8: expected a port number"), "{e}");
}
