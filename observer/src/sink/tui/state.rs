//! The pure state of `observer top`: the rows copied out of the live flows at a
//! poll, host totals, and what the user chose (sort, filter, selection,
//! pause, open pane). No terminal here; `draw` renders it and `keys` changes
//! it.

use std::{path::PathBuf, time::Duration};

use observer_common::Counter;

use super::closed::{ClosedFlow, ClosedFlows, Retention};

mod closed_list;
use super::sort::SortKey;
use super::{row::Row, select::Selection};
use crate::{
    attribution::{Attribution, Config, Verdict, group::GroupBy},
    model::flow::Flow,
    sink::groups::{Named, group_named, moving},
    track::{live::LiveFlows, netns::NetnsNames},
};

/// Host totals shown in the header.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Open flows.
    pub open: usize,
    /// Closed flows still shown (lingering).
    pub closed: usize,
    /// Sum of the open flows' send rates (bits/s).
    pub send_bps: f64,
    /// Sum of the open flows' receive rates (bits/s).
    pub recv_bps: f64,
    /// Open flows per verdict, in [`Verdict::ALL`] order.
    pub verdicts: [usize; Verdict::ALL.len()],
    /// Closed-flow records lost to a full ring buffer (since load).
    pub ringbuf_drops: u64,
    /// Flow entries evicted by the kernel map's LRU (since load).
    pub lru_evictions: u64,
    /// Kernel read failures (since load).
    pub read_errors: u64,
    /// Kernel map insert failures (since load).
    pub map_errors: u64,
}

/// What one poll shows: every row, the peers and the totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Every live flow, unordered.
    pub rows: Vec<Row>,
    /// The flows that moved data grouped by peer (remote address, within
    /// its network namespace) and judged as `flows --by peer` judges
    /// them; most bytes first.
    pub groups: Vec<Named>,
    /// Host totals.
    pub totals: Totals,
}

impl Snapshot {
    /// The snapshot of `live`, with the kernel self-`counters` in
    /// [`Counter::ALL`] order.
    pub fn from_live(live: &LiveFlows, counters: &[u64]) -> Snapshot {
        let rows: Vec<Row> = live.flows().map(Row::from_tracked).collect();
        Snapshot::judged(rows, counters, &live.config().attribution)
    }

    /// The snapshot of `rows`, totalled, its peers judged under the
    /// default thresholds.
    pub fn from_rows(rows: Vec<Row>, counters: &[u64]) -> Snapshot {
        Snapshot::judged(rows, counters, &Config::default())
    }

    /// The snapshot of `rows`, totalled, its peers judged under `cfg`.
    fn judged(rows: Vec<Row>, counters: &[u64], cfg: &Config) -> Snapshot {
        let counter = |c: Counter| counters.get(c as usize).copied().unwrap_or(0);
        let mut t = Totals {
            ringbuf_drops: counter(Counter::RingbufDrops),
            lru_evictions: counter(Counter::LruEvictions),
            read_errors: counter(Counter::ReadErrors),
            map_errors: counter(Counter::MapErrors),
            ..Totals::default()
        };
        for r in &rows {
            if r.closed {
                t.closed += 1;
                continue;
            }
            t.open += 1;
            t.send_bps += r.send_bps();
            t.recv_bps += r.recv_bps();
            if let Some(i) = Verdict::ALL.iter().position(|v| *v == r.verdict()) {
                t.verdicts[i] += 1;
            }
        }
        let pairs: Vec<(&Flow, &Attribution)> =
            rows.iter().map(|r| (&r.flow, &r.current)).collect();
        let (pairs, _) = moving(&pairs);
        let mut groups = group_named(&pairs, GroupBy::Peer, cfg);
        groups.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.key.cmp(&b.key)));
        Snapshot {
            rows,
            groups,
            totals: t,
        }
    }
}

/// What the keyboard drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Keys are commands.
    Normal,
    /// Keys edit the filter text (not applied until Enter).
    Filter(String),
}

/// Settings the view starts with.
#[derive(Clone, Debug)]
pub struct Options {
    /// Poll interval (shown in the header).
    pub interval: Duration,
    /// Initial filter text.
    pub filter: String,
    /// Initial sort column.
    pub sort: SortKey,
    /// Which closed flows the `c` list keeps (`--closed`, `--closed-for`).
    pub closed: Retention,
    /// The file whose first line is the caption (`--caption-file`),
    /// re-read every interval.
    pub caption_file: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            interval: Duration::from_secs(1),
            filter: String::new(),
            sort: SortKey::Rate,
            closed: Retention::default(),
            caption_file: None,
        }
    }
}

