//! Service names for ports: the `/etc/services` reader, the built-in
//! table, and names in `sport`/`dport` and host ports.

use super::{
    parse::parse_with,
    services::{BUILTIN, Services},
    tests::{sel, v4_flow},
    *,
};

/// A small `/etc/services`, with the shapes the real one has.
const TABLE: &str = "\
# Network services, Internet style
tcpmux\t\t1/tcp\t\t\t\t# TCP port service multiplexer

ssh\t\t22/tcp\t\t\t\t# SSH Remote Login Protocol
http\t\t80/tcp\t\twww\t\t# WorldWideWeb HTTP
https\t\t443/tcp
https\t\t443/udp
ntp\t\t123/udp
fsp\t\t21/udp\t\tfspd
kerberos\t88/tcp\t\tkerberos5 krb5 kerberos-sec\t# Kerberos v5
Mixed\t\t4000/tcp
www\t\t8000/tcp\t\t# a second www: the first one wins
broken\t\t70000/tcp
noport
nosl\t\t99
iperf\t\t5201/TCP\tiperf3#comment right after
";

fn table() -> Services {
    Services::parse(TABLE)
}

#[test]
fn the_services_file_gives_tcp_names_and_aliases() {
    let s = table();
    for (name, port) in [
        ("tcpmux", 1),
        ("ssh", 22),
        ("http", 80),
        ("www", 80),
        ("https", 443),
        ("kerberos", 88),
        ("kerberos5", 88),
        ("krb5", 88),
        ("kerberos-sec", 88),
        ("mixed", 4000),
        ("MIXED", 4000),
        ("SSH", 22),
        ("iperf", 5201),
        ("iperf3", 5201),
    ] {
        assert_eq!(s.port(name), Some(port), "{name}");
    }
    // UDP only, comments, lines that do not fit, and names not there.
    for name in [
        "ntp",
        "fsp",
        "fspd",
        "Network",
        "services",
        "SSH Remote",
        "Remote",
        "broken",
        "noport",
        "nosl",
        "comment",
        "",
        "nosuch",
    ] {
        assert_eq!(s.port(name), None, "{name}");
    }
    assert_eq!(Services::parse("").port("ssh"), None);
}

#[test]
fn the_builtin_table_has_the_common_services() {
    let want = [
        ("ssh", 22),
        ("http", 80),
        ("https", 443),
        ("domain", 53),
        ("smtp", 25),
        ("imap", 143),
        ("imaps", 993),
        ("pop3", 110),
        ("pop3s", 995),
        ("ldap", 389),
        ("ldaps", 636),
        ("mysql", 3306),
        ("postgresql", 5432),
        ("redis", 6379),
        ("http-alt", 8080),
        ("ftp", 21),
        ("telnet", 23),
        ("submission", 587),
        ("bgp", 179),
        ("ntp", 123),
        ("snmp", 161),
        ("kerberos", 88),
        ("rsync", 873),
    ];
    let b = Services::builtin();
    for (name, port) in want {
        assert_eq!(b.port(name), Some(port), "{name}");
    }
    assert_eq!(BUILTIN.len(), want.len());
    assert_eq!(b.port("www"), None);
    // Where this system has an /etc/services, the table agrees with it on
    // every name it lists for TCP.
    if let Ok(text) = std::fs::read_to_string("/etc/services") {
        let system = Services::parse(&text);
        for (name, port) in BUILTIN {
            if let Some(p) = system.port(name) {
                assert_eq!(p, port, "{name}: /etc/services says {p}");
            }
        }
    }
}

#[test]
fn system_services_resolve_ssh_and_http() {
    // In every /etc/services and in the built-in table alike.
    let s = Services::system();
    assert_eq!(s.port("ssh"), Some(22));
    assert_eq!(s.port("http"), Some(80));
    assert!(std::ptr::eq(s, Services::system()), "read once");
}

