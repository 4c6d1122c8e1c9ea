//! The terms that are not one field of one end: `port` (either end) and
//! `rate` (the flow's rate, from its attribution).

use super::tests::{err, filter, sel, v4_flow};

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
