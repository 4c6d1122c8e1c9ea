//! HTTP downloads for the receiver-side scenarios: nginx or python's
//! `http.server` in A serves a generated file, curl or wget in B fetches it.
//! Every process runs under a [`ChildGuard`] and everything written lives in
//! a [`TempDir`], removed when it is dropped; no system configuration is read
//! or written (nginx runs in the foreground, as one process, with its pid
//! file, logs and temp paths in that directory).

use std::{
    fs,
    io::Write as _,
    net::Ipv4Addr,
    os::unix::fs::PermissionsExt as _,
    path::{Path as FsPath, PathBuf},
    process::Stdio,
    sync::atomic::{AtomicU32, Ordering},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use pathemu::{ChildGuard, Path, Side};

use crate::catalog::{HttpClient, HttpServer};

/// The server's port in A (unprivileged).
pub const PORT: u16 = 8080;
/// The served file's name.
const FILE: &str = "data.bin";

/// A directory under the system's temp directory, removed with everything in
/// it when dropped (also while unwinding).
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `observer-scenario-<pid>-<n>-<tag>` (mode 0755).
    pub fn new(tag: &str) -> anyhow::Result<TempDir> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "observer-scenario-{}-{n}-{tag}",
            std::process::id()
        ));
        // A leftover of an earlier process with the same pid.
        let _ = fs::remove_dir_all(&path);
        fs::create_dir(&path).with_context(|| format!("creating {}", path.display()))?;
        let dir = TempDir { path };
        fs::set_permissions(&dir.path, fs::Permissions::from_mode(0o755))?;
        Ok(dir)
    }

    /// The directory.
    pub fn path(&self) -> &FsPath {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Size of the file to serve: curl stops itself after `secs`, so the file
/// only has to outlast that at the bottleneck rate (it is sparse, so its
/// size costs nothing); wget fetches the whole file, sized for `secs` at the
/// bottleneck rate.
pub fn file_size(client: &HttpClient, rate_bps: u64, secs: u64) -> u64 {
    let rate = if rate_bps == 0 {
        1_000_000_000
    } else {
        rate_bps
    };
    match client {
        HttpClient::Curl { .. } | HttpClient::Steady { .. } => rate / 8 * (secs + 5),
        HttpClient::Wget => rate / 8 * secs,
    }
}

/// nginx's configuration: one foreground process, every path in `dir`,
/// listening on `addr:PORT`, serving `dir/www`.
pub fn nginx_conf(
    dir: &FsPath,
    addr: Ipv4Addr,
    limit_rate: Option<&str>,
    sndbuf: Option<&str>,
) -> String {
    let d = dir.display();
    let sndbuf = sndbuf.map(|b| format!(" sndbuf={b}")).unwrap_or_default();
    let limit = limit_rate
        .map(|r| format!("            limit_rate {r};\n"))
        .unwrap_or_default();
    format!(
        "daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{
    worker_connections 64;
}}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    sendfile on;
    server {{
        listen {addr}:{PORT}{sndbuf};
        root {d}/www;
        location / {{
{limit}        }}
    }}
}}
"
    )
}

/// Writes a sparse file of `size` bytes to serve and starts `server` in A;
/// returns once it accepts connections.
pub fn serve(
    path: &Path,
    server: &HttpServer,
    dir: &TempDir,
    size: u64,
) -> anyhow::Result<ChildGuard> {
    let www = dir.path().join("www");
    fs::create_dir(&www)?;
    fs::set_permissions(&www, fs::Permissions::from_mode(0o755))?;
    let file = fs::File::create(www.join(FILE))?;
    file.set_len(size)?;
    let addr = path.addr(Side::A);
    let mut child = match server {
        HttpServer::Nginx { limit_rate, sndbuf } => {
            let conf = dir.path().join("nginx.conf");
            fs::File::create(&conf)?
                .write_all(nginx_conf(dir.path(), addr, *limit_rate, *sndbuf).as_bytes())?;
            let mut cmd = path.command(Side::A, "nginx");
            cmd.arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(&conf)
                .arg("-e")
                .arg(dir.path().join("error.log"))
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            ChildGuard::spawn(&mut cmd).context("starting nginx in A (package nginx-light)")?
        }
        HttpServer::Python => {
            let mut cmd = path.command(Side::A, "python3");
            cmd.args(["-m", "http.server", &PORT.to_string(), "--bind"])
                .arg(addr.to_string())
                .arg("--directory")
                .arg(&www)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            ChildGuard::spawn(&mut cmd).context("starting python3 -m http.server in A")?
        }
    };
    if let Err(e) = crate::traffic::wait_listening(path, Side::A, PORT) {
        let exited = child
            .child_mut()
            .and_then(|c| c.try_wait().ok().flatten())
            .map(|s| format!(" (the server exited: {s})"))
            .unwrap_or_default();
        let log = fs::read_to_string(dir.path().join("error.log")).unwrap_or_default();
        let log = log.trim();
        let log = if log.is_empty() {
            String::new()
        } else {
            format!(": {log}")
        };
        anyhow::bail!("{e}{exited}{log}");
    }
    Ok(child)
}

