//! The import-cycle check of `cargo xtask lint`: no two modules of a crate
//! may import each other, directly or around a loop (data flows one way,
//! kernel -> flows -> attribution -> sinks).
//!
//! Read from the sources, not the compiler: every `crate::a::b` and
//! `super::a` path outside comments is an edge from the file's module to
//! the deepest module the path names (`use super::{a, b::c}` groups
//! included). A module and its own ancestors are left out: a parent
//! declares its children and a child may use its parent's items, which
//! Rust's module tree makes routine. What remains is strongly connected
//! components of sibling and cousin modules (Tarjan's algorithm), each a
//! cycle. Written here because no maintained crate checks this for a
//! library's modules without building it (cargo-modules is a binary that
//! needs the whole crate compiled and prints graphs, not verdicts).

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

use anyhow::Context as _;

/// Cycles known and not yet broken, each as its sorted modules: the check
/// fails on any other, and on one of these once it is gone (so the list
/// only shrinks). None is left.
pub const KNOWN: &[&[&str]] = &[];

/// The module path of a source file under `src` (`a/b.rs` and `a/b/mod.rs`
/// are `a::b`; `lib.rs` and `main.rs` the root, "").
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The parent of module `m` ("" for a top-level one).
fn parent(m: &str) -> &str {
    m.rfind("::").map_or("", |i| &m[..i])
}

/// `a::b` joined onto `base` ("" is the root).
fn join(base: &str, rest: &str) -> String {
    if base.is_empty() {
        rest.to_string()
    } else {
        format!("{base}::{rest}")
    }
}

/// The paths `code` (comments removed) names from `crate::` or `super::`,
/// as `(base, rest)` with `base` "crate" or "super": `use super::{a,
/// b::{c, d}}` gives `a` and `b` (the deepest module is found later).
fn paths(code: &str) -> Vec<(&'static str, String)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    let mut out = Vec::new();
    for base in ["crate", "super"] {
        let pat = format!("{base}::");
        let mut from = 0;
        while let Some(i) = code[from..].find(&pat) {
            let start = from + i;
            from = start + pat.len();
            // A whole word: not `my_crate::`.
            if code[..start]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
            {
                continue;
            }
            let rest = &code[from..];
            let Some(group) = rest.strip_prefix('{') else {
                out.push((
                    base_name(base),
                    rest.chars().take_while(|c| ident(*c)).collect(),
                ));
                continue;
            };
            // Top-level items of the group, to its matching brace.
            let (mut depth, mut item) = (0usize, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push((base_name(base), head(&item)));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 || c == '{' && depth == 1 {
                    item.push(c);
                }
            }
            out.push((base_name(base), head(&item)));
        }
    }
    out.retain(|(_, p)| !p.is_empty());
    out
}

/// `"crate"` or `"super"` as a static name.
fn base_name(base: &str) -> &'static str {
    if base == "crate" { "crate" } else { "super" }
}

/// The path at the start of a group item (`b::{c}` is `b::`, trimmed to `b`).
fn head(item: &str) -> String {
    let p: String = item
        .trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    p.trim_end_matches(':').to_string()
}

/// `text` up to its inline test module (`#[cfg(test)]` then `mod NAME {`);
/// a `#[cfg(test)] mod NAME;` declaration leaves the text whole.
fn without_tests(text: &str) -> &str {
    let mut at = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod ") && next.contains('{'))
        {
            return &text[..at];
        }
        at += line.len();
    }
    text
}

/// The module graph of the sources `files` (module path, text): for each
/// module, the modules its code names, ancestors and itself left out.
pub fn graph(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<&str> = files.iter().map(|(m, _)| m.as_str()).collect();
    let mut g = BTreeMap::new();
    for (m, text) in files {
        let mut edges = BTreeSet::new();
        // Comments removed, the lines joined (a `use` group spans lines),
        // and an inline test module left out: a test may load what its
        // module's callers build without that being a design's cycle.
        let code: String = without_tests(text)
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        {
            for (base, rest) in paths(&code) {
                let full = if base == "crate" {
                    rest
                } else {
                    join(parent(m), &rest)
                };
                // The deepest module the path names.
                let mut target = full.as_str();
                while !target.is_empty() && !modules.contains(target) {
                    target = parent(target);
                }
                let nested =
                    |a: &str, b: &str| a.is_empty() || b == a || b.starts_with(&format!("{a}::"));
                if !target.is_empty() && !nested(target, m) && !nested(m, target) {
                    edges.insert(target.to_string());
                }
            }
        }
        g.insert(m.clone(), edges);
    }
    g
}

