//! The import-cycle check of `cargo xtask lint`: no two modules of a crate
//! may import each other, directly or around a loop, and no two branches
//! of the module tree either (data flows one way, kernel -> flows ->
//! attribution -> sinks).
//!
//! Read from the sources with `syn`, not the compiler. The module tree is
//! followed from each crate root (`lib.rs`, `main.rs`, `bin/*`) through
//! its `mod` declarations (`#[path]` included). Test modules and test
//! items are left out, since a test may use what its module's callers
//! build: those under a `cfg` that holds only under test (`cfg(test)`,
//! `cfg(all(test, unix))`). Code under `cfg(any(test, feature = "x"))` is
//! production code and is read.
//!
//! Every path a module names is resolved to the deepest module it
//! reaches: `use` trees (groups, renames, globs), paths in code and
//! types, paths inside macro calls and macro bodies (a `macro_rules!`
//! body's paths are its defining module's), and an `extern crate self as
//! x` alias. A name brought in by a `use` or a glob is followed to where
//! it points, and a name an ancestor re-exports (`pub use`, a glob
//! included) to where that points; a bare name (`EXPECTED`) is looked up
//! through the module's globs. A macro call reaches the module that
//! defines the macro: `crate::name!` for a `#[macro_export]` one, and a
//! bare `name!` through a `use`, a glob, or the textual scope of the one
//! module that defines it.
//!
//! A module's use of its ancestors' or descendants' own items is routine
//! in Rust's module tree and not an edge. Each other edge `a -> b` also
//! counts between the two branches it joins (the children of their
//! closest common ancestor), so `model::flow -> kernel::load::env` beside
//! `kernel::probes -> model::clock` is the cycle `kernel <-> model`. The
//! cycles are the strongly connected components (Tarjan's algorithm).
//!
//! Not seen: a bare macro name that several modules define (which one a
//! call reaches depends on declaration order), a path a macro builds
//! from pieces (`concat_idents!`, a proc macro's output), and a
//! one-segment name inside a macro call's tokens.
//!
//! Written here because no maintained crate checks this for a library's
//! modules without building it (cargo-modules is a binary that needs the
//! whole crate compiled and prints graphs, not verdicts); `syn` does the
//! parsing.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use anyhow::Context as _;

mod names;
mod tarjan;

use names::{Collect, Names, is_test, item_is_test};
use syn::visit::Visit as _;
use tarjan::cycles;

/// Cycles known and not yet broken, each as its sorted modules: the check
/// fails on any other, and on one of these once it is gone (so the list
/// only shrinks). None is left.
pub const KNOWN: &[&[&str]] = &[];

/// A module's path from its crate root ("" is the root).
type ModPath = String;

/// A crate's modules and what each names.
#[derive(Default, Debug)]
pub struct Crate {
    modules: BTreeMap<ModPath, Names>,
}

/// `#[path = "..."]` of a `mod` declaration.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// `a::b` joined onto `base` ("" is the root).
fn join(base: &str, rest: &str) -> String {
    if base.is_empty() {
        rest.to_string()
    } else {
        format!("{base}::{rest}")
    }
}

/// How deep a name is followed through `use`s and globs (they can loop:
/// `use super::*` beside the parent's `use self::child::*`).
const DEPTH: usize = 8;

