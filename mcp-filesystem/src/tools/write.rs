//! `write_file`, `remove_file`, `create_folder` and `remove_folder`
//! (MCP-FILESYSTEM.md §5.4, §5.5, §5.7, §5.8).
//!
//! Writes that replace content are atomic: a temp file in the same folder,
//! fsync, then a rename over the name, so a crash never leaves half a file
//! and a hard link never carries the change to an outside inode. Writing
//! through an in-root link writes the file it points to (the link stays);
//! a link that leaves the root, dangling or not, is never written through.
//! Names are acted on with `*at` calls relative to the root's handle:
//! removing a link removes the link, never its target.

use super::context::{Args, Fs, Outcome, ToolError, kind_of, rel_path, sandbox_error};
use crate::path::RelPath;
use crate::sandbox::{Root, SandboxError};
use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt, Permissions, PermissionsExt};
use serde_json::json;
use std::io::{self, Write};

/// How deep `remove_folder` goes before giving up (each level holds a
/// directory handle).
pub(super) const MAX_DEPTH: usize = 256;

/// The folder handle of a resolved, symlink-free folder path.
pub(super) fn open_folder(root: &Root, path: &RelPath) -> io::Result<Dir> {
    if path.is_root() {
        root.dir().try_clone()
    } else {
        root.dir().open_dir_nofollow(path.as_path())
    }
}

/// Creates each missing folder of `path` (resolved, so inside the root);
/// whether any was created.
pub(super) fn create_folders(root: &Root, path: &RelPath) -> Result<bool, SandboxError> {
    let mut created = false;
    let mut here = RelPath::default();
    for c in path.components() {
        here = here.join(c);
        match root.lstat(&here) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => return Err(SandboxError::NotDir),
            Err(SandboxError::NotFound) => {}
            Err(e) => return Err(e),
        }
        match root.dir().create_dir(here.as_path()) {
            Ok(()) => created = true,
            // Created meanwhile by someone else: fine if it is a folder.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if !root.lstat(&here)?.is_dir() {
                    return Err(SandboxError::NotDir);
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(created)
}

/// Writes `name` in `folder` atomically: `fill` writes a temp file, which
/// is fsynced, given `mode` (else 0644 less umask), then renamed over the
/// name (or, with `no_replace`, linked there, which fails if anything
/// exists). The temp file never outlives a failure.
pub(super) fn atomic_write(
    folder: &Dir,
    name: &str,
    mode: Option<u32>,
    no_replace: bool,
    fill: impl FnOnce(&mut cap_std::fs::File) -> io::Result<()>,
) -> io::Result<()> {
    let stem: String = name.chars().take(100).collect();
    let tmp = format!(".{stem}.tmp-{}", uuid::Uuid::new_v4().simple());
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    o.follow(FollowSymlinks::No);
    o.mode(0o644);
    let mut f = folder.open_with(&tmp, &o)?;
    let written = (|| {
        fill(&mut f)?;
        if let Some(m) = mode {
            f.set_permissions(Permissions::from_mode(m))?;
        }
        f.sync_all()?;
        if no_replace {
            folder.hard_link(&tmp, folder, name)?;
            folder.remove_file(&tmp)
        } else {
            folder.rename(&tmp, folder, name)
        }
    })();
    if written.is_err() {
        let _ = folder.remove_file(&tmp);
    }
    written?;
    // The rename itself is made durable by syncing the folder.
    if let Ok(d) = folder.open_with(".", OpenOptions::new().read(true)) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// `write_file`.
pub fn write_file(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("write_file", args, "root")?;
    let (given, rel) = rel_path(root, args, "path", None)?;
    let content = args.req_str("content")?;
    let mode = args.str("mode")?.unwrap_or("overwrite");
    if !["overwrite", "append", "create_only"].contains(&mode) {
        return Err(ToolError(format!(
            "write_file: mode {mode:?} is not one of overwrite, append, create_only"
        )));
    }
    let fail = |e: SandboxError| sandbox_error(&given, root, e);
    let folder_error = || {
        ToolError(format!(
            "path {given:?} in root {} is a folder; write_file writes files",
            root.name
        ))
    };
    if mode == "create_only" && root.resolve(&rel, false).map_err(fail)?.exists {
        return Err(ToolError(format!(
            "path {given:?} already exists in root {} (mode create_only never replaces anything)",
            root.name
        )));
    }
    let r = root.resolve(&rel, true).map_err(fail)?;
    let Some(name) = r.path.name().map(str::to_string) else {
        return Err(folder_error());
    };
    let existing = if r.exists {
        Some(root.lstat(&r.path).map_err(fail)?)
    } else {
        None
    };
    if let Some(m) = &existing {
        if m.is_dir() {
            return Err(folder_error());
        }
        if !m.is_file() {
            return Err(fail(SandboxError::NotRegular));
        }
    }
    create_folders(root, &r.path.parent()).map_err(fail)?;
    let folder = open_folder(root, &r.path.parent()).map_err(|e| fail(e.into()))?;
    let bytes = content.as_bytes();
    if mode == "append"
        && let Some(m) = &existing
    {
        // In place (not atomic): refuse a file shared through a hard link,
        // whose other name may be outside the root.
        if m.nlink() > 1 {
            return Err(ToolError(format!(
                "path {given:?} has other hard links; append writes in place, so it refuses them (use mode overwrite)"
            )));
        }
        let mut o = OpenOptions::new();
        o.append(true);
        o.follow(FollowSymlinks::No);
        let mut f = folder.open_with(&name, &o).map_err(|e| fail(e.into()))?;
        f.write_all(bytes).map_err(|e| fail(e.into()))?;
        f.sync_all().map_err(|e| fail(e.into()))?;
    } else {
        let keep = existing.as_ref().map(|m| m.mode() & 0o7777);
        atomic_write(&folder, &name, keep, mode == "create_only", |f| {
            f.write_all(bytes)
        })
        .map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                ToolError(format!(
                    "path {given:?} already exists in root {}",
                    root.name
                ))
            } else {
                fail(e.into())
            }
        })?;
    }
    Ok(
        json!({"path": rel.display(), "size": bytes.len(), "mode": mode, "created": existing.is_none()}),
    )
}

