//! The detail pane of `observer top`: one flow's verdict, advice (the
//! ADVICE column whole), explanation and evidence (time shares, ceilings against the rate, queueing delay,
//! retransmits), the what-if window arithmetic, and sparklines of its
//! recent history.

use std::time::Duration;

use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    text::{Line, Span, Text},
    widgets::{Block, Paragraph, Sparkline, Wrap},
};

use super::{
    row::{AVERAGE_SPAN, Row},
    theme,
};
use crate::{
    attribution::Side,
    sink::figures::{also_name, window_fill},
    units,
};

/// `name ceiling (N%)`: the ceiling and the rate as a share of it.
fn against(name: &str, ceiling: f64, rate: f64) -> String {
    if ceiling > 0.0 {
        format!(
            "{name} {} ({})",
            units::rate(ceiling),
            units::share(rate / ceiling)
        )
    } else {
        format!("{name} -")
    }
}

/// The evidence lines of a download judged from this, the receiving, end:
/// the receiving end's figures, not those of the little this host sends
/// (its requests and ACKs).
fn receiver_lines(r: &Row, rate: String) -> Vec<Line<'static>> {
    let head = |s: &'static str| Span::styled(format!("{s:<9}"), theme::bold());
    let rx = &r.current.evidence.receive;
    // Nothing arrived: no fill, no bursts to speak of, one line says so.
    let ev = &r.current.evidence;
    if ev.bytes_received == 0 && ev.recv_rate_bps <= 0.0 {
        return vec![
            Line::from(vec![
                head("receive"),
                Span::raw(format!(
                    "nothing arrived in the judged interval; window closed {}, unread {}",
                    units::share(rx.closed_share),
                    units::bytes(rx.unread_mean),
                )),
            ]),
            Line::from(vec![head("rate"), Span::raw(rate)]),
            rtt_line(r, head("rtt")),
        ];
    }
    // FILL%'s figure: `-` where the window was shut most of the time
    // (`window closed` says how much).
    let fill = window_fill(rx).map_or_else(|| "-".to_string(), units::share);
    vec![
        Line::from(vec![
            head("receive"),
            Span::raw(format!(
                "window fill {fill} (in flight {} of rcv_wnd {}), unread {}, window closed {}, sender paused {} ({} of the time with the window shut)",
                units::bytes(rx.in_flight_bytes),
                units::bytes(rx.rcv_wnd_mean),
                units::bytes(rx.unread_mean),
                units::share(rx.closed_share),
                units::share(rx.gap_share),
                units::share(rx.gap_shut_share),
            )),
        ]),
        Line::from(vec![head("rate"), Span::raw(rate)]),
        Line::from(vec![
            head("bursts"),
            Span::raw(format!(
                "{} of the data at {}; the flow used {} of that",
                units::share(rx.burst_share),
                units::rate(rx.burst_rate_bps),
                units::share(rx.path_use),
            )),
        ]),
        rtt_line(r, head("rtt")),
    ]
}

