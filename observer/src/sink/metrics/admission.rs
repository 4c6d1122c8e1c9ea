//! Who may hold one of the endpoint's connection slots, decided when a
//! connection is accepted, before a byte of it is read.
//!
//! Words used here:
//! - **client**: a peer address, IPv4 whole, IPv6 by its /64 (one host
//!   gets a /64 to itself; counting it by address would let it open
//!   2^64 clients); an IPv4 peer on the dual-stack listener
//!   (`::ffff:a.b.c.d`) is that IPv4 address.
//! - **shared slots**: [`SHARED_SLOTS`] of the [`MAX_CONNECTIONS`], open to
//!   any client up to its cap (`--max-conns-per-client`, default
//!   [`DEFAULT_PER_CLIENT`]).
//! - **reserve**: the other [`RESERVED_SLOTS`], only for a connection past
//!   a cap that may still authenticate (basic auth, or a client
//!   certificate verified against the CA). It is **waiting** until it
//!   authenticates; a connection that authenticates keeps its slot.
//! - **displaced**: a waiting connection closed to give its slot to a
//!   newer one.
//!
//! Why a reserve: one client can now hold at most its cap, but a scraper
//! behind the same NAT as an abuser shares the abuser's cap, and many
//! clients together can fill the shared slots. Only credentials tell the
//! scraper apart, and reading them means reading an unauthenticated
//! client's bytes; a waiting connection reads at most 8 KiB of request
//! head within [`RESERVE_TIMEOUT`] (handshake included), and is then
//! served (authenticated), answered 429 and closed, or closed. A waiting
//! connection holds its slot only until a newer one needs it: a client
//! with [`WAITING_PER_CLIENT`] waiting gives up its oldest to its newest,
//! and a full reserve gives up the oldest waiting one of the client with
//! the most load (waiting, plus displaced in the last 10 to 20 s). So idle connections
//! cannot hold the reserve against a scraper: to keep one out from behind
//! its address, an abuser must open connections faster than the scraper
//! sends its request (a few round trips); a flood from other addresses
//! displaces its own connections first, and reaches a scraper's one
//! waiting connection only from as many fresh addresses as there are
//! reserve slots.
//! Without any way to authenticate (no `--web-config` users or verified
//! client certificates) there is no reserve: a connection past a cap is
//! closed at once.

use std::{
    collections::{BTreeMap, HashMap},
    net::{IpAddr, Ipv6Addr},
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use prometheus::IntCounter;
use tokio::sync::Notify;

/// Most connections open at once, shared slots and reserve together; the
/// open-file limit is raised at start so that they fit
/// ([`super::http::raise_fd_limit`]).
pub const MAX_CONNECTIONS: usize = 512;

/// Slots kept for connections past a cap that may authenticate.
pub const RESERVED_SLOTS: usize = 16;

/// Slots open to any client, up to its cap.
pub const SHARED_SLOTS: usize = MAX_CONNECTIONS - RESERVED_SLOTS;

/// The default cap of one client's connections in the shared slots: an
/// eighth of them, so that filling them takes eight clients, while one
/// client (a NAT gateway in front of a few Prometheus servers, each with
/// a keep-alive connection and a probe or two) has room to spare.
pub const DEFAULT_PER_CLIENT: usize = 64;

/// Most connections of one client waiting in the reserve; a newer one
/// displaces its oldest.
pub const WAITING_PER_CLIENT: usize = 4;

/// How long a waiting connection has to finish its TLS handshake and send
/// its request headers (a scraper sends them at once: a few round trips).
pub const RESERVE_TIMEOUT: Duration = Duration::from_secs(2);

/// Parses `--max-conns-per-client`: a whole number from 1 to
/// [`SHARED_SLOTS`].
///
/// # Errors
/// A message saying what is wrong with `s`.
pub fn parse_per_client(s: &str) -> Result<usize, String> {
    let bad = || {
        format!(
            "'{s}' is not a connection count from 1 to {SHARED_SLOTS} (the endpoint holds \
             {MAX_CONNECTIONS} connections, {RESERVED_SLOTS} of them kept for scrapers that \
             authenticate)"
        )
    };
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=SHARED_SLOTS).contains(&n) => Ok(n),
        _ => Err(bad()),
    }
}

