//! `cargo xtask vm-test`: the kernel matrix. Boots Debian's 5.10, 6.1 and
//! 6.12 cloud kernels under qemu (plain emulation: KVM guests hang on this
//! project's machines) with an initramfs made here from the project's own
//! binaries, runs the kernel-facing tests inside (on 5.10, which observer
//! refuses, the refusal: [`refusal`]), and prints one line per kernel. See
//! docs/kernels.md.
//!
//! In the VM: the `observer` binary (at the path the integration tests were
//! compiled with), the `observer` library's tests that read the running
//! kernel, every integration test module (a step each) but those needing
//! tools the VM lacks ([`SKIP`]), `ip`, `tc` and `setpriv` from the host
//! with their libraries, a static busybox for everything else, and this
//! xtask for `--netem` (see [`netem`]).

mod apt;
mod guest_script;
mod initramfs;
mod kernel;
mod netem;
pub mod qemu;
mod refusal;

use std::{
    fs,
    io::{BufRead as _, BufReader, Write as _},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use cargo_metadata::TargetKind;

pub use netem::guest;

use crate::{
    integration::{INTEGRATION, integration_modules, module_filter},
    setup, util,
};
use guest_script::{OBSERVER_STEP, Outcome, Step};
use initramfs::Initramfs;

/// Integration test modules left out: they drive tmux (`top`),
/// Prometheus and iperf3 (`exporter`), curl and Prometheus (`tls`, the
/// endpoint's TLS and basic auth, which no kernel changes), podman
/// (`image`) or bash (`workload`), which the VM does not carry; test the HTTP endpoint,
/// which no kernel changes, for a minute under emulation (`endpoint`); or
/// run for minutes under their own command (`soak`); or restart agents
/// during churn for three minutes under emulation (`restart`: bpffs and
/// pinned links, there since Linux 5.8, passed 3/3 on 6.1 when run with
/// `--only restart`, docs/kernels.md; `upgrade`, the same churn across a
/// refused start, not yet run there). The kernel's HZ, measured, is
/// checked in the VM by `flows`.
const SKIP: &[&str] = &[
    "top", "exporter", "tls", "image", "soak", "endpoint", "workload", "restart", "upgrade",
];

/// Modules run only when `--only` names them: their kernel side others
/// cover, and they took a third of the VM's time (200 s each on 6.1 under
/// TCG). `counters` is a property test of the exporter's counters that
/// loads nothing; `select` is the operator's filters (user space) over
/// flows whose fields `flows` and `ss` check, and closes under churn, which
/// `parking` checks.
const ONLY_BY_NAME: &[&str] = &["counters", "select"];

/// Library tests that read the running kernel (BTF layout); the rest
/// of the unit tests do not depend on it.
const LIB_FILTER: &str = "running_kernel";

/// The kernel `cargo xtask test` boots (about 4-5 minutes, download
/// included): Debian 12's, the oldest in the matrix and the one that
/// differs most from a current host kernel.
pub const TEST_KERNEL: &str = "6.1";

/// Seconds a step may take inside the VM (TCG runs tests 2-5x slower).
const STEP_TIMEOUT_S: u64 = 900;

/// Test binaries and the observer binary, from one `cargo test --no-run`.
struct Built {
    observer: PathBuf,
    /// (name, executable, libtest filter)
    tests: Vec<VmTest>,
}

/// One test step: a test binary, or some of its tests.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct VmTest {
    /// The step's name (`observer-lib`, or an integration module: `flows`).
    name: String,
    /// The binary's name under /tests in the VM.
    program: String,
    exe: PathBuf,
    /// The libtest filter, if any.
    filter: Option<String>,
}

/// One kernel's result.
struct KernelRun {
    series: &'static str,
    package: String,
    outcome: Outcome,
    elapsed: Duration,
    log: PathBuf,
}