/// The receiving end's RTT line: rcv_rtt, base, queue, out-of-order.
fn rtt_line(r: &Row, head: Span<'static>) -> Line<'static> {
    let rx = &r.current.evidence.receive;
    Line::from(vec![
        head,
        Span::raw(format!(
            "rcv_rtt {}, base {}, queue {}; out-of-order {} ({} total)",
            units::time_us(rx.rtt_mean_us),
            units::time_us(f64::from(rx.base_rtt_us)),
            units::time_us(f64::from(rx.queue_delay_us)),
            rx.ooo_packets,
            r.flow.rcv_ooopack,
        )),
    ])
}

/// The row's RATE where it is an average, after the judged window's
/// rate: ` (~1.0 Mbit/s over the last 10 s, RATE)`; empty where RATE is
/// that window's.
fn average(r: &Row) -> String {
    r.average_bps.map_or_else(String::new, |bps| {
        format!(
            " (~{} over the last {} s, RATE)",
            units::rate(bps),
            AVERAGE_SPAN.as_secs()
        )
    })
}

/// The detail pane's text: verdict, explanation, evidence, what-if.
fn detail_text(r: &Row) -> Text<'static> {
    let a = &r.current;
    let ev = &a.evidence;
    let f = &r.flow;
    let s = &ev.shares;
    let head = |s: &'static str| Span::styled(format!("{s:<9}"), theme::bold());
    let (side, rate) = match a.side {
        Side::Sender => (
            "sender",
            format!(
                "sent {}{}{}; ceilings {}, {}",
                units::rate(ev.rate_bps),
                average(r),
                if ev.app_limited { " (app-limited)" } else { "" },
                against("rwnd", ev.ceilings.rwnd_bps, ev.rate_bps),
                against("cwnd", ev.ceilings.cwnd_bps, ev.rate_bps),
            ),
        ),
        Side::Receiver => (
            "receiver",
            format!(
                "received {}{}; ceiling {}",
                units::rate(ev.recv_rate_bps),
                average(r),
                against("rcv_wnd", ev.ceilings.rcv_wnd_bps, ev.recv_rate_bps),
            ),
        ),
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled(
                a.verdict.name(),
                theme::verdict(a.verdict).patch(theme::bold()),
            ),
            Span::raw(format!(
                "  confidence {:.2}, {side} side, {} {:.1} s{}",
                a.confidence,
                // A closed row is judged over its life.
                if r.closed {
                    "over its life,"
                } else {
                    "over the last"
                },
                ev.interval_us as f64 / 1e6,
                if r.closed { ", closed" } else { "" }
            )),
        ]),
        // The ADVICE column's words, whole, before what they rest on.
        Line::from(vec![head("advice"), Span::raw(r.advice())]),
    ];
    // The second limit on a line of its own, near the top where a short
    // pane keeps it, and not again at the explanation's end.
    let mut explanation = a.explanation.as_str();
    if let Some(x) = &a.also {
        explanation = explanation.strip_suffix(&x.clause()).unwrap_or(explanation);
        let reason = if x.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", x.reason)
        };
        lines.push(Line::from(vec![
            head("also"),
            Span::styled(x.verdict.name(), theme::verdict(x.verdict)),
            // The cell's `+` name, where it is not the verdict's own.
            Span::raw(match also_name(x.verdict) {
                short if short == x.verdict.name() => {
                    format!(" (strength {:.2}){reason}", x.share)
                }
                short => format!(" (+{short}, strength {:.2}){reason}", x.share),
            }),
        ]));
    }
    lines.push(Line::raw(explanation.to_string()));
    if a.side == Side::Receiver {
        lines.extend(receiver_lines(r, rate));
    } else {
        lines.extend([
            Line::from(vec![
                head("limited"),
                Span::raw(format!(
                    "of busy: rwnd {}, sndbuf {}, cwnd {}, other {}; busy {} of wall",
                    units::share(ev.of_busy(s.rwnd_limited)),
                    units::share(ev.of_busy(s.sndbuf_limited)),
                    units::share(ev.of_busy(s.cwnd_limited)),
                    units::share(ev.of_busy(s.other_busy)),
                    units::share(ev.busy()),
                )),
            ]),
            Line::from(vec![head("rate"), Span::raw(rate)]),
            Line::from(vec![
                head("windows"),
                // In the row's units: bytes as KB/MB, cwnd and in flight
                // in segments.
                Span::raw(format!(
                    "cwnd {} seg x {} B = {}, snd_wnd {}, in flight {} seg",
                    ev.snd_cwnd,
                    ev.mss,
                    units::bytes(f64::from(ev.snd_cwnd) * f64::from(ev.mss)),
                    units::bytes(f64::from(ev.snd_wnd)),
                    f.inflight,
                )),
            ]),
            Line::from(vec![
                head("rtt"),
                Span::raw(format!(
                    "srtt {}, min {}, queue {}; retrans {} ({} total)",
                    units::time_us(f64::from(ev.srtt_us)),
                    units::time_us(f64::from(ev.min_rtt_us)),
                    units::time_us(f64::from(ev.queue_delay_us)),
                    ev.retransmits,
                    f.retransmits,
                )),
            ]),
        ]);
    }
    let what_if = match &a.what_if {
        Some(w) => {
            let others: Vec<String> = w
                .at_other_rtts
                .iter()
                .map(|c| format!("{} at {} ms", units::rate(c.ceiling_bps), c.rtt_ms))
                .collect();
            let beyond = match (&w.other_fix, w.max_window_bytes) {
                (Some(fix), Some(max)) if w.needed_bytes > max as f64 => {
                    format!(
                        " (over the {} the header carries: {fix})",
                        units::bytes(max as f64)
                    )
                }
                _ => String::new(),
            };
            match (&w.other_fix, w.window_helps) {
                // The peer's reader, not the window: no size to ask for.
                (Some(fix), false) => format!(
                    "{} / {} = {}; a larger window would not help: {fix}",
                    units::bytes(w.window_bytes as f64),
                    units::time_us(f64::from(w.rtt_us)),
                    units::rate(w.ceiling_bps),
                ),
                _ => format!(
                    "{} / {} = {}; {} needs {}{beyond}; the window allows {}",
                    units::bytes(w.window_bytes as f64),
                    units::time_us(f64::from(w.rtt_us)),
                    units::rate(w.ceiling_bps),
                    units::rate(w.target_bps),
                    units::bytes(w.needed_bytes),
                    others.join(", "),
                ),
            }
        }
        None => "- (no window binds)".to_string(),
    };
    lines.push(Line::from(vec![head("what-if"), Span::raw(what_if)]));
    let SsLines { counts, ages } = ss_fields(f);
    lines.push(Line::from(vec![head("ss"), Span::raw(counts)]));
    lines.push(Line::from(vec![head("last"), Span::raw(ages)]));
    Text::from(lines)
}

