//! Least privilege: once the programs are attached and every map fd is
//! open, observer needs no capability at all (map reads go through the fds
//! it holds), so it drops them.

/// Errors dropping capabilities.
#[derive(Debug, thiserror::Error)]
#[error("cannot drop capabilities: {0}")]
pub struct DropError(#[from] caps::errors::CapsError);

/// Clears the effective, permitted and inheritable capability sets of the
/// calling thread (and so of a single-threaded process), and the ambient set.
///
/// # Errors
/// The kernel refused (it never does for a process dropping its own).
pub fn drop_all() -> Result<(), DropError> {
    caps::clear(None, caps::CapSet::Ambient)?;
    caps::clear(None, caps::CapSet::Inheritable)?;
    caps::clear(None, caps::CapSet::Effective)?;
    caps::clear(None, caps::CapSet::Permitted)?;
    Ok(())
}

/// The calling thread's effective capabilities, for logs and tests.
pub fn effective() -> Vec<String> {
    caps::read(None, caps::CapSet::Effective)
        .map(|set| {
            let mut v: Vec<String> = set.iter().map(ToString::to_string).collect();
            v.sort();
            v
        })
        .unwrap_or_default()
}
