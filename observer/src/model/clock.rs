//! Kernel time bases: the jiffy rate (HZ) that `tcp_sock.chrono_*` count in
//! (its arithmetic and the config files' word on it; `kernel::load::tick` measures
//! it), and the mapping from `bpf_ktime_get_ns()` (CLOCK_MONOTONIC) to wall
//! time.

use std::io::Read as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The HZ values Linux can be configured with.
const KNOWN_HZ: [u32; 4] = [100, 250, 300, 1000];

/// Reads `CONFIG_HZ=N` from kernel config text.
pub fn hz_from_config(text: &str) -> Option<u32> {
    text.lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
        .filter(|hz| *hz > 0)
}

/// Snaps a measured jiffy rate to the nearest configurable HZ.
pub fn snap_hz(measured: f64) -> u32 {
    KNOWN_HZ
        .iter()
        .copied()
        .min_by(|a, b| {
            let da = (f64::from(*a) - measured).abs();
            let db = (f64::from(*b) - measured).abs();
            da.total_cmp(&db)
        })
        .unwrap_or(250)
}

/// `CONFIG_HZ` from the running kernel's config, when the host publishes
/// it: `/proc/config.gz` (CONFIG_IKCONFIG_PROC), else
/// `/boot/config-$(uname -r)`. A pod usually sees neither; observer learns
/// HZ from the kernel itself (`kernel::load::tick`) and uses this only as a
/// cross-check.
pub fn config_hz() -> Option<u32> {
    let mut gz = String::new();
    if let Ok(f) = std::fs::File::open("/proc/config.gz") {
        let mut d = flate2::read::GzDecoder::new(f);
        if d.read_to_string(&mut gz).is_ok()
            && let Some(hz) = hz_from_config(&gz)
        {
            return Some(hz);
        }
    }
    let uts = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let path = format!("/boot/config-{}", uts.trim());
    std::fs::read_to_string(path)
        .ok()
        .as_deref()
        .and_then(hz_from_config)
}

/// Monotonic nanoseconds now (`CLOCK_MONOTONIC`, as `bpf_ktime_get_ns`).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// Converts monotonic timestamps to wall-clock time.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// Wall-clock time at monotonic zero, in ns since the Unix epoch.
    boot_wall_ns: i128,
    /// Kernel jiffies per second.
    pub hz: u32,
}

impl Clock {
    /// Captures the current offset between CLOCK_REALTIME and CLOCK_MONOTONIC.
    pub fn new(hz: u32) -> Clock {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(0);
        Clock {
            boot_wall_ns: wall - i128::from(monotonic_ns()),
            hz,
        }
    }

    /// A clock with a fixed offset, for tests.
    pub fn fixed(boot_wall_ns: i128, hz: u32) -> Clock {
        Clock { boot_wall_ns, hz }
    }

    /// The wall-clock time of monotonic `ns`.
    pub fn wall(&self, ns: u64) -> SystemTime {
        let t = self.boot_wall_ns + i128::from(ns);
        UNIX_EPOCH + Duration::from_nanos(t.max(0) as u64)
    }

    /// Microseconds per jiffy (`USEC_PER_SEC / HZ`, as `tcp_get_info` uses).
    pub fn us_per_jiffy(&self) -> u64 {
        1_000_000 / u64::from(self.hz.max(1))
    }

    /// Jiffies elapsed over `ns` nanoseconds (rounded down).
    pub fn jiffies_in(&self, ns: u64) -> u64 {
        (u128::from(ns) * u128::from(self.hz) / 1_000_000_000) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_hz() {
        assert_eq!(
            hz_from_config("CONFIG_X=y\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n"),
            Some(250)
        );
        assert_eq!(hz_from_config("CONFIG_HZ_1000=y\n"), None);
        assert_eq!(hz_from_config("CONFIG_HZ=0\n"), None);
    }

    #[test]
    fn snapping() {
        assert_eq!(snap_hz(247.0), 250);
        assert_eq!(snap_hz(990.0), 1000);
        assert_eq!(snap_hz(120.0), 100);
        assert_eq!(snap_hz(290.0), 300);
    }

    #[test]
    fn wall_and_jiffies() {
        let c = Clock::fixed(1_700_000_000_000_000_000, 250);
        let w = c.wall(5_000_000_000);
        assert_eq!(
            w.duration_since(UNIX_EPOCH).unwrap().as_nanos(),
            1_700_000_005_000_000_000
        );
        assert_eq!(c.us_per_jiffy(), 4000);
        assert_eq!(c.jiffies_in(1_000_000_000), 250);
        assert_eq!(c.jiffies_in(3_999_999), 0);
        assert_eq!(c.jiffies_in(4_000_000), 1);
    }
}
