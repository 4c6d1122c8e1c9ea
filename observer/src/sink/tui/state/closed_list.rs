//! The view state of the recently closed flows (`c`): what a poll adds
//! to the list, which of them the filter shows, the selection among
//! them, and the detail pane opened on one (Enter).

use super::{App, ClosedFlow, ClosedFlows};

impl App {
    /// Adds the flows that closed at a poll at `now_ns` (monotonic ns)
    /// to the recently closed, and lets those past the age kept go; kept
    /// for later while paused.
    pub fn record_closed(&mut self, flows: impl IntoIterator<Item = ClosedFlow>, now_ns: u64) {
        if self.paused {
            self.pending_closed.0.extend(flows);
            self.pending_closed.1 = now_ns;
            return;
        }
        flows.into_iter().for_each(|f| self.closed.push(f));
        self.closed.expire(now_ns);
        let last = self.closed_rows().len().saturating_sub(1);
        self.closed_cursor = self.closed_cursor.min(last);
    }

    /// The recently closed flows, all of them.
    pub fn closed(&self) -> &ClosedFlows {
        &self.closed
    }

    /// The recently closed flows the filter shows, newest first.
    pub fn closed_rows(&self) -> Vec<&ClosedFlow> {
        self.closed
            .iter()
            .filter(|f| self.selection.shows(&f.row))
            .collect()
    }

    /// Whether the table shows the recently closed flows.
    pub fn closed_view(&self) -> bool {
        self.closed_view
    }

    /// Index of the selected closed flow among [`App::closed_rows`].
    pub fn closed_cursor(&self) -> usize {
        self.closed_cursor
    }

    /// Switches the table between the live flows and the recently closed
    /// ones; the detail panes and the peers view close.
    pub fn toggle_closed(&mut self) {
        self.closed_view = !self.closed_view;
        self.peers = false;
        self.detail = None;
        self.peer_detail = false;
    }

    /// Moves the selection among the closed flows by `delta`, within
    /// bounds; the detail pane, when open, follows it.
    pub(super) fn move_closed_by(&mut self, delta: isize) {
        let last = self.closed_rows().len().saturating_sub(1);
        self.closed_cursor = self.closed_cursor.saturating_add_signed(delta).min(last);
        if self.detail.is_some() {
            self.detail = self.selected_closed();
        }
    }

    /// The cookie of the selected closed flow, if the list shows any.
    pub(super) fn selected_closed(&self) -> Option<u64> {
        self.closed_rows()
            .get(self.closed_cursor)
            .map(|f| f.row.cookie())
    }
}