/// A module path (`a::b`) as its segments.
fn split(p: &str) -> Vec<String> {
    p.split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The parent of module `m` ("" for a top-level one).
fn parent(m: &str) -> &str {
    m.rfind("::").map_or("", |i| &m[..i])
}

/// Whether `a` is `b` or one of its ancestors.
fn ancestor_or_self(a: &str, b: &str) -> bool {
    a.is_empty() || a == b || b.starts_with(&format!("{a}::"))
}

/// Reads source files: the disk, or a map in the tests.
pub trait Sources {
    /// The text of `path`, if there is such a file.
    fn read(&self, path: &Path) -> Option<String>;
}

/// The files on disk.
struct Disk;

impl Sources for Disk {
    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

impl Crate {
    /// The crate whose root file is `root`, its module tree followed
    /// through `mod` declarations.
    ///
    /// # Errors
    /// A file that does not parse, or a declared module with no file.
    pub fn load(root: &Path, files: &dyn Sources) -> anyhow::Result<Crate> {
        let mut c = Crate::default();
        let text = files
            .read(root)
            .with_context(|| format!("reading {}", root.display()))?;
        let dir = root.parent().unwrap_or(Path::new("")).to_path_buf();
        c.file(String::new(), root, &text, dir, files)?;
        Ok(c)
    }

    /// Adds module `m`, the file `path` holding `text`, whose declared
    /// children live in `dir`.
    fn file(
        &mut self,
        m: ModPath,
        path: &Path,
        text: &str,
        dir: PathBuf,
        files: &dyn Sources,
    ) -> anyhow::Result<()> {
        let parsed =
            syn::parse_file(text).with_context(|| format!("parsing {}", path.display()))?;
        let here = path.parent().unwrap_or(Path::new("")).to_path_buf();
        self.items(m, &parsed.items, &dir, &here, files)
    }

    /// Adds module `m` made of `items`; declared children are found in
    /// `dir`, `#[path]` ones relative to `here` (the declaring file's
    /// directory).
    fn items(
        &mut self,
        m: ModPath,
        items: &[syn::Item],
        dir: &Path,
        here: &Path,
        files: &dyn Sources,
    ) -> anyhow::Result<()> {
        let mut names = Names::default();
        for item in items {
            match item {
                syn::Item::Mod(md) if is_test(&md.attrs) => {}
                syn::Item::Mod(md) => {
                    let child = join(&m, &md.ident.to_string());
                    if let Some((_, inner)) = &md.content {
                        let sub = dir.join(md.ident.to_string());
                        self.items(child, inner, &sub, here, files)?;
                    } else {
                        let (file, text) = declared(md, dir, here, files)?;
                        let sub = child_dir(&file);
                        self.file(child, &file, &text, sub, files)?;
                    }
                }
                other => {
                    if !item_is_test(other) {
                        names.define(other);
                        let mut v = Collect { names: &mut names };
                        v.visit_item(other);
                    }
                }
            }
        }
        self.modules.insert(m, names);
        Ok(())
    }

    /// `segs`, named in module `m`, as a path from the crate root; None for
    /// a path outside the crate (`std::`, another crate, a local item).
    fn absolute(&self, m: &str, segs: &[String], depth: usize) -> Option<Vec<String>> {
        let first = segs.first()?;
        match first.as_str() {
            "crate" => Some(segs[1..].to_vec()),
            "self" => Some([split(m), segs[1..].to_vec()].concat()),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let mut base = m.to_string();
                for _ in 0..ups {
                    base = parent(&base).to_string();
                }
                Some([split(&base), segs[ups..].to_vec()].concat())
            }
            name if depth < DEPTH => {
                let base = self.lookup(m, name, depth).or_else(|| {
                    // `extern crate self as x;` at the root puts `x` in
                    // every module's scope.
                    let root = self.modules.get("")?;
                    root.crate_aliases.contains(name).then(Vec::new)
                })?;
                Some([base, segs[1..].to_vec()].concat())
            }
            _ => None,
        }
    }

    /// What `name` stands for in module `at`, as a path from the root: a
    /// child module or an item of `at`, else what a `use` or a glob of
    /// `at` brings in ([`Crate::imported`]).
    fn lookup(&self, at: &str, name: &str, depth: usize) -> Option<Vec<String>> {
        let names = self.modules.get(at)?;
        if self.modules.contains_key(&join(at, name)) || names.defs.contains(name) {
            return Some([split(at), vec![name.to_string()]].concat());
        }
        self.imported(at, name, depth)
    }

    /// Where a `use` of module `at` that binds `name` points, or else the
    /// glob of `at` whose module holds `name` (as that module's path and
    /// `name`, the way `use crate::a::X` gives `a::X`).
    fn imported(&self, at: &str, name: &str, depth: usize) -> Option<Vec<String>> {
        if depth >= DEPTH {
            return None;
        }
        let names = self.modules.get(at)?;
        if let Some(u) = names.uses.get(name) {
            return self.absolute(at, u, depth + 1);
        }
        names.globs.iter().find_map(|g| {
            let base = self.absolute(at, g, depth + 1)?;
            let module = base.join("::");
            if !self.modules.contains_key(&module) {
                return None;
            }
            self.lookup(&module, name, depth + 1)?;
            Some([base, vec![name.to_string()]].concat())
        })
    }

    /// The module a path from the root reaches: the deepest module on it,
    /// followed through its re-exports (`pub use`, globs included) where
    /// it names an item of an ancestor of `m` (where the edge would
    /// otherwise be lost); a `#[macro_export]` macro (`crate::name!`) is
    /// its defining module's.
    fn target(&self, m: &str, abs: &[String], depth: usize) -> Option<ModPath> {
        let mut t = String::new();
        let mut used = 0;
        for (i, s) in abs.iter().enumerate() {
            let next = join(&t, s);
            if !self.modules.contains_key(&next) {
                break;
            }
            t = next;
            used = i + 1;
        }
        let rest = &abs[used..];
        if depth < DEPTH
            && ancestor_or_self(&t, m)
            && let Some(name) = rest.first()
            && !self.modules.get(&t).is_some_and(|n| n.defs.contains(name))
        {
            if let Some(via) = self.imported(&t, name, 0) {
                return self.target(m, &[via, rest[1..].to_vec()].concat(), depth + 1);
            }
            if t.is_empty()
                && let Some((at, _)) = self.modules.iter().find(|(_, n)| n.exported.contains(name))
            {
                return Some(at.clone());
            }
        }
        Some(t)
    }

    /// The module that defines the `macro_rules!` macro `name`, called by
    /// its bare name in `m` and not found through a `use` or a glob: it
    /// reached `m` by textual scope (an ancestor's, or a module declared
    /// `#[macro_use]` before `m`). None where `m` or an ancestor defines
    /// one (no edge), or no module or several do.
    fn textual(&self, m: &str, name: &str) -> Option<ModPath> {
        let mut at = self
            .modules
            .iter()
            .filter(|(_, n)| n.macros.contains(name))
            .map(|(a, _)| a);
        let first = at.next()?;
        if ancestor_or_self(first, m) || at.next().is_some() {
            return None;
        }
        Some(first.clone())
    }

    /// The modules that module `m`'s paths, bare names and macro calls
    /// reach.
    fn reached(&self, m: &str, names: &Names) -> Vec<ModPath> {
        let bare = names.bare.iter().map(|b| vec![b.clone()]);
        let mut out: Vec<ModPath> = names
            .refs
            .iter()
            .cloned()
            .chain(bare)
            .filter_map(|r| {
                self.absolute(m, &r, 0)
                    .and_then(|abs| self.target(m, &abs, 0))
            })
            .collect();
        for name in &names.bare_macros {
            let path = [name.clone()];
            match self.absolute(m, &path, 0) {
                Some(abs) => out.extend(self.target(m, &abs, 0)),
                None => out.extend(self.textual(m, name)),
            }
        }
        out
    }

    /// The module graph: for each module, the modules its code depends on,
    /// and for each edge the one between the two branches it joins.
    pub fn graph(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let mut g: BTreeMap<ModPath, BTreeSet<ModPath>> = self
            .modules
            .keys()
            .map(|m| (m.clone(), BTreeSet::new()))
            .collect();
        for (edge, _) in self.edges() {
            g.entry(edge.0).or_default().insert(edge.1);
        }
        g
    }

    /// Every edge of [`Crate::graph`], each with the module-to-module use
    /// it stands for (itself, or for an edge between branches the first
    /// use found that joins them).
    pub fn edges(&self) -> BTreeMap<(ModPath, ModPath), (ModPath, ModPath)> {
        let mut out = BTreeMap::new();
        for (m, names) in &self.modules {
            for t in self.reached(m, names) {
                if ancestor_or_self(&t, m) || ancestor_or_self(m, &t) {
                    continue;
                }
                let fine = (m.clone(), t.clone());
                out.entry(fine.clone()).or_insert_with(|| fine.clone());
                out.entry(branches(m, &t)).or_insert(fine);
            }
        }
        out
    }
}

/// The children of the closest common ancestor of `a` and `b` on the way
/// to each (`kernel::probes`, `model::clock` give `kernel`, `model`).
fn branches(a: &str, b: &str) -> (String, String) {
    let (sa, sb): (Vec<&str>, Vec<&str>) = (a.split("::").collect(), b.split("::").collect());
    let common = sa.iter().zip(&sb).take_while(|(x, y)| x == y).count();
    (sa[..=common].join("::"), sb[..=common].join("::"))
}

/// The file of the declared module `md` (`mod x;`) and its text: its
/// `#[path]` relative to `here`, else `dir/x.rs` or `dir/x/mod.rs`.
fn declared(
    md: &syn::ItemMod,
    dir: &Path,
    here: &Path,
    files: &dyn Sources,
) -> anyhow::Result<(PathBuf, String)> {
    let name = md.ident.to_string();
    let candidates = match path_attr(&md.attrs) {
        Some(p) => vec![here.join(p)],
        None => vec![
            dir.join(format!("{name}.rs")),
            dir.join(&name).join("mod.rs"),
        ],
    };
    for c in &candidates {
        if let Some(text) = files.read(c) {
            return Ok((c.clone(), text));
        }
    }
    anyhow::bail!(
        "module {name} has no file (looked for {})",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Where the children a file declares live: beside `mod.rs`, `lib.rs` and
/// `main.rs`, in `x/` for `x.rs`.
fn child_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") | None => dir,
        Some(stem) => dir.join(stem),
    }
}

/// The uses behind the edges among `cycle`'s outermost modules (a cycle
/// between branches names the branches, and the module-to-module use that
/// joins each pair), as `a -> b by m -> t`.
fn within(
    cycle: &[String],
    edges: &BTreeMap<(ModPath, ModPath), (ModPath, ModPath)>,
) -> Vec<String> {
    let depth = |m: &String| m.matches("::").count();
    let top = cycle.iter().map(depth).min().unwrap_or(0);
    let outer: Vec<&String> = cycle.iter().filter(|m| depth(m) == top).collect();
    let shown: Vec<&String> = if outer.len() > 1 {
        outer
    } else {
        cycle.iter().collect()
    };
    edges
        .iter()
        .filter(|((a, b), _)| shown.contains(&a) && shown.contains(&b))
        .map(|((a, b), (m, t))| {
            if (a, b) == (m, t) {
                format!("{a} -> {b}")
            } else {
                format!("{a} -> {b} by {m} -> {t}")
            }
        })
        .collect()
}

/// The crate roots under `src`: `lib.rs`, `main.rs` and each `bin/`
/// target.
fn roots(src: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .filter(|p| p.exists())
        .collect();
    if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
        for e in bins.flatten() {
            let p = e.path();
            if p.is_dir() && p.join("main.rs").exists() {
                out.push(p.join("main.rs"));
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Checks the crates' sources (`observer/src`, `observer-ebpf/src`,
/// `accuracy/src`) for
/// import cycles beyond [`KNOWN`].
///
/// # Errors
/// A new cycle, a known one that is gone (take it off the list), or a
/// source that cannot be read or parsed.
pub fn check(root: &Path) -> anyhow::Result<()> {
    let mut found = Vec::new();
    let mut why = BTreeMap::new();
    for krate in ["observer/src", "observer-ebpf/src", "accuracy/src"] {
        for r in roots(&root.join(krate)) {
            let c = Crate::load(&r, &Disk)?;
            let edges = c.edges();
            for cycle in cycles(&c.graph()) {
                why.insert(cycle.clone(), within(&cycle, &edges));
                found.push(cycle);
            }
        }
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
            .map(|c| format!(
                "{} (through {})",
                c.join(" <-> "),
                why.get(*c).map_or(String::new(), |w| w.join(", "))
            ))
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
#[path = "cycles_tests.rs"]
mod tests;
