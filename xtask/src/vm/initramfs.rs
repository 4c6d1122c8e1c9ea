//! The test VM's initramfs: a `newc` cpio archive (the format the kernel
//! unpacks, Documentation/driver-api/early-userspace/buffer-format.rst)
//! written here from a list of entries, so no device node or root-owned
//! file has to exist on the host.

use std::{
    collections::BTreeMap,
    fs,
    io::Write as _,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, bail};

/// What one archive path holds.
#[derive(Debug, Clone)]
enum Entry {
    Dir,
    /// Contents and permission bits.
    File(Vec<u8>, u32),
    /// A character device (major, minor).
    Char(u32, u32),
}

/// An initramfs being assembled: archive path -> entry. Parent folders are
/// added as needed.
#[derive(Debug, Default, Clone)]
pub struct Initramfs {
    entries: BTreeMap<String, Entry>,
}

impl Initramfs {
    /// An archive with the skeleton every boot needs: the mount points and
    /// `/dev/console` (the kernel opens it for init's stdio before devtmpfs
    /// is mounted).
    pub fn new() -> Initramfs {
        let mut me = Initramfs::default();
        for d in [
            "bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "run", "tmp", "dev",
        ] {
            me.dir(d);
        }
        me.entries.insert("dev/console".into(), Entry::Char(5, 1));
        me.entries.insert("dev/null".into(), Entry::Char(1, 3));
        me
    }

    fn dir(&mut self, path: &str) {
        let mut at = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            self.entries.entry(at.clone()).or_insert(Entry::Dir);
        }
    }

    /// Adds a file with `data` at absolute or relative archive path `path`.
    pub fn file(&mut self, path: &str, data: Vec<u8>, mode: u32) {
        let path = path.trim_start_matches('/');
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.dir(parent);
        }
        self.entries
            .insert(path.to_string(), Entry::File(data, mode));
    }

    /// Whether `path` is already in the archive.
    pub fn has(&self, path: &str) -> bool {
        self.entries.contains_key(path.trim_start_matches('/'))
    }

    /// Adds the host program `host` at `path`, without its debug info when
    /// `strip` is on PATH, and every shared library it loads (from `ldd`) at
    /// the library's own path.
    ///
    /// # Errors
    /// The file cannot be read, or `ldd` names a library it cannot find.
    pub fn program(&mut self, host: &Path, path: &str, scratch: &Path) -> anyhow::Result<()> {
        let data = stripped(host, scratch)?;
        self.file(path, data, 0o755);
        for lib in libraries(host)? {
            let p = lib.to_string_lossy().into_owned();
            if !self.has(&p) {
                let data = fs::read(&lib).with_context(|| format!("reading {}", lib.display()))?;
                self.file(&p, data, 0o755);
            }
        }
        Ok(())
    }

    /// Writes the archive.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&self, out: &Path) -> anyhow::Result<()> {
        let mut buf = Vec::new();
        for (ino, (path, e)) in self.entries.iter().enumerate() {
            let (mode, data, rdev): (u32, &[u8], (u32, u32)) = match e {
                Entry::Dir => (0o040_755, &[], (0, 0)),
                Entry::File(d, m) => (0o100_000 | m, d, (0, 0)),
                Entry::Char(ma, mi) => (0o020_600, &[], (*ma, *mi)),
            };
            push_entry(&mut buf, path, ino as u32 + 1, mode, data, rdev);
        }
        push_entry(&mut buf, "TRAILER!!!", 0, 0, &[], (0, 0));
        let mut f = fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
        f.write_all(&buf)
            .with_context(|| format!("writing {}", out.display()))
    }
}

/// Appends one `newc` record: a 110-byte ASCII header, the NUL-terminated
/// name padded to 4 bytes, the data padded to 4 bytes.
fn push_entry(buf: &mut Vec<u8>, name: &str, ino: u32, mode: u32, data: &[u8], rdev: (u32, u32)) {
    let nlink = if mode & 0o170_000 == 0o040_000 { 2 } else { 1 };
    let fields = [
        ino,
        mode,
        0, // uid
        0, // gid
        nlink,
        0, // mtime
        u32::try_from(data.len()).unwrap_or(u32::MAX),
        0, // dev major
        0, // dev minor
        rdev.0,
        rdev.1,
        u32::try_from(name.len() + 1).unwrap_or(u32::MAX),
        0, // check
    ];
    buf.extend_from_slice(b"070701");
    for f in fields {
        buf.extend_from_slice(format!("{f:08x}").as_bytes());
    }
    buf.extend_from_slice(name.as_bytes());
    buf.push(0);
    pad4(buf);
    buf.extend_from_slice(data);
    pad4(buf);
}

fn pad4(buf: &mut Vec<u8>) {
    while !buf.len().is_multiple_of(4) {
        buf.push(0);
    }
}