/// `cargo xtask vm-test --kernel K [--netem] [--only TESTS]`.
///
/// Prints each kernel's result (one line each at the end) and the total as
/// `N passed, M failed` on stdout; the guest's own output goes to stderr.
///
/// # Errors
/// An unknown kernel, a failed build, download or boot, or any failed test.
pub fn vm_test(kernel: &str, netem: bool, timeout_s: u64, only: &[String]) -> anyhow::Result<()> {
    let series = select_series(kernel)?;
    setup::setup_for(&[setup::Group::Vm])?;
    for tool in ["busybox", "apt-get", "dpkg-deb"] {
        if initramfs::find_program(tool).is_none() {
            bail!(
                "{tool} is missing: the VM tests need busybox-static and Debian's apt \
                 (`cargo xtask setup` as root installs them)"
            );
        }
    }
    let qemu = qemu::ensure()?;
    let mut built = build()?;
    if !only.is_empty() {
        let names: Vec<&str> = built.tests.iter().map(|t| t.name.as_str()).collect();
        if let Some(bad) = only.iter().find(|o| !names.contains(&o.as_str())) {
            bail!("no test binary {bad:?} (known: {})", names.join(", "));
        }
        built.tests.retain(|t| only.contains(&t.name));
    } else {
        built
            .tests
            .retain(|t| !ONLY_BY_NAME.contains(&t.name.as_str()));
    }
    let scratch = util::target_dir()
        .join("vm")
        .join(format!("run-{}", std::process::id()));
    fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let base = base_initramfs(&built, netem, &scratch)?;
    let steps = steps(&built, netem);
    // A kernel observer refuses runs the refusal instead, whatever --only.
    let preconditions = built.tests.iter().find(|t| t.name == "preconditions");
    let refused = refusal::steps(
        &built.observer.to_string_lossy(),
        preconditions.map(|t| t.program.as_str()),
    );

    let mut runs = Vec::new();
    for s in &series {
        let steps = if s.refused { &refused } else { &steps };
        let run = run_kernel(&qemu, s, &base, steps, &scratch, timeout_s)?;
        report(&run);
        runs.push(run);
    }
    let _ = fs::remove_dir_all(&scratch);
    summarise(&runs)
}

/// The kernel series `--kernel` names (`all`: every one).
fn select_series(kernel: &str) -> anyhow::Result<Vec<kernel::Series>> {
    if kernel == "all" {
        return Ok(kernel::SERIES.to_vec());
    }
    Ok(vec![kernel::series(kernel).with_context(|| {
        let known: Vec<&str> = kernel::SERIES.iter().map(|s| s.name).collect();
        format!(
            "unknown kernel {kernel:?}: choose {} or all",
            known.join(", ")
        )
    })?])
}

/// Fetches one series' kernel, adds its modules and /init to `base`, boots
/// it and reads the guest's results from the serial transcript.
fn run_kernel(
    qemu: &qemu::Qemu,
    s: &kernel::Series,
    base: &Initramfs,
    steps: &[Step],
    scratch: &Path,
    timeout_s: u64,
) -> anyhow::Result<KernelRun> {
    let k = kernel::fetch(s)?;
    let started = Instant::now();
    let mut initrd = base.clone();
    let mut guest_modules = Vec::new();
    for m in &k.modules {
        let name = m.file_name().unwrap_or_default().to_string_lossy();
        let path = format!("/modules/{name}");
        initrd.file(
            &path,
            fs::read(m).with_context(|| format!("reading {}", m.display()))?,
            0o644,
        );
        guest_modules.push(path);
    }
    initrd.file(
        "/init",
        guest_script::init_script(&guest_modules, steps).into_bytes(),
        0o755,
    );
    let cpio = scratch.join(format!("initramfs-{}.cpio", s.name));
    initrd.write(&cpio)?;
    let log = util::target_dir()
        .join("vm")
        .join(format!("{}.log", k.release));
    eprintln!(
        "vm-test: booting {} under qemu (emulated, no KVM); serial log in {}",
        k.release,
        log.display()
    );
    let run = || {
        boot(
            qemu,
            &k.vmlinuz,
            &cpio,
            &log,
            Duration::from_secs(timeout_s),
            s.name,
        )
    };
    let mut transcript = run()?;
    // A boot that never began is qemu's, not a test's: boot once more.
    if transcript.silent {
        eprintln!("vm-test: booting {} again", k.release);
        transcript = run()?;
    }
    let _ = fs::remove_file(&cpio);
    let mut outcome = guest_script::parse(&transcript.text, steps);
    if transcript.timed_out {
        outcome
            .failures
            .push(format!("the VM was killed after {timeout_s} s"));
    }
    if transcript.silent {
        outcome.failures.push(format!(
            "the guest printed nothing in {} s, twice",
            BOOT_SILENCE.as_secs()
        ));
    }
    Ok(KernelRun {
        series: s.name,
        package: k.package.clone(),
        outcome,
        elapsed: started.elapsed(),
        log,
    })
}

/// Prints one line per kernel and the total; fails if any test failed or
/// none ran.
fn summarise(runs: &[KernelRun]) -> anyhow::Result<()> {
    println!("vm-test summary:");
    let (mut passed, mut failed) = (0, 0);
    for r in runs {
        println!("  {}", summary_line(r));
        passed += r.outcome.passed;
        failed += r.outcome.failed;
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        bail!("{failed} VM tests failed");
    }
    if passed == 0 {
        bail!("no VM test ran");
    }
    Ok(())
}

