//! TLS for the metrics endpoint: a rustls server configuration (ring
//! provider) from a web-config file's `tls_server_config`. The certificate
//! and key are re-read when either file changes (checked at each
//! handshake, as exporter-toolkit re-reads them per connection), so a
//! renewed certificate (cert-manager, a Kubernetes Secret update, certbot)
//! is served without a restart; the client CA file is read once at start.
//! `cipher_suites` and `curve_preferences` narrow what the provider offers.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::SystemTime,
};

use rustls::{
    DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme,
    client::danger::HandshakeSignatureValid,
    crypto::{CryptoProvider, WebPkiSupportedAlgorithms},
    server::{
        ClientHello, ResolvesServerCert, WebPkiClientVerifier,
        danger::{ClientCertVerified, ClientCertVerifier},
    },
    sign::CertifiedKey,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime, pem::PemObject as _};

use super::web_config::{ClientAuth, TlsSettings, TlsVersion};

/// A certificate, key or CA file that cannot be used, or TLS settings
/// rustls cannot meet.
#[derive(Debug, thiserror::Error)]
#[error("{key}{}: {problem}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
pub struct TlsError {
    /// The web-config key at fault.
    pub key: &'static str,
    /// The file it names, if any.
    pub path: Option<PathBuf>,
    /// What is wrong, and the fix.
    pub problem: String,
}

/// The rustls configuration `settings` asks for; reads and checks the
/// files now, so that a bad one stops `observer run` at start.
///
/// # Errors
/// A file missing, unreadable, not PEM of the right kind, a key that does
/// not match the certificate, or a CA file with no usable certificate.
pub fn server_config(settings: &TlsSettings) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = Arc::new(provider(settings)?);
    let resolver = Arc::new(ReloadingCert::new(settings, provider.clone())?);
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = [
        (TlsVersion::Tls12, &rustls::version::TLS12),
        (TlsVersion::Tls13, &rustls::version::TLS13),
    ]
    .into_iter()
    .filter(|(v, _)| (settings.min_version..=settings.max_version).contains(v))
    .map(|(_, p)| p)
    .collect();
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError {
            key: "tls_server_config.min_version",
            path: None,
            problem: format!("rustls refuses these versions ({e})"),
        })?;
    let algs = provider.signature_verification_algorithms;
    let verifier: Option<Arc<dyn ClientCertVerifier>> = match settings.client_auth {
        ClientAuth::NoClientCert => None,
        ClientAuth::RequestClientCert => Some(Arc::new(AnyClientCert {
            mandatory: false,
            algs,
        })),
        ClientAuth::RequireAnyClientCert => Some(Arc::new(AnyClientCert {
            mandatory: true,
            algs,
        })),
        auth @ (ClientAuth::VerifyClientCertIfGiven | ClientAuth::RequireAndVerifyClientCert) => {
            Some(verifying(settings, auth, provider.clone())?)
        }
    };
    let mut config = match verifier {
        Some(v) => builder.with_client_cert_verifier(v),
        None => builder.with_no_client_auth(),
    }
    .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The ring provider, narrowed to `settings`' cipher suites and curves.
fn provider(settings: &TlsSettings) -> Result<CryptoProvider, TlsError> {
    let mut p = rustls::crypto::ring::default_provider();
    let err = |key: &'static str, problem: String| TlsError {
        key,
        path: None,
        problem,
    };
    if let Some(names) = &settings.cipher_suites {
        // Go's names of TLS 1.2 suites are rustls's (TLS 1.3 suites are not
        // configurable, in Go as here).
        p.cipher_suites.retain(|s| {
            s.version() == &rustls::version::TLS13 || names.contains(&format!("{:?}", s.suite()))
        });
        let tls12 = p
            .cipher_suites
            .iter()
            .any(|s| s.version() == &rustls::version::TLS12);
        if !tls12 && settings.min_version == TlsVersion::Tls12 {
            return Err(err(
                "tls_server_config.cipher_suites",
                "names no TLS 1.2 suite observer has (it has ECDHE with AES-GCM or \
                 ChaCha20-Poly1305): add one, or set min_version: TLS13"
                    .into(),
            ));
        }
    }
    if let Some(names) = &settings.curve_preferences {
        use rustls::NamedGroup;
        let all = std::mem::take(&mut p.kx_groups);
        p.kx_groups = names
            .iter()
            .filter_map(|n| match n.as_str() {
                "X25519" => Some(NamedGroup::X25519),
                "CurveP256" => Some(NamedGroup::secp256r1),
                "CurveP384" => Some(NamedGroup::secp384r1),
                "CurveP521" => Some(NamedGroup::secp521r1),
                _ => None,
            })
            .filter_map(|g| all.iter().find(|k| k.name() == g).copied())
            .collect();
        if p.kx_groups.is_empty() {
            return Err(err(
                "tls_server_config.curve_preferences",
                "names no curve observer has (X25519, CurveP256, CurveP384): add one".into(),
            ));
        }
    }
    Ok(p)
}

