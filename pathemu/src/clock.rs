//! Time and waiting primitives for the relay: a monotonic nanosecond clock,
//! thread timing set-up, a stop signal, and a precise poll with a deadline.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Nanoseconds on `CLOCK_MONOTONIC` (the clock of every relay timestamp).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs * 1_000_000_000 + nanos
}

/// Prepares the calling thread for precise wake-ups: timer slack of 1 ns
/// and, when `realtime`, `SCHED_FIFO` priority 10. Returns whether the
/// realtime policy took effect (false when not asked for or refused).
pub(crate) fn tune_current_thread(realtime: bool) -> bool {
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if !realtime {
        return false;
    }
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// An eventfd used to wake relay threads up when they should stop.
#[derive(Debug)]
pub(crate) struct StopSignal {
    fd: OwnedFd,
}

impl StopSignal {
    /// Creates the (unsignalled) stop signal.
    pub(crate) fn new() -> std::io::Result<Self> {
        // SAFETY: eventfd(2) returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is new and owned by nobody else.
        Ok(StopSignal {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Signals every waiter; the signal stays set.
    pub(crate) fn raise(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from `one` to the eventfd.
        unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                (&raw const one).cast::<libc::c_void>(),
                std::mem::size_of::<u64>(),
            )
        };
    }
}

/// What ended a [`wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// The stop signal was raised.
    Stop,
    /// The input descriptor is readable.
    Readable,
    /// The input descriptor reported an error or hang-up.
    InputFailed,
    /// The deadline passed (or a signal interrupted the wait).
    Timeout,
}

/// Waits until `input` is readable, `stop` is raised, or `timeout_ns` has
/// passed (`None`: no deadline). Uses ppoll(2), whose nanosecond timeout is
/// served by a high-resolution timer.
pub(crate) fn wait(input: &OwnedFd, stop: &StopSignal, timeout_ns: Option<u64>) -> Wake {
    let mut fds = [
        libc::pollfd {
            fd: input.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: libc::time_t::try_from(ns / 1_000_000_000).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::try_from(ns % 1_000_000_000).unwrap_or(0),
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` is a valid array of 2 pollfds; `ts_ptr` is null or points to `ts`.
    let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, ts_ptr, std::ptr::null()) };
    if rc <= 0 {
        return Wake::Timeout;
    }
    if fds[1].revents != 0 {
        return Wake::Stop;
    }
    if fds[0].revents & libc::POLLIN != 0 {
        return Wake::Readable;
    }
    if fds[0].revents != 0 {
        return Wake::InputFailed;
    }
    Wake::Timeout
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
    }

    #[test]
    fn wait_times_out_then_sees_stop() {
        let stop = StopSignal::new().unwrap();
        // An eventfd that is never written serves as a silent input.
        let silent = StopSignal::new().unwrap();
        let t0 = now_ns();
        assert_eq!(wait(&silent.fd, &stop, Some(2_000_000)), Wake::Timeout);
        let waited = now_ns() - t0;
        assert!(waited >= 2_000_000, "{waited}");
        stop.raise();
        assert_eq!(wait(&silent.fd, &stop, None), Wake::Stop);
    }
}