/// `6.1 (Linux 6.1.0-57-cloud-amd64): 26 passed, 0 failed, 1m35s, 2 degraded`
fn summary_line(r: &KernelRun) -> String {
    let o = &r.outcome;
    format!(
        "{} (Linux {}): {} passed, {} failed, {}m{:02}s, {} degraded",
        r.series,
        o.release.as_deref().unwrap_or("? (no output)"),
        o.passed,
        o.failed,
        r.elapsed.as_secs() / 60,
        r.elapsed.as_secs() % 60,
        o.degraded.len()
    )
}

fn report(r: &KernelRun) {
    println!("vm-test: {} [{}]", summary_line(r), r.package);
    for d in &r.outcome.degraded {
        println!("  degraded: {d}");
    }
    for n in &r.outcome.notes {
        println!("  note: {n}");
    }
    for f in &r.outcome.failures {
        println!("  FAILED: {f}");
    }
    if !r.outcome.failures.is_empty() {
        println!("  serial log: {}", r.log.display());
    }
}

/// Builds observer and its test binaries (with the rest of the
/// workspace's); finds observer's in cargo's JSON.
fn build() -> anyhow::Result<Built> {
    // The package set `cargo xtask test` builds its tests with, so the
    // binaries are the ones it already built (another set unifies the
    // dependencies' features differently and rebuilds them all).
    let mut c = Command::new("cargo");
    c.args([
        "test",
        "--workspace",
        "--exclude",
        "observer-ebpf",
        "--no-run",
        "--message-format=json",
    ]);
    eprintln!("+ {}", util::describe(&c));
    let out = c
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run cargo test --no-run")?;
    if !out.status.success() {
        bail!("building observer's tests failed");
    }
    let mut observer = None;
    let mut tests = Vec::new();
    for a in util::cargo_artifacts(&out.stdout) {
        // observer's own binaries and tests only.
        if a.manifest_path.parent().and_then(|d| d.file_name()) != Some("observer") {
            continue;
        }
        let Some(exe) = a.executable.map(PathBuf::from) else {
            continue;
        };
        let name = a.target.name.as_str();
        match (a.profile.test, a.target.kind.first()) {
            (false, Some(TargetKind::Bin)) if name == "observer" => observer = Some(exe),
            (true, Some(TargetKind::Lib)) => tests.push(VmTest {
                name: "observer-lib".to_string(),
                program: "observer-lib".to_string(),
                exe,
                filter: Some(LIB_FILTER.to_string()),
            }),
            (true, Some(TargetKind::Test)) if name == INTEGRATION => {
                for module in integration_modules(&exe.to_string_lossy())? {
                    if !SKIP.contains(&module.as_str()) {
                        tests.push(VmTest {
                            filter: Some(module_filter(&module)),
                            name: module,
                            program: name.to_string(),
                            exe: exe.clone(),
                        });
                    }
                }
            }
            (true, Some(TargetKind::Test)) => tests.push(VmTest {
                name: name.to_string(),
                program: name.to_string(),
                exe,
                filter: None,
            }),
            _ => {}
        }
    }
    let observer = observer.context("cargo built no observer binary")?;
    tests.sort();
    Ok(Built { observer, tests })
}

/// Everything but the kernel's modules and /init.
fn base_initramfs(built: &Built, netem: bool, scratch: &Path) -> anyhow::Result<Initramfs> {
    let mut i = Initramfs::new();
    let busybox = initramfs::find_program("busybox").context("busybox is missing")?;
    i.program(&busybox, "/bin/busybox", scratch)?;
    let mut tools = vec![("ip", "iproute2"), ("setpriv", "util-linux")];
    if netem {
        tools.push(("tc", "iproute2"));
    }
    for (tool, pkg) in tools {
        let p = initramfs::find_program(tool)
            .with_context(|| format!("{tool} is missing: install {pkg}"))?;
        i.program(&p, &format!("/usr/bin/{tool}"), scratch)?;
    }
    // The integration tests run the binary at the path cargo compiled into
    // them (CARGO_BIN_EXE_observer); init mounts proc, sysfs and devtmpfs
    // over those three folders, so a target folder there would be hidden.
    if ["/proc/", "/sys/", "/dev/"]
        .iter()
        .any(|m| built.observer.starts_with(m))
    {
        bail!(
            "the observer binary {} lies under a folder the VM mounts over; \
             build in another folder (CARGO_TARGET_DIR)",
            built.observer.display()
        );
    }
    i.program(&built.observer, &built.observer.to_string_lossy(), scratch)?;
    let mut programs: Vec<(&str, &Path)> = built
        .tests
        .iter()
        .map(|t| (t.program.as_str(), t.exe.as_path()))
        .collect();
    programs.sort();
    programs.dedup();
    for (name, exe) in programs {
        i.program(exe, &format!("/tests/{name}"), scratch)?;
    }
    if netem {
        let me = std::env::current_exe().context("cannot find the xtask binary")?;
        i.program(&me, "/usr/bin/xtask", scratch)?;
    }
    Ok(i)
}

