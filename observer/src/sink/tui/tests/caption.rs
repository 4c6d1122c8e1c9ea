//! The caption (`--caption-file`): the file's first line, above the
//! table.
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

use super::*;
use crate::sink::tui::caption::{caption_of, read};

#[test]
fn the_first_line_is_the_caption_and_an_empty_one_is_none() {
    assert_eq!(
        caption_of("now: iperf3 -w 64K (2 of 3)\nnext: more\n").as_deref(),
        Some("now: iperf3 -w 64K (2 of 3)")
    );
    assert_eq!(caption_of("  padded \r\n").as_deref(), Some("padded"));
    for none in ["", "\n", "   \nsecond line", "\x1b\x07"] {
        assert_eq!(caption_of(none), None, "{none:?}");
    }
    // Escape sequences would retitle the terminal or move its cursor.
    assert_eq!(
        caption_of("a\x1b]2;title\x07b").as_deref(),
        Some("a ]2;title b")
    );
}

#[test]
fn an_absent_file_is_no_caption_and_a_rewritten_one_is_read_again() {
    let dir = std::env::temp_dir().join(format!("obs-caption-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("caption");
    assert_eq!(read(&path), None);
    std::fs::write(&path, "now: cubic (1 of 3)\n").unwrap();
    assert_eq!(read(&path).as_deref(), Some("now: cubic (1 of 3)"));
    std::fs::write(&path, "").unwrap();
    assert_eq!(read(&path), None);
    // A directory is not a caption either.
    assert_eq!(read(&dir), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_caption_shows_above_the_table() {
    let mut a = app();
    let before = lines(&render(&mut a, 100, 12));
    assert!(before[3].starts_with("PROCESS"), "{}", before[3]);
    let caption = "now: iperf3 -w 64K -P 4, four streams with 64 KB windows (3 of 3)";
    a.caption = Some(caption.to_string());
    let b = render(&mut a, 100, 12);
    let l = lines(&b);
    assert_eq!(l[3], caption);
    assert!(l[4].starts_with("PROCESS"), "{}", l[4]);
    // The header is as it was.
    assert_eq!(l[..3], before[..3]);
    assert!(b[(0, 3)].modifier.contains(Modifier::BOLD));
    a.caption = None;
    assert_eq!(lines(&render(&mut a, 100, 12)), before);
}
