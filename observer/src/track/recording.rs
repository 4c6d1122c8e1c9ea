//! Recordings of what the kernel handed observer: the flow samples each
//! poll read, with the poll's time, so that the judgement of a run can be
//! replayed off the host ([`super::replay`]). The scenario suite records its
//! runs with `--record`; the attribution's golden test replays a committed
//! recording, so that a change to the engine shows every verdict it moves.
//!
//! The file is gzip-compressed NDJSON: a header line
//! `{"format":"observer-recording","version":2,"hz":250}`, then one line per
//! poll, `{"label":"ref-a-w64k","now_ns":…,"samples":["<hex>",…]}`, each
//! sample the [`FlowSample`] record's 560 bytes in lower-case hex, in this
//! machine's byte order (a recording is read on a host of the same
//! endianness). A poll lists only the samples that changed since the
//! previous poll of the same label, as the change journal hands them to
//! [`super::live::LiveFlows::ingest_changes`].
//!
//! Version 2 recorded 552-byte samples, before the sample carried the
//! socket's pacing cap (`FlowSample::max_pacing_rate`); it is read with
//! no cap (the kernel's `~0UL`).
//!
//! Version 1 recorded 528-byte samples, before the kernel told the
//! sender's own pauses from those this host imposed
//! (`FlowSample::rx_gap_shut_ns`, `rx_gap_asked_ns`); it is read with no
//! gap measured shut and every gap taken as one the sender may have
//! waited on this host for (`rx_gap_asked_ns` = `rx_gap_ns`), so none
//! counts as the sender's own, as before the measure.

use std::{
    collections::HashMap,
    fs::File,
    io::{BufRead as _, BufReader, BufWriter, Write as _},
    path::{Path, PathBuf},
};

use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use observer_common::{FlowSample, sample::FLOW_SAMPLE_SIZE};
use serde::{Deserialize, Serialize};

/// The header's `format` value.
const FORMAT: &str = "observer-recording";
/// The version written (and read, with [`V1`] and [`V2`]).
const VERSION: u32 = 3;
/// The version whose samples end before `max_pacing_rate`.
const V2: u32 = 2;
/// A version-2 sample's length (bytes).
const V2_SAMPLE_SIZE: usize = 552;
/// The version whose samples end before `rx_gap_shut_ns`.
const V1: u32 = 1;
/// A version-1 sample's length (bytes).
const V1_SAMPLE_SIZE: usize = 528;

/// Why a recording could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file could not be created, written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The recording's path.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A line is not what the format says.
    #[error("{}: line {line}: {what}", path.display())]
    Format {
        /// The recording's path.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
}

/// One poll of a recording: when it read (monotonic ns of the recording
/// host) and the samples that changed since the previous poll of `label`.
#[derive(Clone, Debug, PartialEq)]
pub struct Poll {
    /// What was running (a scenario's name): polls of one label form one
    /// run to replay.
    pub label: String,
    /// The poll's read time (monotonic ns).
    pub now_ns: u64,
    /// The changed samples; a closed flow's record has `closed_ns` set.
    pub samples: Vec<FlowSample>,
}

/// A whole recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    /// The recording host's jiffy rate (`CONFIG_HZ`), which the chrono
    /// counters of the samples count in.
    pub hz: u32,
    /// Whether the samples count the gaps this host asked for
    /// (`rx_gap_asked_ns`): not in a recording of version 1, which reads
    /// every gap as asked ([`sample_of`]) and so holds no evidence of a
    /// request (`attribution::Config::without_asking`).
    pub asked_known: bool,
    /// The polls, in the order they were read.
    pub polls: Vec<Poll>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    version: u32,
    hz: u32,
}

#[derive(Serialize, Deserialize)]
struct Line {
    label: String,
    now_ns: u64,
    samples: Vec<String>,
}

/// The bytes of `s` (a `#[repr(C)]` record of integers: every byte is
/// initialised, padding included, since the layout's padding is explicit).
fn bytes_of(s: &FlowSample) -> &[u8] {
    // SAFETY: FlowSample is repr(C) plain data of FLOW_SAMPLE_SIZE bytes
    // with explicit padding fields (observer-common/src/sample.rs).
    unsafe { std::slice::from_raw_parts((s as *const FlowSample).cast::<u8>(), FLOW_SAMPLE_SIZE) }
}

/// A sample's length in a recording of `version` (bytes).
fn sample_size(version: u32) -> usize {
    match version {
        V1 => V1_SAMPLE_SIZE,
        V2 => V2_SAMPLE_SIZE,
        _ => FLOW_SAMPLE_SIZE,
    }
}

