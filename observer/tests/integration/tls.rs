//! `observer run --web-config`: the endpoint over TLS and behind basic
//! auth, driven by the real clients, Debian's curl and a Prometheus
//! server, with certificates made here (rcgen). Scrapes with the password
//! succeed and others get a 401 without metrics; plain HTTP on the TLS
//! port is answered with a 400 and the next scrape works; client
//! certificates are required and checked against the CA where the file
//! says so, and one the CA verifies is served past its address's
//! connection cap; a renewed certificate is served without a restart; a
//! handshake that never finishes is closed after the header timeout and
//! the connection cap holds; a bad file is one line and exit status 2
//! before anything is loaded. `promtool check web-config` accepts the
//! files used.

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use pathemu::ChildGuard;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

use crate::support::{
    abuse, http::free_port, process::BIN, prom::Prometheus, root_or_skip, scratch::Scratch, serial,
};

/// The password of the test's user `prometheus`.
const PASSWORD: &str = "s3cret";

/// A CA named `name`.
fn make_ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap()
}

/// A certificate for `sans` signed by `ca`, for `purpose`: (cert, key) PEM.
fn leaf(
    ca: &CertifiedIssuer<'static, KeyPair>,
    sans: &[&str],
    purpose: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = sans.iter().map(ToString::to_string).collect();
    let mut p = CertificateParams::new(names).unwrap();
    p.distinguished_name.push(DnType::CommonName, sans[0]);
    p.extended_key_usages = vec![purpose];
    let cert = p.signed_by(&key, ca).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// What curl got: its exit status, and the answer's status, head and body.
struct Reply {
    exit: i32,
    status: Option<u16>,
    head: String,
    body: String,
}

/// `curl -sS -i ARGS` with a 10 s limit.
fn curl(args: &[&str]) -> Reply {
    let out = Command::new("curl")
        .args(["-sS", "-i", "--max-time", "10"])
        .args(args)
        .output()
        .expect("curl is installed (cargo xtask setup)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = match text.split_once("\r\n\r\n") {
        Some((h, b)) => (h.to_string(), b.to_string()),
        None => (text.clone(), String::new()),
    };
    Reply {
        exit: out.status.code().unwrap_or(-1),
        status: head.split(' ').nth(1).and_then(|s| s.parse().ok()),
        head: format!("{head}\n{}", String::from_utf8_lossy(&out.stderr)),
        body,
    }
}

/// `promtool check web-config FILE` accepts `file` (skipped, with a note,
/// where this promtool has no such check).
fn promtool_accepts(file: &str) {
    let help = Command::new("promtool")
        .args(["check", "web-config", "--help"])
        .output()
        .expect("promtool is installed (cargo xtask setup)");
    if !help.status.success() {
        eprintln!("note: this promtool has no `check web-config`; not checking {file}");
        return;
    }
    let out = Command::new("promtool")
        .args(["check", "web-config", file])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool check web-config {file}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `observer run --web-config FILE` on a free loopback port, once
/// `/healthz` answers over https to curl with `client` (its TLS options).
fn agent(web_config: &str, client: &[&str]) -> (u16, ChildGuard) {
    let port = free_port();
    let mut agent = ChildGuard::spawn(
        Command::new(BIN)
            .args(["run", "--interval", "500ms"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--web-config", web_config])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    let url = format!("https://127.0.0.1:{port}/healthz");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = curl(&[client, &[url.as_str()]].concat());
        if r.status == Some(200) && r.body.starts_with("ok: ") {
            return (port, agent);
        }
        if !agent.running() {
            panic!("observer run exited:\n{}", agent.stderr_after_exit());
        }
        assert!(Instant::now() < deadline, "never served https: {}", r.head);
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits up to 30 s for each of `queries` to have its value in `prom`.
fn wait_for(prom: &Prometheus, queries: &[(&str, f64)]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got: Vec<Option<f64>> = queries.iter().map(|(q, _)| prom.query(q)).collect();
        if queries.iter().zip(&got).all(|((_, v), g)| *g == Some(*v)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus: {queries:?} are {got:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The files of an agent with a server certificate for 127.0.0.1 signed
/// by a fresh CA: the scratch folder and the CA's path.
fn server_files(tag: &str) -> (Scratch, CertifiedIssuer<'static, KeyPair>, String) {
    let dir = Scratch::new("tls", tag);
    let ca = make_ca("observer test CA");
    let (cert, key) = leaf(
        &ca,
        &["localhost", "127.0.0.1"],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let ca_path = dir.file("ca.pem", ca.pem());
    dir.file("tls.crt", &cert);
    dir.file("tls.key", &key);
    (dir, ca, ca_path)
}

const TLS: &str = "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n";

/// An agent with TLS and nothing else: its files, the CA's path, port,
/// process and `/metrics` URL.
struct TlsAgent {
    dir: Scratch,
    ca: String,
    port: u16,
    agent: ChildGuard,
    url: String,
}

fn tls_agent(tag: &str) -> TlsAgent {
    let (dir, _ca, ca) = server_files(tag);
    let cfg = dir.file("web.yml", TLS);
    let (port, agent) = agent(&cfg, &["--cacert", &ca]);
    TlsAgent {
        dir,
        ca,
        port,
        agent,
        url: format!("https://127.0.0.1:{port}/metrics"),
    }
}

#[test]
fn https_scrapes_need_the_password_and_healthz_does_not() {
    if !root_or_skip("https_scrapes_need_the_password_and_healthz_does_not") {
        return;
    }
    let _serial = serial();
    let (dir, _ca, ca) = server_files("auth");
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    let cfg = dir.file(
        "web.yml",
        format!(
            "{TLS}http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n\
             basic_auth_users:\n  prometheus: '{hash}'\n"
        ),
    );
    promtool_accepts(&cfg);
    // deploy/tls/'s example, beside a certificate and key of these names.
    promtool_accepts(&dir.file(
        "example.yml",
        include_str!("../../../deploy/tls/web-config.yml"),
    ));
    let (port, _agent) = agent(&cfg, &["--cacert", &ca]);
    let url = |path: &str| format!("https://127.0.0.1:{port}{path}");
    let creds = format!("prometheus:{PASSWORD}");
    let ok = curl(&["--cacert", &ca, "-u", &creds, &url("/metrics")]);
    assert_eq!(ok.status, Some(200), "{}", ok.head);
    assert!(ok.body.contains("observer_build_info"), "{}", ok.body);
    assert!(
        ok.head.contains("x-content-type-options: nosniff"),
        "{}",
        ok.head
    );
    for (what, user) in [
        ("a wrong password", Some("prometheus:wrong")),
        ("an unknown user", Some("nobody:s3cret")),
        ("no password", None),
    ] {
        for path in ["/metrics", "/"] {
            let mut args = vec!["--cacert", ca.as_str()];
            args.extend(user.iter().flat_map(|u| ["-u", *u]));
            let target = url(path);
            args.push(&target);
            let r = curl(&args);
            assert_eq!(r.status, Some(401), "{what} {path}: {}", r.head);
            assert!(
                r.head.contains("www-authenticate: Basic"),
                "{what}: {}",
                r.head
            );
            assert_eq!(r.body, "Unauthorized\n", "{what} {path}");
        }
    }
    // The kubelet's probes send no password: /healthz needs none.
    let h = curl(&["--cacert", &ca, &url("/healthz")]);
    assert_eq!(h.status, Some(200), "{}", h.head);
    assert!(h.body.starts_with("ok: "), "{}", h.body);
    // Plain HTTP on the TLS port: a 400 that says so, and nothing else.
    let plain = curl(&[&format!("http://127.0.0.1:{port}/metrics")]);
    assert_eq!(plain.status, Some(400), "{}", plain.head);
    assert_eq!(plain.body, "this port serves HTTPS: use an https:// URL\n");
    let again = curl(&["--cacert", &ca, "-u", &creds, &url("/metrics")]);
    assert_eq!(again.status, Some(200), "after plain HTTP: {}", again.head);
    // A real Prometheus: the job with the password scrapes, the one with
    // a wrong password is down and stores nothing of observer's.
    let job = |name: &str, password: &str| {
        format!(
            "  - job_name: {name}\n    scheme: https\n    tls_config: {{ca_file: '{ca}'}}\n    \
             basic_auth: {{username: prometheus, password: '{password}'}}\n    \
             static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
        )
    };
    let prom = Prometheus::with_jobs(&(job("right", PASSWORD) + &job("wrong", "nope")));
    wait_for(
        &prom,
        &[
            ("up{job=\"right\"}", 1.0),
            ("up{job=\"wrong\"}", 0.0),
            ("count(observer_build_info{job=\"right\"})", 1.0),
        ],
    );
    assert_eq!(
        prom.query("count(observer_build_info{job=\"wrong\"})"),
        None
    );
}

#[test]
fn client_certificates_are_required_and_checked_against_the_ca() {
    if !root_or_skip("client_certificates_are_required_and_checked_against_the_ca") {
        return;
    }
    let _serial = serial();
    let (dir, ca_issuer, ca) = server_files("mtls");
    let (cert, key) = leaf(
        &ca_issuer,
        &["scraper"],
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    let client_crt = dir.file("client.crt", &cert);
    let client_key = dir.file("client.key", &key);
    let rogue_ca = make_ca("someone else's CA");
    let (cert, key) = leaf(&rogue_ca, &["scraper"], ExtendedKeyUsagePurpose::ClientAuth);
    let rogue_crt = dir.file("rogue.crt", &cert);
    let rogue_key = dir.file("rogue.key", &key);
    let cfg = dir.file(
        "web.yml",
        format!("{TLS}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n"),
    );
    promtool_accepts(&cfg);
    let with_cert = ["--cacert", &ca, "--cert", &client_crt, "--key", &client_key];
    let (port, _agent) = agent(&cfg, &with_cert);
    let url = format!("https://127.0.0.1:{port}/metrics");
    let ok = curl(&[&with_cert[..], &[url.as_str()]].concat());
    assert_eq!(ok.status, Some(200), "{}", ok.head);
    assert!(ok.body.contains("observer_build_info"));
    let none = curl(&["--cacert", &ca, &url]);
    assert!(
        none.exit != 0 && none.status.is_none() && none.body.is_empty(),
        "no client certificate: curl {} {}",
        none.exit,
        none.head
    );
    let rogue = curl(&[
        "--cacert", &ca, "--cert", &rogue_crt, "--key", &rogue_key, &url,
    ]);
    assert!(
        rogue.exit != 0 && rogue.status.is_none() && rogue.body.is_empty(),
        "a certificate of another CA: curl {} {}",
        rogue.exit,
        rogue.head
    );
    // Past 127.0.0.2's cap (64 connections that never start their
    // handshake), a scraper there whose certificate the CA verifies is
    // served from the slots kept for scrapers that authenticate.
    let idle: Vec<_> = (0..abuse::PER_CLIENT)
        .map(|_| abuse::connect_from(2, port))
        .collect();
    let from = ["--interface", "127.0.0.2"];
    let past = curl(&[&from[..], &with_cert[..], &[url.as_str()]].concat());
    assert_eq!(past.status, Some(200), "past the cap: {}", past.head);
    assert!(past.body.contains("observer_build_info"));
    let past = curl(&[&from[..], &["--cacert", &ca, &url]].concat());
    assert!(
        past.status.is_none(),
        "past the cap, no certificate: {}",
        past.head
    );
    drop(idle);
    let job = |name: &str, client: &str| {
        format!(
            "  - job_name: {name}\n    scheme: https\n    tls_config: {{ca_file: '{ca}'{client}}}\n    \
             static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
        )
    };
    let prom = Prometheus::with_jobs(
        &(job(
            "cert",
            &format!(", cert_file: '{client_crt}', key_file: '{client_key}'"),
        ) + &job("nocert", "")),
    );
    wait_for(
        &prom,
        &[("up{job=\"cert\"}", 1.0), ("up{job=\"nocert\"}", 0.0)],
    );
}

#[test]
fn versions_suites_and_curves_are_what_the_file_says() {
    if !root_or_skip("versions_suites_and_curves_are_what_the_file_says") {
        return;
    }
    let _serial = serial();
    let (dir, _ca, ca) = server_files("versions");
    let cfg = dir.file(
        "web.yml",
        format!(
            "{TLS}  max_version: TLS12\n  \
             cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_128_CBC_SHA]\n  \
             curve_preferences: [CurveP384]\n"
        ),
    );
    promtool_accepts(&cfg);
    let (port, _agent) = agent(&cfg, &["--cacert", &ca]);
    let url = format!("https://127.0.0.1:{port}/metrics");
    let status =
        |opts: &[&str]| curl(&[&["--cacert", ca.as_str()], opts, &[url.as_str()]].concat());
    let ok = status(&[
        "--tls-max",
        "1.2",
        "--ciphers",
        "ECDHE-ECDSA-AES128-GCM-SHA256",
    ]);
    assert_eq!(ok.status, Some(200), "the suite named: {}", ok.head);
    let tls13 = status(&["--tlsv1.3"]);
    assert!(
        tls13.exit != 0 && tls13.status.is_none(),
        "TLS 1.3 over max_version: {}",
        tls13.head
    );
    let other = status(&[
        "--tls-max",
        "1.2",
        "--ciphers",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
    ]);
    assert!(
        other.exit != 0 && other.status.is_none(),
        "a suite not named: {}",
        other.head
    );
    // P-256 is the certificate's curve, which TLS 1.2 clients must list
    // too; only P-384 serves for the key exchange.
    assert_eq!(status(&["--curves", "P-384:P-256"]).status, Some(200));
    let x25519 = status(&["--curves", "X25519:P-256"]);
    assert!(
        x25519.exit != 0 && x25519.status.is_none(),
        "a curve not named: {}",
        x25519.head
    );
}

#[test]
fn a_renewed_certificate_is_served_without_a_restart() {
    if !root_or_skip("a_renewed_certificate_is_served_without_a_restart") {
        return;
    }
    let _serial = serial();
    let TlsAgent { dir, ca, url, .. } = &tls_agent("renew");
    let new_ca = make_ca("the renewing CA");
    let new_ca_path = dir.file("new-ca.pem", new_ca.pem());
    assert_eq!(curl(&["--cacert", ca, url]).status, Some(200));
    assert_eq!(curl(&["--cacert", &new_ca_path, url]).status, None);
    // Renewed as cert-manager or a Secret update does it: new files
    // renamed over the old ones.
    let (cert, key) = leaf(&new_ca, &["127.0.0.1"], ExtendedKeyUsagePurpose::ServerAuth);
    let tmp_key = dir.file("tls.key.new", &key);
    let tmp_crt = dir.file("tls.crt.new", &cert);
    std::fs::rename(tmp_key, dir.0.join("tls.key")).unwrap();
    std::fs::rename(tmp_crt, dir.0.join("tls.crt")).unwrap();
    let renewed = curl(&["--cacert", &new_ca_path, url]);
    assert_eq!(renewed.status, Some(200), "{}", renewed.head);
    let old = curl(&["--cacert", ca, url]);
    assert!(old.exit != 0 && old.status.is_none(), "{}", old.head);
}

/// A client on `port` that completes the TLS handshake (trusting
/// `ca_pem`), sends half its request headers and then nothing.
fn stalled_tls(
    port: u16,
    ca_pem: &[u8],
) -> rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream> {
    use rustls_pki_types::{CertificateDer, ServerName, pem::PemObject as _};
    use std::io::Write as _;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem).unwrap())
        .unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let sock = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.conn.complete_io(&mut tls.sock).unwrap();
    tls.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    tls.flush().unwrap();
    tls
}

#[test]
fn a_handshake_that_never_finishes_is_closed_and_the_cap_holds() {
    if !root_or_skip("a_handshake_that_never_finishes_is_closed_and_the_cap_holds") {
        return;
    }
    let _serial = serial();
    let a = tls_agent("slow");
    let scrape = || curl(&["--cacert", &a.ca, &a.url]).status == Some(200);
    // Clients that start a TLS record and never finish it.
    abuse::stalled_clients_are_closed(50, || abuse::stalled(a.port, b"\x16\x03\x01\x02"), scrape);
    // Clients that finish the handshake and never finish their headers:
    // the handshake and the headers share the 5 s.
    let ca_pem = std::fs::read(&a.ca).unwrap();
    abuse::stalled_clients_are_closed(10, || stalled_tls(a.port, &ca_pem), scrape);
    abuse::the_cap_holds(a.port, a.agent.id(), scrape);
}

#[test]
fn a_bad_web_config_is_one_line_and_exit_2_before_loading() {
    if !root_or_skip("a_bad_web_config_is_one_line_and_exit_2_before_loading") {
        return;
    }
    let _serial = serial();
    let (dir, _ca, _) = server_files("bad");
    let other = KeyPair::generate().unwrap().serialize_pem();
    dir.file("other.key", &other);
    // At info, the agent logs as it loads: one line on stderr proves it
    // stopped before.
    for (file, text, says) in [
        (
            "missing.yml",
            "tls_server_config:\n  cert_file: nope.crt\n  key_file: tls.key\n",
            "tls_server_config.cert_file",
        ),
        (
            "mismatch.yml",
            "tls_server_config:\n  cert_file: tls.crt\n  key_file: other.key\n",
            "does not go with cert_file",
        ),
        (
            "unknown.yml",
            "tls_config: {}\n",
            "unknown field `tls_config`",
        ),
        (
            "plain.yml",
            "basic_auth_users:\n  prometheus: s3cret\n",
            "not a bcrypt hash",
        ),
        ("yaml.yml", "tls_server_config: [\n", "web configuration"),
    ] {
        let path = dir.file(file, text);
        let t = Instant::now();
        let out = Command::new(BIN)
            .args(["run", "--listen", &format!("127.0.0.1:{}", free_port())])
            .args(["--web-config", &path])
            .env("RUST_LOG", "info")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert_eq!(err.lines().count(), 1, "{file}: {err}");
        assert!(
            err.starts_with(&format!("observer: error: --web-config {path}: ")),
            "{file}: {err}"
        );
        assert!(err.contains(says), "{file}: {err:?} lacks {says:?}");
        assert!(out.stdout.is_empty(), "{file}");
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "{file}: {:?}",
            t.elapsed()
        );
    }
}
