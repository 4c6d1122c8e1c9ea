//! Sockets for traffic generators: a TCP connection from a chosen source
//! address (so both ends carry an address nothing else on the host uses),
//! and the namespace settings that sustain thousands of short connections
//! a second.

use std::{
    net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream},
    os::fd::{AsRawFd, FromRawFd as _},
};

/// Sets an integer socket option (`setsockopt(2)`): SO_SNDBUF, SO_RCVBUF,
/// TCP_WINDOW_CLAMP and the like, which traffic generators and tests set
/// on their sockets.
///
/// # Errors
/// The kernel's refusal (an unknown option, a value out of range).
pub fn set_int(fd: &impl AsRawFd, level: i32, opt: i32, value: i32) -> std::io::Result<()> {
    // SAFETY: a pointer to an int we own, with its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (&value as *const i32).cast(),
            size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Why a connection was not made: before `connect()` (no socket the kernel
/// tracks as a TCP flow), or in it (a SYN_SENT socket that then closed: a
/// flow that opened and closed).
#[derive(Debug)]
pub enum ConnectError {
    /// `socket()` or `bind()` failed, or `to` is not IPv4.
    Before(std::io::Error),
    /// `connect()` failed.
    InConnect(std::io::Error),
}

/// A TCP connection from `from` to `to` (IPv4), the source port chosen by
/// the kernel at `connect()` (`IP_BIND_ADDRESS_NO_PORT`), so TIME_WAIT
/// reuse applies to it.
///
/// # Errors
/// [`ConnectError`], saying whether `connect()` was reached.
pub fn connect_from(from: Ipv4Addr, to: SocketAddr) -> Result<TcpStream, ConnectError> {
    let sa = |a: SocketAddrV4| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    let SocketAddr::V4(to) = to else {
        return Err(ConnectError::Before(std::io::Error::other("IPv4 only")));
    };
    let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor this function owns; it is
    // handed to TcpStream at once, which closes it on every path.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(ConnectError::Before(std::io::Error::last_os_error()));
        }
        let stream = TcpStream::from_raw_fd(fd);
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&raw const one).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        );
        let local = sa(SocketAddrV4::new(from, 0));
        if libc::bind(fd, (&raw const local).cast(), len) != 0 {
            return Err(ConnectError::Before(std::io::Error::last_os_error()));
        }
        let remote = sa(to);
        if libc::connect(fd, (&raw const remote).cast(), len) != 0 {
            return Err(ConnectError::InConnect(std::io::Error::last_os_error()));
        }
        Ok(stream)
    }
}

/// Sysctls of the calling thread's network namespace for sustained
/// connection churn: a wide ephemeral port range, TIME_WAIT reuse for
/// outgoing connections, orphaned FIN_WAIT2 sockets gone after 5 s, and
/// deep accept queues. Run it inside the namespace (e.g. with
/// [`crate::run_in_netns`]).
///
/// # Errors
/// A sysctl cannot be written, or did not take (the range reads back
/// different).
pub fn tune_for_churn() -> std::io::Result<()> {
    const RANGE: &str = "10000 65000";
    for (path, value) in [
        ("/proc/sys/net/ipv4/ip_local_port_range", RANGE),
        ("/proc/sys/net/ipv4/tcp_tw_reuse", "1"),
        ("/proc/sys/net/ipv4/tcp_fin_timeout", "5"),
        ("/proc/sys/net/core/somaxconn", "8192"),
        ("/proc/sys/net/ipv4/tcp_max_syn_backlog", "8192"),
    ] {
        std::fs::write(path, value)
            .map_err(|e| std::io::Error::new(e.kind(), format!("writing {path}: {e}")))?;
    }
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")?;
    if range.split_whitespace().collect::<Vec<_>>() != RANGE.split(' ').collect::<Vec<_>>() {
        return Err(std::io::Error::other(format!(
            "ip_local_port_range reads {range:?} after writing {RANGE:?}"
        )));
    }
    Ok(())
}
