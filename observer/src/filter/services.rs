//! Service names for ports (`dport = :ssh`, `dst 10.0.0.1:https`), as
//! `ss` resolves them with `getservbyname(3)`: the TCP entries of
//! `/etc/services`, names and aliases, read once per process. The parser
//! takes a [`Services`] so tests can give it their own table.

use std::{collections::HashMap, sync::OnceLock};

use super::number::number;

/// Where the system's table is.
const PATH: &str = "/etc/services";

/// The common TCP services, for a system without [`PATH`]. observer's
/// container image is built `FROM scratch` and has no `/etc/services`,
/// and `dport = :ssh` should not stop working inside it; ports are
/// IANA's, as every `/etc/services` has them.
pub(super) const BUILTIN: [(&str, u16); 23] = [
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

/// A table of TCP service names (lowercase) to ports.
#[derive(Debug)]
pub(super) struct Services {
    ports: HashMap<String, u16>,
    /// Whether this is [`BUILTIN`], for errors.
    builtin: bool,
}

impl Services {
    /// The system's table: [`PATH`], or [`BUILTIN`] where it cannot be
    /// read. Read on first use and kept.
    pub fn system() -> &'static Services {
        static SYSTEM: OnceLock<Services> = OnceLock::new();
        SYSTEM.get_or_init(|| match std::fs::read(PATH) {
            Ok(bytes) => Services::parse(&String::from_utf8_lossy(&bytes)),
            Err(_) => Services::builtin(),
        })
    }

    /// [`BUILTIN`].
    pub fn builtin() -> Services {
        Services {
            ports: BUILTIN.iter().map(|(n, p)| (n.to_string(), *p)).collect(),
            builtin: true,
        }
    }

    /// The TCP entries of `text`, in `/etc/services`' format: `name
    /// port/proto aliases...`, `#` to the end of a line a comment. The
    /// first entry for a name wins, as with `getservbyname(3)`; lines that
    /// do not fit are skipped.
    pub fn parse(text: &str) -> Services {
        let mut ports = HashMap::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or_default();
            let mut words = line.split_whitespace();
            let (Some(name), Some(port_proto)) = (words.next(), words.next()) else {
                continue;
            };
            let Some((port, proto)) = port_proto.split_once('/') else {
                continue;
            };
            let Ok(port) = port.parse::<u16>() else {
                continue;
            };
            if !proto.eq_ignore_ascii_case("tcp") {
                continue;
            }
            for name in std::iter::once(name).chain(words) {
                ports.entry(name.to_ascii_lowercase()).or_insert(port);
            }
        }
        Services {
            ports,
            builtin: false,
        }
    }

    /// A port written as a number (0 to 65535) or a service name: the
    /// port, or what was expected instead.
    pub fn resolve(&self, text: &str) -> Result<u16, String> {
        match number(text) {
            Some(n) => u16::try_from(n).map_err(|_| "a port number from 0 to 65535".to_string()),
            None => self.port(text).ok_or_else(|| self.expected()),
        }
    }

    /// The port of the service `name`, in any case.
    pub fn port(&self, name: &str) -> Option<u16> {
        self.ports.get(&name.to_ascii_lowercase()).copied()
    }

    /// What a port may be, for errors.
    pub fn expected(&self) -> String {
        if self.builtin {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            format!(
                "a port number or a service name (no /etc/services here; built in: {})",
                names.join(", ")
            )
        } else {
            format!("a port number or a service name from {PATH}")
        }
    }
}
