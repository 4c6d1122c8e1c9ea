//! Sockets bound the way a test needs: a TCP connection across an emulated
//! path, each end in its own namespace.

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};

use std::{process::Stdio, time::Duration};

use pathemu::{ChildGuard, Path, Side};

/// An iperf3 transfer across `path` for `secs` seconds, side A sending to
/// a one-shot server on side B, with the client's extra `args` (`-w 64K`,
/// `-C cubic`); returns (server, client), both killed on drop.
pub fn iperf(path: &Path, secs: u32, args: &[&str]) -> (ChildGuard, ChildGuard) {
    let mut s = path.command(Side::B, "iperf3");
    s.args(["-s", "-1"]).stdout(Stdio::null());
    let server = ChildGuard::spawn(&mut s).unwrap();
    // Listening before the client connects.
    std::thread::sleep(Duration::from_millis(300));
    let mut c = path.command(Side::A, "iperf3");
    c.args([
        "-c",
        &path.addr(Side::B).to_string(),
        "-t",
        &secs.to_string(),
    ])
    .args(args)
    .stdout(Stdio::null());
    (server, ChildGuard::spawn(&mut c).unwrap())
}

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
