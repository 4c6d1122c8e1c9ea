//! Keys of `observer top`: one key event, one change of [`App`].

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::state::{App, Mode};

/// Applies `key` to `app`.
pub fn handle(app: &mut App, key: KeyEvent) {
    if key.kind == KeyEventKind::Release {
        return;
    }
    // Raw mode turns Ctrl-C into a key, not SIGINT.
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        app.request_quit();
        return;
    }
    match app.mode() {
        Mode::Filter(_) => filter_key(app, key),
        Mode::Normal => normal_key(app, key),
    }
}

fn filter_key(app: &mut App, key: KeyEvent) {
    match key.code {
        KeyCode::Enter => app.apply_filter(),
        KeyCode::Esc => app.cancel_filter(),
        KeyCode::Backspace => app.filter_pop(),
        KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => app.filter_clear(),
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => app.filter_push(c),
        _ => {}
    }
}

fn normal_key(app: &mut App, key: KeyEvent) {
    let page = app.page.max(1) as isize;
    match key.code {
        KeyCode::Char('q') => app.request_quit(),
        KeyCode::Esc => app.close(),
        KeyCode::Char('?') => app.toggle_help(),
        // While help is open only the keys above act.
        _ if app.help() => {}
        KeyCode::Down | KeyCode::Char('j') => app.move_by(1),
        KeyCode::Up | KeyCode::Char('k') => app.move_by(-1),
        KeyCode::PageDown => app.move_by(page),
        KeyCode::PageUp => app.move_by(-page),
        KeyCode::Home | KeyCode::Char('g') => app.select_first(),
        KeyCode::End | KeyCode::Char('G') => app.select_last(),
        KeyCode::Char('s') => app.cycle_sort(),
        KeyCode::Char('r') => app.reverse_sort(),
        KeyCode::Char('/') => app.start_filter(),
        KeyCode::Char('p') => app.toggle_pause(),
        KeyCode::Char('v') => app.toggle_peers(),
        KeyCode::Char('c') => app.toggle_closed(),
        KeyCode::Enter => app.open_detail(),
        _ => {}
    }
}