/// How the table is sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sorting {
    /// The column.
    pub key: SortKey,
    /// Whether its natural order is reversed (`r`).
    pub reversed: bool,
}

/// The whole state of the view.
#[derive(Clone, Debug)]
pub struct App {
    interval: Duration,
    snapshot: Snapshot,
    pending: Option<Snapshot>,
    view: Vec<usize>,
    sort: SortKey,
    reverse: bool,
    filter: String,
    selection: Selection,
    /// Why the last filter text given was not applied (a mistake in an
    /// expression), until the next edit.
    filter_error: Option<String>,
    /// The applied filter's `netns = NAME` that names no namespace, said
    /// in the header until one is so named ([`Selection::unnamed_netns`]).
    filter_warning: Option<String>,
    /// The `ip netns` names, read for [`App::filter_warning`].
    netns: NetnsNames,
    mode: Mode,
    cursor: usize,
    selected: Option<u64>,
    paused: bool,
    detail: Option<u64>,
    help: bool,
    quit: bool,
    /// Whether the table shows peers, not flows.
    peers: bool,
    /// The selected peer (index into the snapshot's groups).
    peer_cursor: usize,
    /// Whether the detail pane is open on the selected peer.
    peer_detail: bool,
    /// The recently closed flows.
    closed: ClosedFlows,
    /// Closes read while paused, and the time of the last read
    /// (monotonic ns): shown on resume.
    pending_closed: (Vec<ClosedFlow>, u64),
    /// Whether the table shows the recently closed flows (`c`).
    closed_view: bool,
    /// The selected closed flow (index among those the filter shows).
    closed_cursor: usize,
    /// First table row on screen; kept by `draw` so the cursor stays visible.
    pub offset: usize,
    /// Table rows on screen, for page up/down; kept by `draw`.
    pub page: usize,
    /// The widest cells of the last frames, so columns hold still; kept
    /// by `draw`.
    pub widths: super::steady::Steady,
    /// The line shown above the table (`--caption-file`'s first line).
    pub caption: Option<String>,
}

impl App {
    /// An empty view.
    pub fn new(opts: Options) -> App {
        App {
            interval: opts.interval,
            snapshot: Snapshot::default(),
            pending: None,
            view: Vec::new(),
            sort: opts.sort,
            reverse: false,
            selection: Selection::parse(&opts.filter).unwrap_or_default(),
            filter: opts.filter,
            filter_error: None,
            filter_warning: None,
            netns: NetnsNames::default(),
            mode: Mode::Normal,
            cursor: 0,
            selected: None,
            paused: false,
            detail: None,
            help: false,
            quit: false,
            peers: false,
            peer_cursor: 0,
            peer_detail: false,
            closed: ClosedFlows::new(opts.closed),
            pending_closed: (Vec::new(), 0),
            closed_view: false,
            closed_cursor: 0,
            offset: 0,
            caption: None,
            page: 10,
            widths: super::steady::Steady::default(),
        }
        .warned()
    }

    /// This view, its names read from `dirs` (a test's own) instead of
    /// `/run/netns`.
    pub fn with_netns_dirs(mut self, dirs: Vec<PathBuf>) -> App {
        self.netns = NetnsNames::in_dirs(dirs);
        self.warned()
    }

    /// This view with its filter's warning made afresh.
    fn warned(mut self) -> App {
        self.filter_warning = self.selection.unnamed_netns(&mut self.netns);
        self
    }

    /// Shows a new poll's snapshot, or keeps it for later while paused.
    pub fn update(&mut self, mut snapshot: Snapshot) {
        // A warned-of name may have been given since.
        if self.filter_warning.is_some() {
            self.filter_warning = self.selection.unnamed_netns(&mut self.netns);
        }
        for r in &mut snapshot.rows {
            r.average_idle(self.interval);
        }
        if self.paused {
            self.pending = Some(snapshot);
        } else {
            self.snapshot = snapshot;
            self.refresh();
        }
    }

