//! `observer run --records`: each closed flow's record, the object
//! `observer flows --json` prints (docs/json.md) with the host that saw it,
//! appended as one line of NDJSON to a file that rotates at a size bound,
//! or to standard output.
//!
//! A record names its host and the boot it was seen in, as a socket cookie
//! is unique only within one boot: (`host`, `boot_id`, `cookie`) names a
//! flow across a fleet. A file is never left with a partial line: a write
//! that fails is cut back to the last whole record, and the caller counts
//! the record dropped. The disk it takes is at most `max_bytes` x (`keep`
//! + 1): the file and `keep` rotated ones (`PATH.1` the newest).
//!
//! Written here rather than with a logging crate's rolling appender: those
//! rotate by time or count lines, and none cuts a failed write back to a
//! whole line.

use std::{
    fs::{File, OpenOptions},
    io::Write,
    path::{Path, PathBuf},
};

use serde::Serialize;

use super::records::Line;
use crate::track::snapshot::Report;

/// The records' field set version: raised when a field is renamed, removed
/// or changes meaning (docs/json.md lists the changes).
pub const SCHEMA: u32 = 1;

/// Why the flow log could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum FlowLogError {
    /// Opening, writing, rotating or cutting back the file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A write failed part way, and cutting the file back to its last
    /// whole record failed too: a partial line may end it.
    #[error("{}: {source}; cutting back the partial record failed: {cut}", path.display())]
    Partial {
        /// The file.
        path: PathBuf,
        /// Why the write failed.
        #[source]
        source: std::io::Error,
        /// Why the cut failed.
        cut: std::io::Error,
    },
    /// Writing to standard output failed (a closed pipe).
    #[error("standard output: {0}")]
    Stdout(#[source] std::io::Error),
    /// A record could not be serialised (a programming error).
    #[error("a record does not serialise: {0}")]
    Json(#[from] serde_json::Error),
}

impl FlowLogError {
    /// The `reason` label of `observer_records_dropped_total` for this
    /// error: `disk_full` (ENOSPC, EDQUOT), `write` (any other I/O
    /// failure), `serialise`.
    pub fn reason(&self) -> &'static str {
        let io = match self {
            FlowLogError::Io { source, .. }
            | FlowLogError::Partial { source, .. }
            | FlowLogError::Stdout(source) => source,
            FlowLogError::Json(_) => return "serialise",
        };
        match io.raw_os_error() {
            Some(libc::ENOSPC | libc::EDQUOT) => "disk_full",
            _ => "write",
        }
    }
}

/// Where the records go.
enum Target {
    /// Standard output (`-`), flushed after each record.
    Stdout,
    /// A file, rotated at `max_bytes`.
    File {
        path: PathBuf,
        file: File,
        /// Its length: the end of its last whole record (bytes).
        len: u64,
    },
}

/// The bounds of a file target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    /// The size past which the file is rotated before the next record
    /// (bytes; a record longer than this fills a file alone).
    pub max_bytes: u64,
    /// Rotated files kept besides the current one (`PATH.1` to
    /// `PATH.keep`; 0: the file is truncated instead).
    pub keep: u32,
}

/// Which record of a flow: its last, or one written while it is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// Written at the flow's close, with its whole-life verdict.
    Final,
    /// Written while the flow is open (`--records-every`), with its life
    /// verdict so far; its final record follows at its close.
    Update,
}

impl RecordKind {
    /// The record's `record` value: `final` or `update`.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Final => "final",
            RecordKind::Update => "update",
        }
    }
}

/// The host's names every record carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// The host name (`/proc/sys/kernel/hostname`).
    pub host: String,
    /// This boot's id (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: String,
}

impl Origin {
    /// This host's names; an unreadable one is empty (said once by the
    /// caller's records, never fatal).
    pub fn of_this_host() -> Origin {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        Origin {
            host: read("/proc/sys/kernel/hostname"),
            boot_id: read("/proc/sys/kernel/random/boot_id"),
        }
    }
}

/// One record as written: the schema, the host, that it is the flow's
/// final record, and the `flows --json` object.
#[derive(Serialize)]
struct Record<'a> {
    schema: u32,
    record: &'static str,
    #[serde(flatten)]
    origin: &'a Origin,
    #[serde(flatten)]
    line: Line<'a>,
}

/// The records' destination: a rotated file or standard output.
pub struct FlowLog {
    target: Target,
    rotation: Rotation,
    origin: Origin,
}

impl FlowLog {
    /// Records to `path` (`-`: standard output), appended to what is
    /// there, rotated as `rotation` says, each naming `origin`.
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub fn open(path: &Path, rotation: Rotation, origin: Origin) -> Result<FlowLog, FlowLogError> {
        let target = if path == Path::new("-") {
            Target::Stdout
        } else {
            let (file, len) = append(path)?;
            Target::File {
                path: path.to_path_buf(),
                file,
                len,
            }
        };
        Ok(FlowLog {
            target,
            rotation,
            origin,
        })
    }

    /// Appends `report`'s record of `kind`: whole, or not at all.
    ///
    /// # Errors
    /// Serialising, rotating or writing failed; the file then ends at its
    /// last whole record (unless cutting back failed too, said in the
    /// error), and the record is not written.
    pub fn write(&mut self, report: &Report, kind: RecordKind) -> Result<(), FlowLogError> {
        let mut bytes = serde_json::to_vec(&Record {
            schema: SCHEMA,
            record: kind.name(),
            origin: &self.origin,
            line: Line::of(report),
        })?;
        bytes.push(b'\n');
        match &mut self.target {
            Target::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(&bytes)
                    .and_then(|()| out.flush())
                    .map_err(FlowLogError::Stdout)
            }
            Target::File { path, file, len } => {
                if *len > 0 && *len + bytes.len() as u64 > self.rotation.max_bytes {
                    rotate(path, self.rotation.keep)?;
                    (*file, *len) = append(path)?;
                }
                match file.write_all(&bytes) {
                    Ok(()) => {
                        *len += bytes.len() as u64;
                        Ok(())
                    }
                    Err(source) => {
                        // Cut a partial line back to the last whole record.
                        Err(match file.set_len(*len) {
                            Ok(()) => FlowLogError::Io {
                                path: path.clone(),
                                source,
                            },
                            Err(cut) => FlowLogError::Partial {
                                path: path.clone(),
                                source,
                                cut,
                            },
                        })
                    }
                }
            }
        }
    }
}

/// `path` opened for appending (created if missing), and its length.
fn append(path: &Path) -> Result<(File, u64), FlowLogError> {
    let io = |source| FlowLogError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    Ok((file, len))
}

/// `PATH.n` for `path`.
fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// Shifts `path` to `path.1`, `path.1` to `path.2`, ... dropping
/// `path.keep`; with `keep` 0, removes `path`.
fn rotate(path: &Path, keep: u32) -> Result<(), FlowLogError> {
    let io = |p: &Path, source| FlowLogError::Io {
        path: p.to_path_buf(),
        source,
    };
    let gone = |r: std::io::Result<()>, p: &Path| match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(p, e)),
        _ => Ok(()),
    };
    if keep == 0 {
        return gone(std::fs::remove_file(path), path);
    }
    let last = numbered(path, keep);
    gone(std::fs::remove_file(&last), &last)?;
    for n in (1..keep).rev() {
        let from = numbered(path, n);
        gone(std::fs::rename(&from, numbered(path, n + 1)), &from)?;
    }
    std::fs::rename(path, numbered(path, 1)).map_err(|e| io(path, e))
}

#[cfg(test)]
#[path = "flow_log_tests.rs"]
mod tests;
