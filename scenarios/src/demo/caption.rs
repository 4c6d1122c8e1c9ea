//! The caption the demo hands `observer top` (`--caption-file`): a file
//! whose first line names the step that runs, which the view re-reads
//! every interval and shows above its table.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
};

use anyhow::Context as _;

/// A caption file in a directory of its own, removed on drop.
pub struct Caption {
    dir: PathBuf,
    file: PathBuf,
}

impl Caption {
    /// A new, empty caption in a fresh directory under `parent`, named
    /// for this process; creating the directory fails where one of that
    /// name exists, so nobody else's file or link is written through.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn new(parent: &Path) -> anyhow::Result<Caption> {
        use std::os::unix::fs::DirBuilderExt as _;
        let dir = parent.join(format!("observer-demo-{}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Caption {
            file: dir.join("caption"),
            dir,
        })
    }

    /// The file `observer top --caption-file` reads.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// Makes `line` the caption: written beside the file, then renamed
    /// over it, so the view never reads half a line. A failure leaves the
    /// last caption: the demo goes on without it.
    pub fn set(&self, line: &str) {
        let next = self.dir.join("caption.next");
        let written = std::fs::File::create(&next)
            .and_then(|mut f| writeln!(f, "{line}"))
            .and_then(|()| std::fs::rename(&next, &self.file));
        if let Err(e) = written {
            eprintln!("demo: cannot write the caption: {e}");
        }
    }
}

impl Drop for Caption {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

    use super::*;

    #[test]
    fn each_step_replaces_the_line_and_drop_removes_it() {
        let parent = std::env::temp_dir().join(format!("demo-caption-test-{}", std::process::id()));
        std::fs::create_dir_all(&parent).unwrap();
        let caption = Caption::new(&parent).unwrap();
        // One demo per directory name.
        assert!(Caption::new(&parent).is_err());
        assert!(!caption.path().exists());
        caption.set("now: iperf3 cubic (1 of 3, 10 s)");
        caption.set("now: iperf3 -w 64K -P 4, four streams with 64 KB windows (3 of 3, 10 s)");
        assert_eq!(
            std::fs::read_to_string(caption.path()).unwrap(),
            "now: iperf3 -w 64K -P 4, four streams with 64 KB windows (3 of 3, 10 s)\n"
        );
        let dir = caption.path().parent().unwrap().to_path_buf();
        drop(caption);
        assert!(!dir.exists());
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
