//! What a pod sees of the host: the files that tell a kernel's HZ hidden.

use std::{ffi::CString, path::Path};

/// Moves the calling thread into a mount namespace of its own in which the
/// files that publish the kernel's HZ are hidden, as a container runtime
/// hides them: `/proc/timer_list` masked by `/dev/null`, `/proc/config.gz`
/// likewise when the kernel has one, and an empty tmpfs over `/boot` when
/// there is one.
/// Other threads (other tests) keep the host's view, and the mounts go
/// away with the thread. Panics on failure.
pub fn hide_hz_files() {
    // SAFETY: unshare affects only the calling thread's fs and mount
    // namespace (CLONE_NEWNS implies CLONE_FS, which is copied when shared).
    let r = unsafe { libc::unshare(libc::CLONE_NEWNS) };
    assert_eq!(
        r,
        0,
        "unshare(CLONE_NEWNS): {}",
        std::io::Error::last_os_error()
    );
    // Keep the mounts below from reaching the host's namespace.
    mount(None, "/", None, libc::MS_REC | libc::MS_PRIVATE);
    for f in ["/proc/timer_list", "/proc/config.gz"] {
        if Path::new(f).exists() {
            mount(Some("/dev/null"), f, None, libc::MS_BIND);
        }
    }
    if Path::new("/boot").is_dir() {
        mount(Some("none"), "/boot", Some("tmpfs"), 0);
    }
}

fn mount(src: Option<&str>, target: &str, fstype: Option<&str>, flags: libc::c_ulong) {
    let c = |s: &str| CString::new(s).unwrap();
    let (src, target, fstype) = (src.map(c), c(target), fstype.map(c));
    let ptr = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: NUL-terminated strings that outlive the call; no data.
    let r = unsafe {
        libc::mount(
            ptr(&src),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            std::ptr::null(),
        )
    };
    assert_eq!(
        r,
        0,
        "mount {target:?}: {}",
        std::io::Error::last_os_error()
    );
}
