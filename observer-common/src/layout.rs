//! The layout version of what the programs and the agent share through
//! pinned maps (`--pin`): [`FLOW_LAYOUT`]. An agent reads a pinned set only
//! if it was pinned with the same version, so that it never reads one
//! layout as another of the same size (a map's value size alone does not
//! tell them apart).
//!
//! It covers the flow record ([`crate::FlowSample`]: the flow map's values
//! and the ring's records), the counter indices ([`crate::Counter`]), the
//! slots of [`crate::MAP_LIVE`] and [`crate::MAP_POLL_SCOPE`] with
//! [`crate::poll_scope`]'s values, and the change journal ([`crate::journal`]).
//! A test pins a fingerprint of their definitions: change any of them and
//! it fails until [`FLOW_LAYOUT`] is bumped and the new fingerprint
//! appended to its table.

/// The layout version this build pins with and reads. Versions 1 and 2
/// were the 528- and 552-byte flow records (read from recordings today,
/// `observer/src/track/recording.rs`, but never from pinned maps); 3 is
/// the 560-byte record with `max_pacing_rate`.
pub const FLOW_LAYOUT: u32 = 3;

#[cfg(test)]
mod tests {
    use super::FLOW_LAYOUT;

    /// Each layout version's fingerprint ([`fingerprint`]), oldest first.
    /// Append a line when a shared type changes; never edit one.
    const KNOWN: &[(u32, u64)] = &[(3, 0x75ba_8b59_9149_b3a3)];

    /// FNV-1a, 64 bits: stable across Rust versions, unlike `Hasher`s.
    fn fnv(h: u64, bytes: &[u8]) -> u64 {
        bytes.iter().fold(h, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }

    /// The text of `src` from the line that starts with `from` to the
    /// first line after it that is `end`, without comments, attributes or
    /// blank space: what the definitions say, not how they are explained.
    fn definition(src: &str, from: &str, end: &str) -> u64 {
        let mut lines = src
            .lines()
            .skip_while(|l| !l.trim_start().starts_with(from));
        let mut h = 0xcbf2_9ce4_8422_2325;
        let mut found = false;
        for l in lines.by_ref() {
            found = true;
            let l = l.split("//").next().unwrap_or("").trim();
            if !l.is_empty() && !l.starts_with("#[") {
                h = fnv(h, l.as_bytes());
                h = fnv(h, b"\n");
            }
            if l == end {
                break;
            }
        }
        assert!(found, "no `{from}` in the source: update fingerprint()");
        h
    }

    /// A fingerprint of every shared definition the layout version covers,
    /// and of the sizes the compiler gives them.
    fn fingerprint() -> u64 {
        let sample = include_str!("sample.rs");
        let lib = include_str!("lib.rs");
        let parts = [
            definition(sample, "pub struct FlowSample", "}"),
            definition(include_str!("counters.rs"), "pub enum Counter", "}"),
            definition(
                include_str!("journal.rs"),
                "pub const SLOTS",
                "#[cfg(test)]",
            ),
            definition(
                lib,
                "pub const LIVE_PROGRAMS_ADDED",
                "pub const LIVE_AGENT_REMOVED: u32 = 1;",
            ),
            definition(
                lib,
                "pub const SCOPE_REACH",
                "pub const SCOPE_NETNS: u32 = 1;",
            ),
            definition(lib, "pub mod poll_scope", "}"),
            size_of::<crate::FlowSample>() as u64,
            u64::from(crate::Counter::COUNT),
        ];
        parts
            .iter()
            .fold(0xcbf2_9ce4_8422_2325, |h, p| fnv(h, &p.to_le_bytes()))
    }

    #[test]
    fn a_layout_change_bumps_the_version() {
        let fp = fingerprint();
        let last = KNOWN.last().copied().unwrap_or_default();
        assert_eq!(
            last,
            (FLOW_LAYOUT, fp),
            "a type shared through pinned maps changed (observer-common/src/layout.rs): \
             set FLOW_LAYOUT to {} and append ({}, {fp:#018x}) to KNOWN",
            last.0 + 1,
            last.0 + 1,
        );
    }

    #[test]
    fn versions_only_grow_and_name_one_layout_each() {
        for w in KNOWN.windows(2) {
            assert!(w[0].0 < w[1].0, "{KNOWN:?}");
            assert_ne!(w[0].1, w[1].1, "{KNOWN:?}");
        }
    }
}
