//! The relay: one thread per direction that reads packets from one TUN,
//! runs them through the direction's model, holds them in a delay line and
//! writes each to the other TUN at its delivery time (in delivery-time
//! order: a packet held back by the reorder draw is overtaken).

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use crate::clock::{self, StopSignal, Wake};
use crate::delay_line::DelayLine;
use crate::error::{Error, Result};
use crate::model::{DirectionModel, Fate};
use crate::stats::{LinkCounters, bump};

/// Largest packet read from a TUN (bytes); larger than any MTU a path accepts
/// ([`crate::MAX_MTU`]), so no packet is ever truncated.
const READ_BUF: usize = 65_536;
/// At most this many packets are read before due packets are delivered again.
const READ_BATCH: usize = 32;
/// Free packet buffers kept for reuse.
const POOL_MAX: usize = 8192;
/// A packet due within this many ns is delivered now rather than after another
/// wait: a wake-up costs more than that.
const EARLY_NS: u64 = 2_000;
/// Long waits end this many ns before the next delivery time, and a second,
/// short wait follows: a long sleep lets the (virtual) CPU idle deeply and
/// wakes up to ~150 us late, a short one wakes within ~20-30 us.
const WAKE_LEAD_NS: u64 = 200_000;

/// The state of one direction's relay thread.
struct Worker {
    input: Arc<OwnedFd>,
    output: Arc<OwnedFd>,
    stop: Arc<StopSignal>,
    model: DirectionModel,
    counters: Arc<LinkCounters>,
    /// Accepted packets (IP bytes) waiting for their delivery times.
    line: DelayLine<Vec<u8>>,
    pool: Vec<Vec<u8>>,
    scratch: Vec<u8>,
    /// Capacity of a new packet buffer (bytes): the path MTU, so that a
    /// pooled buffer never grows.
    buf_capacity: usize,
}

/// What [`Worker::read_one`] found.
enum Read {
    Packet(usize),
    Empty,
    Failed,
}

impl Worker {
    fn run(mut self, realtime: bool) {
        clock::tune_current_thread(realtime);
        loop {
            let now = clock::now_ns();
            self.deliver_due(now);
            let timeout = self.line.next_due().map(|due| {
                let left = due.saturating_sub(clock::now_ns());
                if left > 2 * WAKE_LEAD_NS {
                    left - WAKE_LEAD_NS
                } else {
                    left
                }
            });
            match clock::wait(&self.input, &self.stop, timeout) {
                Wake::Stop => break,
                Wake::Readable => {
                    if !self.read_batch() {
                        break;
                    }
                }
                Wake::InputFailed => break,
                Wake::Timeout => {}
            }
        }
    }

    /// Writes every packet due by `now` (+[`EARLY_NS`]) to the output TUN.
    fn deliver_due(&mut self, now: u64) {
        let limit = now.saturating_add(EARLY_NS);
        while let Some((due_ns, buf)) = self.line.pop_due(limit) {
            let late = clock::now_ns().saturating_sub(due_ns);
            // SAFETY: writes `buf.len()` initialised bytes from `buf`.
            let rc = unsafe {
                libc::write(
                    self.output.as_raw_fd(),
                    buf.as_ptr().cast::<libc::c_void>(),
                    buf.len(),
                )
            };
            self.counters
                .packets_in_flight
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            if rc < 0 {
                bump(&self.counters.write_errors, 1);
            } else {
                self.counters.delivered(buf.len() as u64, late);
            }
            if self.pool.len() < POOL_MAX {
                let mut buf = buf;
                buf.clear();
                self.pool.push(buf);
            }
        }
    }

