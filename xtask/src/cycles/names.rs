//! What a module's code names, read with `syn`: the paths it uses
//! (`use` trees, paths in code and types, tokens of macro calls and
//! attributes, paths in their strings), the bare names a glob may bring
//! in, and what its `use` declarations bind. Test modules and test-only
//! items (a `cfg` that holds only under `test`) are left out.

use std::collections::{BTreeMap, BTreeSet};

use syn::{punctuated::Punctuated, visit::Visit};

/// What a module's code names: the paths it uses, and what its `use`
/// declarations bind.
#[derive(Default, Debug)]
pub(super) struct Names {
    /// Every path named, as written (`super::a::B`, `hooks::X`).
    pub(super) refs: Vec<Vec<String>>,
    /// Names bound by `use` (the binding, the path it stands for).
    pub(super) uses: BTreeMap<String, Vec<String>>,
    /// Bases of glob imports (`use super::*` gives `super`).
    pub(super) globs: Vec<Vec<String>>,
    /// Paths of one segment (`EXPECTED`, `Flow`): they reach another
    /// module only through a glob import.
    pub(super) bare: BTreeSet<String>,
    /// Macros called by a bare name (`explain!`), found through a `use`,
    /// a glob or the textual scope of a `macro_rules!`.
    pub(super) bare_macros: BTreeSet<String>,
    /// Items the module defines (functions, types, constants, macros):
    /// a name it defines is not looked for through its globs.
    pub(super) defs: BTreeSet<String>,
    /// Its `macro_rules!` macros, and of those the `#[macro_export]` ones
    /// (which the crate root holds: `crate::name!`).
    pub(super) macros: BTreeSet<String>,
    pub(super) exported: BTreeSet<String>,
    /// Names of `extern crate self as x;`: `x::a::B` is `crate::a::B`.
    pub(super) crate_aliases: BTreeSet<String>,
}

impl Names {
    /// Records what the module-level `item` defines.
    pub(super) fn define(&mut self, item: &syn::Item) {
        let ident = match item {
            syn::Item::Const(i) => &i.ident,
            syn::Item::Enum(i) => &i.ident,
            syn::Item::Fn(i) => &i.sig.ident,
            syn::Item::Static(i) => &i.ident,
            syn::Item::Struct(i) => &i.ident,
            syn::Item::Trait(i) => &i.ident,
            syn::Item::TraitAlias(i) => &i.ident,
            syn::Item::Type(i) => &i.ident,
            syn::Item::Union(i) => &i.ident,
            syn::Item::Macro(i) if i.mac.path.is_ident("macro_rules") => {
                let Some(ident) = &i.ident else { return };
                let name = ident.to_string();
                if i.attrs.iter().any(|a| a.path().is_ident("macro_export")) {
                    self.exported.insert(name.clone());
                }
                self.macros.insert(name);
                ident
            }
            syn::Item::ExternCrate(e) if e.ident == "self" => {
                if let Some((_, alias)) = &e.rename {
                    let alias = alias.to_string();
                    self.uses.insert(alias.clone(), vec!["crate".to_string()]);
                    self.crate_aliases.insert(alias);
                }
                return;
            }
            _ => return,
        };
        self.defs.insert(ident.to_string());
    }
}

/// Whether `attrs` hold a `cfg` that holds only under test: `cfg(test)`,
/// `cfg(all(test, unix))`. `cfg(any(test, feature = "testkit"))` is
/// production code (it holds in a build with the feature), and so is
/// `cfg(not(test))`.
pub(super) fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|p| without_test(&p) == Some(false))
    })
}

