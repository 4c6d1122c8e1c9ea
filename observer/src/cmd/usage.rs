//! Command-line mistakes as one line: clap's own error text folded into
//! `observer: error: ...` with its tip, and where to read more, so that a
//! bad argument reads like every other error of the command (what is
//! wrong and how to fix it, exit status 2). Own code because clap's error
//! renders several lines (a blank one, the usage, "For more information")
//! and has no one-line style.

/// Folds clap's rendered error `text` into one line: the message (with
/// any indented lines that continue it, such as the names of missing
/// arguments), its tips in parentheses, and, where clap printed the
/// command's usage, which `--help` to read.
pub fn one_line(text: &str) -> String {
    let mut message = String::new();
    let mut tips = Vec::new();
    let mut command = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("For more information") {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("error:") {
            message.push_str(rest.trim());
        } else if let Some(tip) = trimmed.strip_prefix("tip:") {
            tips.push(tip.trim().to_string());
        } else if let Some(usage) = trimmed.strip_prefix("Usage:") {
            // `observer flows [OPTIONS]`: the words before the first
            // placeholder name the command.
            let words: Vec<&str> = usage
                .split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<', '-']))
                .collect();
            command.get_or_insert(words.join(" "));
        } else {
            message.push(' ');
            message.push_str(trimmed);
        }
    }
    let mut out = format!("observer: error: {message}");
    if !tips.is_empty() {
        out.push_str(&format!(" ({})", tips.join("; ")));
    }
    if let Some(cmd) = command.filter(|c| !c.is_empty()) {
        out.push_str(&format!("; see '{cmd} --help'"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn an_unknown_argument_names_the_command_to_ask() {
        let text = "error: unexpected argument '--bogus' found\n\nUsage: observer flows \
                    [OPTIONS]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(text),
            "observer: error: unexpected argument '--bogus' found; see 'observer flows --help'"
        );
    }

    #[test]
    fn a_tip_and_a_list_stay_on_the_line() {
        let text = "error: unrecognized subcommand 'flow'\n\n  tip: a similar subcommand \
                    exists: 'flows'\n\nUsage: observer <COMMAND>\n\nFor more information, try \
                    '--help'.\n";
        assert_eq!(
            one_line(text),
            "observer: error: unrecognized subcommand 'flow' (a similar subcommand exists: \
             'flows'); see 'observer --help'"
        );
        let text = "error: the following required arguments were not provided:\n  \
                    <SHELL>\n\nUsage: observer completions <SHELL>\n\nFor more information, \
                    try '--help'.\n";
        assert_eq!(
            one_line(text),
            "observer: error: the following required arguments were not provided: <SHELL>; \
             see 'observer completions --help'"
        );
    }

    #[test]
    fn a_bad_value_keeps_its_own_advice() {
        let text = "error: invalid value '5x' for '--duration <DURATION>': '5x' is not a \
                    duration (use e.g. 5s, 250ms, 1m, or 7 for seconds)\n\nFor more \
                    information, try '--help'.\n";
        assert_eq!(
            one_line(text),
            "observer: error: invalid value '5x' for '--duration <DURATION>': '5x' is not a \
             duration (use e.g. 5s, 250ms, 1m, or 7 for seconds)"
        );
    }
}
