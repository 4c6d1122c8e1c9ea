//! The benchmark's surroundings: a network namespace, the observer agent as
//! a child process, and readings of its CPU, memory and metrics.

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use pathemu::ChildGuard;

/// A network namespace with its loopback up, deleted on drop.
pub struct Netns {
    /// Its name (for `ip netns exec`).
    pub name: String,
}

impl Netns {
    /// Creates `obs-bench-<pid>-<tag>`.
    pub fn new(tag: &str) -> anyhow::Result<Netns> {
        let name = format!("obs-bench-{}-{tag}", std::process::id());
        let ok = Command::new("ip").args(["netns", "add", &name]).status()?;
        anyhow::ensure!(ok.success(), "ip netns add {name} failed");
        let ns = Netns { name };
        let ok = Command::new("ip")
            .args(["-n", &ns.name, "link", "set", "lo", "up"])
            .status()?;
        anyhow::ensure!(ok.success(), "ip link set lo up in {} failed", ns.name);
        Ok(ns)
    }

    /// `ip netns exec NAME program`.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }
}

impl Netns {
    /// Moves the calling thread into this namespace until the guard drops
    /// (then back to the one it was in). The poll-time read walks the
    /// namespace of the thread that runs it, as an agent started in the
    /// namespace would.
    ///
    /// # Errors
    /// A namespace could not be opened or entered.
    pub fn enter(&self) -> anyhow::Result<Entered> {
        let home = std::fs::File::open("/proc/thread-self/ns/net")
            .context("opening this thread's network namespace")?;
        let there = std::fs::File::open(format!("/var/run/netns/{}", self.name))
            .with_context(|| format!("opening namespace {}", self.name))?;
        setns(&there).with_context(|| format!("entering namespace {}", self.name))?;
        Ok(Entered { home })
    }
}

/// The calling thread inside a [`Netns`] ([`Netns::enter`]).
pub struct Entered {
    home: std::fs::File,
}

impl Drop for Entered {
    fn drop(&mut self) {
        if let Err(e) = setns(&self.home) {
            eprintln!("bench: could not return to the first network namespace: {e}");
        }
    }
}

/// `setns(2)` of the calling thread into the network namespace `ns`.
fn setns(ns: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: a valid open descriptor of a namespace file; setns changes
    // only the calling thread's namespace.
    let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// The observer binary next to this one.
pub fn observer_bin() -> anyhow::Result<PathBuf> {
    let bin = std::env::current_exe()?
        .parent()
        .context("no directory for this binary")?
        .join("observer");
    anyhow::ensure!(
        bin.exists(),
        "{} is missing: build observer first",
        bin.display()
    );
    Ok(bin)
}

/// A running `observer run`.
pub struct Agent {
    child: ChildGuard,
    /// Its metrics port on 127.0.0.1.
    pub port: u16,
    /// The namespace it runs in, when not this process's.
    netns: Option<String>,
}

impl Agent {
    /// Starts `observer run` and waits until it serves /healthz.
    pub fn start(extra: &[&str]) -> anyhow::Result<Agent> {
        Agent::start_in(None, extra)
    }

    /// Starts `observer run` in namespace `ns` (this process's when None)
    /// and waits until it serves /healthz there. An agent polls from its
    /// namespace: where the kernel allows only the TCP iterator for the
    /// poll-time read (the project's machines), that iterator reaches the
    /// flows of that namespace alone, as a host's agent reaches the host's.
    pub fn start_in(ns: Option<&Netns>, extra: &[&str]) -> anyhow::Result<Agent> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let bin = observer_bin()?;
        let mut cmd = match ns {
            Some(ns) => ns.command(&bin.to_string_lossy()),
            None => Command::new(bin),
        };
        cmd.args(["run", "--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = ChildGuard::spawn(&mut cmd)?;
        let agent = Agent {
            child,
            port,
            netns: ns.map(|n| n.name.clone()),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while agent.get("/healthz").is_none() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "observer run never served /healthz"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(agent)
    }

    /// `GET path`, or None.
    pub fn get(&self, path: &str) -> Option<String> {
        let mut curl = match &self.netns {
            Some(name) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", name, "curl"]);
                c
            }
            None => Command::new("curl"),
        };
        let out = curl
            .args([
                "-sf",
                "--max-time",
                "5",
                &format!("http://127.0.0.1:{}{path}", self.port),
            ])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The sum of every sample of metric `name` (any labels).
    pub fn metric(&self, name: &str) -> f64 {
        let text = self.get("/metrics").unwrap_or_default();
        metric_sum(&text, name)
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// User + system CPU seconds used so far.
    pub fn cpu_s(&self) -> f64 {
        cpu_seconds(self.pid()).unwrap_or(0.0)
    }

    /// Resident memory (MiB).
    pub fn rss_mib(&self) -> f64 {
        rss_kib(self.pid()).map_or(0.0, |k| k as f64 / 1024.0)
    }
}

/// Sum of the samples of `name` (exact name, any labels) in an exposition.
pub fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|r| r.starts_with(' ') || r.starts_with('{'))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// utime + stime of `pid` in seconds (`/proc/PID/stat`, fields 14 and 15).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces: fields start after the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / hz.max(1.0))
}

/// VmRSS of `pid` in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
}

/// CPU seconds used by waited-for children of this process so far.
pub fn children_cpu_s() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// One line about this machine: kernel, CPU model and count.
pub fn machine() -> (String, String, usize) {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    (kernel, model, cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_sums() {
        let text = "# HELP x\nobserver_a_total{v=\"1\"} 2\nobserver_a_total{v=\"2\"} 3\nobserver_ab 7\nobserver_a 1\n";
        assert_eq!(metric_sum(text, "observer_a_total"), 5.0);
        assert_eq!(metric_sum(text, "observer_a"), 1.0);
    }
}
