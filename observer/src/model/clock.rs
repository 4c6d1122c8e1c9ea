//! Kernel time bases: the jiffy rate (HZ) that `tcp_sock.chrono_*` count in,
//! and the mapping from `bpf_ktime_get_ns()` (CLOCK_MONOTONIC) to wall time.

use std::io::Read as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Errors finding the kernel's HZ.
#[derive(Debug, thiserror::Error)]
pub enum ClockError {
    /// Neither the kernel config nor `/proc/timer_list` told HZ.
    #[error(
        "cannot tell the kernel's HZ: no CONFIG_HZ in /proc/config.gz or /boot/config-$(uname -r), \
         and /proc/timer_list is unreadable ({0}); mount /proc or run as root"
    )]
    NoHz(String),
}

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

fn timer_list_jiffies() -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/timer_list").map_err(|e| e.to_string())?;
    text.lines()
        .find_map(|l| l.strip_prefix("jiffies: "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| "no jiffies line".to_string())
}

/// The kernel's HZ: from its config when published, else measured from
/// `/proc/timer_list` over 200 ms.
///
/// # Errors
/// [`ClockError::NoHz`] when neither source is readable.
pub fn kernel_hz() -> Result<u32, ClockError> {
    let mut gz = String::new();
    if let Ok(f) = std::fs::File::open("/proc/config.gz") {
        let mut d = flate2::read::GzDecoder::new(f);
        if d.read_to_string(&mut gz).is_ok()
            && let Some(hz) = hz_from_config(&gz)
        {
            return Ok(hz);
        }
    }
    if let Ok(uts) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        let path = format!("/boot/config-{}", uts.trim());
        if let Some(hz) = std::fs::read_to_string(path)
            .ok()
            .as_deref()
            .and_then(hz_from_config)
        {
            return Ok(hz);
        }
    }
    let t0 = std::time::Instant::now();
    let j0 = timer_list_jiffies().map_err(ClockError::NoHz)?;
    std::thread::sleep(Duration::from_millis(200));
    let j1 = timer_list_jiffies().map_err(ClockError::NoHz)?;
    let secs = t0.elapsed().as_secs_f64();
    Ok(snap_hz(j1.saturating_sub(j0) as f64 / secs))
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
    fn running_kernel_hz_is_a_known_value() {
        let hz = kernel_hz().unwrap();
        assert!(KNOWN_HZ.contains(&hz), "{hz}");
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
