//! What `observer run --web-config FILE` adds to the endpoint: TLS, basic
//! auth and response headers, loaded from the file
//! ([`super::web_config`]) and checked at start, before any program is
//! loaded. Without the option, [`Web::plain`]: plain HTTP, no auth.

use std::path::{Path, PathBuf};

use hyper::header::{HeaderName, HeaderValue};

use super::{
    auth::BasicAuth,
    tls::{self, TlsError},
    web_config::{WebConfig, WebConfigError},
};

/// A web-config file that cannot be served: one line.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The file itself.
    #[error(transparent)]
    Config(#[from] WebConfigError),
    /// A certificate, key or CA file it names.
    #[error("--web-config {}: {source}", path.display())]
    Tls {
        /// The web-config file.
        path: PathBuf,
        /// What is wrong with the file it names.
        source: TlsError,
    },
}

/// How the endpoint is served.
pub struct Web {
    /// The TLS acceptor; None for plain HTTP.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// The users' check; None when every client may read.
    pub auth: Option<BasicAuth>,
    /// Headers added to every response.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Whether a client certificate, when sent, is verified against the
    /// file's CA (so that one authenticates its client).
    pub verifies_clients: bool,
}

impl Web {
    /// Plain HTTP, no auth, no added headers.
    pub fn plain() -> Web {
        Web {
            tls: None,
            auth: None,
            headers: Vec::new(),
            verifies_clients: false,
        }
    }

    /// Reads the web-config file at `path` and everything it names.
    ///
    /// # Errors
    /// [`WebError`]: the file, or a certificate, key or CA file it names,
    /// cannot be used.
    pub fn load(path: &Path) -> Result<Web, WebError> {
        let config = WebConfig::load(path)?;
        let tls = match &config.tls {
            Some(settings) => Some(tokio_rustls::TlsAcceptor::from(
                tls::server_config(settings).map_err(|source| WebError::Tls {
                    path: path.to_path_buf(),
                    source,
                })?,
            )),
            None => None,
        };
        let headers = config
            .headers
            .iter()
            .filter_map(|(n, v)| {
                // web_config checked both; a failure here is unreachable.
                Some((
                    HeaderName::from_bytes(n.as_bytes()).ok()?,
                    HeaderValue::from_str(v).ok()?,
                ))
            })
            .collect();
        Ok(Web {
            tls,
            auth: BasicAuth::new(&config.users),
            headers,
            verifies_clients: config
                .tls
                .as_ref()
                .is_some_and(|t| t.client_auth.verifies()),
        })
    }

    /// Whether a client can authenticate (basic auth, or a client
    /// certificate verified against the CA): only then does a connection
    /// past a cap get a slot of the reserve ([`super::admission`]).
    pub fn authenticates(&self) -> bool {
        self.auth.is_some() || self.verifies_clients
    }

    /// `https` or `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// What the start-up log says of it.
    pub fn describe(&self) -> String {
        match (&self.tls, &self.auth) {
            (Some(_), Some(_)) => "TLS, basic auth on every path but /healthz".into(),
            (Some(_), None) => "TLS, no auth".into(),
            (None, Some(_)) => "plain HTTP, basic auth on every path but /healthz".into(),
            (None, None) => "plain HTTP, no auth".into(),
        }
    }
}