/// A verifier of client certificates against `client_ca_file`.
fn verifying(
    settings: &TlsSettings,
    auth: ClientAuth,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let key = "tls_server_config.client_ca_file";
    let path = settings.client_ca_file.clone().unwrap_or_default();
    let err = |problem: String| file_error(key, &path, problem);
    let mut roots = rustls::RootCertStore::empty();
    for cert in read_certs(key, &path)? {
        roots
            .add(cert)
            .map_err(|e| err(format!("not a CA certificate rustls can use ({e})")))?;
    }
    let mut b = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    if auth == ClientAuth::VerifyClientCertIfGiven {
        b = b.allow_unauthenticated();
    }
    b.build()
        .map_err(|e| err(format!("cannot verify clients with it ({e})")))
}

/// What is wrong with the file at `path` that `key` names.
fn file_error(key: &'static str, path: &Path, problem: String) -> TlsError {
    TlsError {
        key,
        path: Some(path.to_path_buf()),
        problem,
    }
}

/// The bytes of the file at `path` that `key` names.
fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| {
        file_error(
            key,
            path,
            format!("cannot read it ({e}); check the path and its permissions"),
        )
    })
}

/// The certificates in the PEM file at `path`, at least one.
fn read_certs(key: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let err = |problem: String| file_error(key, path, problem);
    let pem = read(key, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(format!("not PEM ({e})")))?;
    if certs.is_empty() {
        return Err(err(
            "holds no certificate (no -----BEGIN CERTIFICATE----- block)".into(),
        ));
    }
    Ok(certs)
}

/// The certificate chain and key of `settings`, checked to match.
fn load_pair(
    settings: &TlsSettings,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, TlsError> {
    let certs = read_certs("tls_server_config.cert_file", &settings.cert_file)?;
    let name = "tls_server_config.key_file";
    let path = &settings.key_file;
    let err = |problem: String| file_error(name, path, problem);
    let pem = read(name, path)?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        err(format!(
            "holds no private key rustls can read ({e}); it needs a PEM PRIVATE KEY, RSA \
             PRIVATE KEY or EC PRIVATE KEY block"
        ))
    })?;
    let pair = CertifiedKey::from_der(certs, key, provider).map_err(|e| {
        err(format!(
            "does not go with cert_file {} ({e}); name the key of that certificate",
            settings.cert_file.display()
        ))
    })?;
    Ok(Arc::new(pair))
}

/// What identifies a version of a file (its `stat`): a file rewritten
/// in place or renamed over differs in at least one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    /// Last modification (`st_mtime`).
    modified: SystemTime,
    /// Size in bytes (`st_size`).
    len: u64,
    /// Inode number (`st_ino`).
    inode: u64,
}

impl Stamp {
    /// The file at `path` as it is now; None where it cannot be read.
    fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt as _;
        let m = std::fs::metadata(path).ok()?;
        Some(Stamp {
            modified: m.modified().ok()?,
            len: m.len(),
            inode: m.ino(),
        })
    }
}

/// The versions of a certificate's two files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PairStamps {
    /// `cert_file`'s (None: unreadable).
    cert: Option<Stamp>,
    /// `key_file`'s (None: unreadable).
    key: Option<Stamp>,
}

impl PairStamps {
    /// The files of `settings` as they are now.
    fn of(settings: &TlsSettings) -> PairStamps {
        PairStamps {
            cert: Stamp::of(&settings.cert_file),
            key: Stamp::of(&settings.key_file),
        }
    }
}

/// The pair served, and the versions of the files it was read from.
#[derive(Debug)]
struct Served {
    /// The files' versions when it was read.
    stamps: PairStamps,
    /// The certificate chain and its key.
    pair: Arc<CertifiedKey>,
}

/// The server certificate, re-read when its files change.
#[derive(Debug)]
struct ReloadingCert {
    settings: TlsSettings,
    provider: Arc<CryptoProvider>,
    current: Mutex<Served>,
}

impl ReloadingCert {
    fn new(settings: &TlsSettings, provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        let stamps = PairStamps::of(settings);
        let pair = load_pair(settings, &provider)?;
        Ok(ReloadingCert {
            settings: settings.clone(),
            provider,
            current: Mutex::new(Served { stamps, pair }),
        })
    }
}

impl ReloadingCert {
    /// The pair to serve now: re-read if either file changed since it was
    /// last read.
    fn current(&self) -> Arc<CertifiedKey> {
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let stamps = PairStamps::of(&self.settings);
        if stamps != current.stamps {
            // A half-written pair (the certificate renewed, the key not yet)
            // keeps the old pair served, and is tried again next handshake.
            match load_pair(&self.settings, &self.provider) {
                Ok(pair) => {
                    log::info!(
                        "metrics: loaded the new certificate {}",
                        self.settings.cert_file.display()
                    );
                    *current = Served { stamps, pair };
                }
                Err(e) => log::warn!("metrics: keeping the previous certificate: {e}"),
            }
        }
        current.pair.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// Asks for a client certificate and accepts any (Go's
/// `RequestClientCert` and `RequireAnyClientCert`); the client must still
/// prove it holds the certificate's key.
#[derive(Debug)]
struct AnyClientCert {
    mandatory: bool,
    algs: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