/// The record in `bytes`, which must be [`FLOW_SAMPLE_SIZE`] long, or
/// as long as a sample of an older `version` was: zero-extended, with no
/// pacing cap (before [`VERSION`]), and with every gap taken as one the
/// sender may have waited on this host for (in [`V1`]).
fn sample_of(bytes: &[u8], version: u32) -> Option<FlowSample> {
    let mut full = [0u8; FLOW_SAMPLE_SIZE];
    let size = sample_size(version);
    (bytes.len() == size).then(|| {
        full[..size].copy_from_slice(bytes);
        // SAFETY: every bit pattern is a FlowSample (aya::Pod), and `full`
        // is FLOW_SAMPLE_SIZE long; read_unaligned needs no alignment.
        let mut s = unsafe { std::ptr::read_unaligned(full.as_ptr().cast::<FlowSample>()) };
        if version == V1 {
            s.rx_gap_asked_ns = s.rx_gap_ns;
        }
        if version < VERSION {
            s.max_pacing_rate = u64::MAX;
        }
        s
    })
}

/// Writes a recording as polls come, leaving out samples that did not
/// change since the previous poll of the same label.
pub struct Recorder {
    path: PathBuf,
    out: GzEncoder<BufWriter<File>>,
    /// Per label, each flow's last written sample.
    last: HashMap<String, HashMap<u64, FlowSample>>,
}

impl Recorder {
    /// Creates (or truncates) `path` and writes the header for a host
    /// whose jiffy rate is `hz`.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(path: &Path, hz: u32) -> Result<Recorder, RecordingError> {
        let io = |source| RecordingError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::create(path).map_err(io)?;
        let mut r = Recorder {
            path: path.to_path_buf(),
            out: GzEncoder::new(BufWriter::new(file), Compression::best()),
            last: HashMap::new(),
        };
        let header = Header {
            format: FORMAT.to_string(),
            version: VERSION,
            hz,
        };
        r.line(&header)?;
        Ok(r)
    }

    fn line<T: Serialize>(&mut self, value: &T) -> Result<(), RecordingError> {
        let io = |source| RecordingError::Io {
            path: self.path.clone(),
            source,
        };
        serde_json::to_writer(&mut self.out, value).map_err(|e| io(e.into()))?;
        self.out.write_all(b"\n").map_err(io)
    }

    /// Records a poll of `label` at monotonic `now_ns` that read `samples`
    /// (open flows and close records alike); only those that changed since
    /// the previous poll of `label` are written.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn poll<'a>(
        &mut self,
        label: &str,
        now_ns: u64,
        samples: impl IntoIterator<Item = &'a FlowSample>,
    ) -> Result<(), RecordingError> {
        let last = self.last.entry(label.to_string()).or_default();
        let mut changed: Vec<String> = Vec::new();
        for s in samples {
            if last
                .get(&s.cookie)
                .is_none_or(|l| bytes_of(l) != bytes_of(s))
            {
                last.insert(s.cookie, *s);
                changed.push(hex::encode(bytes_of(s)));
            }
        }
        let line = Line {
            label: label.to_string(),
            now_ns,
            samples: changed,
        };
        self.line(&line)
    }

    /// Writes the end of the compressed stream.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn finish(self) -> Result<(), RecordingError> {
        let path = self.path;
        let io = |source| RecordingError::Io {
            path: path.clone(),
            source,
        };
        let mut inner = self.out.finish().map_err(io)?;
        inner.flush().map_err(io)
    }
}

