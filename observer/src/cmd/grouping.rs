//! `flows --by`'s values for clap: parsed by [`GroupBy`]'s `FromStr`
//! (any `prefix/V4[,V6]`), and listed, so that `--help`, the manual page
//! and shell completion offer them rather than file names.

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use observer::attribution::group::GroupBy;

/// The values completion offers, with what each groups by. Any other
/// prefix length parses too.
pub const VALUES: [(&str, &str); 5] = [
    ("peer", "the remote address"),
    (
        "prefix/24",
        "the remote address's prefix: /24 for IPv4, /64 for IPv6 (any prefix/V4[,V6])",
    ),
    ("prefix/24,64", "the same, with the IPv6 length given"),
    ("process", "the owning process (command name and pid)"),
    (
        "workload",
        "the owner's pod, container, systemd unit or cgroup",
    ),
];

/// clap's parser of `--by`.
#[derive(Clone, Copy, Debug)]
pub struct Grouping;

impl TypedValueParser for Grouping {
    type Value = GroupBy;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<GroupBy, clap::Error> {
        StringValueParser::new()
            .try_map(|s| s.parse::<GroupBy>())
            .parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            VALUES
                .iter()
                .map(|(value, help)| PossibleValue::new(*value).help(*help)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_offered_parses() {
        for (value, _) in VALUES {
            assert!(value.parse::<GroupBy>().is_ok(), "{value}");
        }
    }
}
