//! The cycle check on small crates held in memory: each way of writing an
//! import that the check must see, and the module relations it must not
//! count.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use super::*;

/// Files by path, for [`Crate::load`].
struct Mem(BTreeMap<PathBuf, String>);

impl Sources for Mem {
    fn read(&self, path: &Path) -> Option<String> {
        self.0.get(path).cloned()
    }
}

/// The cycles of the crate rooted at `src/lib.rs` among `files`.
fn cycles_of(files: &[(&str, &str)]) -> Vec<Vec<String>> {
    let mem = Mem(files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), (*t).to_string()))
        .collect());
    let c = Crate::load(Path::new("src/lib.rs"), &mem).unwrap();
    cycles(&c.graph())
}

fn cycle(v: &[&str]) -> Vec<Vec<String>> {
    vec![v.iter().map(|s| (*s).to_string()).collect()]
}

/// A `load` module of two children, `hooks` and `degraded`, where
/// `hooks` uses `degraded`; `back` is `degraded`'s code.
fn load_with(back: &str) -> Vec<Vec<String>> {
    let degraded = format!("pub struct D;\n{back}\n");
    cycles_of(&[
        ("src/lib.rs", "pub mod load;"),
        (
            "src/load/mod.rs",
            "pub mod hooks;\npub mod degraded;\npub mod env;\npub use self::hooks::TCP;",
        ),
        (
            "src/load/hooks.rs",
            "use super::degraded::D;\npub const TCP: u8 = 1;\npub fn f() {}",
        ),
        ("src/load/env.rs", "pub fn g() {}"),
        ("src/load/degraded.rs", &degraded),
    ])
}

#[test]
fn every_way_of_writing_the_import_back_is_a_cycle() {
    let both = cycle(&["load::degraded", "load::hooks"]);
    for back in [
        "use crate::load::hooks::TCP;",
        "use super::hooks;",
        "use crate::load::hooks::{self, TCP};",
        // rustfmt's grouped form, with a prefix.
        "use crate::load::{env, hooks::TCP};",
        "use crate::{load::hooks::TCP, load::env::g};",
        "use crate::load::hooks::*;",
        "use crate::load::hooks as h;",
        // Through the parent's re-export.
        "use super::TCP;",
        // A glob of the parent, then a child of it by name.
        "use super::*;\nfn k() { hooks::f(); }",
        // A path in code, with no `use`.
        "fn k() -> u8 { crate::load::hooks::TCP }",
        // Inside a macro call, beside a string with `//` in it.
        "fn k() -> String { format!(\"s://{}\", crate::load::hooks::TCP) }",
        // After a test module.
        "#[cfg(test)]\nmod tests {}\nfn k() { super::hooks::f(); }",
    ] {
        assert_eq!(load_with(back), both, "{back}");
    }
    assert_eq!(load_with("fn k() {}"), Vec::<Vec<String>>::new());
}

#[test]
fn a_child_file_or_a_path_module_counts_for_its_branch() {
    let found = cycles_of(&[
        ("src/lib.rs", "mod a; mod b;"),
        ("src/a.rs", "mod inner;\npub fn f() {}"),
        ("src/a/inner.rs", "use crate::b::g;"),
        (
            "src/b.rs",
            "#[path = \"b_extra.rs\"]\nmod extra;\npub fn g() {}",
        ),
        ("src/b_extra.rs", "fn k() { crate::a::f(); }"),
    ]);
    assert_eq!(found, cycle(&["a", "b"]));
}

#[test]
fn branches_that_use_each_other_are_a_cycle() {
    // model::flow -> kernel::env beside kernel::probes -> model::clock.
    let found = cycles_of(&[
        ("src/lib.rs", "mod kernel; mod model;"),
        ("src/kernel/mod.rs", "mod env; mod probes;"),
        ("src/kernel/env.rs", "pub fn p() {}"),
        ("src/kernel/probes.rs", "use crate::model::clock::now;"),
        ("src/model/mod.rs", "mod clock; mod flow;"),
        ("src/model/clock.rs", "pub fn now() {}"),
        ("src/model/flow.rs", "fn f() { crate::kernel::env::p(); }"),
    ]);
    assert_eq!(found, cycle(&["kernel", "model"]));
}

