//! SYNOPSIS, with each option's value: clap_mangen's synopsis names the
//! options alone (`[--pin]`), which leaves a reader guessing what each
//! takes; this one writes `[--pin DIR]`, the value under the name
//! `--help` gives it (its `value_name`), as ss(8) and ip(8) write theirs.

use clap::{Arg, ArgAction};
use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

/// The SYNOPSIS section of `cmd`'s page: its name, its options (optional
/// ones in brackets), its positionals, then its subcommand.
pub fn section(roff: &mut Roff, cmd: &clap::Command) {
    roff.control("SH", ["SYNOPSIS"]);
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    let mut line = vec![bold(name)];
    let visible = |a: &&Arg| !a.is_hide_set();
    let (required, optional): (Vec<&Arg>, Vec<&Arg>) = cmd
        .get_arguments()
        .filter(visible)
        .filter(|a| !a.is_positional())
        .partition(|a| a.is_required_set());
    for a in optional.into_iter().chain(required) {
        line.push(roman(" "));
        line.extend(option(a));
    }
    for a in cmd.get_positionals().filter(visible) {
        let (l, r) = if a.is_required_set() {
            ("", "")
        } else {
            ("[", "]")
        };
        line.push(roman(format!(" {l}")));
        line.push(italic(value_name(a)));
        line.push(roman(r));
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        line.push(roman(" "));
        line.push(italic("COMMAND"));
    }
    // Ragged right and no hyphens, so no option is split or spread out.
    roff.control("nh", []);
    roff.control("ad", ["l"]);
    roff.text(line);
    roff.control("ad", []);
    roff.control("hy", []);
}

/// One option as the synopsis writes it: `[--pin DIR]`, `[--json]`,
/// `[--poll-read [WHEN]]` (a value that may be left out),
/// `[-h|--help]`.
fn option(a: &Arg) -> Vec<Inline> {
    let mut out = vec![roman(if a.is_required_set() { "" } else { "[" })];
    match (a.get_short(), a.get_long()) {
        (Some(s), Some(l)) => {
            out.push(bold(format!("-{s}")));
            out.push(roman("|"));
            out.push(bold(format!("--{l}")));
        }
        (Some(s), None) => out.push(bold(format!("-{s}"))),
        (None, Some(l)) => out.push(bold(format!("--{l}"))),
        (None, None) => {}
    }
    if takes_value(a) {
        let optional = a.get_num_args().is_some_and(|n| n.min_values() == 0);
        // A no-break space: the option and its value stay on one line.
        out.push(roman(if optional { "\u{a0}[" } else { "\u{a0}" }));
        out.push(italic(value_name(a)));
        if optional {
            out.push(roman("]"));
        }
    }
    if !a.is_required_set() {
        out.push(roman("]"));
    }
    out
}

/// Whether `a` takes a value on the command line (not a flag).
fn takes_value(a: &Arg) -> bool {
    matches!(a.get_action(), ArgAction::Set | ArgAction::Append)
        && a.get_num_args().is_none_or(|n| n.takes_values())
}

/// The name of `a`'s value, as `--help` gives it.
pub fn value_name(a: &Arg) -> String {
    a.get_value_names().map_or_else(
        || a.get_id().as_str().to_uppercase(),
        |v| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "),
    )
}
