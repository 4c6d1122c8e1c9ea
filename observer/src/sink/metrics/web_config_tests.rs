//! The web-config parser: good files as exporter-toolkit documents them,
//! and each bad one refused with its one line.

use std::path::{Path, PathBuf};

use super::*;

/// A bcrypt hash (cost 4) of "pw".
fn hash() -> String {
    bcrypt::hash("pw", 4).unwrap()
}

fn parse(text: &str) -> Result<WebConfig, String> {
    WebConfig::parse(text, Path::new("/etc/observer"))
}

/// The error of `text`, checked to be one line.
fn refused(text: &str) -> String {
    let e = parse(text).expect_err(text);
    assert!(!e.contains('\n'), "more than one line: {e}");
    e
}

#[test]
fn an_empty_file_is_plain_http_without_auth() {
    assert_eq!(parse("").unwrap(), WebConfig::default());
    assert_eq!(parse("# nothing\n").unwrap(), WebConfig::default());
    assert_eq!(parse("tls_server_config:\n").unwrap(), WebConfig::default());
}

#[test]
fn a_node_exporter_file_with_tls_auth_and_headers() {
    let text = format!(
        "tls_server_config:\n  cert_file: tls.crt\n  key_file: /abs/tls.key\n  \
         client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  \
         min_version: TLS13\n  prefer_server_cipher_suites: true\n\
         http_server_config:\n  http2: true\n  headers:\n    X-Frame-Options: deny\n    \
         Strict-Transport-Security: max-age=31536000\n    X-XSS-Protection: ''\n\
         basic_auth_users:\n  prometheus: '{}'\n\
         rate_limit:\n  interval: 0s\n  burst: 10\n",
        hash()
    );
    let c = parse(&text).unwrap();
    assert_eq!(
        c.tls,
        Some(TlsSettings {
            cert_file: PathBuf::from("/etc/observer/tls.crt"),
            key_file: PathBuf::from("/abs/tls.key"),
            client_auth: ClientAuth::RequireAndVerifyClientCert,
            client_ca_file: Some(PathBuf::from("/etc/observer/ca.crt")),
            min_version: TlsVersion::Tls13,
            max_version: TlsVersion::Tls13,
            cipher_suites: None,
            curve_preferences: None,
        })
    );
    assert_eq!(c.users.keys().collect::<Vec<_>>(), ["prometheus"]);
    // Sorted by name; the blank one is left unset.
    assert_eq!(
        c.headers,
        [
            (
                "Strict-Transport-Security".into(),
                "max-age=31536000".into()
            ),
            ("X-Frame-Options".into(), "deny".into()),
        ]
    );
}

