//! TUN devices: creating one inside a namespace and configuring its addresses.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::netns::Namespace;

/// The interface name of the TUN device inside each namespace.
pub const TUN_NAME: &str = "pe0";

/// The default MTU of both TUN devices (bytes); see [`crate::PathConfig::mtu()`].
pub const TUN_MTU: u32 = 1500;

/// The smallest MTU a path accepts (bytes; the IPv4 minimum datagram size
/// every host must accept, RFC 791).
pub const MIN_MTU: u32 = 576;

/// The largest MTU a path accepts (bytes; a common jumbo-frame size).
pub const MAX_MTU: u32 = 9000;

/// Opens `/dev/net/tun` non-blocking and attaches it to a new TUN device
/// `name` (IFF_TUN | IFF_NO_PI). Must run on a thread inside the target namespace.
fn open_tun_here(name: &str) -> std::io::Result<OwnedFd> {
    // SAFETY: open(2) with a NUL-terminated constant path.
    let fd = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = name.as_bytes();
    if bytes.len() >= req.ifr_name.len() {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    }
    for (dst, src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which `req` is.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// Creates the TUN device [`TUN_NAME`] inside `ns` and returns its file descriptor.
pub(crate) fn create_tun(ns: &Namespace) -> Result<OwnedFd> {
    ns.run(|| open_tun_here(TUN_NAME))?
        .map_err(|e| Error::io(format!("create TUN {TUN_NAME} in {}", ns.name()), e))
}

/// Addresses of one end of the point-to-point link.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ends {
    pub(crate) local4: Ipv4Addr,
    pub(crate) peer4: Ipv4Addr,
    pub(crate) v6: Option<(Ipv6Addr, Ipv6Addr)>,
}

/// Brings `lo` and the TUN up in `ns` with MTU `mtu` (bytes), a /32 address
/// with the peer address (which installs the route to the peer through the
/// TUN), and optionally the IPv6 pair (/128 with peer, no DAD). The TUN gets
/// no link-local address (addrgenmode none), so it carries no router
/// solicitations of its own. Returns once both routes to the peer are usable.
pub(crate) fn configure(ns: &Namespace, ends: &Ends, mtu: u32) -> Result<()> {
    // Link up before the addresses: IPv6 routes of addresses added to a
    // down device appear only later, asynchronously.
    let mut batch = format!(
        "link set dev lo up\n\
         link set dev {TUN_NAME} mtu {mtu} addrgenmode none\n\
         link set dev {TUN_NAME} up\n\
         addr add {}/32 peer {}/32 dev {TUN_NAME}\n",
        ends.local4, ends.peer4
    );
    if let Some((local6, peer6)) = ends.v6 {
        batch.push_str(&format!(
            "addr add {local6}/128 peer {peer6}/128 dev {TUN_NAME} nodad\n"
        ));
    }
    run_ip_batch(ns.name(), &batch)?;
    let mut pairs = vec![(IpAddr::V4(ends.local4), IpAddr::V4(ends.peer4))];
    if let Some((local6, peer6)) = ends.v6 {
        pairs.push((IpAddr::V6(local6), IpAddr::V6(peer6)));
    }
    for (local, peer) in pairs {
        ns.run(|| crate::netns::wait_routable(local, peer))?
            .map_err(|e| Error::io(format!("route {local} -> {peer} in {}", ns.name()), e))?;
    }
    Ok(())
}

/// Runs `ip -n NAME -batch -` with `batch` on standard input.
fn run_ip_batch(ns_name: &str, batch: &str) -> Result<()> {
    let what = format!("ip -n {ns_name} -batch -");
    let mut child = Command::new("ip")
        .args(["-n", ns_name, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io(format!("run {what}"), e))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(batch.as_bytes())
            .map_err(|e| Error::io(format!("write to {what}"), e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Error::io(format!("wait for {what}"), e))?;
    if !out.status.success() {
        return Err(Error::Command {
            command: format!("{what} <<< {batch:?}"),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(())
}