/// The program at `host` without debug info (`strip --strip-debug` into
/// `scratch`), or as it is when `strip` is missing.
fn stripped(host: &Path, scratch: &Path) -> anyhow::Result<Vec<u8>> {
    let out = scratch.join(format!(
        "stripped-{}",
        host.file_name().unwrap_or_default().to_string_lossy()
    ));
    let ok = Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&out)
        .arg(host)
        .status()
        .is_ok_and(|s| s.success());
    let src = if ok { out.as_path() } else { host };
    let data = fs::read(src).with_context(|| format!("reading {}", src.display()))?;
    let _ = fs::remove_file(&out);
    Ok(data)
}

/// The shared libraries (and the dynamic loader) `ldd` says `program` loads.
fn libraries(program: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(program)
        .output()
        .context("cannot run ldd")?;
    // A static program: ldd exits 1 saying "not a dynamic executable".
    parse_ldd(&String::from_utf8_lossy(&out.stdout))
        .with_context(|| format!("libraries of {}", program.display()))
}

/// Parses `ldd` output: `libc.so.6 => /lib/.../libc.so.6 (0x...)` and
/// `/lib64/ld-linux-x86-64.so.2 (0x...)`; the vDSO has no file.
fn parse_ldd(text: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut libs = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some((name, rest)) = line.split_once("=>") {
            let target = rest.split_whitespace().next().unwrap_or("");
            if target == "not" {
                bail!("ldd cannot find {}", name.trim());
            }
            if target.starts_with('/') {
                libs.push(PathBuf::from(target));
            }
        } else if let Some(first) = line.split_whitespace().next()
            && first.starts_with('/')
        {
            libs.push(PathBuf::from(first));
        }
    }
    Ok(libs)
}

/// Where a host program is: the first of `PATH`, `/usr/sbin`, `/sbin`,
/// `/usr/bin`, `/bin`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from));
    let dirs = std::env::join_paths(dirs).ok()?;
    which::which_in_global(name, Some(dirs)).ok()?.next()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a newc archive back: (name, mode, data, rdev major, minor).
    fn read_newc(mut b: &[u8]) -> Vec<(String, u32, Vec<u8>, u32, u32)> {
        let mut out = Vec::new();
        let mut off = 0usize;
        loop {
            assert_eq!(&b[..6], b"070701", "magic at {off}");
            let field = |i: usize| {
                u32::from_str_radix(std::str::from_utf8(&b[6 + 8 * i..14 + 8 * i]).unwrap(), 16)
                    .unwrap()
            };
            let (mode, size, rmaj, rmin, namesize) = (
                field(1),
                field(6) as usize,
                field(9),
                field(10),
                field(11) as usize,
            );
            let name = std::str::from_utf8(&b[110..110 + namesize - 1])
                .unwrap()
                .to_string();
            assert_eq!(b[110 + namesize - 1], 0);
            let data_at = (110 + namesize).next_multiple_of(4);
            let data = b[data_at..data_at + size].to_vec();
            let next = (data_at + size).next_multiple_of(4);
            off += next;
            b = &b[next..];
            if name == "TRAILER!!!" {
                assert!(b.is_empty());
                return out;
            }
            out.push((name, mode, data, rmaj, rmin));
        }
    }

    #[test]
    fn newc_round_trips_files_dirs_and_devices() {
        let mut i = Initramfs::new();
        i.file("/init", b"#!/bin/sh\n".to_vec(), 0o755);
        i.file("/usr/lib/x/libfoo.so.1", vec![1, 2, 3, 4, 5], 0o644);
        let dir = std::env::temp_dir().join(format!("xtask-newc-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let out = dir.join("a.cpio");
        i.write(&out).unwrap();
        let bytes = fs::read(&out).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(bytes.len() % 4, 0);
        let entries = read_newc(&bytes);
        let get = |n: &str| entries.iter().find(|e| e.0 == n).unwrap().clone();
        assert_eq!(get("init").1, 0o100_755);
        assert_eq!(get("init").2, b"#!/bin/sh\n");
        assert_eq!(get("usr/lib/x/libfoo.so.1").2, vec![1, 2, 3, 4, 5]);
        assert_eq!(get("usr/lib/x").1, 0o040_755);
        assert_eq!(get("usr/lib").1, 0o040_755);
        assert_eq!((get("dev/console").3, get("dev/console").4), (5, 1));
        assert_eq!(get("dev/console").1 & 0o170_000, 0o020_000);
        // Parents come before their children (the kernel creates in order).
        let pos = |n: &str| entries.iter().position(|e| e.0 == n).unwrap();
        assert!(pos("usr") < pos("usr/lib") && pos("usr/lib") < pos("usr/lib/x/libfoo.so.1"));
    }

    #[test]
    fn ldd_output_is_parsed() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        let libs = parse_ldd(text).unwrap();
        assert_eq!(
            libs,
            [
                "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
            .map(PathBuf::from)
        );
        assert!(
            parse_ldd("\tnot a dynamic executable\n")
                .unwrap()
                .is_empty()
        );
        assert!(parse_ldd("\tlibfoo.so.1 => not found\n").is_err());
    }
}
