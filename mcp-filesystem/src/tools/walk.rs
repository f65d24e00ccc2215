//! The folder walk under `grep` and `glob` (MCP-FILESYSTEM.md §5.14–§5.15):
//! depth-first in path order, from directory handles opened with
//! `O_NOFOLLOW`, so a symlink met on the way is reported but never
//! descended into, and a folder swapped for a link mid-walk is refused by
//! the kernel instead of followed. The walk stops at a deadline or when
//! the visitor says so.

use cap_fs_ext::DirExt;
use cap_std::fs::{Dir, FileType};
use std::time::Instant;

/// What the visitor wants after an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Go on (into it, if it is a folder within the depth).
    Go,
    /// Go on, but not into it.
    Skip,
    /// End the walk.
    Stop,
}

/// One entry met on the walk.
pub struct Entry<'a> {
    /// The folder handle holding it (open files relative to this).
    pub dir: &'a Dir,
    pub name: &'a str,
    /// Its path relative to the walk's start, `/`-separated.
    pub rel: &'a str,
    /// Its own type (a symlink is a symlink).
    pub ft: FileType,
}

/// How a walk ended.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ended {
    pub timed_out: bool,
    pub stopped: bool,
}

/// Walks `start`, calling `visit` on every entry in path order. Folders
/// deeper than `max_depth` are not entered (`Some(0)`: only `start`'s own
/// entries). Names that are not UTF-8 are skipped (no caller could name
/// them back).
pub fn walk(
    start: &Dir,
    max_depth: Option<usize>,
    deadline: Instant,
    visit: &mut dyn FnMut(&Entry<'_>) -> Step,
) -> Ended {
    let mut ended = Ended::default();
    go(start, "", 0, max_depth, deadline, visit, &mut ended);
    ended
}

fn go(
    dir: &Dir,
    prefix: &str,
    depth: usize,
    max_depth: Option<usize>,
    deadline: Instant,
    visit: &mut dyn FnMut(&Entry<'_>) -> Step,
    ended: &mut Ended,
) {
    let Ok(listing) = dir.entries() else { return };
    // Path order: a folder's entries come right after `name/`, so sort
    // folders by `name/` ("a.txt" before "a/x", as paths sort).
    let mut items: Vec<(String, FileType)> = listing
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            // The type from the listing itself (d_type): no stat per entry.
            let ft = e.file_type().ok()?;
            Some((name, ft))
        })
        .collect();
    items.sort_by_key(key);
    for (name, ft) in items {
        if ended.stopped || ended.timed_out {
            return;
        }
        if Instant::now() >= deadline {
            ended.timed_out = true;
            return;
        }
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let e = Entry {
            dir,
            name: &name,
            rel: &rel,
            ft,
        };
        let step = visit(&e);
        if step == Step::Stop {
            ended.stopped = true;
            return;
        }
        if step == Step::Go
            && ft.is_dir()
            && max_depth.is_none_or(|m| depth < m)
            && let Ok(sub) = dir.open_dir_nofollow(&name)
        {
            go(&sub, &rel, depth + 1, max_depth, deadline, visit, ended);
        }
    }
}

fn key((name, ft): &(String, FileType)) -> String {
    if ft.is_dir() {
        format!("{name}/")
    } else {
        name.clone()
    }
}