/// The steady reader ([`HttpClient::Steady`]): `python3 -c` with the
/// server's address, port, path, bytes per read, ms between reads and
/// seconds to run; it prints what curl's `-w '%{speed_download}
/// %{local_port}'` does (bytes/s of the body and headers, its port).
/// Python, not a Rust binary of this crate: the scenario needs a second
/// process at the peer, and python3 is on every machine the suite runs.
pub const STEADY_READER: &str = "\
import socket, sys, time
host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
chunk, period, secs = int(sys.argv[4]), int(sys.argv[5]) / 1000, float(sys.argv[6])
s = socket.create_connection((host, port))
s.sendall(('GET %s HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n' % (path, host)).encode())
start = time.monotonic()
got, tick = 0, start
while time.monotonic() - start < secs:
    d = s.recv(chunk)
    if not d:
        break
    got += len(d)
    tick += period
    time.sleep(max(0.0, tick - time.monotonic()))
print('%.1f %d' % (got / (time.monotonic() - start), s.getsockname()[1]))
";

/// A running download in B.
pub struct Download {
    child: ChildGuard,
    client: HttpClient,
    deadline: Instant,
    timed_out: bool,
}

/// What a client reported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DownloadResult {
    /// Average download rate (bits/s), the client's own figure.
    pub bps: f64,
    /// The client's local port in B, where the client says it.
    pub local_port: Option<u16>,
    /// The client's error, if it failed.
    pub error: Option<String>,
}