#[test]
fn ports_by_service_name_as_ss_takes_them() {
    // 10.0.0.1:40000 -> 192.0.2.7:443
    let mut f = v4_flow();
    for yes in [
        "dport = :https",
        "dport :https",
        "dport https",
        "dport == :HTTPS",
        "dport != :ssh",
        "sport > :ssh",
        "dport ge http",
    ] {
        assert!(sel(yes, &f), "{yes}");
    }
    for no in ["dport = :ssh", "dport = :http", "sport = :https"] {
        assert!(!sel(no, &f), "{no}");
    }
    // The example in `man ss`.
    let example = "( dport = :ssh or sport = :ssh )";
    assert!(!sel(example, &f));
    f.remote.set_port(22);
    assert!(sel(example, &f) && sel("dport = :ssh", &f));
    f.remote.set_port(80);
    f.local.set_port(22);
    assert!(sel(example, &f) && sel("sport = :ssh", &f));
    assert!(sel("sport = :ssh dport = :http", &f));
}

#[test]
fn names_come_from_the_table_given() {
    let s = table();
    let p = |text: &str| parse_with(text, &s);
    assert_eq!(
        p("dport = :krb5").unwrap(),
        p("dport = :88").unwrap(),
        "alias"
    );
    assert_eq!(p("sport www").unwrap(), p("sport 80").unwrap());
    assert_eq!(p("dst *:iperf3").unwrap(), p("dst *:5201").unwrap());
    // Canonical text gives the number.
    assert_eq!(p("dport = :https").unwrap().to_string(), "dport = :443");
    assert_eq!(
        p("src 10.0.0.1:ssh").unwrap().to_string(),
        "src 10.0.0.1/32:22"
    );
    // Not in this table, though in the built-in one: an error.
    let e = p("dport = :postgresql").unwrap_err();
    assert_eq!((e.column, e.found.as_str()), (9, "\":postgresql\""));
    let b = Services::builtin();
    assert_eq!(
        parse_with("dport = :postgresql", &b).unwrap(),
        p("dport = :5432").unwrap()
    );
}

#[test]
fn an_unknown_name_is_an_error_at_its_column() {
    let s = table();
    let e = parse_with("pid 1 and dport = :nosuch", &s).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at column 19: expected a port number or a service name from /etc/services, found \
         \":nosuch\""
    );
    let e = parse_with("sport nosuch", &s).unwrap_err();
    assert_eq!((e.column, e.found.as_str()), (7, "\"nosuch\""));
    let e = parse_with("dport = :", &s).unwrap_err();
    assert_eq!((e.column, e.found.as_str()), (9, "\":\""));
    let e = parse_with("dst [2001:db8::1]:nosuch", &s).unwrap_err();
    assert_eq!(e.column, 19);
    assert_eq!(
        e.expected,
        "a port number or a service name from /etc/services, or \"*\""
    );
    // UDP only in the table.
    assert_eq!(parse_with("dport ntp", &s).unwrap_err().column, 7);
    // Without /etc/services the message says so and names what is known.
    let e = parse_with("dport = :nosuch", &Services::builtin()).unwrap_err();
    assert!(
        e.expected.starts_with(
            "a port number or a service name (no /etc/services here; built in: ssh, http, https,"
        ),
        "{e}"
    );
    assert!(e.expected.ends_with("kerberos, rsync)"), "{e}");
}

#[test]
fn host_ports_by_service_name() {
    let f = v4_flow();
    for yes in [
        "dst 192.0.2.7:https",
        "dst :https",
        "dst *:https",
        "dst 192.0.2.0/24:HTTPS",
    ] {
        assert!(sel(yes, &f), "{yes}");
    }
    // Written as IPv6, it selects IPv6 sockets only (this one is IPv4).
    for no in [
        "dst :http",
        "dst 192.0.2.7:ssh",
        "src *:https",
        "dst [::ffff:192.0.2.7]:https",
    ] {
        assert!(!sel(no, &f), "{no}");
    }
}

#[test]
fn the_filter_api_resolves_names() {
    let f: Filter = "dport = :http".parse().unwrap();
    let mut flow = v4_flow();
    flow.remote.set_port(80);
    assert!(f.matches(&flow, None));
    assert_eq!(f.text(), "dport = :http");
}
