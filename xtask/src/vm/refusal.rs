//! What the VM runs on a kernel observer must refuse (older than Linux
//! 5.12: Debian 11's 5.10), in place of the tests that need a load. Each
//! step is one of the degradations docs/kernels.md allows there, and
//! nothing else passes:
//!
//! - `observer-refuses`: `observer flows` as a user runs it stops with
//!   exit status 1, nothing on stdout and one line naming the missing
//!   helper and the minimum;
//! - `verifier-refuses-cookie`: with preflight told the kernel is 5.12
//!   (`OBSERVER_FAKE_KERNEL`, which the test build reads), the load fails
//!   at the verifier on `bpf_get_socket_cookie`: the helper really is the
//!   one that sets the minimum, not a guess of preflight's;
//! - `preconditions`: the precondition tests that load nothing (the
//!   refusal over a faked BTF, malformed BTF, bad values); the others load
//!   programs, which this kernel refuses.
//!
//! Each step prints a `@@vm note` with what observer said, for the report.

use super::guest_script::{MARK, Step};

/// The helper whose absence the refusal names
/// (`observer::kernel::load::preflight::KEY_HELPER`).
const KEY_HELPER: &str = "bpf_get_socket_ptr_cookie";

/// The verifier's word for the call a kernel before 5.12 refuses in a
/// tracing program (`BPF_FUNC_get_socket_cookie` is helper 46).
const VERIFIER_REFUSAL: &str = "unknown func bpf_get_socket_cookie#46";

/// The precondition tests that pass on a refused kernel: the rest load.
const PRECONDITIONS: &[&str] = &[
    "preconditions::too_old_kernel_says_upgrade_and_loads_nothing",
    "preconditions::malformed_btf_is_one_clear_line_at_every_cut",
    "preconditions::bad_values_are_clap_errors_never_panics",
];

/// The steps for a refused kernel: `observer` is the binary's path in the
/// VM, `integration` the integration tests' program under `/tests`, if
/// it was built.
pub fn steps(observer: &str, integration: Option<&str>) -> Vec<Step> {
    let mut steps = vec![
        Step {
            name: "observer-refuses".into(),
            command: format!(
                "out=$({observer} flows --duration 2s 2>&1 >/tmp/flows.json); rc=$?; \
                 printf '%s\\n' \"$out\"; echo \"{MARK}note refused (exit $rc): $out\"; \
                 [ \"$rc\" = 1 ] && [ ! -s /tmp/flows.json ] && \
                 [ \"$(printf '%s\\n' \"$out\" | wc -l)\" = 1 ] && \
                 case \"$out\" in *\"has no {KEY_HELPER}\"*\"observer needs Linux 5.12 or \
                 later\"*) true;; *) false;; esac"
            ),
            timeout_s: 120,
        },
        Step {
            name: "verifier-refuses-cookie".into(),
            command: format!(
                "out=$(OBSERVER_FAKE_KERNEL=5.12.0 {observer} flows --duration 2s 2>&1 \
                 >/dev/null); rc=$?; printf '%s\\n' \"$out\" | head -n 1 | cut -c 1-400; \
                 printf '%s\\n' \"$out\" | tail -n 5; \
                 why=$(printf '%s\\n' \"$out\" | grep -o 'unknown func [a-z_0-9]*#[0-9]*' | \
                 head -n 1); echo \"{MARK}note preflight bypassed (exit $rc): \
                 ${{why:-no unknown func in its output}}\"; [ \"$rc\" != 0 ] && \
                 [ \"$why\" = '{VERIFIER_REFUSAL}' ]"
            ),
            timeout_s: 300,
        },
    ];
    if let Some(program) = integration {
        steps.push(Step {
            name: "preconditions".into(),
            command: format!(
                "/tests/{program} --test-threads=1 {}",
                PRECONDITIONS.join(" ")
            ),
            timeout_s: 600,
        });
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_kernel_runs_the_refusal_the_verifier_and_the_loadless_tests() {
        let s = steps("/obs", Some("integration"));
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "observer-refuses",
                "verifier-refuses-cookie",
                "preconditions"
            ]
        );
        assert!(s[0].command.starts_with("out=$(/obs flows --duration 2s "));
        assert!(
            s[0].command
                .contains("*\"has no bpf_get_socket_ptr_cookie\"*")
        );
        assert!(
            s[1].command
                .contains("OBSERVER_FAKE_KERNEL=5.12.0 /obs flows")
        );
        assert!(
            s[2].command
                .starts_with("/tests/integration --test-threads=1 preconditions::too_old_kernel")
        );
        assert_eq!(steps("/obs", None).len(), 2);
    }
}
