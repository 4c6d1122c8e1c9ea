//! A folder of one test's files, removed when dropped (a failed test too).

use std::path::PathBuf;

/// A scratch folder under the temporary directory, named by its user and
/// this process, emptied when made and removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// `observer-{user}-{tag}-{pid}`, made afresh.
    pub fn new(user: &str, tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("observer-{user}-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }

    /// Writes `data` to `name` in it; returns the path as text.
    pub fn file(&self, name: &str, data: impl AsRef<[u8]>) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, data).unwrap();
        p.to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
