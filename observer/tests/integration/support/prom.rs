//! A real Prometheus server scraping an agent, as a deployment has one.

use std::{
    path::PathBuf,
    process::{Command, Stdio},
};

use pathemu::ChildGuard;

use super::http::free_port;

/// A Prometheus server on a free loopback port scraping an agent every
/// second; its data folder goes with it.
pub struct Prometheus {
    /// Its HTTP API port.
    pub port: u16,
    dir: PathBuf,
    _child: ChildGuard,
}

impl Prometheus {
    /// Starts it; panics when prometheus is not installed.
    pub fn scraping(target: u16) -> Prometheus {
        Prometheus::with_jobs(&format!(
            "  - job_name: observer\n    static_configs: [{{targets: ['127.0.0.1:{target}']}}]\n"
        ))
    }

    /// Starts one with `jobs` (YAML list items of `scrape_configs`,
    /// indented two spaces) as its scrape jobs, every second.
    pub fn with_jobs(jobs: &str) -> Prometheus {
        if Command::new("prometheus")
            .arg("--version")
            .output()
            .is_err()
        {
            panic!("prometheus is not installed: run `cargo xtask setup`");
        }
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("observer-prom-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("prometheus.yml");
        std::fs::write(
            &cfg,
            format!(
                "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
                 scrape_configs:\n{jobs}"
            ),
        )
        .unwrap();
        let child = ChildGuard::spawn(
            Command::new("prometheus")
                .arg(format!("--config.file={}", cfg.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .unwrap();
        Prometheus {
            port,
            dir,
            _child: child,
        }
    }

    /// The value of an instant query's first sample, if any.
    pub fn query(&self, q: &str) -> Option<f64> {
        let out = Command::new("curl")
            .args([
                "-sf",
                "--max-time",
                "2",
                "-G",
                &format!("http://127.0.0.1:{}/api/v1/query", self.port),
            ])
            .args(["--data-urlencode", &format!("query={q}")])
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
