//! `observer completions SHELL`: the completion script, from the same
//! argument definitions as `--help`. clap_complete's scripts offer every
//! flag, hidden ones too (`run --ringbuf-bytes`, for fault tests), so the
//! script is made from a copy of the command without them: what `--help`
//! does not show, completion does not offer.

use anyhow::Context as _;
use clap::Command;

/// A copy of `cmd` with only what `--help` shows: its hidden arguments
/// and subcommands left out, at every level. Names, help, aliases and
/// value parsers (the values completion offers) are kept.
pub fn visible(cmd: &Command) -> Command {
    let mut out = Command::new(cmd.get_name().to_string())
        .args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned())
        .subcommands(
            cmd.get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(visible),
        )
        .visible_aliases(cmd.get_visible_aliases().map(str::to_string))
        .disable_help_subcommand(cmd.is_disable_help_subcommand_set());
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(version) = cmd.get_version() {
        out = out.version(version.to_string());
    }
    out
}

/// Writes the completion script of `cmd` for `shell` to standard output.
///
/// # Errors
/// Standard output fails (a reader closing it early is not an error).
pub fn run(shell: clap_complete::Shell, cmd: &Command) -> anyhow::Result<()> {
    let mut cmd = visible(cmd);
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "observer", &mut script);
    super::man::print(&script).context("cannot write the completion script")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use clap::CommandFactory as _;

    use super::visible;

    fn script(shell: clap_complete::Shell) -> String {
        let mut cmd = visible(&crate::Cli::command());
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut cmd, "observer", &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn hidden_flags_do_not_complete() {
        let full = crate::Cli::command();
        let run = full.find_subcommand("run").unwrap();
        assert!(
            run.get_arguments()
                .any(|a| a.get_long() == Some("ringbuf-bytes") && a.is_hide_set())
        );
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let s = script(shell);
            assert!(!s.contains("ringbuf"), "{shell}");
            // The visible flags and values stay.
            // (fish writes a flag as `-l listen`.)
            for word in [
                "listen",
                "log-every",
                "duration",
                "prefix/24",
                "rwnd_limited",
            ] {
                assert!(s.contains(word), "{shell}: no {word}");
            }
        }
    }
}