    /// Re-derives the visible rows: filter, sort, and keep the selected
    /// flow selected where it is still shown.
    fn refresh(&mut self) {
        let rows = &self.snapshot.rows;
        let mut view: Vec<usize> = (0..rows.len())
            .filter(|i| self.selection.shows(&rows[*i]))
            .collect();
        let (key, desc) = (self.sort, self.sort.descending() != self.reverse);
        // Uploads, then downloads: two sections under their own titles
        // (`draw`), each sorted by the key.
        view.sort_by(|a, b| {
            let (ra, rb) = (&rows[*a], &rows[*b]);
            let o = key.cmp(ra, rb);
            let o = if desc { o.reverse() } else { o };
            ra.download()
                .cmp(&rb.download())
                .then(o)
                .then_with(|| ra.cookie().cmp(&rb.cookie()))
        });
        self.view = view;
        if let Some(c) = self.selected
            && let Some(i) = self.view.iter().position(|i| rows[*i].cookie() == c)
        {
            self.cursor = i;
        }
        self.cursor = self.cursor.min(self.view.len().saturating_sub(1));
        self.selected = self.view.get(self.cursor).map(|i| rows[*i].cookie());
        self.peer_cursor = self
            .peer_cursor
            .min(self.snapshot.groups.len().saturating_sub(1));
    }

    /// Whether the filter in force shows `row`.
    pub fn shows(&self, row: &Row) -> bool {
        self.selection.shows(row)
    }

