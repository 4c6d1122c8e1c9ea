//! A bound on how long one connection's answer may stop moving: a
//! client that sends requests and never reads the answers fills its
//! socket's send buffer, and the endpoint's writes then wait for ever,
//! holding the connection's slot. [`WriteTimed`] wraps the TCP stream
//! (under TLS, when served) and fails a write, flush or shutdown that has
//! waited [`WRITE_STALL`] with no byte written since the last one that
//! moved; hyper then drops the connection, and its slot is free again.
//!
//! Only a stall is timed, not the whole answer: a scraper that reads
//! slowly (a big `/metrics` over a thin link) keeps its connection while
//! each write moves within the bound.

use std::{
    future::Future as _,
    io,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    time::Sleep,
};

/// How long a connection's answer may make no write progress before the
/// connection is closed: the header timeout's 5 s, so that a client that
/// stops reading holds its slot no longer than one that stops sending.
pub const WRITE_STALL: Duration = Duration::from_secs(5);

/// A stream whose writes fail with [`io::ErrorKind::TimedOut`] once they
/// have made no progress for the bound.
pub struct WriteTimed<S> {
    inner: S,
    /// How long a write may wait with nothing written.
    bound: Duration,
    /// While a write waits: when it times out. None once a write moves.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteTimed<S> {
    /// `inner`, whose writes time out after `bound` without progress.
    pub fn new(inner: S, bound: Duration) -> WriteTimed<S> {
        WriteTimed {
            inner,
            bound,
            stalled: None,
        }
    }

    /// The stream inside.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Passes on what a write-side call returned: progress disarms the
    /// timer, a wait arms it (once) and fails when it has run out.
    fn timed<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match r {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let bound = self.bound;
                let sleep = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(bound)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the client read nothing of the answer for {bound:?}"),
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteTimed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteTimed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.timed(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.timed(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.timed(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.timed(cx, r)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;
    use crate::testkit::runtime::block_on;

    #[test]
    fn a_write_nobody_reads_fails_after_the_bound() {
        block_on(async {
            let (a, _b) = tokio::io::duplex(64);
            let mut w = WriteTimed::new(a, Duration::from_millis(200));
            let t = tokio::time::Instant::now();
            let e = w.write_all(&[0u8; 4096]).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::TimedOut);
            let took = t.elapsed();
            assert!(
                took >= Duration::from_millis(190) && took < Duration::from_secs(2),
                "{took:?}"
            );
        });
    }

    #[test]
    fn a_slow_reader_that_keeps_reading_is_not_cut_off() {
        block_on(async {
            let (a, mut b) = tokio::io::duplex(64);
            let mut w = WriteTimed::new(a, Duration::from_millis(200));
            // The reader takes 64 bytes every 100 ms: the whole 1 KiB
            // takes 1.6 s, eight bounds, but no write waits 200 ms.
            let reader = tokio::spawn(async move {
                let mut got = 0;
                let mut buf = [0u8; 64];
                loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    match b.read(&mut buf).await {
                        Ok(0) | Err(_) => return got,
                        Ok(n) => got += n,
                    }
                }
            });
            w.write_all(&[1u8; 1024]).await.unwrap();
            w.shutdown().await.unwrap();
            drop(w);
            assert_eq!(reader.await.unwrap(), 1024);
        });
    }
}