impl Recording {
    /// Reads the recording at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or a line is not of the format.
    pub fn read(path: &Path) -> Result<Recording, RecordingError> {
        let file = File::open(path).map_err(|source| RecordingError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let bad = |line: usize, what: String| RecordingError::Format {
            path: path.to_path_buf(),
            line,
            what,
        };
        let mut lines = BufReader::new(GzDecoder::new(file)).lines();
        let mut next = |n: usize| -> Result<Option<String>, RecordingError> {
            lines.next().transpose().map_err(|e| bad(n, e.to_string()))
        };
        let header: Header = next(1)?
            .ok_or_else(|| bad(1, "empty: no header".to_string()))
            .and_then(|l| serde_json::from_str(&l).map_err(|e| bad(1, e.to_string())))?;
        if header.format != FORMAT || !(V1..=VERSION).contains(&header.version) {
            return Err(bad(
                1,
                format!(
                    "not an {FORMAT} of version {V1} to {VERSION} (format {:?}, version {})",
                    header.format, header.version
                ),
            ));
        }
        let mut polls = Vec::new();
        let mut n = 1;
        while let Some(text) = next(n + 1)? {
            n += 1;
            let line: Line = serde_json::from_str(&text).map_err(|e| bad(n, e.to_string()))?;
            let samples = line
                .samples
                .iter()
                .map(|h| {
                    hex::decode(h)
                        .ok()
                        .and_then(|b| sample_of(&b, header.version))
                        .ok_or_else(|| {
                            bad(
                                n,
                                format!(
                                    "a sample is not {} bytes of hex",
                                    sample_size(header.version)
                                ),
                            )
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            polls.push(Poll {
                label: line.label,
                now_ns: line.now_ns,
                samples,
            });
        }
        Ok(Recording {
            hz: header.hz,
            asked_known: header.version > V1,
            polls,
        })
    }

    /// The labels in the order they first appear.
    pub fn labels(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for p in &self.polls {
            if !seen.contains(&p.label.as_str()) {
                seen.push(&p.label);
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gzip file of `text` in a temporary directory named for `name`:
    /// (the directory, to remove, and the file).
    fn written(name: &str, text: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("observer-rec-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(format!("{name}.gz"));
        let mut gz = GzEncoder::new(File::create(&path).expect("file"), Compression::fast());
        gz.write_all(text.as_bytes()).expect("write");
        gz.finish().expect("finish");
        (dir, path)
    }

    #[test]
    fn a_recording_reads_back_what_was_written_without_repeats() {
        let dir = std::env::temp_dir().join(format!("observer-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("r.ndjson.gz");
        let mut a = FlowSample::ZERO;
        a.cookie = 7;
        a.bytes_acked = 1_000;
        let mut b = a;
        b.cookie = 8;
        let mut r = Recorder::create(&path, 250).expect("create");
        r.poll("one", 10, [&a, &b]).expect("poll");
        // Unchanged a, changed b: only b is written.
        b.bytes_acked = 2_000;
        r.poll("one", 20, [&a, &b]).expect("poll");
        // Another label starts afresh.
        r.poll("two", 30, [&a]).expect("poll");
        r.finish().expect("finish");
        let read = Recording::read(&path).expect("read");
        assert_eq!(read.hz, 250);
        let counts: Vec<(String, u64, usize)> = read
            .polls
            .iter()
            .map(|p| (p.label.clone(), p.now_ns, p.samples.len()))
            .collect();
        assert_eq!(
            counts,
            vec![
                ("one".to_string(), 10, 2),
                ("one".to_string(), 20, 1),
                ("two".to_string(), 30, 1)
            ]
        );
        assert_eq!(read.polls[1].samples[0].bytes_acked, 2_000);
        assert_eq!(read.labels(), vec!["one", "two"]);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_version_1_sample_reads_with_no_gap_the_senders_own() {
        let mut s = FlowSample::ZERO;
        s.cookie = 9;
        s.rwnd_closed_ns = 5_000;
        s.rx_gap_ns = 3_000;
        s.rx_gap_shut_ns = 77;
        let short = hex::encode(&bytes_of(&s)[..V1_SAMPLE_SIZE]);
        let (dir, path) = written(
            "v1",
            &format!(
                "{{\"format\":\"observer-recording\",\"version\":1,\"hz\":250}}\n{{\"label\":\"x\",\"now_ns\":1,\"samples\":[\"{short}\"]}}\n"
            ),
        );
        let read = Recording::read(&path).expect("a version 1 recording");
        let got = read.polls[0].samples[0];
        assert_eq!(got.cookie, 9);
        assert_eq!(got.rx_gap_ns, 3_000);
        // Not the 77 past the record's end: none measured.
        assert_eq!(got.rx_gap_shut_ns, 0);
        assert_eq!(got.rx_shut_mark_ns, 0);
        // Every gap one the sender may have waited on this host for.
        assert_eq!(got.rx_gap_asked_ns, 3_000);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_file_of_another_format_is_refused_with_its_line() {
        let (dir, path) = written(
            "bad",
            "{\"format\":\"observer-recording\",\"version\":1,\"hz\":250}\n{\"label\":\"x\",\"now_ns\":1,\"samples\":[\"00ff\"]}\n",
        );
        let e = Recording::read(&path).expect_err("a short sample");
        assert!(
            e.to_string()
                .ends_with("line 2: a sample is not 528 bytes of hex"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
