//! The HTTP endpoint: `GET /metrics` (Prometheus text format) and
//! `GET /healthz` ([`super::health`]: 200 or 503 with the reason), over
//! plain HTTP or TLS, behind basic auth or not ([`super::web`]). Nothing
//! served changes any state.

use std::{convert::Infallible, net::SocketAddr, sync::Arc};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode, body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::{health::Health, web::Web};

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

/// Binds `addr`; the caller then runs [`serve`]. The IPv6 wildcard `[::]`
/// (what `--listen :PORT` gives) takes IPv4 too, whatever
/// `net.ipv6.bindv6only` says; where IPv6 is disabled it becomes
/// `0.0.0.0`.
///
/// # Errors
/// [`HttpError::Bind`] when the port is taken or the address is not local.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, HttpError> {
    let err = |source| HttpError::Bind { addr, source };
    if addr.ip() != std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED) {
        return TcpListener::bind(addr).await.map_err(err);
    }
    // socket2 (tokio's own socket layer) sets IPV6_V6ONLY before bind,
    // which tokio's TcpListener::bind cannot.
    use socket2::{Domain, Socket, Type};
    let dual = || -> std::io::Result<std::net::TcpListener> {
        let s = Socket::new(Domain::IPV6, Type::STREAM, None)?;
        s.set_only_v6(false)?;
        s.set_reuse_address(true)?;
        s.bind(&addr.into())?;
        s.listen(1024)?;
        Ok(s.into())
    };
    let std = match dual() {
        Ok(l) => l,
        Err(e) if e.raw_os_error() == Some(libc::EAFNOSUPPORT) => {
            let v4 = SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), addr.port());
            std::net::TcpListener::bind(v4).map_err(err)?
        }
        Err(e) => return Err(err(e)),
    };
    std.set_nonblocking(true).map_err(err)?;
    TcpListener::from_std(std).map_err(err)
}

/// Lifts the soft limit on open files to the hard one (as Go's runtime does
/// for every server), so that `MAX_CONNECTIONS` fit beside the maps and
/// links; a failure leaves the limit as it was.
pub fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                log::debug!(
                    "could not raise RLIMIT_NOFILE: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
    }
}

/// Most connections open at once; one more is closed as soon as it is
/// accepted, so idle clients can neither use up the file descriptors nor
/// queue ahead of a probe.
const MAX_CONNECTIONS: usize = 512;

/// How long a client may take to send its request headers.
const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

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

/// Serves connections on `listener` until the task is dropped, as `web`
/// says (TLS, basic auth, headers; [`Web::plain`] for none).
///
/// A scrape endpoint on a node's address must not be held by idle clients:
/// at most `MAX_CONNECTIONS` are open at once (later ones are closed at
/// once, TLS or not), each must finish its TLS handshake and send its
/// headers within `HEADER_TIMEOUT` together, and a failed accept (out of
/// file descriptors) waits 100 ms instead of spinning.
pub async fn serve(
    listener: TcpListener,
    registry: prometheus::Registry,
    health: Health,
    web: Arc<Web>,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                log::debug!("metrics accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            log::debug!("metrics: {MAX_CONNECTIONS} connections open; closing one more");
            drop(stream);
            continue;
        };
        let registry = registry.clone();
        let health = health.clone();
        let web = web.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let deadline = tokio::time::Instant::now() + HEADER_TIMEOUT;
            let svc = {
                let web = web.clone();
                service_fn(move |req| {
                    let (registry, health, web) = (registry.clone(), health.clone(), web.clone());
                    async move { Ok::<_, Infallible>(respond(req, &registry, &health, &web).await) }
                })
            };
            let Some(acceptor) = &web.tls else {
                return connection(TokioIo::new(stream), HEADER_TIMEOUT, svc).await;
            };
            match tokio::time::timeout_at(deadline, handshake(acceptor, stream)).await {
                Ok(Some(tls)) => {
                    // What is left of the header timeout after the handshake.
                    let left = deadline
                        .saturating_duration_since(tokio::time::Instant::now())
                        .max(MIN_HEADER_TIME);
                    connection(TokioIo::new(tls), left, svc).await;
                }
                Ok(None) => {}
                Err(_) => log::debug!("metrics: TLS handshake not done in {HEADER_TIMEOUT:?}"),
            }
        });
    }
}

/// Least time left for the request headers after a slow TLS handshake.
const MIN_HEADER_TIME: std::time::Duration = std::time::Duration::from_millis(500);

/// Serves HTTP/1.1 on one connection, plain or TLS.
async fn connection<I, S>(io: I, header_timeout: std::time::Duration, svc: S)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::HttpService<Incoming, ResBody = Full<Bytes>>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Err(e) = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(io, svc)
        .await
    {
        log::debug!("metrics connection: {e}");
    }
}

/// The body of the answer to a plain-HTTP request on the TLS port.
const NOT_TLS: &str = "this port serves HTTPS: use an https:// URL\n";

/// The TLS handshake on `stream`; None (and the connection closed) when
/// it fails. A client that sends plain HTTP (its first byte is not a TLS
/// handshake record's, 0x16) gets a 400 saying to use https, as Go's
/// servers answer it, rather than a TLS alert it cannot read.
async fn handshake(
    acceptor: &tokio_rustls::TlsAcceptor,
    mut stream: tokio::net::TcpStream,
) -> Option<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    use tokio::io::AsyncWriteExt as _;
    let mut first = [0u8; 1];
    match stream.peek(&mut first).await {
        Ok(1) if first[0] == 0x16 => {}
        Ok(1) => {
            let answer = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{NOT_TLS}",
                NOT_TLS.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
            return None;
        }
        _ => return None,
    }
    match acceptor.accept(stream).await {
        Ok(tls) => Some(tls),
        Err(e) => {
            log::debug!("metrics: TLS handshake: {e}");
            None
        }
    }
}

/// Paths served without basic auth: the kubelet's probes cannot send it.
/// TLS, when set, still applies.
const OPEN_PATHS: &[&str] = &["/healthz"];

/// [`route`] behind basic auth, with `web`'s headers on every answer.
async fn respond(
    req: Request<Incoming>,
    registry: &prometheus::Registry,
    health: &Health,
    web: &Web,
) -> Response<Full<Bytes>> {
    let open = OPEN_PATHS.contains(&req.uri().path());
    let mut resp = match &web.auth {
        Some(auth)
            if !open
                && !auth
                    .allows(req.headers().get(hyper::header::AUTHORIZATION))
                    .await =>
        {
            let mut r = reply(
                StatusCode::UNAUTHORIZED,
                "text/plain",
                "Unauthorized\n".into(),
            );
            r.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Basic"),
            );
            // A client without the password keeps no connection open.
            r.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            r
        }
        _ => route(&req, registry, health),
    };
    for (name, value) in &web.headers {
        resp.headers_mut().insert(name.clone(), value.clone());
    }
    resp
}