/// One client: an IPv4 address, or an IPv6 /64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Client(IpAddr);

impl Client {
    /// The client a peer at `ip` counts as.
    pub fn of(ip: IpAddr) -> Client {
        match ip.to_canonical() {
            IpAddr::V6(v6) => Client(IpAddr::V6(Ipv6Addr::from(
                u128::from(v6) & !(u128::from(u64::MAX)),
            ))),
            v4 => Client(v4),
        }
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

/// Why a connection was closed unserved: the `reason` label of
/// `observer_endpoint_connections_refused_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Closed at accept: its client had its cap of shared slots, and there
    /// was no reserve slot for it (none can authenticate, or every one is
    /// held by a connection that did).
    ClientCap,
    /// Closed at accept: every shared slot was taken, and no reserve slot.
    TotalCap,
    /// Waited in the reserve and did not authenticate: a request without
    /// the right password (answered 429), or none within
    /// [`RESERVE_TIMEOUT`].
    Unauthenticated,
    /// Waited in the reserve and gave its slot to a newer connection.
    Displaced,
}

impl Reason {
    /// Every reason, in label order.
    pub const ALL: [Reason; 4] = [
        Reason::ClientCap,
        Reason::TotalCap,
        Reason::Unauthenticated,
        Reason::Displaced,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Reason::ClientCap => "client_cap",
            Reason::TotalCap => "total_cap",
            Reason::Unauthenticated => "unauthenticated",
            Reason::Displaced => "displaced",
        }
    }
}

/// The counters of refused connections, one per [`Reason`], in
/// [`Reason::ALL`] order.
#[derive(Clone, Debug)]
pub struct Refusals([IntCounter; Reason::ALL.len()]);

impl Refusals {
    /// Counts into `counters` (in [`Reason::ALL`] order).
    pub fn new(counters: [IntCounter; Reason::ALL.len()]) -> Refusals {
        Refusals(counters)
    }

    /// Counts one refusal for `reason`.
    fn count(&self, reason: Reason) {
        if let Some(c) = Reason::ALL
            .iter()
            .position(|r| *r == reason)
            .and_then(|i| self.0.get(i))
        {
            c.inc();
        }
    }
}

/// What [`Gate::admit`] decided.
pub enum Admission {
    /// A slot: serve it (waiting ones only if they authenticate).
    Admitted(Ticket),
    /// No slot: close it now, unread.
    Refused {
        /// Why.
        reason: Reason,
        /// Whose connection.
        client: Client,
    },
}

/// One client's connections.
#[derive(Default)]
struct Open {
    /// In the shared slots.
    shared: usize,
    /// Waiting in the reserve.
    waiting: usize,
}

/// How long a displaced connection counts against its client: between
/// one and two of these.
const HISTORY_PERIOD: Duration = Duration::from_secs(10);

/// Most clients whose displaced connections one period counts; one past
/// them counts as none displaced (a bound on memory, against a flood from
/// many IPv6 /64s).
const HISTORY_CLIENTS: usize = 4096;

/// Each client's waiting connections displaced lately: in this period and
/// the one before, so a client that stops flooding is forgotten within
/// two periods, even while it keeps other connections open.
#[derive(Default)]
struct History {
    now: HashMap<Client, usize>,
    before: HashMap<Client, usize>,
    /// When this period began.
    since: Option<Instant>,
}

impl History {
    /// Counts a displaced connection of `client` at `at`.
    fn displaced(&mut self, client: Client, at: Instant) {
        let elapsed = self.since.map(|t| at.saturating_duration_since(t));
        if elapsed.is_none_or(|e| e >= HISTORY_PERIOD) {
            self.before = std::mem::take(&mut self.now);
            if elapsed.is_none_or(|e| e >= 2 * HISTORY_PERIOD) {
                self.before.clear();
            }
            self.since = Some(at);
        }
        if self.now.len() < HISTORY_CLIENTS || self.now.contains_key(&client) {
            let n = self.now.entry(client).or_default();
            *n = n.saturating_add(1);
        }
    }

