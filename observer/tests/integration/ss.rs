//! The figures `ss -ti` prints beside the windows and RTTs (segments
//! unacknowledged, SACKed, lost and retransmitted in flight, the RTO, the
//! pacing rate, reordering, ECN-marked and D-SACKed segments, and the ages
//! of the last data sent, data received and ACK received), checked against
//! TCP_INFO of the same socket.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    time::Duration,
};

use pathemu::{Link, Namespace, Path, PathConfig, Side};

use observer::model::clock::monotonic_ns;

use crate::support::{Observer, cookie, net::connect_across, root_or_skip, tcp_info};

/// An age observer extrapolates from its last sample to the moment a
/// TCP_INFO read begins, and TCP_INFO's own, agree within two jiffies at
/// the slowest HZ (100) and the time the TCP_INFO read takes.
const AGE_SLACK_MS: u64 = 30;

/// observer's last data sent, data received and ACK received ages of
/// `flow` agree with TCP_INFO's within [`AGE_SLACK_MS`].
fn assert_ages_agree(flow: &observer::model::flow::Flow, info: &crate::support::TcpInfo) {
    for (what, ours, kernel) in [
        (
            "last_data_sent",
            flow.last_data_sent_ms,
            info.last_data_sent_ms,
        ),
        (
            "last_data_recv",
            flow.last_data_recv_ms,
            info.last_data_recv_ms,
        ),
        (
            "last_ack_recv",
            flow.last_ack_recv_ms,
            info.last_ack_recv_ms,
        ),
    ] {
        assert!(
            ours.abs_diff(u64::from(kernel)) <= AGE_SLACK_MS,
            "{} {what}: observer {ours} ms, TCP_INFO {kernel} ms",
            flow.local
        );
    }
}

#[test]
fn ages_rto_and_pacing_rate_match_tcp_info_on_a_quiet_flow() {
    if !root_or_skip("ages_rto_and_pacing_rate_match_tcp_info_on_a_quiet_flow") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    const N: usize = 4 * 1024 * 1024;
    let (flow, info) = ns
        .run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let at = listener.local_addr().unwrap();
            let mut client = TcpStream::connect(at).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            let writer = std::thread::spawn(move || {
                client.write_all(&vec![1u8; N]).unwrap();
                let mut ok = [0u8; 2];
                client.read_exact(&mut ok).unwrap();
                client
            });
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = 0;
            while got < N {
                got += server.read(&mut buf).unwrap();
            }
            server.write_all(b"ok").unwrap();
            let client = writer.join().unwrap();
            // Quiet: every age grows from here on.
            std::thread::sleep(Duration::from_millis(400));
            let at = monotonic_ns();
            let info = tcp_info(&client);
            let flow = obs
                .flow_as_of(cookie(&client), at)
                .expect("the client's flow");
            drop(server);
            (flow, info)
        })
        .unwrap();
    assert!(info.last_data_sent_ms >= 350, "{info:?}");
    assert_ages_agree(&flow, &info);
    assert!(info.rto_us >= 200_000, "{info:?}");
    assert_eq!(flow.rto_us, u64::from(info.rto_us));
    assert!(info.pacing_rate > 0 && info.pacing_rate != u64::MAX);
    assert_eq!(flow.pacing_rate_bps, Some(info.pacing_rate * 8));
    assert_eq!(flow.reordering, info.reordering);
    assert!(info.reordering >= 3, "{info:?}");
    assert_eq!(
        (flow.unacked, flow.sacked, flow.lost, flow.retrans_out),
        (info.unacked, info.sacked, info.lost, info.retrans)
    );
}

