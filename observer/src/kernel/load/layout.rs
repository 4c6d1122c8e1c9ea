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

use aya::maps::{Array, IterableMap as _, Map, MapData};

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
/// The map is there but cannot be read as one.
pub fn read(set: &Path) -> Result<Option<u32>, PinError> {
    let path = set.join(LAYOUT_PIN);
    if !path.exists() {
        return Ok(None);
    }
    MapData::from_pin(&path)
        .and_then(Map::from_map_data)
        .and_then(Array::<MapData, u32>::try_from)
        .and_then(|m| m.get(&0, 0))
        .map(Some)
        .map_err(|e| failed(&path, "cannot read the layout map", e))
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
