//! The layout version a pinned set carries ([`observer_common::FLOW_LAYOUT`]):
//! pinned in the set as a one-slot array named [`LAYOUT_PIN`], written when
//! the set is pinned and checked, for every set in `DIR`, before an agent
//! adopts or replaces anything. A set of another layout, or of a build
//! from before sets carried one, is refused ([`PinError::Layout`]): this
//! build cannot read its records, and their size alone would not tell it
//! so. Nothing is loaded, attached or removed before the check.
//!
//! bpffs holds only BPF objects and directories, so the version is a map
//! of its own rather than a file; an older build that replaces the set
//! removes it with the rest.

use std::path::Path;

use aya::maps::{Array, IterableMap as _, Map, MapData, MapType};

use crate::kernel::load::pin::{PinDir, PinError};

/// The name of the layout map in a set.
pub const LAYOUT_PIN: &str = "LAYOUT";

fn failed(path: &Path, what: &'static str, e: impl std::fmt::Display) -> PinError {
    PinError::Io {
        path: path.to_path_buf(),
        what,
        error: std::io::Error::other(e.to_string()),
    }
}

/// The layout this agent pins with and reads:
/// [`observer_common::FLOW_LAYOUT`], or the tests' override
/// ([`crate::kernel::load::env::flow_layout`]).
pub fn ours() -> u32 {
    crate::kernel::load::env::flow_layout().unwrap_or(observer_common::FLOW_LAYOUT)
}

/// Pins `version` in set directory `set` (nothing for 0: see [`check`]).
///
/// # Errors
/// The map cannot be created, written or pinned.
pub fn pin(set: &Path, version: u32) -> Result<(), PinError> {
    // Version 0: a set as builds before layouts pinned it (for the tests).
    if version == 0 {
        return Ok(());
    }
    let path = set.join(LAYOUT_PIN);
    let mut map = Array::<MapData, u32>::create(1, 0)
        .map_err(|e| failed(&path, "cannot create the layout map", e))?;
    map.set(0, version, 0)
        .map_err(|e| failed(&path, "cannot write the layout map", e))?;
    map.map()
        .pin(&path)
        .map_err(|e| failed(&path, "cannot pin the layout map", e))
}

/// The layout pinned in set directory `set`; `None` where the set has
/// none (pinned by a build from before sets carried one).
///
/// # Errors
/// [`PinError::BadLayout`] where the layout map is not one observer
/// pinned (a link to nothing, not a BPF map, another type or size); the
/// failed call where it cannot be read.
pub fn read(set: &Path) -> Result<Option<u32>, PinError> {
    let path = set.join(LAYOUT_PIN);
    let bad = |what: String| PinError::BadLayout {
        path: path.clone(),
        set: set.to_path_buf(),
        what,
    };
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(failed(&path, "cannot look at the layout map", e)),
        Ok(m) if m.file_type().is_symlink() && !path.exists() => {
            let to = std::fs::read_link(&path).unwrap_or_default();
            return Err(bad(format!(
                "a symbolic link to {}, which does not exist",
                to.display()
            )));
        }
        Ok(_) => {}
    }
    let data = MapData::from_pin(&path).map_err(|e| bad(format!("not a pinned BPF map ({e})")))?;
    let info = data
        .info()
        .map_err(|e| failed(&path, "cannot read the layout map", e))?;
    if let Some(what) = wrong_shape(
        info.map_type().ok(),
        info.key_size(),
        info.value_size(),
        info.max_entries(),
    ) {
        return Err(bad(what));
    }
    Map::from_map_data(data)
        .and_then(Array::<MapData, u32>::try_from)
        .and_then(|m| m.get(&0, 0))
        .map(Some)
        .map_err(|e| failed(&path, "cannot read the layout map", e))
}

/// What a map of `map_type` (None: one aya does not know) with
/// `key_size`- and `value_size`-byte keys and values and `entries`
/// entries is, where it is not the layout map [`pin`] makes (an array of
/// one `u32`); None where it is.
fn wrong_shape(
    map_type: Option<MapType>,
    key_size: u32,
    value_size: u32,
    entries: u32,
) -> Option<String> {
    let value = std::mem::size_of::<u32>() as u32;
    match map_type {
        Some(MapType::Array) if key_size == 4 && value_size == value && entries == 1 => None,
        Some(MapType::Array) => Some(format!(
            "an array of {entries} value{} of {value_size} bytes{}",
            if entries == 1 { "" } else { "s" },
            if key_size == 4 {
                String::new()
            } else {
                format!(" with {key_size}-byte keys")
            }
        )),
        Some(t) => Some(format!("a map of type {t:?}")),
        None => Some("a map of a type this build does not know".to_string()),
    }
}

/// Checks that every set in `dir` was pinned with layout `ours`.
///
/// # Errors
/// [`PinError::Layout`] for the first set of another layout or none.
pub fn check(dir: &PinDir, ours: u32) -> Result<(), PinError> {
    for name in dir.sets()? {
        let set = dir.path().join(&name);
        let found = read(&set)?;
        // A set with no layout map reads as version 0.
        if found.unwrap_or(0) != ours {
            return Err(PinError::Layout { set, found, ours });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_array_of_one_u32_is_a_layout_map() {
        assert_eq!(wrong_shape(Some(MapType::Array), 4, 4, 1), None);
        for (shape, what) in [
            (
                (Some(MapType::Array), 4, 8, 1),
                "an array of 1 value of 8 bytes",
            ),
            (
                (Some(MapType::Array), 4, 4, 4),
                "an array of 4 values of 4 bytes",
            ),
            (
                (Some(MapType::Array), 8, 4, 1),
                "an array of 1 value of 4 bytes with 8-byte keys",
            ),
            ((Some(MapType::Hash), 4, 4, 1), "a map of type Hash"),
            ((None, 4, 4, 1), "a map of a type this build does not know"),
        ] {
            let (t, k, v, n) = shape;
            assert_eq!(wrong_shape(t, k, v, n).as_deref(), Some(what));
        }
    }

    /// A scratch directory under the system's temporary one.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("observer-layout-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_set_without_a_layout_map_reads_as_none() {
        let set = scratch("none");
        assert_eq!(read(&set).unwrap(), None);
        std::fs::remove_dir_all(&set).unwrap();
    }

    #[test]
    fn a_dangling_link_is_named_with_what_to_do() {
        let set = scratch("dangling");
        std::os::unix::fs::symlink("/nonexistent/L", set.join(LAYOUT_PIN)).unwrap();
        let e = read(&set).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "--pin: {0}/LAYOUT is a symbolic link to /nonexistent/L, which does not exist, \
                 not the flow layout map observer pins (an array of one 4-byte value), so the \
                 flows in {0} cannot be read safely: remove them with `rm -r {0}` (the flows \
                 they hold are lost), or start without --pin",
                set.display()
            )
        );
        std::fs::remove_dir_all(&set).unwrap();
    }
}