#[test]
fn parents_children_tests_and_other_crates_are_no_cycle() {
    let found = cycles_of(&[
        ("src/lib.rs", "pub mod f; pub mod leaf;"),
        (
            "src/f/mod.rs",
            "pub mod host;\npub mod services;\nuse self::host::x;\npub struct ParseError;",
        ),
        (
            "src/f/host.rs",
            "use super::ParseError;\nuse crate::leaf::number;\npub fn x() {}",
        ),
        (
            "src/f/services.rs",
            "use crate::leaf::number;\nuse std::collections::BTreeMap;",
        ),
        (
            "src/leaf.rs",
            "pub fn number() {}\n// use crate::f::host; in a comment\n#[cfg(test)]\nmod tests {\n    use crate::f::host::x;\n}\n#[cfg(test)]\nfn t() { crate::f::host::x(); }",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_loop_of_three_is_one_cycle() {
    let found = cycles_of(&[
        ("src/lib.rs", "mod x; mod y; mod z;"),
        ("src/x.rs", "use crate::y::a;"),
        ("src/y.rs", "use crate::z::b;"),
        ("src/z.rs", "use crate::x::c;"),
    ]);
    assert_eq!(found, cycle(&["x", "y", "z"]));
}

#[test]
fn a_declared_module_with_no_file_is_an_error() {
    let mem = Mem(BTreeMap::from([(
        PathBuf::from("src/lib.rs"),
        "mod gone;".to_string(),
    )]));
    let e = Crate::load(Path::new("src/lib.rs"), &mem).unwrap_err();
    assert!(e.to_string().contains("module gone has no file"), "{e}");
}

#[test]
fn attributes_and_modules_in_functions_are_read_too() {
    for back in [
        // A clap value parser, a serde function named in a string.
        "#[derive(Default)]\npub struct A {\n    #[arg(value_parser = crate::load::hooks::f)]\n    x: u8,\n}",
        "pub struct A {\n    #[serde(serialize_with = \"crate::load::hooks::f\")]\n    x: u8,\n}",
        // A module declared inside a function body.
        "fn k() {\n    mod inner {\n        pub fn g() { crate::load::hooks::f(); }\n    }\n    inner::g();\n}",
    ] {
        assert_eq!(
            load_with(back),
            cycle(&["load::degraded", "load::hooks"]),
            "{back}"
        );
    }
}

/// `filter`, whose `host` uses `services`: `lib` is more of the root's
/// code, `parent` the text of `filter/mod.rs`, `back` `services`' code.
fn filter_with(lib: &str, parent: &str, back: &str) -> Vec<Vec<String>> {
    cycles_of(&[
        ("src/lib.rs", &format!("{lib}\npub mod filter;")),
        ("src/filter/mod.rs", parent),
        (
            "src/filter/host.rs",
            "use super::services::S;\npub const EXPECTED: u8 = 1;\n\
             #[macro_export]\nmacro_rules! expected { () => { 1 } }\n\
             macro_rules! near { () => { 2 } }",
        ),
        ("src/filter/services.rs", &format!("pub struct S;\n{back}")),
    ])
}

const MODS: &str = "pub mod host;\npub mod services;\n";

#[test]
fn a_name_through_globs_is_followed_to_its_module() {
    let both = cycle(&["filter::host", "filter::services"]);
    for (parent, back) in [
        // The parent's glob re-export, named by path.
        (
            "pub(crate) use self::host::*;",
            "fn k() -> u8 { super::EXPECTED }",
        ),
        // The child's glob of the parent's named import, a bare name.
        (
            "use self::host::EXPECTED;",
            "use super::*;\nfn k() -> u8 { EXPECTED }",
        ),
        // A glob in both places.
        (
            "pub(crate) use self::host::*;",
            "use super::*;\nfn k() -> u8 { EXPECTED }",
        ),
    ] {
        assert_eq!(
            filter_with("", &format!("{MODS}{parent}"), back),
            both,
            "{parent} / {back}"
        );
    }
    // The parent's own item hides the one its glob brings in; a glob that
    // brings nothing a name needs is no edge.
    for (parent, back) in [
        (
            "pub(crate) use self::host::*;\npub const EXPECTED: u8 = 2;",
            "fn k() -> u8 { super::EXPECTED }",
        ),
        (
            "pub(crate) use self::host::*;\npub const OTHER: u8 = 2;",
            "use super::*;\nfn k() -> u8 { let x = OTHER; x }",
        ),
    ] {
        assert_eq!(
            filter_with("", &format!("{MODS}{parent}"), back),
            Vec::<Vec<String>>::new(),
            "{parent} / {back}"
        );
    }
}

#[test]
fn a_cfg_that_holds_without_test_is_production_code() {
    let both = cycle(&["filter::host", "filter::services"]);
    let with = |cfg: &str| {
        filter_with(
            "",
            MODS,
            &format!("#[cfg({cfg})]\nfn k() -> u8 {{ super::host::EXPECTED }}"),
        )
    };
    for cfg in [
        "any(test, feature = \"testkit\")",
        "not(test)",
        "unix",
        "all(unix, not(test))",
    ] {
        assert_eq!(with(cfg), both, "{cfg}");
    }
    for cfg in [
        "test",
        "all(test, unix)",
        "all(test, any(unix, windows))",
        "not(not(test))",
    ] {
        assert_eq!(with(cfg), Vec::<Vec<String>>::new(), "{cfg}");
    }
}

#[test]
fn a_module_under_a_feature_cfg_is_read() {
    let found = cycles_of(&[
        (
            "src/lib.rs",
            "pub mod a;\n#[cfg(any(test, feature = \"testkit\"))]\npub mod kit;",
        ),
        ("src/a.rs", "pub fn f() { crate::kit::g(); }"),
        ("src/kit.rs", "pub fn g() { crate::a::f(); }"),
    ]);
    assert_eq!(found, cycle(&["a", "kit"]));
}

#[test]
fn a_macro_call_reaches_the_module_that_defines_it() {
    let both = cycle(&["filter::host", "filter::services"]);
    for (parent, back) in [
        // A `#[macro_export]` macro, held by the crate root.
        (MODS, "fn k() -> u8 { crate::expected!() }"),
        (MODS, "use crate::expected;\nfn k() -> u8 { expected!() }"),
        // Textual scope: a `#[macro_use]` module declared before.
        (
            "#[macro_use]\npub mod host;\npub mod services;",
            "fn k() -> u8 { near!() }",
        ),
        // A path in a macro's body is its defining module's.
        (
            MODS,
            "macro_rules! m { () => { $crate::filter::host::EXPECTED } }",
        ),
    ] {
        assert_eq!(filter_with("", parent, back), both, "{back}");
    }
    for back in [
        "fn k() { println!(\"{}\", 1); }",
        "macro_rules! near { () => { 3 } }\nfn k() -> u8 { near!() }",
    ] {
        assert_eq!(
            filter_with("", MODS, back),
            Vec::<Vec<String>>::new(),
            "{back}"
        );
    }
}

#[test]
fn a_crate_alias_of_self_is_the_crate() {
    let found = filter_with(
        "extern crate self as obs;",
        MODS,
        "fn k() -> u8 { obs::filter::host::EXPECTED }",
    );
    assert_eq!(found, cycle(&["filter::host", "filter::services"]));
}