/// The figures `ss -ti` prints beside the windows, in its words and
/// order: RTO, pacing rate, reordering, segments unacknowledged, SACKed,
/// lost and retransmitted (in flight / total), CE-marked and D-SACKed; then
/// the ages of the last data sent, data received and ACK received.
fn ss_fields(f: &crate::model::flow::Flow) -> SsLines {
    let c = |s: String| units::compact(&s);
    let counts = format!(
        "rto {} pacing {} reord {} unacked {} sacked {} lost {} retrans {}/{} ce {} dsack {}",
        c(units::time_us(f.rto_us as f64)),
        f.pacing_rate_bps
            .map_or_else(|| "-".to_string(), |r| c(units::rate(r as f64))),
        f.reordering,
        f.unacked,
        f.sacked,
        f.lost,
        f.retrans_out,
        f.retransmits,
        f.delivered_ce,
        f.dsack_dups,
    );
    let ages = format!(
        "data sent {} ago, data received {} ago, ACK received {} ago",
        units::age_ms(f.last_data_sent_ms),
        units::age_ms(f.last_data_recv_ms),
        units::age_ms(f.last_ack_recv_ms),
    );
    SsLines { counts, ages }
}

/// `ss -ti`'s other figures as the detail pane's two lines.
struct SsLines {
    /// RTO, pacing rate, reordering and the segment counts.
    counts: String,
    /// The ages of the last data sent, data received and ACK received.
    ages: String,
}

/// Draws the detail pane of `row` (or says that its flow has gone).
pub fn draw(frame: &mut Frame, row: Result<&Row, u64>, interval: Duration, area: Rect) {
    let r = match row {
        Ok(r) => r,
        Err(cookie) => {
            let block = Block::bordered().title(format!(" flow {cookie} "));
            let p = Paragraph::new("this flow is no longer tracked (Esc: back to the table)")
                .block(block);
            frame.render_widget(p, area);
            return;
        }
    };
    let title = format!(
        " {}  {} -> {}{} ",
        r.process(),
        r.flow.local,
        r.flow.remote,
        if r.closed { "  (closed)" } else { "" }
    );
    let block = Block::bordered().title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [text_area, sparks] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(5)]).areas(inner);
    frame.render_widget(
        Paragraph::new(detail_text(r)).wrap(Wrap { trim: false }),
        text_area,
    );
    draw_sparklines(frame, r, interval, sparks);
}

