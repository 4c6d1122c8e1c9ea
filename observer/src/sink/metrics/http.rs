//! The HTTP endpoint: `GET /metrics` (Prometheus text format) and
//! `GET /healthz` ([`super::health`]: 200 or 503 with the reason), over
//! plain HTTP or TLS, behind basic auth or not ([`super::web`]), each
//! connection in a slot [`super::admission`] gave it or closed at accept.
//! Nothing served changes any state.

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode, body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::{
    admission::{Admission, Client, Gate, RESERVE_TIMEOUT, Reason, Ticket},
    health::Health,
    stall::{WRITE_STALL, WriteTimed},
    web::Web,
};

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
/// for every server), so that [`super::admission::MAX_CONNECTIONS`] fit beside the maps and
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

/// How long a client in a shared slot may take to send its request
/// headers (TLS handshake included).
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

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

/// How long a connection has to finish its TLS handshake and send its
/// request headers, by slot; the same limit holds for each later request
/// on it (an idle keep-alive connection is closed when it runs out). And
/// how long its answer may make no write progress (a client that does not
/// read), in any slot.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// In a shared slot (s).
    pub shared: Duration,
    /// Waiting in the reserve (s).
    pub reserve: Duration,
    /// An answer with no byte written for this long closes its connection.
    pub write: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            shared: HEADER_TIMEOUT,
            reserve: RESERVE_TIMEOUT,
            write: WRITE_STALL,
        }
    }
}

/// What the endpoint serves, and to whom.
#[derive(Clone)]
pub struct Endpoint {
    /// What `/metrics` encodes.
    pub registry: prometheus::Registry,
    /// What `/healthz` answers.
    pub health: Health,
    /// TLS, basic auth and headers ([`Web::plain`] for none).
    pub web: Arc<Web>,
    /// Who gets a slot.
    pub gate: Gate,
    /// How long each may take to send its request headers.
    pub timeouts: Timeouts,
}

/// Most bytes of request head read from a connection waiting in the
/// reserve (hyper's least read buffer; a scraper's request is under 1 KiB).
const RESERVE_HEAD_BYTES: usize = 8192;
const _: () = assert!(RESERVE_HEAD_BYTES >= 8192, "hyper's least max_buf_size");

/// Serves connections on `listener` until the task is dropped.
///
/// A scrape endpoint on a node's address must not be held by idle or
/// busy clients: each connection is given a slot by the gate when it is
/// accepted, before a byte is read, or closed at once; each must finish
/// its TLS handshake and send its headers within its timeout together;
/// and a failed accept (out of file descriptors) waits 100 ms instead of
/// spinning.
pub async fn serve(listener: TcpListener, endpoint: Endpoint) {
    let mut log = RefusedLog::default();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                log::debug!("metrics accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        match endpoint.gate.admit(peer.ip()) {
            Admission::Admitted(ticket) => {
                tokio::spawn(one_connection(stream, ticket, endpoint.clone()));
            }
            Admission::Refused { reason, client } => {
                drop(stream);
                log.refused(reason, client);
            }
        }
    }
}

/// Least time between two warnings of connections closed at accept.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The warnings of connections closed at accept: the first at once,
/// then at most one per [`WARN_EVERY`], with the count since the last.
#[derive(Default)]
struct RefusedLog {
    last: Option<Instant>,
    since: u64,
}

impl RefusedLog {
    fn refused(&mut self, reason: Reason, client: Client) {
        self.since += 1;
        if self.last.is_some_and(|t| t.elapsed() < WARN_EVERY) {
            return;
        }
        let why = match reason {
            Reason::ClientCap => "it had --max-conns-per-client connections open",
            _ => "every connection slot was taken",
        };
        log::warn!(
            "metrics: closed {} connection(s) at accept since the last warning, the last from \
             {client}: {why} (observer_endpoint_connections_refused_total counts them)",
            self.since
        );
        self.last = Some(Instant::now());
        self.since = 0;
    }
}

/// Serves one connection in the slot `ticket` holds, until it closes,
/// times out or (waiting in the reserve) is displaced.
async fn one_connection(stream: tokio::net::TcpStream, ticket: Ticket, ep: Endpoint) {
    let ticket = Arc::new(ticket);
    let waiting = ticket.waiting();
    let limits = if waiting {
        Limits {
            header_timeout: ep.timeouts.reserve,
            head_bytes: Some(RESERVE_HEAD_BYTES),
        }
    } else {
        Limits {
            header_timeout: ep.timeouts.shared,
            head_bytes: None,
        }
    };
    let deadline = tokio::time::Instant::now() + limits.header_timeout;
    let svc = {
        let (ep, ticket) = (ep.clone(), ticket.clone());
        service_fn(move |req| {
            let (ep, ticket) = (ep.clone(), ticket.clone());
            async move { Ok::<_, Infallible>(respond(req, &ep, &ticket).await) }
        })
    };
    // Around the TCP stream, under TLS: what is timed is the client
    // taking bytes, not rustls filling its buffer.
    let stream = WriteTimed::new(stream, ep.timeouts.write);
    let served = async {
        let Some(acceptor) = &ep.web.tls else {
            return connection(TokioIo::new(stream), limits, svc).await;
        };
        match tokio::time::timeout_at(deadline, handshake(acceptor, stream)).await {
            Ok(Some(tls)) => {
                if ep.web.verifies_clients && tls.get_ref().1.peer_certificates().is_some() {
                    // The verifier checked it against the CA.
                    ticket.authenticated();
                }
                // What is left of the header timeout after the handshake.
                let left = deadline
                    .saturating_duration_since(tokio::time::Instant::now())
                    .max(MIN_HEADER_TIME);
                let limits = Limits {
                    header_timeout: left,
                    ..limits
                };
                connection(TokioIo::new(tls), limits, svc).await;
            }
            Ok(None) => {}
            Err(_) => log::debug!(
                "metrics: TLS handshake not done in {:?}",
                limits.header_timeout
            ),
        }
    };
    tokio::select! {
        () = served => {}
        () = ticket.displaced() => {
            log::debug!("metrics: a connection from {} gave its slot to a newer one", ticket.client());
        }
    }
}

