//! Tarjan's algorithm: the strongly connected components of a module
//! graph, each a cycle.

use std::collections::{BTreeMap, BTreeSet};

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
