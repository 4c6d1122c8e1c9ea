//! `observer top`: a live terminal view of flows and their bottlenecks.
//!
//! In: the live flows after each poll (rows copied out of it) and the
//! user's keys. Out: frames on the terminal.
//!
//! Split as ratatui's examples and bottom do: [`state`] is the pure view
//! state, made of [`row::Row`]s (one flow each, sorted by [`sort`],
//! chosen by [`select`]);
//! [`draw`] renders it (the flow table's columns in [`columns`], the detail pane in [`detail`], the peers view in
//! [`peers`], the `?` overlay from [`help`]'s table) in the colours and
//! styles of [`theme`]; [`keys`] maps a key to a state change; and
//! [`run`] is the loop: `tokio::select!` over the poll tick, terminal
//! events and signals. The terminal is restored on every way out: return,
//! error, signal, and panic (a hook restores it before the message prints).
//! Flows that close are kept in [`closed`] (`c` lists them:
//! [`closed_view`]) and, for what top says when it ends, in [`summary`];
//! [`caption`] reads the line a program asks top to show.

pub mod caption;
pub mod closed;
pub mod closed_view;
mod columns;
pub mod detail;
pub mod draw;
pub mod fit;
pub mod help;
pub mod keys;
pub mod peers;
pub mod row;
pub mod select;
pub mod sort;
pub mod state;
pub mod steady;
pub mod summary;
pub mod theme;

#[cfg(test)]
mod tests;

use std::{
    io::{self, Stdout},
    sync::Once,
};

use crossterm::{
    cursor::Show,
    event::{Event, EventStream},
    execute,
    terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode},
};
use futures_core::Stream as _;
use ratatui::{Terminal, backend::CrosstermBackend};
use tokio::signal::unix::{SignalKind, signal};

use crate::{
    kernel::load::probe_error::ProbeError, model::clock::monotonic_ns, track::poller::Poller,
};
use closed::ClosedFlow;
use state::{App, Options, Snapshot};
use summary::{Seen, Summary};

/// Why the view stopped early.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] io::Error),
    /// A signal handler could not be installed.
    #[error("cannot install a {0} handler")]
    Signal(&'static str, #[source] io::Error),
    /// The terminal could not be put in raw mode or the alternate screen.
    #[error("cannot set up the terminal")]
    Setup(#[source] io::Error),
    /// Drawing failed.
    #[error("cannot draw to the terminal")]
    Draw(#[source] io::Error),
    /// Reading key events failed.
    #[error("cannot read terminal events")]
    Events(#[source] io::Error),
    /// Reading the kernel maps failed.
    #[error("cannot read the kernel maps")]
    Poll(#[source] ProbeError),
}

/// Puts the terminal back as it was: cooked mode, main screen, cursor on.
/// Safe to call more than once, and when the terminal was never set up.
pub fn restore_terminal() {
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), LeaveAlternateScreen, Show);
}

/// Restores the terminal before the default panic message prints, so the
/// message lands on the main screen in cooked mode.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
    });
}

/// The terminal in raw mode on the alternate screen; restored on drop.
struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    fn enter() -> Result<Screen, TuiError> {
        install_panic_hook();
        enable_raw_mode().map_err(TuiError::Setup)?;
        let setup = || -> io::Result<Terminal<CrosstermBackend<Stdout>>> {
            execute!(io::stdout(), EnterAlternateScreen)?;
            let mut t = Terminal::new(CrosstermBackend::new(io::stdout()))?;
            t.hide_cursor()?;
            t.clear()?;
            Ok(t)
        };
        match setup() {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                restore_terminal();
                Err(TuiError::Setup(e))
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// How the view ended.
enum End {
    /// `q`, Ctrl-C, SIGINT or SIGTERM: the user is there to read a summary.
    Quit,
    /// SIGHUP, or the terminal's events ended: nobody is.
    Gone,
}

/// Runs the view until `q`, Ctrl-C, SIGINT, SIGTERM or SIGHUP, polling
/// `poller` every `opts.interval`; returns the summary of what it saw,
/// except after SIGHUP (the terminal has gone).
///
/// # Errors
/// Terminal, signal or kernel-map failures; the terminal is restored first.
pub fn run(mut poller: Poller, opts: Options) -> Result<Option<Summary>, TuiError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()
        .map_err(TuiError::Runtime)?;
    let caption_file = opts.caption_file.clone();
    let start = monotonic_ns();
    let mut seen = Seen::default();
    let mut app = App::new(opts);
    let end = rt.block_on(async {
        let sig = |kind: SignalKind, name: &'static str| {
            signal(kind).map_err(|e| TuiError::Signal(name, e))
        };
        let mut sigint = sig(SignalKind::interrupt(), "SIGINT")?;
        let mut sigterm = sig(SignalKind::terminate(), "SIGTERM")?;
        let mut sighup = sig(SignalKind::hangup(), "SIGHUP")?;
        let mut screen = Screen::enter()?;
        if let Some(path) = &caption_file {
            app.caption = caption::read(path);
        }
        let mut events = EventStream::new();
        let mut tick = tokio::time::interval(app.interval());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            screen
                .terminal
                .draw(|f| draw::draw(f, &mut app))
                .map_err(TuiError::Draw)?;
            tokio::select! {
                _ = tick.tick() => {
                    let (events, _) = poller.poll().map_err(TuiError::Poll)?;
                    let now = monotonic_ns();
                    // Each with its history, from the live flows where
                    // it lingers, for the detail pane's sparklines.
                    let closed: Vec<ClosedFlow> = events
                        .iter()
                        .filter_map(|e| ClosedFlow::from_event(e, now))
                        .map(|f| f.with_history(poller.live()))
                        .collect();
                    for f in &closed {
                        seen.push(f.row.clone());
                    }
                    app.record_closed(closed, now);
                    app.update(Snapshot::from_live(poller.live(), &poller.counters));
                    if let Some(path) = &caption_file {
                        app.caption = caption::read(path);
                    }
                }
                ev = std::future::poll_fn(|cx| std::pin::Pin::new(&mut events).poll_next(cx)) => {
                    match ev {
                        Some(Ok(Event::Key(key))) => keys::handle(&mut app, key),
                        // Resizes and the rest: redraw.
                        Some(Ok(_)) => {}
                        Some(Err(e)) => return Err(TuiError::Events(e)),
                        None => return Ok(End::Gone),
                    }
                }
                _ = sigint.recv() => return Ok(End::Quit),
                _ = sigterm.recv() => return Ok(End::Quit),
                _ = sighup.recv() => return Ok(End::Gone),
            }
            if app.should_quit() {
                return Ok(End::Quit);
            }
        }
    })?;
    let span = std::time::Duration::from_nanos(monotonic_ns().saturating_sub(start));
    Ok(match end {
        End::Quit => Some(seen.summary(poller.live(), |r| app.shows(r), span)),
        End::Gone => None,
    })
}
