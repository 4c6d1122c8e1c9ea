use super::*;

fn refusals() -> Refusals {
    Refusals::new(Reason::ALL.map(|r| IntCounter::new(r.label(), "test").unwrap()))
}

/// The refusals counted so far, in [`Reason::ALL`] order.
fn counted(g: &Gate) -> [u64; 4] {
    std::array::from_fn(|i| g.shared.refusals.0[i].get())
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn ticket(a: Admission) -> Ticket {
    match a {
        Admission::Admitted(t) => t,
        Admission::Refused { reason, client } => panic!("refused {client}: {reason:?}"),
    }
}

fn refused(a: Admission) -> Reason {
    match a {
        Admission::Admitted(t) => panic!("admitted {} (past {:?})", t.client(), t.past()),
        Admission::Refused { reason, .. } => reason,
    }
}

#[test]
fn clients_are_ipv4_addresses_and_ipv6_64s() {
    let c = |s: &str| Client::of(ip(s)).to_string();
    assert_eq!(c("10.0.0.7"), "10.0.0.7");
    // An IPv4 peer on the dual-stack listener is its IPv4 address, not
    // one /64 shared by every IPv4 client.
    assert_eq!(c("::ffff:10.0.0.7"), "10.0.0.7");
    assert_eq!(c("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
    assert_eq!(
        Client::of(ip("2001:db8:1:2::1")),
        Client::of(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"))
    );
    assert_ne!(
        Client::of(ip("2001:db8:1:2::1")),
        Client::of(ip("2001:db8:1:3::1"))
    );
}

#[test]
fn the_flag_takes_1_to_the_shared_slots() {
    assert_eq!(parse_per_client("64"), Ok(64));
    assert_eq!(parse_per_client(" 1 "), Ok(1));
    assert_eq!(parse_per_client("496"), Ok(SHARED_SLOTS));
    for bad in ["0", "-1", "497", "512", "1.5", "many", ""] {
        assert_eq!(
            parse_per_client(bad),
            Err(format!(
                "'{bad}' is not a connection count from 1 to 496 (the endpoint holds 512 \
                 connections, 16 of them kept for scrapers that authenticate)"
            ))
        );
    }
}

#[test]
fn without_a_way_to_authenticate_a_client_past_its_cap_is_refused() {
    let g = Gate::new(3, false, refusals());
    let held: Vec<Ticket> = (0..3).map(|_| ticket(g.admit(ip("10.0.0.1")))).collect();
    assert!(held.iter().all(|t| t.past().is_none() && !t.waiting()));
    assert_eq!(refused(g.admit(ip("10.0.0.1"))), Reason::ClientCap);
    assert_eq!(refused(g.admit(ip("::ffff:10.0.0.1"))), Reason::ClientCap);
    // Another client is not affected.
    let other = ticket(g.admit(ip("10.0.0.2")));
    assert_eq!(counted(&g), [2, 0, 0, 0]);
    // A slot given back is a slot free again.
    drop(held);
    let again: Vec<Ticket> = (0..3).map(|_| ticket(g.admit(ip("10.0.0.1")))).collect();
    drop((again, other));
    assert!(g.shared.lock().clients.is_empty());
    assert_eq!(g.shared.lock().shared, 0);
}

#[test]
fn the_shared_slots_hold_at_most_their_number() {
    let g = Gate::new(DEFAULT_PER_CLIENT, false, refusals());
    let mut held = Vec::new();
    for i in 0..SHARED_SLOTS {
        let peer = ip(&format!("10.0.{}.1", i / DEFAULT_PER_CLIENT));
        held.push(ticket(g.admit(peer)));
    }
    assert_eq!(refused(g.admit(ip("10.9.9.9"))), Reason::TotalCap);
    assert_eq!(counted(&g), [0, 1, 0, 0]);
}

#[test]
fn past_its_cap_a_client_waits_in_the_reserve_until_it_authenticates() {
    let g = Gate::new(2, true, refusals());
    let _held: Vec<Ticket> = (0..2).map(|_| ticket(g.admit(ip("10.0.0.1")))).collect();
    let t = ticket(g.admit(ip("10.0.0.1")));
    assert_eq!(t.past(), Some(Reason::ClientCap));
    assert!(t.waiting());
    assert!(t.authenticated());
    assert!(!t.waiting());
    assert!(t.authenticated(), "asking again changes nothing");
    assert_eq!(g.shared.lock().reserved, 1);
    drop(t);
    assert_eq!(g.shared.lock().reserved, 0);
    // One that leaves without authenticating is counted.
    let t = ticket(g.admit(ip("10.0.0.1")));
    drop(t);
    assert_eq!(counted(&g), [0, 0, 1, 0]);
    assert_eq!(g.shared.lock().reserved, 0);
}

#[test]
fn a_client_with_its_waiting_quota_displaces_its_own_oldest() {
    let g = Gate::new(1, true, refusals());
    // Another client's waiting connection, the oldest of all.
    let _other_held = ticket(g.admit(ip("10.0.0.2")));
    let other = ticket(g.admit(ip("10.0.0.2")));
    let _held = ticket(g.admit(ip("10.0.0.1")));
    let waiting: Vec<Ticket> = (0..WAITING_PER_CLIENT)
        .map(|_| ticket(g.admit(ip("10.0.0.1"))))
        .collect();
    let newest = ticket(g.admit(ip("10.0.0.1")));
    assert!(!waiting[0].waiting(), "its own oldest gave its slot");
    assert!(!waiting[0].authenticated(), "too late to authenticate");
    assert!(waiting[1..].iter().all(Ticket::waiting));
    assert!(other.waiting() && newest.waiting());
    assert_eq!(counted(&g), [0, 0, 0, 1]);
    assert_eq!(g.shared.lock().reserved, WAITING_PER_CLIENT + 1);
    // Its task hears of it.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(1), waiting[0].displaced())
            .await
            .expect("told it was displaced");
        let quiet = tokio::time::timeout(Duration::from_millis(50), newest.displaced()).await;
        assert!(quiet.is_err(), "the newest was not displaced");
    });
    // Dropping the displaced one gives back nothing more.
    drop(waiting);
    drop((other, newest));
    assert_eq!(g.shared.lock().reserved, 0);
    assert_eq!(counted(&g), [0, 0, WAITING_PER_CLIENT as u64 + 1, 1]);
}

#[test]
fn a_full_reserve_displaces_the_oldest_waiting_or_refuses_when_all_authenticated() {
    let g = Gate::new(1, true, refusals());
    let mut held = Vec::new();
    let mut reserve = Vec::new();
    // Sixteen clients, each with one shared slot and one waiting.
    for i in 0..RESERVED_SLOTS {
        let peer = ip(&format!("10.0.0.{}", i + 1));
        held.push(ticket(g.admit(peer)));
        reserve.push(ticket(g.admit(peer)));
    }
    assert_eq!(g.shared.lock().reserved, RESERVED_SLOTS);
    let late = ticket(g.admit(ip("10.0.1.1")));
    assert!(late.authenticated(), "in a shared slot");
    let newcomer = ticket(g.admit(ip("10.0.1.1")));
    assert!(newcomer.waiting());
    assert!(!reserve[0].waiting(), "the oldest waiting gave its slot");
    assert_eq!(counted(&g), [0, 0, 0, 1]);
    // Once every reserve slot authenticated, nothing is displaced.
    assert!(newcomer.authenticated());
    for t in &reserve[1..] {
        assert!(t.authenticated());
    }
    assert_eq!(refused(g.admit(ip("10.0.1.1"))), Reason::ClientCap);
    assert_eq!(counted(&g), [1, 0, 0, 1]);
    drop((held, reserve, late, newcomer));
    let slots = g.shared.lock();
    assert_eq!((slots.shared, slots.reserved), (0, 0));
    assert!(slots.clients.is_empty() && slots.waiting.is_empty());
}

#[test]
fn a_flood_displaces_its_own_before_a_lone_scraper() {
    let g = Gate::new(1, true, refusals());
    // Every shared slot taken.
    let _full: Vec<Ticket> = (0..SHARED_SLOTS)
        .map(|i| ticket(g.admit(ip(&format!("10.1.{}.{}", i / 250, i % 250)))))
        .collect();
    // A scraper waits, then eight addresses flood the reserve, 1,000
    // connections round-robin, the newest 64 kept open.
    let scraper = ticket(g.admit(ip("10.0.0.30")));
    assert_eq!(scraper.past(), Some(Reason::TotalCap));
    let mut flood = std::collections::VecDeque::new();
    for k in 0..1000 {
        flood.push_back(g.admit(ip(&format!("10.0.0.{}", 2 + k % 8))));
        if flood.len() > 64 {
            flood.pop_front();
        }
        assert!(scraper.waiting(), "displaced at the {k}th");
    }
    // Fifteen flood connections wait beside it.
    assert_eq!(g.shared.lock().reserved, RESERVED_SLOTS);
    assert!(scraper.authenticated());
    // A flood from 32 addresses already under way: each address has had
    // connections displaced, so a scraper arriving is not.
    let g = Gate::new(1, true, refusals());
    let _full: Vec<Ticket> = (0..SHARED_SLOTS)
        .map(|i| ticket(g.admit(ip(&format!("10.1.{}.{}", i / 250, i % 250)))))
        .collect();
    let mut flood = std::collections::VecDeque::new();
    let mut k = 0;
    let mut more = |n: usize| {
        for _ in 0..n {
            flood.push_back(g.admit(ip(&format!("10.0.0.{}", 100 + k % 32))));
            if flood.len() > 64 {
                flood.pop_front();
            }
            k += 1;
        }
    };
    more(1000);
    let scraper = ticket(g.admit(ip("10.0.0.30")));
    more(1000);
    assert!(scraper.waiting());
    // From sixteen fresh addresses, each holding one, the oldest gives
    // way: the scraper's only then.
    let g = Gate::new(1, true, refusals());
    let _full: Vec<Ticket> = (0..SHARED_SLOTS)
        .map(|i| ticket(g.admit(ip(&format!("10.1.{}.{}", i / 250, i % 250)))))
        .collect();
    let scraper = ticket(g.admit(ip("10.0.0.30")));
    let _flood: Vec<Ticket> = (0..RESERVED_SLOTS)
        .map(|k| ticket(g.admit(ip(&format!("10.0.0.{}", 40 + k)))))
        .collect();
    assert!(!scraper.waiting());
}