/// `remove_file`: a file, or a link itself (wherever it points).
pub fn remove_file(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("remove_file", args, "root")?;
    let (given, rel) = rel_path(root, args, "path", None)?;
    let fail = |e: SandboxError| sandbox_error(&given, root, e);
    let r = root.resolve(&rel, false).map_err(fail)?;
    if !r.exists {
        return Err(fail(SandboxError::NotFound));
    }
    let m = root.lstat(&r.path).map_err(fail)?;
    if m.is_dir() || r.path.is_root() {
        return Err(ToolError(format!(
            "path {given:?} in root {} is a folder; use remove_folder",
            root.name
        )));
    }
    root.dir()
        .remove_file(r.path.as_path())
        .map_err(|e| fail(e.into()))?;
    Ok(json!({"path": rel.display(), "removed": true}))
}

/// `create_folder`: idempotent; never through a link that leaves.
pub fn create_folder(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("create_folder", args, "root")?;
    let (given, rel) = rel_path(root, args, "path", None)?;
    let fail = |e: SandboxError| sandbox_error(&given, root, e);
    let r = root.resolve(&rel, true).map_err(fail)?;
    if r.exists && !root.lstat(&r.path).map_err(fail)?.is_dir() {
        return Err(ToolError(format!(
            "path {given:?} in root {} is a file, not a folder",
            root.name
        )));
    }
    let created = create_folders(root, &r.path).map_err(|e| match e {
        SandboxError::NotDir => ToolError(format!(
            "path {given:?} in root {} goes through a file",
            root.name
        )),
        e => fail(e),
    })?;
    Ok(json!({"path": rel.display(), "created": created}))
}

/// Removes everything in `dir` (never following links: they are
/// unlinked), then nothing else; how many entries went.
pub(super) fn empty_folder(dir: &Dir, depth: usize) -> io::Result<u64> {
    if depth > MAX_DEPTH {
        return Err(io::Error::other("folders nested too deeply"));
    }
    let mut removed = 0u64;
    for ent in dir.entries()? {
        let ent = ent?;
        let name = ent.file_name();
        let mut ft = ent.file_type()?;
        if !ft.is_dir() && !ft.is_file() && !ft.is_symlink() {
            // Some filesystems do not give the type in the listing.
            ft = ent.metadata()?.file_type();
        }
        if ft.is_dir() {
            let sub = dir.open_dir_nofollow(&name)?;
            removed += empty_folder(&sub, depth + 1)?;
            dir.remove_dir(&name)?;
        } else {
            dir.remove_file(&name)?;
        }
        removed += 1;
    }
    Ok(removed)
}

