//! Renders the host view (`observer flows --by`, `--summary`, top's
//! peers): which flows a group counts ([`moving`]), and the groups as an
//! aligned table, NDJSON, or one line each with what would help, their
//! namespaces by the name their flows carry ([`Named`]).

use std::{collections::BTreeMap, io::Write, sync::Arc};

use super::records::{line, widen};
use crate::{
    attribution::{
        Attribution, Config, Side, Verdict,
        group::{self, Group, GroupBy, judge::Limit},
    },
    model::flow::Flow,
    track::netns::host_netns,
    units,
};

/// The flows of `pairs` that moved bytes over their judged interval
/// (acked, for an upload; received, for a download), or that a shut
/// receive window held at none (a reader that stopped reading: the stalled
/// flow is the one to see), the ones a group is made of, and how many
/// were left out. A flow that moved nothing otherwise (an idle control
/// connection beside its transfers, an ssh session) has no rate to share:
/// counted, it would be a member that ran 0 bit/s, and a group of such
/// flows would read "0.0 times the fastest alone".
pub fn moving<'a>(
    pairs: &[(&'a Flow, &'a Attribution)],
) -> (Vec<(&'a Flow, &'a Attribution)>, usize) {
    let moved = |a: &Attribution| match a.side {
        Side::Sender => {
            a.evidence.bytes_acked > 0
                || (a.verdict == Verdict::ReceiveWindow && a.evidence.shares.rwnd_limited > 0.0)
        }
        Side::Receiver => {
            a.evidence.bytes_received > 0
                || (matches!(
                    a.verdict,
                    Verdict::ReceiverApplication | Verdict::ReceiveWindow
                ) && a.evidence.receive.closed_share > 0.0)
        }
    };
    let kept: Vec<_> = pairs.iter().copied().filter(|(_, a)| moved(a)).collect();
    let idle = pairs.len() - kept.len();
    (kept, idle)
}

/// A group and the `ip netns` name its flows carry
/// ([`Flow::netns_name`], given when each was first seen).
#[derive(Clone, Debug, PartialEq)]
pub struct Named {
    /// The group, as [`group::group`] judges it.
    pub group: Group,
    /// Its flows' namespace name, where `ip netns` named it.
    pub netns_name: Option<Arc<str>>,
}

impl std::ops::Deref for Named {
    type Target = Group;

    fn deref(&self) -> &Group {
        &self.group
    }
}

impl Named {
    /// The group's namespace as a person reads it: its name where it has
    /// one, else its inode.
    pub fn netns_label(&self) -> String {
        self.netns_name
            .as_deref()
            .map_or_else(|| self.group.netns.to_string(), str::to_string)
    }

    /// The group's namespace in a sentence: `netns NAME`, `host netns`
    /// for the host's own (unnamed), else `netns INODE`.
    pub fn netns_words(&self) -> String {
        match &self.netns_name {
            Some(name) => format!("netns {name}"),
            None if host_netns() == Some(self.group.netns) => "host netns".to_string(),
            None => format!("netns {}", self.group.netns),
        }
    }
}

/// The groups of `pairs` by `by`, as [`group::group`] makes them, but
/// apart by the namespace name each flow carries as well as by inode: the
/// kernel gives a deleted namespace's inode to the next one made, so two
/// flows of one inode may be of two namespaces, each with its own name.
/// In [`group::group`]'s order: by namespace, then most bytes first.
pub fn group_named(pairs: &[(&Flow, &Attribution)], by: GroupBy, cfg: &Config) -> Vec<Named> {
    let mut apart: BTreeMap<Option<Arc<str>>, Vec<(&Flow, &Attribution)>> = BTreeMap::new();
    for &(flow, att) in pairs {
        apart
            .entry(flow.netns_name.clone())
            .or_default()
            .push((flow, att));
    }
    let mut named: Vec<Named> = apart
        .into_iter()
        .flat_map(|(netns_name, members)| {
            group::group(&members, by, cfg)
                .into_iter()
                .map(move |group| Named {
                    group,
                    netns_name: netns_name.clone(),
                })
        })
        .collect();
    named.sort_by(|a, b| {
        (a.netns, &a.netns_name)
            .cmp(&(b.netns, &b.netns_name))
            .then(b.bytes.cmp(&a.bytes))
    });
    named
}