/// Request/response exchanges across a path that drops 3% of the data and
/// a quarter of the ACKs: tail-loss probes and timeouts resend segments the
/// peer already has, and its D-SACKs report them (`dsack_dups`).
#[test]
fn loss_counters_match_tcp_info_across_a_lossy_path() {
    if !root_or_skip("loss_counters_match_tcp_info_across_a_lossy_path") {
        return;
    }
    let mut obs = Observer::start();
    let delay = Duration::from_millis(5);
    let path = Path::new(
        PathConfig::new(
            Link::with_delay_only(delay).loss(0.03),
            Link::with_delay_only(delay).loss(0.25),
        )
        .seed(11),
    )
    .unwrap();
    let (mut server, mut client) = connect_across(&path, Side::B, path.ip(Side::B));
    const MSG: usize = 16 * 1024;
    const ROUNDS: usize = 60;
    let echo = std::thread::spawn(move || {
        let mut buf = vec![0u8; MSG];
        for _ in 0..ROUNDS {
            server.read_exact(&mut buf).unwrap();
            server.write_all(b"k").unwrap();
        }
        // Then an answer to each byte, until the client closes.
        while server.read_exact(&mut buf[..1]).is_ok() {
            server.write_all(b"k").unwrap();
        }
    });
    let mut one = [0u8; 1];
    for _ in 0..ROUNDS {
        client.write_all(&[2u8; MSG]).unwrap();
        client.read_exact(&mut one).unwrap();
    }
    // One byte more and its answer: reading the answer samples the flow
    // after every segment before it was processed (late D-SACKs and
    // retransmissions included), also where the kernel has no send hook
    // (before Linux 6.3: the read hook is tcp_rcv_space_adjust).
    // A late ACK (a D-SACK for a spurious resend) can still come after
    // that read and pass unsampled: exchange again, a little later, until
    // the read's sample has everything (a few rounds at most).
    let key = cookie(&client);
    let mut info = tcp_info(&client);
    let mut flow = None;
    for _ in 0..8 {
        client.write_all(b"z").unwrap();
        client.read_exact(&mut one).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        info = tcp_info(&client);
        let f = obs.flow(key).expect("the client's flow");
        let settled = info.unacked == 0
            && f.bytes_acked == info.bytes_acked
            && f.bytes_received == info.bytes_received
            && f.retransmits == info.total_retrans
            && f.dsack_dups == info.dsack_dups;
        flow = Some(f);
        if settled {
            break;
        }
    }
    let flow = flow.unwrap();
    drop(client);
    echo.join().unwrap();
    assert!(info.total_retrans > 0, "no segment was resent: {info:?}");
    assert!(info.dsack_dups > 0, "no D-SACK came back: {info:?}");
    assert_eq!(flow.retransmits, info.total_retrans);
    assert_eq!(flow.dsack_dups, info.dsack_dups);
    assert_eq!(flow.reordering, info.reordering);
    assert_eq!(flow.delivered_ce, info.delivered_ce);
    assert_eq!(
        (flow.sacked, flow.lost, flow.retrans_out),
        (info.sacked, info.lost, info.retrans)
    );
    // Not compared here: the RTO, which the last ACK itself recomputes after
    // `tcp_probe` has sampled it (the quiet test above compares it).
}

/// A connection that completes its handshake and never sends: the state
/// change is sampled before the kernel stores it and stamps the
/// handshake's end, so both are carried forward (it once read as
/// `syn-sent`, with data last sent some 20 hours ago).
#[test]
fn a_connection_that_never_sends_is_established_with_true_ages() {
    if !root_or_skip("a_connection_that_never_sends_is_established_with_true_ages") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    let ends = ns
        .run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(400));
            [client, server]
                .into_iter()
                .map(|s| {
                    let at = monotonic_ns();
                    let info = tcp_info(&s);
                    let flow = obs.flow_as_of(cookie(&s), at).expect("the flow");
                    (flow, info, s)
                })
                .collect::<Vec<_>>()
        })
        .unwrap();
    for (flow, info, _) in &ends {
        assert_eq!(flow.state, "established", "{flow:?}");
        assert_ages_agree(flow, info);
    }
}