/// What init runs, in order.
fn steps(built: &Built, netem: bool) -> Vec<Step> {
    let observer = built.observer.to_string_lossy();
    let mut steps = vec![Step {
        name: OBSERVER_STEP.to_string(),
        command: format!("{observer} flows --duration 2s --json >/tmp/flows.json"),
        timeout_s: 120,
    }];
    for t in &built.tests {
        let mut command = format!("/tests/{} --test-threads=1", t.program);
        if let Some(f) = &t.filter {
            command.push(' ');
            command.push_str(f);
        }
        steps.push(Step {
            name: t.name.clone(),
            command,
            timeout_s: STEP_TIMEOUT_S,
        });
    }
    if netem {
        steps.push(Step {
            name: "netem-vs-pathemu".to_string(),
            command: "/usr/bin/xtask vm-guest netem".to_string(),
            timeout_s: 300,
        });
    }
    steps
}

/// The serial output of one boot.
struct Transcript {
    text: String,
    timed_out: bool,
    /// The guest printed nothing within [`BOOT_SILENCE`]: a boot that never
    /// began (seen once in CI under TCG), not a test that hung.
    silent: bool,
}

/// How long a guest may print nothing at all before its boot counts as
/// never begun: the guest's /init prints its first line under a minute
/// after qemu starts on the project's machines.
const BOOT_SILENCE: Duration = Duration::from_secs(300);

/// Boots `vmlinuz` with `initrd` under qemu (TCG), echoes the serial console
/// to stderr (prefixed with `tag`) and to `log`, and kills qemu if it runs
/// past `timeout`.
fn boot(
    qemu: &qemu::Qemu,
    vmlinuz: &Path,
    initrd: &Path,
    log: &Path,
    timeout: Duration,
    tag: &str,
) -> anyhow::Result<Transcript> {
    let mut c = qemu.command();
    c.args(["-nodefaults", "-machine", "q35", "-accel", "tcg"])
        .args(["-cpu", "max", "-smp", "2", "-m", "2048"])
        .args(["-display", "none", "-serial", "stdio", "-no-reboot"])
        .arg("-kernel")
        .arg(vmlinuz)
        .arg("-initrd")
        .arg(initrd)
        .args(["-append", "console=ttyS0 panic=-1 quiet"]);
    eprintln!("+ {}", util::describe(&c));
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start {}", qemu.binary.display()))?;
    let stdout = child.stdout.take().context("qemu has no stdout")?;
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    if let Some(dir) = log.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut logf = fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let deadline = Instant::now() + timeout;
    let silence = Instant::now() + BOOT_SILENCE;
    let mut text = String::new();
    let (mut timed_out, mut silent) = (false, false);
    loop {
        let until = if text.is_empty() {
            deadline.min(silence)
        } else {
            deadline
        };
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let _ = logf.write_all(line.as_bytes());
                eprint!("[{tag}] {}", line.trim_end_matches(['\r', '\n']));
                eprintln!();
                text.push_str(&line);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Silent before the deadline: the boot hung; else the run.
                silent = text.is_empty() && Instant::now() < deadline;
                timed_out = !silent;
                if silent {
                    eprintln!(
                        "vm-test: {tag}: the guest printed nothing in {} s; killing qemu",
                        BOOT_SILENCE.as_secs()
                    );
                } else {
                    eprintln!(
                        "vm-test: {tag}: no end after {} s; killing qemu",
                        timeout.as_secs()
                    );
                }
                let _ = child.kill();
                break;
            }
        }
    }
    let status = child.wait().context("waiting for qemu")?;
    let _ = reader.join();
    if !timed_out && !silent && !status.success() {
        eprintln!("vm-test: {tag}: qemu exited with {status}");
    }
    Ok(Transcript {
        text,
        timed_out,
        silent,
    })
}
