//! observer's integration test binary (`observer/tests/integration/`) and
//! its modules: each module runs in a process of its own (`cargo xtask
//! test`, the soak, each VM step), as when each was its own binary.

use std::process::Command;

use anyhow::Context as _;

/// observer's integration test binary (`observer/tests/integration/`): one
/// module per part of the program under test.
pub const INTEGRATION: &str = "integration";

/// The modules of the integration test binary `exe` that hold tests (`cli`,
/// `flows`, ...), from its `--list`. Each runs in a process of its own, as
/// when each was its own test binary: tests in different modules never
/// overlap.
///
/// # Errors
/// The binary could not list its tests, or a module's filter
/// ([`module_filter`]) would also pick tests of another module.
pub fn integration_modules(exe: &str) -> anyhow::Result<Vec<String>> {
    let out = Command::new(exe)
        .arg("--list")
        .output()
        .with_context(|| format!("cannot run {exe} --list"))?;
    if !out.status.success() {
        anyhow::bail!("{exe} --list failed: {}", out.status);
    }
    modules_of(exe, &String::from_utf8_lossy(&out.stdout))
}

/// The modules in libtest's `--list` output `list` of binary `exe`.
fn modules_of(exe: &str, list: &str) -> anyhow::Result<Vec<String>> {
    let tests: Vec<&str> = list
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .collect();
    if let Some(t) = tests.iter().find(|t| !t.contains("::")) {
        anyhow::bail!("{exe}: test {t} is in no module");
    }
    let mut modules: Vec<String> = tests
        .iter()
        .filter_map(|t| t.split_once("::").map(|(m, _)| m.to_string()))
        .collect();
    modules.sort();
    modules.dedup();
    for m in &modules {
        let filter = module_filter(m);
        if let Some(t) = tests
            .iter()
            .find(|t| t.contains(&filter) && !t.starts_with(&filter))
        {
            anyhow::bail!("the filter {filter} would also run {t}: rename the module or the test");
        }
    }
    Ok(modules)
}

/// The libtest filter that picks the tests of integration module `module`.
pub fn module_filter(module: &str) -> String {
    format!("{module}::")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integration_modules_from_the_list() {
        let list = "cli::a: test\nflows::b: test\nflows::c::d: test\ncli::e: test\n\n3 tests, 0 benchmarks\n";
        assert_eq!(modules_of("x", list).unwrap(), ["cli", "flows"]);
        // A test outside any module would not run.
        assert!(modules_of("x", "cli::a: test\nloose: test\n").is_err());
        // `flows::` would pick a test of module `top` too.
        assert!(modules_of("x", "flows::a: test\ntop::flows::b: test\n").is_err());
    }
}