fn draw_sparklines(frame: &mut Frame, r: &Row, interval: Duration, area: Rect) {
    if area.height == 0 {
        return;
    }
    let h = &r.history;
    let cwnd = |segs: u64| format!("{segs} seg");
    let rate = |bps: u64| units::compact(&units::rate(bps as f64));
    let bytes = |b: u64| units::compact(&units::bytes(b as f64));
    let rtt = |us: u64| units::compact(&units::time_us(us as f64));
    type Series<'a> = (&'a str, Vec<u64>, &'a dyn Fn(u64) -> String);
    let rates = (
        "rate",
        h.iter().map(|p| p.rate_bps.round() as u64).collect(),
        &rate as &dyn Fn(u64) -> String,
    );
    // A download's history is the receiving end's: its window, unread
    // bytes and receiver RTT.
    let series: [Series; 4] = if r.download() {
        [
            rates,
            (
                "rcv_wnd",
                h.iter().map(|p| u64::from(p.rcv_wnd)).collect(),
                &bytes,
            ),
            (
                "unread",
                h.iter().map(|p| u64::from(p.unread)).collect(),
                &bytes,
            ),
            (
                "rcv_rtt",
                h.iter().map(|p| u64::from(p.receiver_rtt_us())).collect(),
                &rtt,
            ),
        ]
    } else {
        [
            rates,
            (
                "cwnd",
                h.iter().map(|p| u64::from(p.snd_cwnd)).collect(),
                &cwnd,
            ),
            (
                "snd_wnd",
                h.iter().map(|p| u64::from(p.snd_wnd)).collect(),
                &bytes,
            ),
            (
                "srtt",
                h.iter().map(|p| u64::from(p.srtt_us)).collect(),
                &rtt,
            ),
        ]
    };
    let span = interval.as_secs_f64() * h.len() as f64;
    let title = if h.is_empty() {
        // No points: no sparklines, rather than four of zeros.
        "history: none kept for this flow".to_string()
    } else {
        format!(
            "history: last {span:.0} s, one point a poll ({}), oldest left",
            humantime::format_duration(interval)
        )
    };
    frame.render_widget(
        Paragraph::new(Line::styled(title, theme::dim())),
        Rect { height: 1, ..area },
    );
    if h.is_empty() {
        return;
    }
    // Room for the widest " NOW max MAX" any series can show, whichever
    // of its points the sparkline's width keeps (` 24.77Gbit/s max
    // 24.77Gbit/s` is 28 cells).
    let figure = series
        .iter()
        .flat_map(|(_, data, fmt)| data.iter().map(|x| fmt(*x).chars().count()))
        .max()
        .unwrap_or(1);
    let label = u16::try_from(2 * figure + " max ".len() + 1).unwrap_or(u16::MAX);
    for (n, (name, data, fmt)) in series.iter().enumerate() {
        let y = area.y + 1 + n as u16;
        if y >= area.bottom() {
            break;
        }
        let line = Rect {
            y,
            height: 1,
            ..area
        };
        let [l, spark, v] = Layout::horizontal([
            Constraint::Length(9),
            Constraint::Max(60),
            Constraint::Length(label),
        ])
        .areas(line);
        frame.render_widget(Paragraph::new(theme::label(name)), l);
        let width = usize::from(spark.width);
        let tail = &data[data.len().saturating_sub(width)..];
        frame.render_widget(
            Sparkline::default()
                .data(tail)
                .style(theme::verdict(r.verdict())),
            spark,
        );
        let now = tail.last().copied().unwrap_or(0);
        let max = tail.iter().copied().max().unwrap_or(0);
        frame.render_widget(Paragraph::new(format!(" {} max {}", fmt(now), fmt(max))), v);
    }
}
