//! The caption of `observer top` (`--caption-file`): the first line of a
//! file that another program writes (`cargo xtask demo` names the step it
//! runs), re-read every interval and shown above the table.

use std::{io::Read as _, path::Path};

/// Most bytes read of the file: a caption is one line of a screen.
const MAX_BYTES: u64 = 4096;

/// The caption in `path`: its first line, trimmed, with control
/// characters (escape sequences that would move the cursor or retitle
/// the terminal) made spaces; `None` when the file is absent,
/// unreadable, or its first line is empty.
pub fn read(path: &Path) -> Option<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    caption_of(&String::from_utf8_lossy(&bytes))
}

/// The caption of a file's text: see [`read`].
pub fn caption_of(text: &str) -> Option<String> {
    let line = text.lines().next()?;
    let clean: String = line
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let clean = clean.trim();
    (!clean.is_empty()).then(|| clean.to_string())
}