/// The value of the `cfg` predicate `p` in a build without `test`: Some
/// where that alone decides it, None where it turns on other options
/// (features, targets), in Kleene's three-valued logic.
fn without_test(p: &syn::Meta) -> Option<bool> {
    match p {
        syn::Meta::Path(path) if path.is_ident("test") => Some(false),
        syn::Meta::List(l) => {
            let args = l
                .parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
                .ok()?;
            let vals: Vec<Option<bool>> = args.iter().map(without_test).collect();
            if l.path.is_ident("all") {
                if vals.contains(&Some(false)) {
                    Some(false)
                } else {
                    vals.iter().all(|v| *v == Some(true)).then_some(true)
                }
            } else if l.path.is_ident("any") {
                if vals.contains(&Some(true)) {
                    Some(true)
                } else {
                    vals.iter().all(|v| *v == Some(false)).then_some(false)
                }
            } else if l.path.is_ident("not") && vals.len() == 1 {
                vals[0].map(|v| !v)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Whether a non-module item is for tests only (`#[cfg(test)]`).
pub(super) fn item_is_test(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => return false,
    };
    is_test(attrs)
}

/// Collects what a module's items name (test items and modules skipped).
pub(super) struct Collect<'a> {
    pub(super) names: &'a mut Names,
}

impl<'ast> Visit<'ast> for Collect<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // A file's modules are modules of their own (`Crate::items`); one
        // inside a function body counts as part of the module around it.
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        // `#[arg(value_parser = super::x::parse)]`, `#[serde(with =
        // "crate::x")]`: paths in an attribute's tokens and strings.
        macro_paths(
            quote::ToTokens::to_token_stream(&a.meta),
            &mut self.names.refs,
        );
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if is_test(&u.attrs) {
            return;
        }
        let mut leaves = Vec::new();
        flatten(&u.tree, Vec::new(), &mut leaves);
        for (path, binding) in leaves {
            match binding {
                Some(name) => {
                    self.names.uses.insert(name, path.clone());
                }
                None => self.names.globs.push(path.clone()),
            }
            self.names.refs.push(path);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let mut segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.len() > 1 {
            self.names.refs.push(segs);
        } else if let Some(one) = segs.pop() {
            self.names.bare.insert(one);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        macro_paths(m.tokens.clone(), &mut self.names.refs);
        match m.path.get_ident() {
            Some(name) => {
                self.names.bare_macros.insert(name.to_string());
            }
            None => self.visit_path(&m.path),
        }
    }
}

/// The leaves of a `use` tree: each path and the name it binds (None for
/// a glob, whose path is its base).
fn flatten(tree: &syn::UseTree, prefix: Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let with = |s: &syn::Ident| -> (Vec<String>, String) {
        let name = s.to_string();
        if name == "self" {
            let last = prefix.last().cloned().unwrap_or_default();
            (prefix.clone(), last)
        } else {
            ([prefix.clone(), vec![name.clone()]].concat(), name)
        }
    };
    match tree {
        syn::UseTree::Path(p) => {
            flatten(
                &p.tree,
                [prefix.clone(), vec![p.ident.to_string()]].concat(),
                out,
            );
        }
        syn::UseTree::Name(n) => {
            let (path, name) = with(&n.ident);
            out.push((path, Some(name)));
        }
        syn::UseTree::Rename(r) => {
            let (path, _) = with(&r.ident);
            out.push((path, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix, None)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten(t, prefix.clone(), out);
            }
        }
    }
}

/// The paths (`a::b::c`, two segments or more) in a macro call's tokens,
/// groups included: `format!("{}", crate::x::Y)` names `crate::x::Y`.
fn macro_paths(tokens: proc_macro2::TokenStream, out: &mut Vec<Vec<String>>) {
    use proc_macro2::TokenTree;
    let mut current: Vec<String> = Vec::new();
    let mut colons = 0;
    let flush = |current: &mut Vec<String>, out: &mut Vec<Vec<String>>| {
        if current.len() > 1 {
            out.push(std::mem::take(current));
        }
        current.clear();
    };
    for t in tokens {
        match t {
            TokenTree::Ident(i) => {
                if current.is_empty() || colons == 2 {
                    current.push(i.to_string());
                } else {
                    flush(&mut current, out);
                    current.push(i.to_string());
                }
                colons = 0;
            }
            TokenTree::Punct(p) if p.as_char() == ':' && !current.is_empty() => colons += 1,
            TokenTree::Group(g) => {
                flush(&mut current, out);
                colons = 0;
                macro_paths(g.stream(), out);
            }
            TokenTree::Literal(l) => {
                flush(&mut current, out);
                colons = 0;
                // A path in a string (`serialize_with = "crate::x::f"`).
                let text = l.to_string();
                if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
                    && inner.contains("::")
                    && inner
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
                {
                    out.push(
                        inner
                            .split("::")
                            .filter(|s| !s.is_empty())
                            .map(str::to_string)
                            .collect(),
                    );
                }
            }
            _ => {
                flush(&mut current, out);
                colons = 0;
            }
        }
    }
    flush(&mut current, out);
}