/// The cycles of `g`: its strongly connected components of more than one
/// module, each sorted (Tarjan's algorithm).
pub fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        w.on.insert(v);
        for u in w.g.get(v).into_iter().flatten() {
            let u = u.as_str();
            if !w.g.contains_key(u) {
                continue;
            }
            if !w.index.contains_key(u) {
                visit(w, u);
                let l = w.low[u].min(w.low[v]);
                w.low.insert(v, l);
            } else if w.on.contains(u) {
                let l = w.index[u].min(w.low[v]);
                w.low.insert(v, l);
            }
        }
        if w.low[v] == w.index[v] {
            let mut scc = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on.remove(u);
                scc.push(u.to_string());
                if u == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                w.out.push(scc);
            }
        }
    }
    let mut w = Walk {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.out.sort();
    w.out
}

/// Every `.rs` file under `src`, as (module path, text).
fn sources(src: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(src).unwrap_or(&p);
                let text = std::fs::read_to_string(&p)
                    .with_context(|| format!("reading {}", p.display()))?;
                out.push((module_of(rel), text));
            }
        }
    }
    Ok(out)
}

/// Checks the crates' sources (`observer/src`, `observer-ebpf/src`) for
/// import cycles beyond [`KNOWN`].
///
/// # Errors
/// A new cycle, a known one that is gone (take it off the list), or an
/// unreadable source.
pub fn check(root: &Path) -> anyhow::Result<()> {
    let mut found = Vec::new();
    for krate in ["observer/src", "observer-ebpf/src"] {
        found.extend(cycles(&graph(&sources(&root.join(krate))?)));
    }
    let known: Vec<Vec<String>> = KNOWN
        .iter()
        .map(|c| c.iter().map(|m| (*m).to_string()).collect())
        .collect();
    let new: Vec<_> = found.iter().filter(|c| !known.contains(c)).collect();
    let gone: Vec<_> = known.iter().filter(|c| !found.contains(c)).collect();
    anyhow::ensure!(
        new.is_empty(),
        "modules import each other: {}; break the cycle (a shared item goes in a leaf module)",
        new.iter()
            .map(|c| c.join(" <-> "))
            .collect::<Vec<_>>()
            .join("; ")
    );
    anyhow::ensure!(
        gone.is_empty(),
        "a known cycle is gone: {}; take it off cycles::KNOWN",
        gone.iter()
            .map(|c| c.join(" <-> "))
            .collect::<Vec<_>>()
            .join("; ")
    );
    println!(
        "cycles: none between modules{}",
        if known.is_empty() {
            String::new()
        } else {
            format!(" but the {} known", known.len())
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(m, t)| ((*m).to_string(), (*t).to_string()))
            .collect()
    }

    #[test]
    fn siblings_that_import_each_other_are_a_cycle() {
        let g = graph(&files(&[
            ("", "mod a; mod b; mod c;"),
            ("a", "use super::{\n    b::{Thing, Other},\n    c,\n};"),
            ("b", "use crate::a::other;"),
            ("c", "// use crate::a; in a comment is no import\nfn f() {}"),
        ]));
        assert_eq!(cycles(&g), vec![vec!["a".to_string(), "b".to_string()]]);
    }

    #[test]
    fn a_parent_and_its_child_are_no_cycle_and_a_leaf_breaks_one() {
        let g = graph(&files(&[
            ("f", "mod host; mod services; use self::host::x;"),
            ("f::host", "use super::{ParseError, number::number};"),
            ("f::services", "use super::number::number;"),
            ("f::number", "pub fn number() {}"),
            (
                "f::parse",
                "let n = super::number::number(t); my_crate::x();",
            ),
        ]));
        assert!(cycles(&g).is_empty(), "{g:?}");
        assert_eq!(g["f::host"], BTreeSet::from(["f::number".to_string()]));
        assert!(g["f::parse"].contains("f::number"));
    }

    #[test]
    fn an_inline_test_module_is_left_out_but_a_declared_one_is_not() {
        let g = graph(&files(&[
            (
                "a",
                "use crate::b::x;\n#[cfg(test)]\nmod a_tests;\nfn f() {}\n",
            ),
            (
                "b",
                "fn g() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::f;\n}\n",
            ),
        ]));
        assert!(cycles(&g).is_empty(), "{g:?}");
        assert!(g["a"].contains("b"));
    }

    #[test]
    fn a_loop_of_three_is_one_cycle() {
        let g = graph(&files(&[
            ("x", "use crate::y::a;"),
            ("y", "use crate::z::b;"),
            ("z", "use crate::x::c;"),
        ]));
        assert_eq!(
            cycles(&g),
            vec![vec!["x".to_string(), "y".into(), "z".into()]]
        );
    }

    #[test]
    fn module_paths_follow_the_files() {
        assert_eq!(module_of(Path::new("lib.rs")), "");
        assert_eq!(module_of(Path::new("kernel/mod.rs")), "kernel");
        assert_eq!(module_of(Path::new("kernel/probes.rs")), "kernel::probes");
    }
}
