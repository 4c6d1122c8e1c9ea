//! The `--web-config` file: Prometheus exporter-toolkit's web configuration
//! format (the YAML file node_exporter's `--web.config.file` reads), parsed
//! and checked. Reading the certificates it names is [`super::tls`]'s job,
//! checking passwords [`super::auth`]'s.
//!
//! Keys and meanings are exporter-toolkit's, so a file written for
//! node_exporter works unchanged, with these differences, each refused
//! with a message rather than ignored: inline PEM (`cert`, `key`,
//! `client_ca`), `client_allowed_sans`, TLS 1.0 and 1.1, and a
//! `rate_limit` with a non-zero interval. `cipher_suites` and
//! `curve_preferences` take Go's names and narrow what rustls offers to
//! those it has (a list naming none it has is refused).
//! `prefer_server_cipher_suites` is accepted and
//! ignored (Go's TLS has ignored it since Go 1.18), as is
//! `http_server_config.http2` (observer speaks HTTP/1.1, which every
//! client of an HTTP/2 server speaks too). Unknown keys are errors, as in
//! exporter-toolkit (a strict YAML decode). Relative paths are taken from
//! the file's own folder. The per-client connection cap is a flag
//! (`--max-conns-per-client`), not a key: a key exporter-toolkit does not
//! know would make the file unusable by node_exporter and `promtool check
//! web-config`, which refuse unknown keys.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde::Deserialize;

/// What is wrong with a web-config file: one line, naming the file, the
/// key and the fix.
#[derive(Debug, thiserror::Error)]
#[error("--web-config {}: {problem}", path.display())]
pub struct WebConfigError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong and how to fix it.
    pub problem: String,
}

/// Who must present a client certificate, and whether it is verified
/// against `client_ca_file` (Go's `tls.ClientAuthType` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No certificate is asked for (the default).
    NoClientCert,
    /// One is asked for, and neither required nor verified.
    RequestClientCert,
    /// One is required, and not verified.
    RequireAnyClientCert,
    /// One is optional; one that is sent must verify.
    VerifyClientCertIfGiven,
    /// One is required and must verify against `client_ca_file`.
    RequireAndVerifyClientCert,
}

impl ClientAuth {
    /// Whether a sent certificate is checked against `client_ca_file`.
    pub fn verifies(self) -> bool {
        matches!(
            self,
            ClientAuth::VerifyClientCertIfGiven | ClientAuth::RequireAndVerifyClientCert
        )
    }
}

/// A TLS protocol version observer speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    /// TLS 1.2.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

/// The `tls_server_config` section, checked; paths made absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The server's certificate chain (PEM), re-read when it changes.
    pub cert_file: PathBuf,
    /// The server's private key (PEM), re-read when it changes.
    pub key_file: PathBuf,
    /// The client-certificate policy.
    pub client_auth: ClientAuth,
    /// The CAs client certificates must chain to (PEM).
    pub client_ca_file: Option<PathBuf>,
    /// The lowest version accepted.
    pub min_version: TlsVersion,
    /// The highest version accepted.
    pub max_version: TlsVersion,
    /// The TLS 1.2 suites allowed, by Go's names (TLS 1.3 suites are not
    /// configurable, as in Go); None: rustls's defaults.
    pub cipher_suites: Option<Vec<String>>,
    /// The key exchange groups allowed, in order, by Go's names
    /// (`X25519`, `CurveP256`, ...); None: rustls's defaults.
    pub curve_preferences: Option<Vec<String>>,
}