    /// Reads one packet into the scratch buffer.
    fn read_one(&mut self) -> Read {
        // SAFETY: reads at most `scratch.len()` bytes into `scratch`.
        let rc = unsafe {
            libc::read(
                self.input.as_raw_fd(),
                self.scratch.as_mut_ptr().cast::<libc::c_void>(),
                self.scratch.len(),
            )
        };
        if rc >= 0 {
            return Read::Packet(rc.unsigned_abs());
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN | libc::EINTR) => Read::Empty,
            _ => Read::Failed,
        }
    }

    /// Reads up to [`READ_BATCH`] packets and runs each through the model.
    /// Returns false when the input failed for good.
    fn read_batch(&mut self) -> bool {
        for _ in 0..READ_BATCH {
            let len = match self.read_one() {
                Read::Packet(0) => continue,
                Read::Packet(n) => n,
                Read::Empty => return true,
                Read::Failed => return false,
            };
            let now = clock::now_ns();
            bump(&self.counters.packets_in, 1);
            let size = len as u64;
            match self.model.offer_packet(now, &self.scratch[..len]) {
                Fate::DropLoss => {
                    bump(&self.counters.packets_dropped_loss, 1);
                    bump(&self.counters.bytes_dropped_loss, size);
                }
                Fate::DropPolice => {
                    bump(&self.counters.packets_dropped_police, 1);
                    bump(&self.counters.bytes_dropped_police, size);
                }
                Fate::DropQueue => {
                    bump(&self.counters.packets_dropped_queue, 1);
                    bump(&self.counters.bytes_dropped_queue, size);
                }
                Fate::DropShaper => {
                    bump(&self.counters.packets_dropped_shaper, 1);
                    bump(&self.counters.bytes_dropped_shaper, size);
                }
                Fate::DropOutage => {
                    bump(&self.counters.packets_dropped_outage, 1);
                    bump(&self.counters.bytes_dropped_outage, size);
                }
                Fate::DropOversize => {
                    bump(&self.counters.packets_dropped_oversize, 1);
                    bump(&self.counters.bytes_dropped_oversize, size);
                }
                Fate::Deliver {
                    at_ns, reordered, ..
                } => {
                    let mut buf = self
                        .pool
                        .pop()
                        .unwrap_or_else(|| Vec::with_capacity(self.buf_capacity));
                    buf.extend_from_slice(&self.scratch[..len]);
                    self.line.push(at_ns, reordered, buf);
                    if reordered {
                        bump(&self.counters.packets_reordered, 1);
                    }
                    bump(&self.counters.packets_in_flight, 1);
                    self.deliver_due(now);
                }
            }
        }
        true
    }
}

/// The running relay threads of a path; dropping it stops and joins them.
#[derive(Debug)]
pub(crate) struct Relay {
    stop: Arc<StopSignal>,
    threads: Vec<JoinHandle<()>>,
}

/// One direction to start: read from `input`, write to `output`.
pub(crate) struct DirectionSpec {
    pub(crate) name: &'static str,
    pub(crate) input: Arc<OwnedFd>,
    pub(crate) output: Arc<OwnedFd>,
    pub(crate) model: DirectionModel,
    pub(crate) counters: Arc<LinkCounters>,
    /// The path MTU (bytes), the largest packet the TUN hands over.
    pub(crate) mtu: u32,
}

impl Relay {
    /// Starts one thread per direction in `specs`.
    pub(crate) fn start(specs: Vec<DirectionSpec>, realtime: bool) -> Result<Relay> {
        let stop = Arc::new(StopSignal::new().map_err(|e| Error::io("create eventfd", e))?);
        let mut relay = Relay {
            stop: Arc::clone(&stop),
            threads: Vec::new(),
        };
        for spec in specs {
            let worker = Worker {
                input: spec.input,
                output: spec.output,
                stop: Arc::clone(&stop),
                model: spec.model,
                counters: spec.counters,
                line: DelayLine::default(),
                pool: Vec::new(),
                scratch: vec![0; READ_BUF],
                buf_capacity: usize::try_from(spec.mtu).map_or(READ_BUF, |m| m.min(READ_BUF)),
            };
            let handle = thread::Builder::new()
                .name(spec.name.to_owned())
                .spawn(move || worker.run(realtime))
                .map_err(|e| Error::io("spawn relay thread", e))?;
            relay.threads.push(handle);
        }
        Ok(relay)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.raise();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
