//! An async test's runtime: one thread, with IO and timers.

/// Runs `f` to completion on a new current-thread tokio runtime with IO
/// and timers enabled. Panics if the runtime cannot be built (a test
/// fails then).
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    #[allow(clippy::expect_used, reason = "tests: a failure should panic")]
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(f)
}
