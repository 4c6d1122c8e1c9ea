//! One manual page per command, as clap_mangen makes them, with the
//! sections observer adds so that each page stands alone (an installed
//! binary has no docs/ tree): the text after `--help` as its own section
//! (FILTERS) instead of clap_mangen's EXTRA, KEYS and SCREEN in
//! observer-top(1), COLUMNS, VERDICTS and JSON FIELDS in
//! observer-flows(1), METRICS in observer-run(1), and SEE ALSO in every
//! page; and a SYNOPSIS that names each option's value ([`synopsis`]).

use clap_mangen::{Man, roff::Roff};

use super::{json_fields, metrics, sections, synopsis};

/// A rendered manual page.
pub struct Page {
    /// Its file name: `observer-flows.1`.
    pub file_name: String,
    /// Its roff source.
    pub roff: Vec<u8>,
}

/// Every page: one per visible subcommand, depth first, then `cmd`'s own
/// (last), as `clap_mangen::generate_to` orders them.
///
/// # Errors
/// Rendering fails (it writes to memory only, so it should not).
pub fn all(cmd: clap::Command) -> std::io::Result<Vec<Page>> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut names = Vec::new();
    names_of(&cmd, &mut names);
    let mut pages = Vec::new();
    collect(cmd, &names, &mut pages)?;
    Ok(pages)
}

/// The page names (`observer-flows`) of `cmd` and its visible
/// subcommands.
fn names_of(cmd: &clap::Command, names: &mut Vec<String>) {
    names.push(page_name(cmd));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        names_of(sub, names);
    }
}

/// The name a command's page has: its display name once built.
fn page_name(cmd: &clap::Command) -> String {
    cmd.get_display_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_string()
}

fn collect(cmd: clap::Command, names: &[String], pages: &mut Vec<Page>) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        collect(sub, names, pages)?;
    }
    pages.push(render(cmd, names)?);
    Ok(())
}

/// One page: clap_mangen's sections, observer's own after OPTIONS and
/// SUBCOMMANDS, then VERSION and AUTHORS. `names` are every page's, for
/// SEE ALSO.
fn render(cmd: clap::Command, names: &[String]) -> std::io::Result<Page> {
    let name = page_name(&cmd);
    let man = Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    let mut roff = Roff::new();
    synopsis::section(&mut roff, &cmd);
    roff.to_writer(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    let mut roff = Roff::new();
    if let Some(after) = cmd.get_after_long_help().or_else(|| cmd.get_after_help()) {
        sections::after_help(&mut roff, &after.to_string());
    }
    match name.as_str() {
        "observer-top" => {
            sections::keys(&mut roff);
            sections::screen(&mut roff);
        }
        "observer-flows" => {
            sections::columns(&mut roff);
            sections::verdicts(&mut roff);
            json_fields::section(&mut roff);
        }
        "observer-run" => metrics::section(&mut roff),
        _ => {}
    }
    sections::see_also(&mut roff, &name, names);
    roff.to_writer(&mut out)?;
    if cmd
        .get_version()
        .or_else(|| cmd.get_long_version())
        .is_some()
    {
        man.render_version_section(&mut out)?;
    }
    if cmd.get_author().is_some() {
        man.render_authors_section(&mut out)?;
    }
    Ok(Page {
        file_name: man.get_filename(),
        roff: out,
    })
}
