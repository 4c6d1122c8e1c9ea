//! Prints the samples of a recording, one line per flow per poll, with the
//! figures that a look at a verdict by hand needs most:
//! `cargo run -p accuracy --example samples -- target/accuracy/recordings-1/cubic-46.ndjson.gz`;
//! with `--life` after the file, each flow's last life verdict and its
//! evidence instead (JSON), replayed as `--rejudge` judges it; with
//! `--current`, each flow's verdict over each poll's interval, a line
//! each (what `observer top` shows poll by poll).

use accuracy::replayed::{Ends, replay};
use observer::track::recording::Recording;

fn main() -> anyhow::Result<()> {
    let path = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: samples RECORDING"))?;
    let rec = Recording::read(std::path::Path::new(&path))?;
    let t0 = rec.polls.first().map_or(0, |p| p.now_ns);
    if std::env::args().nth(2).as_deref() == Some("--current") {
        replay(&rec, |p, live| {
            for t in live.flows() {
                let a = &t.current;
                let r = &a.evidence.receive;
                println!(
                    "t {:7.3} {} {:x} {} ({}) {:.2} rate {:.2}/{:.2} Mbit/s closed {:.2}",
                    (p.now_ns - t0) as f64 / 1e9,
                    p.label,
                    t.latest.cookie,
                    a.verdict,
                    a.rule,
                    a.confidence,
                    a.evidence.rate_bps / 1e6,
                    a.evidence.recv_rate_bps / 1e6,
                    r.closed_share,
                );
            }
        });
        return Ok(());
    }
    if std::env::args().nth(2).as_deref() == Some("--life") {
        let mut last = std::collections::BTreeMap::new();
        replay(&rec, |p, live| {
            let ends = Ends::from_label(&p.label);
            for t in live.flows() {
                let end = match ends {
                    Some(e) if t.latest.netns == e.a => "a",
                    Some(e) if t.latest.netns == e.b => "b",
                    _ => "-",
                };
                let bytes = t.flow.bytes_acked.max(t.flow.bytes_received);
                last.insert(t.latest.cookie, (end, bytes, t.life.clone()));
            }
        });
        let compact = std::env::args().nth(3).as_deref() == Some("--compact");
        for (cookie, (end, bytes, life)) in last {
            if compact {
                println!(
                    "{path} {cookie:x} {end} {bytes} {}",
                    serde_json::to_string(&life)?
                );
            } else {
                println!("{cookie:x} {}", serde_json::to_string_pretty(&life)?);
            }
        }
        return Ok(());
    }
    for p in &rec.polls {
        for s in &p.samples {
            println!(
                "t {:7.3} cookie {:x} port {}->{} st {} ca {} last {:7.3} acked {} recv {} \
                 cwnd {} ssthr {} srtt {} minrtt {} out {} retr_out {} lost {} sacked {} \
                 total_retr {} snd_wnd {} rcv_wnd {} samples {} ooo {} segs_in {} rx_gap_ns {} \
                 rcv_rtt {} app_lim {} closed {}",
                (p.now_ns - t0) as f64 / 1e9,
                s.cookie,
                s.sport,
                s.dport,
                s.state,
                s.ca_state,
                (s.last_seen_ns as f64 - t0 as f64) / 1e9,
                s.bytes_acked,
                s.bytes_received,
                s.snd_cwnd,
                s.snd_ssthresh,
                s.srtt_us,
                s.min_rtt_us,
                s.packets_out,
                s.retrans_out,
                s.lost_out,
                s.sacked_out,
                s.total_retrans,
                s.snd_wnd,
                s.rcv_wnd,
                s.samples,
                s.rcv_ooopack,
                s.segs_in,
                s.rx_gap_ns,
                s.rcv_rtt_us,
                s.rate_app_limited,
                s.closed_ns != 0,
            );
        }
    }
    Ok(())
}
