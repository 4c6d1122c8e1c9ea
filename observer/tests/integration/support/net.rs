//! Sockets bound the way a test needs: a TCP connection across an emulated
//! path, each end in its own namespace.

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};

use pathemu::{Path, Side};

/// A TCP connection across `path`: a listener at `addr` (port 0) in
/// `server`'s namespace, a client connecting from the other side's.
/// Returns (the server's accepted end, the client's end).
pub fn connect_across(path: &Path, server: Side, addr: IpAddr) -> (TcpStream, TcpStream) {
    let bind = SocketAddr::new(addr, 0);
    let listener = path
        .run_in(server, move || TcpListener::bind(bind).unwrap())
        .unwrap();
    let at = listener.local_addr().unwrap();
    let client = path
        .run_in(server.peer(), move || TcpStream::connect(at).unwrap())
        .unwrap();
    let (accepted, _) = listener.accept().unwrap();
    (accepted, client)
}
