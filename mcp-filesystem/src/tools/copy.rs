//! `copy` and `move` (MCP-FILESYSTEM.md §5.12–§5.13), within a root or
//! between two; the tool must be allowed on both.
//!
//! A copied file lands atomically (temp + fsync + rename) with its
//! permission bits less setuid/setgid. A folder is copied into a new
//! destination only, walking the source without following links: links
//! and special files are skipped and listed; if anything fails, what was
//! created is removed. A move is one `rename(2)` between the roots'
//! handles (a link moves as itself), and only on `EXDEV` (another
//! filesystem) a copy, fsync and removal. Neither ever touches the root
//! itself or puts a folder inside itself.

use super::context::{Args, Fs, Outcome, ToolError, rel_path, sandbox_error};
use super::write::{MAX_DEPTH, atomic_write, create_folders, empty_folder, open_folder};
use crate::path::RelPath;
use crate::sandbox::{Root, SandboxError, TargetType};
use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, MetadataExt, OpenOptions};
use serde_json::json;
use std::io;

/// One side of a copy or move: its root, the path as given, the cleaned
/// path.
struct End<'a> {
    root: &'a Root,
    given: String,
    rel: RelPath,
}

fn ends<'a>(fs: &'a Fs, tool: &str, args: &Args<'_>) -> Result<(End<'a>, End<'a>), ToolError> {
    let sr = fs.root(tool, args, "source_root")?;
    let dr = fs.root(tool, args, "dest_root")?;
    let (sg, srel) = rel_path(sr, args, "source_path", None)?;
    let (dg, drel) = rel_path(dr, args, "dest_path", None)?;
    Ok((
        End {
            root: sr,
            given: sg,
            rel: srel,
        },
        End {
            root: dr,
            given: dg,
            rel: drel,
        },
    ))
}

impl End<'_> {
    fn fail(&self, e: SandboxError) -> ToolError {
        sandbox_error(&self.given, self.root, e)
    }
}

/// The destination's resolved path, refusing a folder or a link there
/// (a copy or a move never replaces a link), and whether a file is there
/// to replace. Its folders are created.
fn destination(d: &End<'_>, allow_file: bool) -> Result<(RelPath, bool), ToolError> {
    let r = d.root.resolve(&d.rel, false).map_err(|e| d.fail(e))?;
    if r.path.is_root() {
        return Err(ToolError(format!(
            "dest_path {:?} is root {} itself",
            d.given, d.root.name
        )));
    }
    let mut replaces = false;
    if r.exists {
        let m = d.root.lstat(&r.path).map_err(|e| d.fail(e))?;
        if m.is_dir() {
            return Err(ToolError(format!(
                "dest_path {:?} in root {} is an existing folder; name the new path instead",
                d.given, d.root.name
            )));
        }
        if m.file_type().is_symlink() {
            // Never replaced: renaming over a link destroys it, and one
            // that leaves the root (dangling or not) is refused as every
            // tool refuses it (MCP-FILESYSTEM.md §4.2).
            if d.root.target_type(&r.path) == TargetType::External {
                return Err(d.fail(SandboxError::Outside));
            }
            return Err(ToolError(format!(
                "dest_path {:?} in root {} is a symlink; remove it first",
                d.given, d.root.name
            )));
        }
        if !allow_file {
            return Err(ToolError(format!(
                "dest_path {:?} already exists in root {}",
                d.given, d.root.name
            )));
        }
        replaces = true;
    }
    create_folders(d.root, &r.path.parent()).map_err(|e| d.fail(e))?;
    Ok((r.path, replaces))
}

/// Opens a source file (no link, no special file) for reading.
fn open_source(folder: &Dir, name: &str) -> io::Result<cap_std::fs::File> {
    let mut o = OpenOptions::new();
    o.read(true);
    o.follow(FollowSymlinks::No);
    o.nonblock(true);
    let f = folder.open_with(name, &o)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(f)
}

/// Copies the regular file `name` of `from` to `to_name` in `to`.
fn copy_file(from: &Dir, name: &str, to: &Dir, to_name: &str) -> io::Result<u64> {
    let mut src = open_source(from, name)?;
    let mode = src.metadata()?.mode() & 0o1777;
    let mut size = 0;
    atomic_write(to, to_name, Some(mode), false, |f| {
        size = io::copy(&mut src, f)?;
        Ok(())
    })?;
    Ok(size)
}

/// What a folder copy did.
#[derive(Default)]
struct Tally {
    files: u64,
    skipped: Vec<String>,
}

/// Copies the folder `from` into the new, empty folder `to`; `at` is
/// `from`'s root-relative path, for the `skipped` list.
fn copy_tree(from: &Dir, to: &Dir, at: &RelPath, depth: usize, t: &mut Tally) -> io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(io::Error::other("folders nested too deeply"));
    }
    for ent in from.entries()? {
        let ent = ent?;
        let raw = ent.file_name();
        let Some(name) = raw.to_str().map(str::to_string) else {
            t.skipped
                .push(format!("{}/{}", at.display(), raw.to_string_lossy()));
            continue;
        };
        let ft = ent.metadata()?.file_type();
        if ft.is_dir() {
            to.create_dir(&name)?;
            let sub_from = from.open_dir_nofollow(&name)?;
            let sub_to = to.open_dir_nofollow(&name)?;
            copy_tree(&sub_from, &sub_to, &at.join(&name), depth + 1, t)?;
        } else if ft.is_file() {
            copy_file(from, &name, to, &name)?;
            t.files += 1;
        } else {
            t.skipped.push(at.join(&name).display());
        }
    }
    Ok(())
}