/// Writes one JSON object per group, one per line (docs/json.md, "Groups").
///
/// # Errors
/// Write or serialisation failures.
pub fn write_json(out: &mut impl Write, groups: &[Named]) -> std::io::Result<()> {
    for g in groups {
        serde_json::to_writer(&mut *out, &g.group)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// The header of the table's group column, by what the groups are of.
fn key_header(groups: &[Named]) -> &'static str {
    match groups.first().map(|g| g.by) {
        Some("process") => "PROCESS",
        Some("workload") => "WORKLOAD",
        _ => "PEER",
    }
}

/// The verdicts that held the group's bytes, most first: `path 60%
/// receiver_application 40%`.
pub(crate) fn verdict_mix(g: &Group) -> String {
    let mut v: Vec<(&str, u64)> = g.verdicts.iter().map(|(k, b)| (*k, *b)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v.iter()
        .filter(|(_, b)| *b > 0)
        .map(|(k, b)| format!("{k} {}", units::share(*b as f64 / g.bytes.max(1) as f64)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes an aligned table, one row per group, with a header line; the
/// NETNS column gives each namespace's name, or its inode.
///
/// # Errors
/// Write failures.
pub fn write_table(out: &mut impl Write, groups: &[Named]) -> std::io::Result<()> {
    let header: Vec<String> = [
        "NETNS",
        key_header(groups),
        "DIR",
        "FLOWS",
        "OPEN",
        "CONC",
        "BYTES",
        "SPAN",
        "RATE",
        "FASTEST",
        "PATH_RATE",
        "LIMIT",
        "VERDICTS",
    ]
    .iter()
    .map(|h| (*h).to_string())
    .collect();
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            vec![
                g.netns_label(),
                g.key.clone(),
                g.direction.name().to_string(),
                g.flows.to_string(),
                g.open.to_string(),
                g.concurrent.to_string(),
                units::compact(&units::bytes(g.bytes as f64)),
                units::compact(&units::age_ms(g.span_us / 1000)),
                units::compact(&units::rate(g.rate_bps)),
                units::compact(&units::rate(g.fastest_bps)),
                units::compact(&units::rate(g.path_bps)),
                g.limit.name().to_string(),
                verdict_mix(g),
            ]
        })
        .collect();
    let mut width: Vec<usize> = vec![0; header.len()];
    widen(&mut width, &header);
    for r in &rows {
        widen(&mut width, r);
    }
    writeln!(out, "{}", line(&header, &width))?;
    for r in &rows {
        writeln!(out, "{}", line(r, &width))?;
    }
    Ok(())
}

/// Writes the host-level lines: one counting the groups by limit (and
/// the `idle` flows, which moved nothing and are in none: [`moving`]),
/// then for each group its key, namespace (by name, where it has one)
/// and judgement, and what would help, one line per limit
/// that held bytes.
///
/// # Errors
/// Write failures.
pub fn write_summary(out: &mut impl Write, groups: &[Named], idle: usize) -> std::io::Result<()> {
    let idle_words = match idle {
        0 => String::new(),
        1 => " (1 flow moved nothing: in no group)".to_string(),
        n => format!(" ({n} flows moved nothing: in no group)"),
    };
    if groups.is_empty() {
        return if idle > 0 {
            writeln!(out, "no TCP flow moved data{idle_words}")
        } else {
            writeln!(out, "no TCP flows seen")
        };
    }
    let count = |limit: Limit| groups.iter().filter(|g| g.limit == limit).count();
    writeln!(
        out,
        "host: {} flows in {} group{} by {}: {} per_flow, {} shared, {} mixed, {} unknown{idle_words}",
        groups.iter().map(|g| g.flows).sum::<usize>(),
        groups.len(),
        if groups.len() == 1 { "" } else { "s" },
        groups[0].by,
        count(Limit::PerFlow),
        count(Limit::Shared),
        count(Limit::Mixed),
        count(Limit::Unknown)
    )?;
    for g in groups {
        writeln!(
            out,
            "{} {} {} ({}): {}",
            g.by,
            g.key,
            g.direction.name(),
            g.netns_words(),
            g.explanation
        )?;
        for w in &g.what_if {
            writeln!(out, "  - {}", w.summary)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::{Attribution, Config, Evidence, Side, Verdict};
    use crate::testkit::sample::{SampleBuilder, v4};

    /// Two uploads to 10.0.0.2 at the path, 2 s each, 1 MB and 3 MB.
    fn groups() -> Vec<Named> {
        let judged: Vec<_> = [1_000_000u64, 3_000_000]
            .iter()
            .enumerate()
            .map(|(i, bytes)| {
                let flow = SampleBuilder::new(i as u64 + 1)
                    .ends(v4(10, 0, 0, 1), 40_000, v4(10, 0, 0, 2), 443)
                    .flow();
                let att = Attribution {
                    verdict: Verdict::Path,
                    rule: "pacing",
                    confidence: 0.6,
                    side: Side::Sender,
                    explanation: String::new(),
                    evidence: Evidence {
                        interval_us: 2_000_000,
                        bytes_acked: *bytes,
                        rate_bps: *bytes as f64 * 4.0,
                        min_rtt_us: 20_000,
                        srtt_us: 20_000,
                        ..Evidence::default()
                    },
                    what_if: None,
                    also: None,
                };
                (flow, att)
            })
            .collect();
        let pairs: Vec<_> = judged.iter().map(|(f, a)| (f, a)).collect();
        group_named(&pairs, GroupBy::Peer, &Config::default())
    }

    #[test]
    fn a_flow_its_shut_window_holds_at_nothing_is_in_a_group() {
        let flow = SampleBuilder::new(9).flow();
        let att = |verdict, closed_share, received| Attribution {
            verdict,
            rule: "reader",
            confidence: 0.9,
            side: Side::Receiver,
            explanation: String::new(),
            evidence: Evidence {
                interval_us: 1_000_000,
                bytes_received: received,
                receive: crate::attribution::Receive {
                    closed_share,
                    ..Default::default()
                },
                ..Evidence::default()
            },
            what_if: None,
            also: None,
        };
        let shut = att(Verdict::ReceiverApplication, 1.0, 0);
        let idle = att(Verdict::Unknown, 0.0, 0);
        let open_but_idle = att(Verdict::ReceiverApplication, 0.0, 0);
        let pairs = [(&flow, &shut), (&flow, &idle), (&flow, &open_but_idle)];
        let (kept, left_out) = moving(&pairs);
        assert_eq!((kept.len(), left_out), (1, 2));
        assert_eq!(kept[0].1.verdict, Verdict::ReceiverApplication);
    }

    #[test]
    fn json_has_the_documented_keys() {
        let mut out = Vec::new();
        write_json(&mut out, &groups()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["peer"], "10.0.0.2");
        assert_eq!(v["by"], "peer");
        assert_eq!(v["direction"], "upload");
        assert_eq!(v["flows"], 2);
        assert_eq!(v["bytes"], 4_000_000);
        // Both flows' judged intervals: the same 2 s.
        assert_eq!(v["span_us"], 2_000_000);
        // 4 MB over the 2 s both were open.
        assert_eq!(v["rate_bps"], 16e6);
        assert_eq!(v["limit"], "shared");
        assert_eq!(v["rule"], "one_bottleneck");
        assert_eq!(v["verdicts"]["path"], 4_000_000);
        assert!(v["explanation"].as_str().unwrap().starts_with(
            "shared limit: 2 flows at the path's bottleneck together ran 16.0 Mbit/s"
        ));
        assert_eq!(v["what_if"][0]["knob"], "path");
        assert_eq!(v["what_if"][0]["bytes"], 4_000_000);
        for key in [
            "netns",
            "open",
            "judged",
            "concurrent",
            "fastest_bps",
            "path_bps",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert!(v.get("process").is_none());
    }

    #[test]
    fn idle_flows_are_in_no_group_and_namespaces_go_by_name() {
        let mut flow = SampleBuilder::new(1)
            .ends(v4(10, 0, 0, 1), 40_000, v4(10, 0, 0, 2), 443)
            .flow();
        flow.netns = 7;
        flow.netns_name = Some("blue".into());
        let mut idle = flow.clone();
        idle.cookie = 2;
        let moved = |acked: u64| {
            let ev = Evidence {
                interval_us: 2_000_000,
                bytes_acked: acked,
                rate_bps: acked as f64 * 4.0,
                ..Evidence::default()
            };
            crate::attribution::sender::attribute(&ev, &flow, &Config::default())
        };
        let (busy, still) = (moved(1_000_000), moved(0));
        let (kept, left) = moving(&[(&flow, &busy), (&idle, &still)]);
        assert_eq!(left, 1);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].0.cookie, 1);
        let found = group_named(&kept, GroupBy::Peer, &Config::default());
        assert_eq!(found[0].flows, 1);
        assert_eq!(found[0].netns_label(), "blue");
        let mut out = Vec::new();
        write_table(&mut out, &found).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.lines().nth(1).unwrap().starts_with("blue   10.0.0.2"),
            "{text}"
        );
        let mut out = Vec::new();
        write_summary(&mut out, &found, left).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.lines()
                .next()
                .unwrap()
                .ends_with("(1 flow moved nothing: in no group)"),
            "{text}"
        );
        assert!(
            text.contains("peer 10.0.0.2 upload (netns blue): "),
            "{text}"
        );
        let mut out = Vec::new();
        write_summary(&mut out, &[], 2).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "no TCP flow moved data (2 flows moved nothing: in no group)\n"
        );
    }

    #[test]
    fn table_and_summary() {
        let mut out = Vec::new();
        write_table(&mut out, &groups()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("NETNS  PEER"), "{text}");
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "0",
                "10.0.0.2",
                "upload",
                "2",
                "2",
                "2",
                "4.00MB",
                "2.0s",
                "16.0Mbit/s",
                "12.0Mbit/s",
                "16.0Mbit/s",
                "shared",
                "path",
                "100%"
            ]
        );
        let mut out = Vec::new();
        write_summary(&mut out, &groups(), 0).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(
            lines[0],
            "host: 2 flows in 1 group by peer: 0 per_flow, 1 shared, 0 mixed, 0 unknown"
        );
        assert!(
            lines[1].starts_with("peer 10.0.0.2 upload (netns 0): shared limit: "),
            "{text}"
        );
        assert!(
            lines[2].starts_with(
                "  - 2 of 2 uploads to 10.0.0.2 (100% of bytes) ran at the path's bottleneck"
            ),
            "{text}"
        );
    }

    #[test]
    fn flows_of_one_inode_with_two_names_are_two_groups_each_with_its_name() {
        // `tmpx` was deleted and its inode given to `tmpy`: a flow from
        // each, to the same peer, are two groups, not one under the last name.
        let flow = |cookie: u64, name: &str| {
            let mut f = SampleBuilder::new(cookie)
                .ends(v4(10, 0, 0, 1), 40_000, v4(10, 0, 0, 2), 443)
                .flow();
            f.netns = 7;
            f.netns_name = Some(name.into());
            f
        };
        let (x, y) = (flow(1, "tmpx"), flow(2, "tmpy"));
        let ev = Evidence {
            interval_us: 2_000_000,
            bytes_acked: 1_000_000,
            rate_bps: 4e6,
            ..Evidence::default()
        };
        let att = crate::attribution::sender::attribute(&ev, &x, &Config::default());
        let found = group_named(&[(&y, &att), (&x, &att)], GroupBy::Peer, &Config::default());
        let labels: Vec<(String, usize)> =
            found.iter().map(|g| (g.netns_label(), g.flows)).collect();
        assert_eq!(labels, [("tmpx".to_string(), 1), ("tmpy".to_string(), 1)]);
    }

    #[test]
    fn the_hosts_own_namespace_is_called_so() {
        let Some(host) = host_netns() else {
            return; // no /proc/1/ns/net here: nothing to call so
        };
        let mut g = groups().remove(0);
        g.group.netns = host;
        assert_eq!(g.netns_words(), "host netns");
        g.netns_name = Some("blue".into());
        assert_eq!(g.netns_words(), "netns blue");
        g.group.netns = host.wrapping_add(1);
        g.netns_name = None;
        assert_eq!(g.netns_words(), format!("netns {}", host.wrapping_add(1)));
    }
}
