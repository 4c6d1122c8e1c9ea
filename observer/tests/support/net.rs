//! Sockets made the way a test needs them: a connection from a chosen
//! source address, so that both ends of it carry a remote subnet nothing
//! else on the host uses.

use std::{
    net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream},
    os::fd::FromRawFd as _,
};

/// Why a connection was not made: before connect() (no socket the kernel
/// tracks as a flow), or in it (a SYN_SENT socket that closed: one flow
/// observer sees open and close).
#[derive(Debug)]
pub enum ConnectError {
    Before(std::io::Error),
    InConnect(std::io::Error),
}

/// A TCP connection from `from` (port chosen by the kernel) to `to`.
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
    // SAFETY: plain socket calls on a descriptor this function owns; on
    // success it is handed to TcpStream, which closes it.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(ConnectError::Before(std::io::Error::last_os_error()));
        }
        let stream = TcpStream::from_raw_fd(fd);
        // Pick the port at connect, not bind, so TIME_WAIT reuse applies.
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&one as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        );
        let local = sa(SocketAddrV4::new(from, 0));
        let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), len) != 0 {
            return Err(ConnectError::Before(std::io::Error::last_os_error()));
        }
        let remote = sa(to);
        if libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), len) != 0 {
            return Err(ConnectError::InConnect(std::io::Error::last_os_error()));
        }
        Ok(stream)
    }
}