#[test]
fn client_auth_types_and_versions() {
    let tls = |extra: &str| {
        parse(&format!(
            "tls_server_config:\n  cert_file: c\n  key_file: k\n{extra}"
        ))
        .unwrap()
        .tls
        .unwrap()
    };
    let t = tls("");
    assert_eq!(t.client_auth, ClientAuth::NoClientCert);
    assert_eq!(
        (t.min_version, t.max_version),
        (TlsVersion::Tls12, TlsVersion::Tls13)
    );
    for (name, auth) in [
        ("NoClientCert", ClientAuth::NoClientCert),
        ("RequestClientCert", ClientAuth::RequestClientCert),
        ("RequireAnyClientCert", ClientAuth::RequireAnyClientCert),
        ("RequireClientCert", ClientAuth::RequireAnyClientCert),
    ] {
        assert_eq!(
            tls(&format!("  client_auth_type: {name}\n")).client_auth,
            auth
        );
    }
    let t = tls("  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca\n");
    assert_eq!(t.client_auth, ClientAuth::VerifyClientCertIfGiven);
    assert!(t.client_auth.verifies());
    assert_eq!(tls("  max_version: TLS12\n").max_version, TlsVersion::Tls12);
    let t = tls(
        "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n  \
                 curve_preferences: [X25519, CurveP521]\n",
    );
    assert_eq!(
        t.cipher_suites,
        Some(vec!["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_string()])
    );
    assert_eq!(
        t.curve_preferences,
        Some(vec!["X25519".to_string(), "CurveP521".to_string()])
    );
}

#[test]
fn basic_auth_without_tls_is_allowed() {
    let c = parse(&format!("basic_auth_users:\n  a: '{}'\n", hash())).unwrap();
    assert_eq!(c.tls, None);
    assert_eq!(c.users.len(), 1);
}

#[test]
fn each_bad_file_gets_its_one_line() {
    let h = hash();
    let tls = "tls_server_config:\n  cert_file: c\n  key_file: k\n";
    for (text, expected) in [
        ("nonsense: 1\n".to_string(), "unknown field `nonsense`"),
        (format!("{tls}  cert_fil: x\n"), "unknown field `cert_fil`"),
        (
            "tls_server_config: [\n".into(),
            "exporter-toolkit's web configuration",
        ),
        ("- a\n- b\n".into(), "exporter-toolkit's web configuration"),
        (
            "tls_server_config:\n  cert_file: c\n".into(),
            "tls_server_config.key_file is missing",
        ),
        (
            "tls_server_config:\n  key_file: k\n".into(),
            "tls_server_config.cert_file is missing",
        ),
        (
            format!("{tls}  client_auth_type: Sometimes\n"),
            "client_auth_type 'Sometimes' is not one of",
        ),
        (
            format!("{tls}  client_ca_file: ca\n"),
            "client_ca_file is set but client_auth_type is NoClientCert",
        ),
        (
            format!("{tls}  client_auth_type: RequireAndVerifyClientCert\n"),
            "client_ca_file is missing",
        ),
        (
            format!("{tls}  min_version: TLS10\n"),
            "TLS 1.2 and 1.3 only",
        ),
        (
            format!("{tls}  max_version: TLS99\n"),
            "'TLS99' is not a TLS version",
        ),
        (
            format!("{tls}  min_version: TLS13\n  max_version: TLS12\n"),
            "min_version is above max_version",
        ),
        (
            format!("{tls}  cert: abc\n"),
            "tls_server_config.cert is not supported",
        ),
        (
            format!("{tls}  client_allowed_sans: [a]\n"),
            "client_allowed_sans is not supported",
        ),
        (
            format!("{tls}  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n"),
            "cipher_suites 'TLS_RSA_WITH_RC4_128_SHA' is not one of Go's names",
        ),
        (
            format!("{tls}  cipher_suites: TLS_AES_128_GCM_SHA256\n"),
            "cipher_suites: invalid type",
        ),
        (
            format!("{tls}  curve_preferences: [P256]\n"),
            "curve_preferences 'P256' is not one of Go's names: CurveP256",
        ),
        (
            "basic_auth_users:\n  alice: secret\n".into(),
            "basic_auth_users.alice is not a bcrypt hash",
        ),
        (
            "basic_auth_users:\n  alice: '$1$abc$def'\n".into(),
            "basic_auth_users.alice is not a bcrypt hash",
        ),
        (
            format!(
                "basic_auth_users:\n  alice: '{}'\n",
                h.replacen("$2b$", "$2x$", 1)
            ),
            "basic_auth_users.alice is not a bcrypt hash",
        ),
        (
            format!(
                "basic_auth_users:\n  alice: '{}'\n",
                h.replacen("$04$", "$17$", 1)
            ),
            "basic_auth_users.alice has bcrypt cost 17: use a cost from 4 to 16",
        ),
        (
            format!(
                "basic_auth_users:\n  alice: '{}'\n",
                h.replacen("$04$", "$03$", 1)
            ),
            "basic_auth_users.alice",
        ),
        (
            format!("basic_auth_users:\n  'a:b': '{h}'\n"),
            "a user name cannot contain ':'",
        ),
        (
            format!("basic_auth_users:\n  a: '{h}'\n  a: '{h}'\n"),
            "duplicate",
        ),
        (
            "http_server_config:\n  headers:\n    Server: observer\n".into(),
            "headers.Server cannot be set",
        ),
        (
            "http_server_config:\n  headers:\n    x-frame-options: deny\n".into(),
            "headers.x-frame-options cannot be set",
        ),
        (
            "http_server_config:\n  headers:\n    X-Frame-Options: allow\n".into(),
            "'allow' is not one of deny, sameorigin",
        ),
        (
            "http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n".into(),
            "'sniff' is not one of nosniff",
        ),
        (
            "http_server_config:\n  http2: maybe\n".into(),
            "http2: invalid type",
        ),
        (
            "rate_limit:\n  interval: 1s\n  burst: 5\n".into(),
            "no request rate limiter",
        ),
    ] {
        let e = refused(&text);
        assert!(e.contains(expected), "{text:?}: {e}");
    }
}

#[test]
fn a_missing_file_names_itself() {
    let e = WebConfig::load(Path::new("/nonexistent/web.yml")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--web-config /nonexistent/web.yml: cannot read it (No such file or directory \
         (os error 2)); check the path and its permissions"
    );
}

#[test]
fn the_deploy_example_is_accepted() {
    let c = parse(include_str!("../../../../deploy/tls/web-config.yml")).unwrap();
    let tls = c.tls.unwrap();
    assert_eq!(tls.cert_file, PathBuf::from("/etc/observer/tls.crt"));
    assert_eq!(tls.key_file, PathBuf::from("/etc/observer/tls.key"));
    assert_eq!(tls.client_auth, ClientAuth::NoClientCert);
    assert_eq!(c.users.keys().collect::<Vec<_>>(), ["prometheus"]);
    assert_eq!(c.headers.len(), 2);
}