    /// The latest shown snapshot.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The visible rows, in display order: uploads, then downloads.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = &Row> {
        self.view.iter().map(|i| &self.snapshot.rows[*i])
    }

    /// Number of visible rows.
    pub fn len(&self) -> usize {
        self.view.len()
    }

    /// Whether no row is visible.
    pub fn is_empty(&self) -> bool {
        self.view.is_empty()
    }

    /// Index of the selected row among the visible ones.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The selected row, if any row is visible.
    pub fn selected(&self) -> Option<&Row> {
        self.view.get(self.cursor).map(|i| &self.snapshot.rows[*i])
    }

    /// Poll interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Sort column, and whether its natural order is reversed.
    pub fn sort(&self) -> Sorting {
        Sorting {
            key: self.sort,
            reversed: self.reverse,
        }
    }

    /// The applied filter text.
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// How the applied filter text is read: `expression` or `words`
    /// ([`Selection::kind`]); `None` without a filter.
    pub fn filter_kind(&self) -> Option<&'static str> {
        self.selection.kind()
    }

    /// What the applied filter selects nothing by: a `netns = NAME` that
    /// names no namespace now.
    pub fn filter_warning(&self) -> Option<&str> {
        self.filter_warning.as_deref()
    }

    /// Why the filter text last given was not applied, if it was not.
    pub fn filter_error(&self) -> Option<&str> {
        self.filter_error.as_deref()
    }

    /// What keys do now.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// Whether the display is frozen.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Whether the help overlay is open.
    pub fn help(&self) -> bool {
        self.help
    }

    /// Whether the user asked to quit.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Whether the table shows peers (`v` toggles).
    pub fn peers(&self) -> bool {
        self.peers
    }

    /// The peers, most bytes first.
    pub fn groups(&self) -> &[Named] {
        &self.snapshot.groups
    }

    /// Index of the selected peer.
    pub fn peer_cursor(&self) -> usize {
        self.peer_cursor
    }

    /// The peer the detail pane is open on; `None` when it is closed or
    /// the table shows flows.
    pub fn peer_detail(&self) -> Option<&Named> {
        (self.peers && self.peer_detail)
            .then(|| self.snapshot.groups.get(self.peer_cursor))
            .flatten()
    }

    /// Switches the table between flows and peers; the detail panes close.
    pub fn toggle_peers(&mut self) {
        self.peers = !self.peers;
        self.closed_view = false;
        self.detail = None;
        self.peer_detail = false;
    }

    /// The flow the detail pane is open on: `Ok(row)`, the live row or,
    /// once the flow has left the live table, its row in the recently
    /// closed (judged over its life); `Err(cookie)` when it is in
    /// neither; `None` when the pane is closed (or the table shows
    /// peers).
    pub fn detail(&self) -> Option<Result<&Row, u64>> {
        if self.peers {
            return None;
        }
        let c = self.detail?;
        let live = self.snapshot.rows.iter().find(|r| r.cookie() == c);
        let closed = || self.closed.iter().map(|f| &f.row).find(|r| r.cookie() == c);
        Some(live.or_else(closed).ok_or(c))
    }

    /// Moves the selection by `delta` rows, within bounds; the detail pane,
    /// when open, follows it.
    pub fn move_by(&mut self, delta: isize) {
        if self.peers {
            let last = self.snapshot.groups.len().saturating_sub(1);
            self.peer_cursor = self.peer_cursor.saturating_add_signed(delta).min(last);
            return;
        }
        if self.closed_view {
            self.move_closed_by(delta);
            return;
        }
        if self.view.is_empty() {
            return;
        }
        let last = self.view.len() - 1;
        self.cursor = self.cursor.saturating_add_signed(delta).min(last);
        self.selected = self.selected().map(Row::cookie);
        if self.detail.is_some() {
            self.detail = self.selected;
        }
    }

    /// Selects the first row.
    pub fn select_first(&mut self) {
        self.move_by(isize::MIN / 2);
    }

    /// Selects the last row.
    pub fn select_last(&mut self) {
        self.move_by(isize::MAX / 2);
    }

    /// Sorts by the next column, in its natural order.
    pub fn cycle_sort(&mut self) {
        self.sort = self.sort.next();
        self.reverse = false;
        self.refresh();
    }

    /// Reverses the sort order.
    pub fn reverse_sort(&mut self) {
        self.reverse = !self.reverse;
        self.refresh();
    }

    /// Starts editing the filter, from the applied text.
    pub fn start_filter(&mut self) {
        self.filter_error = None;
        self.mode = Mode::Filter(self.filter.clone());
    }

    /// Types `c` into the filter being edited.
    pub fn filter_push(&mut self, c: char) {
        if let Mode::Filter(text) = &mut self.mode {
            text.push(c);
        }
    }

    /// Deletes the last character of the filter being edited.
    pub fn filter_pop(&mut self) {
        if let Mode::Filter(text) = &mut self.mode {
            text.pop();
        }
    }

    /// Clears the filter being edited.
    pub fn filter_clear(&mut self) {
        if let Mode::Filter(text) = &mut self.mode {
            text.clear();
        }
    }

    /// Applies the edited filter.
    pub fn apply_filter(&mut self) {
        if let Mode::Filter(text) = std::mem::replace(&mut self.mode, Mode::Normal) {
            match Selection::parse(&text) {
                Ok(selection) => {
                    self.selection = selection;
                    self.filter = text.trim().to_string();
                    self.filter_error = None;
                    self.filter_warning = self.selection.unnamed_netns(&mut self.netns);
                    self.refresh();
                }
                Err(e) => {
                    // Keep editing, with the mistake shown.
                    self.filter_error = Some(e.to_string());
                    self.mode = Mode::Filter(text);
                }
            }
        }
    }

    /// Drops the edit; the applied filter stays.
    pub fn cancel_filter(&mut self) {
        self.filter_error = None;
        self.mode = Mode::Normal;
    }

    /// Freezes or resumes the display; resuming shows the latest poll.
    pub fn toggle_pause(&mut self) {
        self.paused = !self.paused;
        if !self.paused
            && let Some(s) = self.pending.take()
        {
            self.snapshot = s;
            self.refresh();
        }
        if !self.paused {
            let (flows, now_ns) = std::mem::take(&mut self.pending_closed);
            self.record_closed(flows, now_ns);
        }
    }

    /// Opens the detail pane on the selected flow (live or recently
    /// closed), or peer.
    pub fn open_detail(&mut self) {
        if self.closed_view {
            self.detail = self.selected_closed();
        } else if self.peers {
            self.peer_detail = !self.snapshot.groups.is_empty();
        } else {
            self.detail = self.selected;
        }
    }

    /// Opens or closes the help overlay.
    pub fn toggle_help(&mut self) {
        self.help = !self.help;
    }

    /// Closes the topmost of help, detail pane, closed list and peers.
    pub fn close(&mut self) {
        if self.help {
            self.help = false;
        } else if self.detail.is_some() || self.peer_detail {
            self.detail = None;
            self.peer_detail = false;
        } else if self.closed_view {
            self.closed_view = false;
        } else {
            self.peers = false;
        }
    }

    /// Asks the loop to quit.
    pub fn request_quit(&mut self) {
        self.quit = true;
    }
}