    /// How many of `client`'s were displaced lately.
    fn of(&self, client: &Client) -> usize {
        let n = |m: &HashMap<Client, usize>| m.get(client).copied().unwrap_or(0);
        n(&self.now).saturating_add(n(&self.before))
    }
}

/// A connection waiting in the reserve.
struct Waiter {
    client: Client,
    /// Told when it is displaced.
    displaced: Arc<Notify>,
}

/// The slots in use.
#[derive(Default)]
struct Slots {
    /// Connections in the shared slots.
    shared: usize,
    /// Connections in the reserve, waiting or authenticated.
    reserved: usize,
    /// By client; a client with none open has no entry.
    clients: HashMap<Client, Open>,
    /// The waiting connections by ticket id, oldest first.
    waiting: BTreeMap<u64, Waiter>,
    /// Whose waiting connections were displaced lately.
    history: History,
    /// The next ticket's id.
    next_id: u64,
}

impl Slots {
    /// Forgets `client` if it has nothing open.
    fn tidy(&mut self, client: Client) {
        if self
            .clients
            .get(&client)
            .is_some_and(|o| o.shared == 0 && o.waiting == 0)
        {
            self.clients.remove(&client);
        }
    }

    /// Which waiting connection gives its slot to a newcomer from
    /// `client` when the reserve is full: the oldest of the client with
    /// the most load (waiting, plus displaced lately: [`History`]; the
    /// oldest connection among clients with as much), unless the
    /// newcomer's own client, counted with it, would have more than any:
    /// then its own oldest where it has one waiting. So a flood displaces
    /// its own connections, and a scraper's one waiting connection gives
    /// way only to as many fresh flooding addresses as there are reserve
    /// slots. None when none waits (every reserve slot authenticated).
    fn victim(&self, client: Client) -> Option<u64> {
        let load = |c: &Client| {
            let waiting = self.clients.get(c).map_or(0, |o| o.waiting);
            waiting.saturating_add(self.history.of(c))
        };
        let (&id, most) = self
            .waiting
            .iter()
            .max_by_key(|(id, w)| (load(&w.client), std::cmp::Reverse(**id)))?;
        // With the newcomer, its client would have one more.
        if load(&client) < load(&most.client) {
            return Some(id);
        }
        let own = self.waiting.iter().find(|(_, w)| w.client == client);
        Some(own.map_or(id, |(own, _)| *own))
    }

    /// Takes the reserve slot of waiting connection `id` back and tells
    /// its task to close it.
    fn displace(&mut self, id: u64, refusals: &Refusals) {
        let Some(w) = self.waiting.remove(&id) else {
            return;
        };
        self.reserved -= 1;
        if let Some(o) = self.clients.get_mut(&w.client) {
            o.waiting -= 1;
        }
        self.history.displaced(w.client, Instant::now());
        self.tidy(w.client);
        w.displaced.notify_one();
        refusals.count(Reason::Displaced);
    }
}

/// The shared state of the gate and its tickets.
struct Shared {
    slots: Mutex<Slots>,
    refusals: Refusals,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Gives out the endpoint's slots.
#[derive(Clone)]
pub struct Gate {
    shared: Arc<Shared>,
    /// Most shared slots one client may hold.
    per_client: usize,
    /// Whether a connection can authenticate (else there is no reserve).
    reserve: bool,
}

impl Gate {
    /// A gate that lets each client hold `per_client` shared slots (at
    /// most [`SHARED_SLOTS`]), with the reserve only when `authenticates`
    /// (basic auth or verified client certificates are set up), counting
    /// refusals into `refusals`.
    pub fn new(per_client: usize, authenticates: bool, refusals: Refusals) -> Gate {
        Gate {
            shared: Arc::new(Shared {
                slots: Mutex::new(Slots::default()),
                refusals,
            }),
            per_client: per_client.clamp(1, SHARED_SLOTS),
            reserve: authenticates,
        }
    }

