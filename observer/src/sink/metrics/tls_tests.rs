//! The TLS set-up: what rustls offers for the web-config's names, the
//! files' errors, and the certificate re-read when it changes.

use std::path::PathBuf;

use super::*;

/// A folder of one test's files, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d =
            std::env::temp_dir().join(format!("observer-tls-unit-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A self-signed certificate for `name`: (cert, key) PEM.
fn pair(name: &str) -> (String, String) {
    let c = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
    (c.cert.pem(), c.signing_key.serialize_pem())
}

/// Settings serving `dir`'s tls.crt and tls.key, no client certificates.
fn settings(dir: &Dir) -> TlsSettings {
    TlsSettings {
        cert_file: dir.0.join("tls.crt"),
        key_file: dir.0.join("tls.key"),
        client_auth: ClientAuth::NoClientCert,
        client_ca_file: None,
        min_version: TlsVersion::Tls12,
        max_version: TlsVersion::Tls13,
        cipher_suites: None,
        curve_preferences: None,
    }
}

fn tls12_suites(p: &CryptoProvider) -> Vec<String> {
    p.cipher_suites
        .iter()
        .filter(|s| s.version() == &rustls::version::TLS12)
        .map(|s| format!("{:?}", s.suite()))
        .collect()
}

#[test]
fn every_tls12_suite_rustls_offers_has_its_go_name() {
    let p = rustls::crypto::ring::default_provider();
    let names = tls12_suites(&p);
    assert_eq!(names.len(), 6, "{names:?}");
    for n in &names {
        assert!(
            super::super::web_config::GO_CIPHER_SUITES.contains(&n.as_str()),
            "{n}"
        );
    }
}

#[test]
fn cipher_suites_and_curves_narrow_what_is_offered() {
    let dir = Dir::new("narrow");
    let mut s = settings(&dir);
    s.cipher_suites = Some(vec![
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into(),
        "TLS_RSA_WITH_AES_128_CBC_SHA".into(),
    ]);
    s.curve_preferences = Some(vec![
        "CurveP384".into(),
        "CurveP521".into(),
        "X25519".into(),
    ]);
    let p = provider(&s).unwrap();
    assert_eq!(tls12_suites(&p), ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]);
    // TLS 1.3's three stay, as in Go.
    assert_eq!(p.cipher_suites.len(), 4);
    let groups: Vec<String> = p
        .kx_groups
        .iter()
        .map(|g| format!("{:?}", g.name()))
        .collect();
    assert_eq!(groups, ["secp384r1", "X25519"]);

    s.cipher_suites = Some(vec!["TLS_RSA_WITH_AES_128_CBC_SHA".into()]);
    let e = provider(&s).unwrap_err().to_string();
    assert!(e.contains("names no TLS 1.2 suite observer has"), "{e}");
    s.min_version = TlsVersion::Tls13;
    assert_eq!(tls12_suites(&provider(&s).unwrap()), Vec::<String>::new());

    s.curve_preferences = Some(vec!["CurveP521".into()]);
    let e = provider(&s).unwrap_err().to_string();
    assert_eq!(
        e,
        "tls_server_config.curve_preferences: names no curve observer has (X25519, CurveP256, \
         CurveP384): add one"
    );
}

#[test]
fn bad_files_name_the_key_and_the_file() {
    let dir = Dir::new("bad");
    let s = settings(&dir);
    let e = server_config(&s).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "tls_server_config.cert_file {}: cannot read it",
            s.cert_file.display()
        )),
        "{e}"
    );
    let (cert, key) = pair("a");
    let (_, other_key) = pair("b");
    dir.write("tls.crt", &cert);
    dir.write("tls.key", &other_key);
    let e = server_config(&s).unwrap_err().to_string();
    assert!(
        e.contains("key_file") && e.contains("does not go with cert_file"),
        "{e}"
    );
    dir.write("tls.key", &cert);
    let e = server_config(&s).unwrap_err().to_string();
    assert!(e.contains("holds no private key"), "{e}");
    dir.write("tls.key", &key);
    assert!(server_config(&s).is_ok());
    let mut v = s.clone();
    v.client_auth = ClientAuth::RequireAndVerifyClientCert;
    v.client_ca_file = Some(dir.write("ca.pem", &key));
    let e = server_config(&v).unwrap_err().to_string();
    assert!(
        e.contains("client_ca_file") && e.contains("holds no certificate"),
        "{e}"
    );
    v.client_ca_file = Some(dir.write("ca.pem", &cert));
    assert!(server_config(&v).is_ok());
}

#[test]
fn a_changed_pair_is_served_and_a_half_written_one_is_not() {
    let dir = Dir::new("reload");
    let s = settings(&dir);
    let (a_cert, a_key) = pair("a");
    dir.write("tls.crt", &a_cert);
    dir.write("tls.key", &a_key);
    let r = ReloadingCert::new(&s, Arc::new(rustls::crypto::ring::default_provider())).unwrap();
    let served = |r: &ReloadingCert| r.current().cert[0].as_ref().to_vec();
    let first = served(&r);
    assert_eq!(served(&r), first);
    // Renewed: new files renamed over the old ones.
    let (b_cert, b_key) = pair("b");
    let tmp = dir.write("new.key", &b_key);
    std::fs::rename(tmp, &s.key_file).unwrap();
    // The certificate not yet renewed: the pair does not match, the old
    // pair stays.
    assert_eq!(served(&r), first);
    let tmp = dir.write("new.crt", &b_cert);
    std::fs::rename(tmp, &s.cert_file).unwrap();
    let second = served(&r);
    assert_ne!(second, first);
    assert_eq!(
        second,
        CertificateDer::from_pem_slice(b_cert.as_bytes())
            .unwrap()
            .as_ref()
    );
}
