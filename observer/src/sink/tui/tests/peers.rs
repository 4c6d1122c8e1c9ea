//! The peers view (`v`): the flows grouped by remote address, keys and
//! rendering.
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

use super::*;
use crate::attribution::group::Direction;

#[test]
fn v_shows_the_peers_most_bytes_first_and_esc_goes_back() {
    let mut a = app();
    assert!(!a.peers());
    // Flows 1 and 4 to 10.0.0.2, 2 to 2001:db8::2; 3, the idle ssh
    // session to 192.168.1.20, moved nothing and is in no group.
    let keys: Vec<&str> = a.groups().iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys.contains(&"10.0.0.2") && keys.contains(&"2001:db8::2"));
    let bytes: Vec<u64> = a.groups().iter().map(|g| g.bytes).collect();
    assert!(bytes.windows(2).all(|w| w[0] >= w[1]), "{bytes:?}");
    let two = a.groups().iter().find(|g| g.key == "10.0.0.2").unwrap();
    assert_eq!((two.flows, two.open), (2, 1));
    key(&mut a, KeyCode::Char('v'));
    assert!(a.peers());
    // The selection moves within the peers and stays in bounds.
    key(&mut a, KeyCode::Char('G'));
    assert_eq!(a.peer_cursor(), 1);
    key(&mut a, KeyCode::Down);
    assert_eq!(a.peer_cursor(), 1);
    key(&mut a, KeyCode::Char('g'));
    assert_eq!(a.peer_cursor(), 0);
    // The flow selection is where it was.
    assert_eq!(a.cursor(), 0);
    key(&mut a, KeyCode::Enter);
    assert_eq!(
        a.peer_detail().map(|g| g.key.clone()),
        Some(a.groups()[0].key.clone())
    );
    assert!(a.detail().is_none());
    key(&mut a, KeyCode::Esc);
    assert!(a.peers() && a.peer_detail().is_none());
    key(&mut a, KeyCode::Esc);
    assert!(!a.peers());
}

#[test]
fn the_peers_table_and_detail_render() {
    let mut a = app();
    key(&mut a, KeyCode::Char('v'));
    let b = render(&mut a, 80, 24);
    let l = lines(&b);
    assert!(l[3].starts_with("PEER"), "{l:#?}");
    assert!(l[3].contains("FLOWS") && l[3].contains("LIMIT") && !l[3].contains("PATH"));
    // A direction column: a peer sent to and received from is two rows,
    // each saying which.
    let titles: Vec<&str> = l[3].split_whitespace().collect();
    assert_eq!(&titles[..3], ["PEER", "DIR", "FLOWS"], "{}", l[3]);
    let row = l.iter().position(|r| r.starts_with("10.0.0.2 ")).unwrap();
    let g = a
        .groups()
        .iter()
        .find(|g| g.key == "10.0.0.2")
        .unwrap()
        .clone();
    assert!(l[row].contains(g.limit.name()), "{}", l[row]);
    let dir = match g.direction {
        Direction::Download => "down",
        Direction::Upload => "up",
    };
    assert_eq!(l[row].split_whitespace().nth(1), Some(dir), "{}", l[row]);
    assert_eq!(
        l[23],
        "q quit  j/k select  v flows  p pause  Enter detail  ? help"
    );
    // The first row is selected.
    assert!(b[(0, 4)].modifier.contains(Modifier::REVERSED));
    // Wide terminals add the fastest flow's and the path's rates.
    // Each title one word: the path's rate never reads as "PATH LIMIT".
    let wide = lines(&render(&mut a, 160, 30));
    let titles: Vec<&str> = wide[3].split_whitespace().collect();
    assert_eq!(
        titles,
        [
            "PEER", "DIR", "FLOWS", "OPEN", "RATE", "FASTEST", "PATHRATE", "LIMIT", "VERDICTS"
        ]
    );
    // The detail pane: the judgement and its explanation.
    let i = a.groups().iter().position(|x| x.key == "10.0.0.2").unwrap();
    key(&mut a, KeyCode::Char('g'));
    for _ in 0..i {
        key(&mut a, KeyCode::Down);
    }
    key(&mut a, KeyCode::Enter);
    let d = lines(&render(&mut a, 100, 30));
    assert!(d[3].contains("peer 10.0.0.2"), "{d:#?}");
    assert!(
        d[4].contains(&format!("limit {}", g.limit.name())),
        "{d:#?}"
    );
    // The bytes with the window they cover.
    let moved = format!(
        "moved {} over {} (the flows' judged intervals) at",
        crate::units::bytes(g.bytes as f64),
        crate::units::age_ms(g.span_us / 1000)
    );
    assert!(d.iter().any(|x| x.contains(&moved)), "{moved} in {d:#?}");
    let head: String = g.explanation.chars().take(40).collect();
    assert!(d.iter().any(|x| x.contains(&head)), "{head} in {d:#?}");
}