    /// A slot for a connection from `peer`, or why not.
    pub fn admit(&self, peer: IpAddr) -> Admission {
        let client = Client::of(peer);
        let refusals = &self.shared.refusals;
        let mut slots = self.shared.lock();
        let id = slots.next_id;
        slots.next_id += 1;
        let shared_now = slots.shared;
        let open = slots.clients.entry(client).or_default();
        let reason = if open.shared >= self.per_client {
            Reason::ClientCap
        } else if shared_now >= SHARED_SLOTS {
            Reason::TotalCap
        } else {
            open.shared += 1;
            slots.shared += 1;
            return Admission::Admitted(self.ticket(id, client, None));
        };
        let waiting = open.waiting;
        if !self.reserve {
            slots.tidy(client);
            refusals.count(reason);
            return Admission::Refused { reason, client };
        }
        if waiting >= WAITING_PER_CLIENT {
            let oldest = slots
                .waiting
                .iter()
                .find(|(_, w)| w.client == client)
                .map(|(id, _)| *id);
            if let Some(oldest) = oldest {
                slots.displace(oldest, refusals);
            }
        } else if slots.reserved >= RESERVED_SLOTS {
            match slots.victim(client) {
                Some(victim) => slots.displace(victim, refusals),
                None => {
                    // Every reserve slot is held by a connection that
                    // authenticated.
                    slots.tidy(client);
                    refusals.count(reason);
                    return Admission::Refused { reason, client };
                }
            }
        }
        let displaced = Arc::new(Notify::new());
        slots.reserved += 1;
        slots.clients.entry(client).or_default().waiting += 1;
        slots.waiting.insert(
            id,
            Waiter {
                client,
                displaced: displaced.clone(),
            },
        );
        Admission::Admitted(self.ticket(id, client, Some((reason, displaced))))
    }

    fn ticket(&self, id: u64, client: Client, reserve: Option<(Reason, Arc<Notify>)>) -> Ticket {
        Ticket {
            shared: self.shared.clone(),
            id,
            client,
            reserve,
            authenticated: AtomicBool::new(false),
        }
    }
}

/// A connection's slot, given back when it is dropped.
pub struct Ticket {
    shared: Arc<Shared>,
    id: u64,
    client: Client,
    /// For a reserve slot: the cap that sent it there, and the signal
    /// that it was displaced.
    reserve: Option<(Reason, Arc<Notify>)>,
    /// Whether it authenticated (reserve slots only).
    authenticated: AtomicBool,
}

impl Ticket {
    /// Whose connection it is.
    pub fn client(&self) -> Client {
        self.client
    }

    /// The cap that sent it to the reserve; None in a shared slot.
    pub fn past(&self) -> Option<Reason> {
        self.reserve.as_ref().map(|(r, _)| *r)
    }

    /// Whether it waits in the reserve: it is served only once it
    /// authenticates.
    pub fn waiting(&self) -> bool {
        self.reserve.is_some() && self.shared.lock().waiting.contains_key(&self.id)
    }

    /// Notes that the connection authenticated: it keeps its slot and
    /// can no longer be displaced. False if it was displaced meanwhile.
    pub fn authenticated(&self) -> bool {
        if self.reserve.is_none() || self.authenticated.load(Ordering::Relaxed) {
            return true;
        }
        let mut slots = self.shared.lock();
        if slots.waiting.remove(&self.id).is_none() {
            return false;
        }
        if let Some(o) = slots.clients.get_mut(&self.client) {
            o.waiting -= 1;
        }
        slots.tidy(self.client);
        self.authenticated.store(true, Ordering::Relaxed);
        true
    }

    /// Resolves when the connection is displaced; never for one in a
    /// shared slot or one that authenticated.
    pub async fn displaced(&self) {
        match &self.reserve {
            Some((_, n)) => n.notified().await,
            None => std::future::pending().await,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut slots = self.shared.lock();
        match &self.reserve {
            None => {
                slots.shared -= 1;
                if let Some(o) = slots.clients.get_mut(&self.client) {
                    o.shared -= 1;
                }
                slots.tidy(self.client);
            }
            Some(_) if slots.waiting.remove(&self.id).is_some() => {
                slots.reserved -= 1;
                if let Some(o) = slots.clients.get_mut(&self.client) {
                    o.waiting -= 1;
                }
                slots.tidy(self.client);
                self.shared.refusals.count(Reason::Unauthenticated);
            }
            Some(_) if self.authenticated.load(Ordering::Relaxed) => slots.reserved -= 1,
            // Displaced: its slot was taken back then.
            Some(_) => {}
        }
    }
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;
