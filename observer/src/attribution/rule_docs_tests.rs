//! The rule tables against their documentation: docs/attribution.md's
//! decision lists name each side's rules in the order its table tries
//! them, each as an item numbered from 1 that opens with the rule's name
//! ("3. `reader`: ..."), under the exact headings below. (Each side's
//! rules on their own are tested in `sender/rules_tests.rs` and
//! `receiver/rules_tests.rs`; [`super::rule`] lists what a new rule
//! touches.)

use super::{
    group::judge::GROUP_RULES, receiver::rules::RECEIVER_RULES, sender::rules::SENDER_RULES,
};

/// The rule names of the numbered list under the heading `heading` of
/// docs/attribution.md (to the next heading): items that open
/// "N. `name`".
fn documented(heading: &str) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/attribution.md");
    let doc = std::fs::read_to_string(path).expect("docs/attribution.md reads");
    let section = doc
        .split_once(&format!("\n{heading}\n"))
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| {
            panic!("docs/attribution.md has no heading {heading:?} (a line of exactly that text)")
        });
    section
        .lines()
        .take_while(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (n, rest) = l.split_once(". `")?;
            let n: usize = n.parse().ok()?;
            rest.split_once('`').map(|(name, _)| (n, name.to_string()))
        })
        .enumerate()
        .map(|(i, (n, name))| {
            assert_eq!(
                n,
                i + 1,
                "docs/attribution.md, {heading}: `{name}` is numbered {n}, the {}th item",
                i + 1
            );
            name
        })
        .collect()
}

#[test]
fn the_docs_list_each_sides_rules_in_the_tables_order() {
    let sender: Vec<&str> = SENDER_RULES.iter().map(|r| r.name).collect();
    assert_eq!(documented("## Sender rules, in order"), sender);
    let receiver: Vec<&str> = RECEIVER_RULES.iter().map(|r| r.name).collect();
    assert_eq!(documented("## Receiver rules, in order"), receiver);
    let group: Vec<&str> = GROUP_RULES.iter().map(|r| r.name).collect();
    assert_eq!(documented("## Groups: the host view"), group);
}

#[test]
fn rule_names_are_unique_snake_case_within_a_side() {
    let sides: [Vec<(&str, &str)>; 3] = [
        SENDER_RULES
            .iter()
            .map(|r| (r.name, r.recognises))
            .collect(),
        RECEIVER_RULES
            .iter()
            .map(|r| (r.name, r.recognises))
            .collect(),
        GROUP_RULES.iter().map(|r| (r.name, r.recognises)).collect(),
    ];
    for rules in sides {
        let mut seen = std::collections::HashSet::new();
        for (name, recognises) in rules {
            assert!(seen.insert(name), "{name} twice");
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}"
            );
            assert!(!recognises.is_empty(), "{name} says nothing");
        }
    }
}
