//! The HTTP endpoint: `GET /metrics` (Prometheus text format) and
//! `GET /healthz` ([`super::health`]: 200 or 503 with the reason). Nothing
//! served changes any state.

use std::{convert::Infallible, net::SocketAddr};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode, body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::health::Health;

/// Errors starting the endpoint.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}{}", hint(source))]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What to do about a bind failure, for the one-line error.
fn hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => " (is another observer running? choose another --listen)",
        std::io::ErrorKind::AddrNotAvailable => " (no such address on this host; check --listen)",
        std::io::ErrorKind::PermissionDenied => " (a port below 1024 needs CAP_NET_BIND_SERVICE)",
        _ => "",
    }
}

/// Binds `addr`; the caller then runs [`serve`].
///
/// # Errors
/// [`HttpError::Bind`] when the port is taken or the address is not local.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, HttpError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| HttpError::Bind { addr, source })
}

fn reply(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

fn route(
    req: &Request<Incoming>,
    registry: &prometheus::Registry,
    health: &Health,
) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "only GET\n".into(),
        );
    }
    match req.uri().path() {
        "/metrics" => match super::encode(registry) {
            Ok(text) => reply(StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", text),
            Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", format!("{e}\n")),
        },
        "/healthz" => match health.check_now() {
            Ok(text) => reply(StatusCode::OK, "text/plain", text),
            Err(text) => reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", text),
        },
        "/" => reply(
            StatusCode::OK,
            "text/html",
            "<html><body><a href=\"/metrics\">/metrics</a> <a href=\"/healthz\">/healthz</a></body></html>\n".into(),
        ),
        _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found\n".into()),
    }
}

/// Serves connections on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, registry: prometheus::Registry, health: Health) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let registry = registry.clone();
        let health = health.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let resp = route(&req, &registry, &health);
                async move { Ok::<_, Infallible>(resp) }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await
            {
                log::debug!("metrics connection: {e}");
            }
        });
    }
}