/// `remove_folder`: recursive; never the root, never through a link.
pub fn remove_folder(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("remove_folder", args, "root")?;
    let (given, rel) = rel_path(root, args, "path", None)?;
    let fail = |e: SandboxError| sandbox_error(&given, root, e);
    let r = root.resolve(&rel, false).map_err(fail)?;
    if r.path.is_root() {
        return Err(ToolError(format!(
            "path {given:?} is root {} itself, which is never removed",
            root.name
        )));
    }
    if !r.exists {
        return Err(fail(SandboxError::NotFound));
    }
    let m = root.lstat(&r.path).map_err(fail)?;
    match kind_of(&m.file_type()) {
        "directory" => {}
        "symlink" => {
            return Err(ToolError(format!(
                "path {given:?} in root {} is a symlink; use remove_file",
                root.name
            )));
        }
        _ => {
            return Err(ToolError(format!(
                "path {given:?} in root {} is a file; use remove_file",
                root.name
            )));
        }
    }
    let dir = root
        .dir()
        .open_dir_nofollow(r.path.as_path())
        .map_err(|e| fail(e.into()))?;
    let n = empty_folder(&dir, 0).map_err(|e| fail(e.into()))?;
    drop(dir);
    root.dir()
        .remove_dir(r.path.as_path())
        .map_err(|e| fail(e.into()))?;
    Ok(json!({"path": rel.display(), "removed": true, "entries_removed": n}))
}

/// A text file that `patch_file` or `edit_file` rewrites.
pub(super) struct TextFile {
    /// Resolved (an in-root link's target).
    pub path: RelPath,
    pub exists: bool,
    /// Empty when it does not exist.
    pub text: String,
    /// Its permission bits, kept by the rewrite.
    pub mode: Option<u32>,
}

/// Reads the text file at argument `path` for `tool` to rewrite: at most
/// `max_patch_size`, UTF-8, not binary; a missing file reads as empty.
pub(super) fn read_text(
    fs: &Fs,
    root: &Root,
    tool: &str,
    given: &str,
    rel: &RelPath,
) -> Result<TextFile, ToolError> {
    use std::io::Read;
    let fail = |e: SandboxError| sandbox_error(given, root, e);
    let r = root.resolve(rel, true).map_err(fail)?;
    if r.path.is_root() {
        return Err(ToolError(format!(
            "path {given:?} is root {} itself; {tool} changes files",
            root.name
        )));
    }
    if !r.exists {
        return Ok(TextFile {
            path: r.path,
            exists: false,
            text: String::new(),
            mode: None,
        });
    }
    let m = root.lstat(&r.path).map_err(fail)?;
    if m.is_dir() {
        return Err(ToolError(format!(
            "path {given:?} in root {} is a folder; {tool} changes files",
            root.name
        )));
    }
    if m.len() > fs.max_patch_size {
        return Err(ToolError(format!(
            "path {given:?} is {} bytes, above max_patch_size ({}); {tool} will not rewrite it",
            m.len(),
            fs.max_patch_size
        )));
    }
    let mut bytes = Vec::new();
    root.open_read(&r.path)
        .map_err(fail)?
        .take(fs.max_patch_size + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.into()))?;
    if bytes.contains(&0) {
        return Err(ToolError(format!(
            "path {given:?} is a binary file; {tool} changes text"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        ToolError(format!(
            "path {given:?} is not UTF-8 text; {tool} changes text"
        ))
    })?;
    Ok(TextFile {
        path: r.path,
        exists: true,
        text,
        mode: Some(m.mode() & 0o7777),
    })
}

/// Replaces `file`'s content atomically (its folders created if missing).
pub(super) fn rewrite(
    root: &Root,
    given: &str,
    file: &TextFile,
    content: &str,
) -> Result<(), ToolError> {
    let fail = |e: SandboxError| sandbox_error(given, root, e);
    let Some(name) = file.path.name() else {
        return Err(ToolError(format!(
            "path {given:?} is root {} itself",
            root.name
        )));
    };
    create_folders(root, &file.path.parent()).map_err(fail)?;
    let folder = open_folder(root, &file.path.parent()).map_err(|e| fail(e.into()))?;
    atomic_write(&folder, name, file.mode, false, |f| {
        f.write_all(content.as_bytes())
    })
    .map_err(|e| fail(e.into()))
}

/// `patch_file`: a unified diff applied atomically (all hunks or none),
/// or only checked with `dry_run`.
pub fn patch_file(fs: &Fs, args: &Args<'_>) -> Outcome {
    use crate::patch;
    let root = fs.root("patch_file", args, "root")?;
    let (given, rel) = rel_path(root, args, "path", None)?;
    let text = args.req_str("patch")?;
    let dry_run = args.boolean("dry_run")?.unwrap_or(false);
    let parsed = patch::parse(text).map_err(|e| ToolError(format!("patch_file: {e}")))?;
    let file = read_text(fs, root, "patch_file", &given, &rel)?;
    let applied = patch::apply(&parsed, &file.text).map_err(|e| ToolError(e.0))?;
    if !dry_run {
        rewrite(root, &given, &file, &applied.content)?;
    }
    Ok(json!({
        "path": rel.display(),
        "hunks_applied": parsed.hunks.len(),
        "created": !file.exists,
        "size": applied.content.len(),
        "offsets": applied.offsets,
        "dry_run": dry_run,
    }))
}