/// Least time left for the request headers after a slow TLS handshake.
const MIN_HEADER_TIME: Duration = Duration::from_millis(500);

/// What one connection may send.
#[derive(Clone, Copy)]
struct Limits {
    /// How long it has for its request headers (each request's).
    header_timeout: Duration,
    /// Most bytes of request head; None: hyper's default (about 400 kB).
    head_bytes: Option<usize>,
}

/// Serves HTTP/1.1 on one connection, plain or TLS.
async fn connection<I, S>(io: I, limits: Limits, svc: S)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::HttpService<Incoming, ResBody = Full<Bytes>>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    if let Some(bytes) = limits.head_bytes {
        builder.max_buf_size(bytes);
    }
    if let Err(e) = builder.serve_connection(io, svc).await {
        log::debug!("metrics connection: {e}");
    }
}

/// The body of the answer to a plain-HTTP request on the TLS port.
const NOT_TLS: &str = "this port serves HTTPS: use an https:// URL\n";

/// A connection's TCP stream, its writes timed.
type Timed = WriteTimed<tokio::net::TcpStream>;

/// The TLS handshake on `stream`; None (and the connection closed) when
/// it fails. A client that sends plain HTTP (its first byte is not a TLS
/// handshake record's, 0x16) gets a 400 saying to use https, as Go's
/// servers answer it, rather than a TLS alert it cannot read.
async fn handshake(
    acceptor: &tokio_rustls::TlsAcceptor,
    mut stream: Timed,
) -> Option<tokio_rustls::server::TlsStream<Timed>> {
    use tokio::io::AsyncWriteExt as _;
    let mut first = [0u8; 1];
    match stream.get_mut().peek(&mut first).await {
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

/// [`route`] behind basic auth, with `web`'s headers on every answer; on
/// a connection waiting in the reserve, only a request that authenticates
/// is served (and the connection keeps its slot), any other gets
/// [`too_many`].
async fn respond(req: Request<Incoming>, ep: &Endpoint, ticket: &Ticket) -> Response<Full<Bytes>> {
    let web = &ep.web;
    let authorization = req.headers().get(hyper::header::AUTHORIZATION);
    let mut resp = if ticket.waiting() && !authenticates(web, authorization, ticket).await {
        too_many(ticket)
    } else {
        let open = OPEN_PATHS.contains(&req.uri().path());
        match &web.auth {
            Some(auth) if !open && !auth.allows(authorization).await => unauthorized(),
            _ => route(&req, &ep.registry, &ep.health),
        }
    };
    for (name, value) in &web.headers {
        resp.headers_mut().insert(name.clone(), value.clone());
    }
    resp
}

/// Whether a request with `authorization` on a connection waiting in the
/// reserve authenticates it (a right password; a matched one is cached,
/// so [`respond`] checking it again costs no bcrypt round).
async fn authenticates(
    web: &Web,
    authorization: Option<&hyper::header::HeaderValue>,
    ticket: &Ticket,
) -> bool {
    match &web.auth {
        Some(auth) => auth.allows(authorization).await && ticket.authenticated(),
        None => false,
    }
}

/// A 401 asking for basic auth; the connection is closed after it.
fn unauthorized() -> Response<Full<Bytes>> {
    let mut r = reply(
        StatusCode::UNAUTHORIZED,
        "text/plain",
        "Unauthorized\n".into(),
    );
    r.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Basic"),
    );
    closing(r)
}

/// The answer to a request that did not authenticate on a connection
/// waiting in the reserve: 429, saying which cap it is past; the
/// connection is closed after it.
fn too_many(ticket: &Ticket) -> Response<Full<Bytes>> {
    let cap = match ticket.past() {
        Some(Reason::ClientCap) => format!("{} has as many connections open as", ticket.client()),
        _ => "this endpoint has as many connections open as".to_string(),
    };
    closing(reply(
        StatusCode::TOO_MANY_REQUESTS,
        "text/plain",
        format!("{cap} it allows; past that only requests that authenticate are served\n"),
    ))
}

/// `r` with `Connection: close`: a client refused keeps no connection open.
fn closing(mut r: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
    r.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    r
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