impl Download {
    /// Starts `client` in B against the server in A; curl stops after
    /// `secs`, wget when the file is done.
    pub fn start(path: &Path, client: &HttpClient, secs: u64) -> anyhow::Result<Download> {
        let url = format!("http://{}:{PORT}/{FILE}", path.addr(Side::A));
        let mut cmd;
        match client {
            HttpClient::Curl { limit_rate } => {
                cmd = path.command(Side::B, "curl");
                cmd.args(["-sS", "-o", "/dev/null", "--max-time", &secs.to_string()])
                    .args(["-w", "%{speed_download} %{local_port}\\n"]);
                if let Some(r) = limit_rate {
                    cmd.args(["--limit-rate", r]);
                }
                cmd.arg(&url).stdout(Stdio::piped()).stderr(Stdio::piped());
            }
            HttpClient::Steady { chunk, period_ms } => {
                cmd = path.command(Side::B, "python3");
                cmd.args(["-c", STEADY_READER])
                    .arg(path.addr(Side::A).to_string())
                    .args([PORT.to_string(), format!("/{FILE}")])
                    .args([chunk.to_string(), period_ms.to_string(), secs.to_string()])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
            }
            HttpClient::Wget => {
                cmd = path.command(Side::B, "wget");
                cmd.args([
                    "-O",
                    "/dev/null",
                    "--report-speed=bits",
                    "--progress=dot:giga",
                    "--tries=1",
                    &url,
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            }
        }
        let child = ChildGuard::spawn(&mut cmd).context("starting the HTTP client in B")?;
        Ok(Download {
            child,
            client: client.clone(),
            // wget has no total limit: a stuck transfer is stopped here.
            deadline: Instant::now() + Duration::from_secs(2 * secs + 10),
            timed_out: false,
        })
    }

    /// Whether the client has exited (one past its deadline is killed).
    pub fn done(&mut self) -> bool {
        let Some(c) = self.child.child_mut() else {
            return true;
        };
        if c.try_wait().map(|s| s.is_some()).unwrap_or(true) {
            return true;
        }
        if Instant::now() >= self.deadline {
            let _ = c.kill();
            self.timed_out = true;
            return true;
        }
        false
    }

    /// Waits for the client and reads its figures.
    pub fn finish(self) -> anyhow::Result<DownloadResult> {
        let out = self
            .child
            .wait_with_output()
            .context("waiting for the HTTP client")?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let mut r = match self.client {
            HttpClient::Steady { .. } => {
                let mut r = parse_curl(&stdout);
                if !out.status.success() {
                    r.error = Some(format!(
                        "the steady reader failed ({}): {}",
                        out.status,
                        last_line(&stderr)
                    ));
                }
                r
            }
            HttpClient::Curl { .. } => {
                // 28: --max-time reached, which is how the transfer ends.
                let code = out.status.code();
                let mut r = parse_curl(&stdout);
                if !matches!(code, Some(0 | 28)) {
                    r.error = Some(format!("curl exited {:?}: {}", code, stderr.trim()));
                }
                r
            }
            HttpClient::Wget => {
                let mut r = parse_wget(&stderr);
                if !out.status.success() && r.error.is_none() {
                    r.error = Some(format!(
                        "wget failed ({}): {}",
                        out.status,
                        last_line(&stderr)
                    ));
                }
                r
            }
        };
        if self.timed_out {
            r.error = Some("the download did not finish in time".to_string());
        }
        Ok(r)
    }
}

fn last_line(s: &str) -> &str {
    s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// Reads curl's `-w '%{speed_download} %{local_port}'` (bytes/s, port).
pub fn parse_curl(out: &str) -> DownloadResult {
    let mut it = out.split_whitespace();
    let speed = it.next().and_then(|s| s.parse::<f64>().ok());
    let port = it.next().and_then(|s| s.parse::<u16>().ok());
    match speed {
        Some(b) => DownloadResult {
            bps: b * 8.0,
            local_port: port.filter(|p| *p != 0),
            error: None,
        },
        None => DownloadResult {
            error: Some(format!("curl printed no speed: {:?}", out.trim())),
            ..DownloadResult::default()
        },
    }
}

/// Reads wget's closing line with `--report-speed=bits`:
/// `2026-01-01 12:00:00 (43.2 Mb/s) - '/dev/null' saved [20971520/20971520]`.
pub fn parse_wget(stderr: &str) -> DownloadResult {
    let rate = stderr
        .lines()
        .rev()
        .find(|l| l.contains(" saved ["))
        .and_then(|l| {
            let open = l.find('(')?;
            let close = open + l[open..].find(')')?;
            let mut parts = l[open + 1..close].split_whitespace();
            let value: f64 = parts.next()?.parse().ok()?;
            let unit = match parts.next()? {
                "b/s" => 1.0,
                "Kb/s" => 1e3,
                "Mb/s" => 1e6,
                "Gb/s" => 1e9,
                _ => return None,
            };
            Some(value * unit)
        });
    match rate {
        Some(bps) => DownloadResult {
            bps,
            local_port: None,
            error: None,
        },
        None => DownloadResult {
            error: Some(format!(
                "wget reported no rate: {:?}",
                last_line(stderr).trim()
            )),
            ..DownloadResult::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_curl() {
        let r = parse_curl("384795.000 45678\n");
        assert_eq!(r.bps, 384_795.0 * 8.0);
        assert_eq!(r.local_port, Some(45678));
        assert!(r.error.is_none());
        assert_eq!(parse_curl("1000 0").local_port, None);
        assert!(parse_curl("").error.is_some());
    }

    #[test]
    fn reads_wget() {
        let out = "Length: 20971520 (20M) [application/octet-stream]\n\
                   Saving to: '/dev/null'\n\n\
                   2026-11-30 14:19:03 (43.2 Mb/s) - '/dev/null' saved [20971520/20971520]\n\n";
        let r = parse_wget(out);
        assert!((r.bps - 43.2e6).abs() < 1.0);
        assert!(r.error.is_none());
        assert_eq!(parse_wget("x (12 Kb/s) - 'f' saved [1/1]").bps, 12e3);
        assert!(parse_wget("failed: Connection refused.").error.is_some());
    }

    #[test]
    fn nginx_configuration() {
        let c = nginx_conf(
            FsPath::new("/tmp/x"),
            Ipv4Addr::new(10, 77, 0, 1),
            Some("375k"),
            Some("64k"),
        );
        assert!(c.contains("daemon off;"));
        assert!(c.contains("pid /tmp/x/nginx.pid;"));
        assert!(c.contains("listen 10.77.0.1:8080 sndbuf=64k;"));
        assert!(c.contains("limit_rate 375k;"));
        assert!(c.contains("client_body_temp_path /tmp/x/body;"));
        let plain = nginx_conf(FsPath::new("/t"), Ipv4Addr::new(10, 77, 0, 1), None, None);
        assert!(plain.contains("listen 10.77.0.1:8080;"));
        assert!(!plain.contains("limit_rate"));
    }

    #[test]
    fn file_sizes() {
        let curl = HttpClient::Curl { limit_rate: None };
        assert_eq!(file_size(&curl, 8_000_000, 10), 15_000_000);
        assert_eq!(file_size(&HttpClient::Wget, 20_000_000, 10), 25_000_000);
        assert_eq!(file_size(&HttpClient::Wget, 0, 1), 125_000_000);
    }

    #[test]
    fn temp_dir_goes_away() {
        let d = TempDir::new("t").unwrap();
        let p = d.path().to_path_buf();
        fs::write(p.join("f"), b"x").unwrap();
        drop(d);
        assert!(!p.exists());
    }
}