/// Copies folder `s` (resolved) to the new path `dest` of `d`.
fn copy_folder(
    s: &End<'_>,
    spath: &RelPath,
    d: &End<'_>,
    dest: &RelPath,
) -> Result<Tally, ToolError> {
    let from = open_folder(s.root, spath).map_err(|e| s.fail(e.into()))?;
    d.root
        .dir()
        .create_dir(dest.as_path())
        .map_err(|e| d.fail(e.into()))?;
    let made = d
        .root
        .dir()
        .open_dir_nofollow(dest.as_path())
        .map_err(|e| d.fail(e.into()))?;
    let mut t = Tally::default();
    if let Err(e) = copy_tree(&from, &made, spath, 0, &mut t) {
        // Leave nothing half-copied behind.
        let _ = empty_folder(&made, 0);
        drop(made);
        let _ = d.root.dir().remove_dir(dest.as_path());
        return Err(ToolError(format!(
            "copy of {:?} failed and was undone: {}",
            s.given,
            d.fail(e.into()).0
        )));
    }
    t.skipped.sort();
    Ok(t)
}

fn into_itself(s: &End<'_>, spath: &RelPath, d: &End<'_>, dpath: &RelPath) -> bool {
    std::ptr::eq(s.root, d.root) && dpath.starts_with(spath)
}

/// `copy`.
pub fn copy(fs: &Fs, args: &Args<'_>) -> Outcome {
    let (s, d) = ends(fs, "copy", args)?;
    let r = s.root.resolve(&s.rel, true).map_err(|e| s.fail(e))?;
    if !r.exists {
        return Err(s.fail(SandboxError::NotFound));
    }
    let m = s.root.lstat(&r.path).map_err(|e| s.fail(e))?;
    // Where the destination will be, to refuse a folder into itself
    // before anything is written.
    let dr = d.root.resolve(&d.rel, false).map_err(|e| d.fail(e))?;
    if m.is_dir() {
        if into_itself(&s, &r.path, &d, &dr.path) {
            return Err(ToolError("cannot copy a folder into itself".into()));
        }
        let (dest, _) = destination(&d, false)?;
        let t = copy_folder(&s, &r.path, &d, &dest)?;
        return Ok(json!({
            "source": s.rel.display(), "destination": d.rel.display(), "is_directory": true,
            "files_copied": t.files, "skipped": t.skipped,
        }));
    }
    if !m.is_file() {
        return Err(s.fail(SandboxError::NotRegular));
    }
    if std::ptr::eq(s.root, d.root) && dr.path == r.path {
        return Err(ToolError("source and destination are the same file".into()));
    }
    let (dest, _) = destination(&d, true)?;
    let from = open_folder(s.root, &r.path.parent()).map_err(|e| s.fail(e.into()))?;
    let to = open_folder(d.root, &dest.parent()).map_err(|e| d.fail(e.into()))?;
    let (Some(sname), Some(dname)) = (r.path.name(), dest.name()) else {
        return Err(ToolError("copy needs a file or folder, not a root".into()));
    };
    let size = copy_file(&from, sname, &to, dname).map_err(|e| s.fail(e.into()))?;
    Ok(
        json!({"source": s.rel.display(), "destination": d.rel.display(), "is_directory": false, "size": size}),
    )
}

/// `move`.
pub fn move_(fs: &Fs, args: &Args<'_>) -> Outcome {
    let (s, d) = ends(fs, "move", args)?;
    let same_root = std::ptr::eq(s.root, d.root);
    let r = s.root.resolve(&s.rel, false).map_err(|e| s.fail(e))?;
    if r.path.is_root() {
        return Err(ToolError(format!(
            "source_path {:?} is root {} itself, which never moves",
            s.given, s.root.name
        )));
    }
    if !r.exists {
        return Err(s.fail(SandboxError::NotFound));
    }
    let m = s.root.lstat(&r.path).map_err(|e| s.fail(e))?;
    let is_link = m.file_type().is_symlink();
    if is_link && !same_root {
        return Err(ToolError(format!(
            "source_path {:?} is a symlink: it can move only within root {}",
            s.given, s.root.name
        )));
    }
    let dr = d.root.resolve(&d.rel, false).map_err(|e| d.fail(e))?;
    if m.is_dir() && into_itself(&s, &r.path, &d, &dr.path) {
        return Err(ToolError("cannot move a folder into itself".into()));
    }
    if same_root && dr.path == r.path {
        return Err(ToolError("source and destination are the same".into()));
    }
    let (dest, _) = destination(&d, !m.is_dir())?;
    match s
        .root
        .dir()
        .rename(r.path.as_path(), d.root.dir(), dest.as_path())
    {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
            // Another filesystem: copy, make it durable, then remove.
            if m.is_dir() {
                copy_folder(&s, &r.path, &d, &dest)?;
                let dir = open_folder(s.root, &r.path).map_err(|e| s.fail(e.into()))?;
                empty_folder(&dir, 0).map_err(|e| s.fail(e.into()))?;
                drop(dir);
                s.root
                    .dir()
                    .remove_dir(r.path.as_path())
                    .map_err(|e| s.fail(e.into()))?;
            } else {
                let from = open_folder(s.root, &r.path.parent()).map_err(|e| s.fail(e.into()))?;
                let to = open_folder(d.root, &dest.parent()).map_err(|e| d.fail(e.into()))?;
                let (Some(sn), Some(dn)) = (r.path.name(), dest.name()) else {
                    return Err(ToolError("move needs a file or folder, not a root".into()));
                };
                copy_file(&from, sn, &to, dn).map_err(|e| s.fail(e.into()))?;
                from.remove_file(sn).map_err(|e| s.fail(e.into()))?;
            }
        }
        Err(e) => return Err(d.fail(e.into())),
    }
    Ok(
        json!({"source": s.rel.display(), "destination": d.rel.display(), "is_directory": m.is_dir()}),
    )
}