/// A web-config file, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebConfig {
    /// TLS, when the file sets it up; plain HTTP otherwise.
    pub tls: Option<TlsSettings>,
    /// User name to bcrypt hash; empty: no basic auth.
    pub users: BTreeMap<String, String>,
    /// Headers added to every response (name, value).
    pub headers: Vec<(String, String)>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFile {
    tls_server_config: Option<RawTls>,
    http_server_config: Option<RawHttp>,
    basic_auth_users: Option<Unique>,
    rate_limit: Option<RawRateLimit>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert_file: Option<String>,
    key_file: Option<String>,
    client_auth_type: Option<String>,
    client_ca_file: Option<String>,
    min_version: Option<String>,
    max_version: Option<String>,
    prefer_server_cipher_suites: Option<bool>,
    // exporter-toolkit's keys observer refuses (see the module's doc).
    cert: Option<serde_norway::Value>,
    key: Option<serde_norway::Value>,
    client_ca: Option<serde_norway::Value>,
    client_allowed_sans: Option<serde_norway::Value>,
    cipher_suites: Option<Vec<String>>,
    curve_preferences: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    http2: Option<bool>,
    headers: Option<Unique>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRateLimit {
    interval: Option<serde_norway::Value>,
    burst: Option<serde_norway::Value>,
}

/// A map of strings in which no key comes twice (Go's strict YAML decode
/// refuses a repeated key; a plain map would keep the last).
#[derive(Default)]
struct Unique(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Unique;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of strings to strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Unique, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((k, v)) = m.next_entry::<String, String>()? {
                    if out.contains_key(&k) {
                        return Err(serde::de::Error::custom(format!("duplicate key {k}")));
                    }
                    out.insert(k, v);
                }
                Ok(Unique(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The response headers a file may set, and the values each allows (any,
/// when empty): exporter-toolkit's list, kept small on purpose so that
/// exporters behave alike.
const HEADERS: &[(&str, &[&str])] = &[
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

impl WebConfig {
    /// Reads and checks the file at `path`.
    ///
    /// # Errors
    /// The file cannot be read, is not YAML of this format, or asks for
    /// something observer does not do.
    pub fn load(path: &Path) -> Result<WebConfig, WebConfigError> {
        let err = |problem: String| WebConfigError {
            path: path.to_path_buf(),
            problem,
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            err(format!(
                "cannot read it ({e}); check the path and its permissions"
            ))
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        WebConfig::parse(&text, dir).map_err(err)
    }

    /// Checks the file's `text`, with relative paths taken from `dir`.
    ///
    /// # Errors
    /// One line saying what is wrong and how to fix it.
    pub fn parse(text: &str, dir: &Path) -> Result<WebConfig, String> {
        let raw: RawFile = match serde_norway::from_str::<Option<RawFile>>(text) {
            Ok(raw) => raw.unwrap_or_default(),
            Err(e) => {
                let msg = e.to_string().replace('\n', " ");
                return Err(format!(
                    "{msg} (the format is exporter-toolkit's web configuration: \
                     tls_server_config, http_server_config, basic_auth_users)"
                ));
            }
        };
        if let Some(r) = &raw.rate_limit {
            check_rate_limit(r)?;
        }
        let tls = match raw.tls_server_config {
            Some(t) => tls_settings(t, dir)?,
            None => None,
        };
        let users = raw.basic_auth_users.unwrap_or_default().0;
        for (user, hash) in &users {
            check_hash(user, hash)?;
        }
        let mut headers = Vec::new();
        let http = raw.http_server_config.unwrap_or_default();
        // `http2` is accepted either way: observer speaks HTTP/1.1 only.
        let _ = http.http2;
        for (name, value) in http.headers.unwrap_or_default().0 {
            if let Some(h) = header(&name, &value)? {
                headers.push(h);
            }
        }
        Ok(WebConfig {
            tls,
            users,
            headers,
        })
    }
}

fn check_rate_limit(r: &RawRateLimit) -> Result<(), String> {
    let _ = &r.burst;
    let zero = match &r.interval {
        None | Some(serde_norway::Value::Null) => true,
        Some(serde_norway::Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(serde_norway::Value::String(s)) => {
            crate::args::parse_duration_or_zero(s).is_ok_and(|d| d.is_zero())
        }
        Some(_) => false,
    };
    if zero {
        Ok(())
    } else {
        Err(
            "rate_limit: observer has no request rate limiter (it caps connections at 512, \
             each client's at --max-conns-per-client, and their header time at 5 s); remove \
             rate_limit or set its interval to 0"
                .into(),
        )
    }
}

/// exporter-toolkit's `tls_server_config` keys observer refuses, each with
/// the fix; in the order [`tls_settings`] lists whether they are set.
const REFUSED: [(&str, &str); 4] = [
    ("cert", "write the PEM to a file and name it in cert_file"),
    ("key", "write the PEM to a file and name it in key_file"),
    (
        "client_ca",
        "write the PEM to a file and name it in client_ca_file",
    ),
    (
        "client_allowed_sans",
        "observer cannot match client certificate SANs: remove it and sign the scrapers' \
         certificates with a CA of their own (client_ca_file)",
    ),
];

/// The cipher suite names Go's `tls.CipherSuites()` has listed (what
/// exporter-toolkit takes); of these, rustls has the TLS 1.3 ones and the
/// ECDHE AES-GCM and ChaCha20-Poly1305 ones.
pub const GO_CIPHER_SUITES: &[&str] = &[
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
];

/// The curve names exporter-toolkit takes.
pub const GO_CURVES: &[&str] = &["CurveP256", "CurveP384", "CurveP521", "X25519"];

/// The `tls_server_config` section checked: None when it sets nothing
/// (exporter-toolkit then serves plain HTTP).
fn tls_settings(t: RawTls, dir: &Path) -> Result<Option<TlsSettings>, String> {
    let set = [
        t.cert.is_some(),
        t.key.is_some(),
        t.client_ca.is_some(),
        t.client_allowed_sans.is_some(),
    ];
    for (key, names, known) in [
        ("cipher_suites", &t.cipher_suites, GO_CIPHER_SUITES),
        ("curve_preferences", &t.curve_preferences, GO_CURVES),
    ] {
        if let Some(bad) = names
            .iter()
            .flatten()
            .find(|n| !known.contains(&n.as_str()))
        {
            return Err(format!(
                "tls_server_config.{key} '{bad}' is not one of Go's names: {}",
                known.join(", ")
            ));
        }
    }
    if let Some(((key, fix), _)) = REFUSED.iter().zip(set).find(|(_, set)| *set) {
        return Err(format!("tls_server_config.{key} is not supported: {fix}"));
    }
    let _ = t.prefer_server_cipher_suites;
    let nonempty = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
    let enabled = nonempty(&t.cert_file)
        || nonempty(&t.key_file)
        || nonempty(&t.client_ca_file)
        || nonempty(&t.client_auth_type);
    if !enabled {
        return Ok(None);
    }
    let path = |key: &str, v: &Option<String>| -> Result<PathBuf, String> {
        match v.as_deref() {
            Some(p) if !p.is_empty() => Ok(dir.join(p)),
            _ => Err(format!(
                "tls_server_config.{key} is missing: name the PEM file (TLS needs both cert_file \
                 and key_file)"
            )),
        }
    };
    let cert_file = path("cert_file", &t.cert_file)?;
    let key_file = path("key_file", &t.key_file)?;
    let client_auth = match t.client_auth_type.as_deref().unwrap_or("") {
        "" | "NoClientCert" => ClientAuth::NoClientCert,
        "RequestClientCert" => ClientAuth::RequestClientCert,
        // The second name is exporter-toolkit's older spelling.
        "RequireAnyClientCert" | "RequireClientCert" => ClientAuth::RequireAnyClientCert,
        "VerifyClientCertIfGiven" => ClientAuth::VerifyClientCertIfGiven,
        "RequireAndVerifyClientCert" => ClientAuth::RequireAndVerifyClientCert,
        other => {
            return Err(format!(
                "tls_server_config.client_auth_type '{other}' is not one of NoClientCert, \
                 RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, \
                 RequireAndVerifyClientCert"
            ));
        }
    };
    let client_ca_file = t
        .client_ca_file
        .as_deref()
        .filter(|p| !p.is_empty())
        .map(|p| dir.join(p));
    if client_ca_file.is_some() && client_auth == ClientAuth::NoClientCert {
        return Err(
            "tls_server_config.client_ca_file is set but client_auth_type is \
                    NoClientCert: set client_auth_type: RequireAndVerifyClientCert (or remove \
                    client_ca_file)"
                .into(),
        );
    }
    if client_ca_file.is_none() && client_auth.verifies() {
        return Err(format!(
            "tls_server_config.client_auth_type {client_auth:?} verifies client certificates \
             but client_ca_file is missing: name the PEM file of the CAs that sign them"
        ));
    }
    let min_version = version("min_version", t.min_version.as_deref(), TlsVersion::Tls12)?;
    let max_version = version("max_version", t.max_version.as_deref(), TlsVersion::Tls13)?;
    if min_version > max_version {
        return Err("tls_server_config.min_version is above max_version: swap them".into());
    }
    Ok(Some(TlsSettings {
        cert_file,
        key_file,
        client_auth,
        client_ca_file,
        min_version,
        max_version,
        cipher_suites: t.cipher_suites,
        curve_preferences: t.curve_preferences,
    }))
}

fn version(key: &str, v: Option<&str>, default: TlsVersion) -> Result<TlsVersion, String> {
    match v.unwrap_or("") {
        "" => Ok(default),
        "TLS12" => Ok(TlsVersion::Tls12),
        "TLS13" => Ok(TlsVersion::Tls13),
        "TLS10" | "TLS11" => Err(format!(
            "tls_server_config.{key} {}: observer speaks TLS 1.2 and 1.3 only; use TLS12",
            v.unwrap_or("")
        )),
        other => Err(format!(
            "tls_server_config.{key} '{other}' is not a TLS version: use TLS12 or TLS13"
        )),
    }
}

/// The highest bcrypt cost a hash may have: each step doubles a check's
/// time (cost 12 took 367 ms here, so 16 takes about 6 s, near
/// Prometheus's default 10 s scrape timeout); a higher one would make the
/// first scrape time out and let one guess hold a core for minutes.
pub const MAX_BCRYPT_COST: u32 = 16;

/// Checks that `hash` is a bcrypt hash a password can match (what
/// exporter-toolkit requires: `$2a$`, `$2b$` or `$2y$`, cost 4 and up),
/// no dearer than [`MAX_BCRYPT_COST`], for a user name basic auth can
/// carry (no `:`, RFC 7617).
fn check_hash(user: &str, hash: &str) -> Result<(), String> {
    if user.contains(':') {
        return Err(format!(
            "basic_auth_users.{user}: a user name cannot contain ':' (basic auth splits at \
             the first one); rename the user"
        ));
    }
    let known = ["$2a$", "$2b$", "$2y$"].iter().any(|p| hash.starts_with(p));
    match hash.parse::<bcrypt::HashParts>() {
        Ok(parts) if known && (4..=MAX_BCRYPT_COST).contains(&parts.get_cost()) => Ok(()),
        Ok(parts) if known => Err(format!(
            "basic_auth_users.{user} has bcrypt cost {}: use a cost from 4 to {MAX_BCRYPT_COST} \
             (10-12 is usual; each step doubles the time a check takes)",
            parts.get_cost()
        )),
        _ => Err(format!(
            "basic_auth_users.{user} is not a bcrypt hash (like $2y$10$...): hash the password \
             with `htpasswd -nBC 10 \"\" | tr -d ':\\n'` and put that here"
        )),
    }
}

/// Checks a response header against [`HEADERS`]; None for a blank value
/// (unset, as exporter-toolkit documents).
fn header(name: &str, value: &str) -> Result<Option<(String, String)>, String> {
    let Some((_, allowed)) = HEADERS.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = HEADERS.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "http_server_config.headers.{name} cannot be set; the headers that can are {}",
            names.join(", ")
        ));
    };
    if !allowed.is_empty() && !allowed.contains(&value) {
        return Err(format!(
            "http_server_config.headers.{name} '{value}' is not one of {}",
            allowed.join(", ")
        ));
    }
    if value.is_empty() {
        return Ok(None);
    }
    if value.bytes().any(|b| b < 0x20 && b != b'\t' || b == 0x7f) {
        return Err(format!(
            "http_server_config.headers.{name} holds a control character: remove it"
        ));
    }
    Ok(Some((name.to_string(), value.to_string())))
}

#[cfg(test)]
#[path = "web_config_tests.rs"]
mod tests;
