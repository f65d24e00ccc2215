//! `list_roots` and `list_folder` (MCP-FILESYSTEM.md §5.1–§5.2).

use super::context::{Args, Fs, Outcome, ToolError, kind_of, rel_path, sandbox_error, time};
use cap_fs_ext::DirExt;
use serde_json::{Value, json};
use std::collections::BinaryHeap;
use std::os::unix::ffi::OsStrExt;

/// At most this many entries in one listing.
const MAX_ENTRIES: usize = 10_000;

/// `list_roots`: names, tools, read-only; never host paths.
pub fn list_roots(fs: &Fs, _args: &Args<'_>) -> Outcome {
    let roots: Vec<Value> = fs
        .specs()
        .map(|s| json!({"name": s.name, "allowed_tools": s.tools, "read_only": s.read_only()}))
        .collect();
    Ok(json!({ "roots": roots }))
}

/// `list_folder`.
pub fn list_folder(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("list_folder", args, "root")?;
    let (given, rel) = rel_path(root, args, "path", Some("."))?;
    let r = root
        .resolve(&rel, true)
        .map_err(|e| sandbox_error(&given, root, e))?;
    if !r.exists {
        return Err(sandbox_error(
            &given,
            root,
            crate::sandbox::SandboxError::NotFound,
        ));
    }
    let dir = if r.path.is_root() {
        root.dir().try_clone()
    } else {
        root.dir().open_dir_nofollow(r.path.as_path())
    }
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ENOTDIR) => ToolError(format!(
            "path {given:?} in root {} is not a folder; use read_file or stat_file",
            root.name
        )),
        _ => sandbox_error(&given, root, e.into()),
    })?;
    // The first MAX_ENTRIES by name: a max-heap keeps the smallest names
    // seen, so a huge folder costs MAX_ENTRIES entries of memory.
    let mut entries: BinaryHeap<Entry> = BinaryHeap::new();
    let mut seen = 0usize;
    let listing = dir
        .entries()
        .map_err(|e| sandbox_error(&given, root, e.into()))?;
    for ent in listing {
        let Ok(ent) = ent else { continue };
        let raw = ent.file_name();
        let bytes = raw.as_bytes().to_vec();
        let Ok(meta) = ent.metadata() else { continue };
        let ft = meta.file_type();
        let kind = kind_of(&ft);
        let name = String::from_utf8_lossy(&bytes).into_owned();
        let mut e = json!({
            "name": name,
            "type": kind,
            "size": meta.len(),
            "modified_at": time(meta.modified()),
        });
        if std::str::from_utf8(&bytes).is_err() {
            e["name_lossy"] = json!(true);
        }
        if ft.is_symlink() {
            let target = match std::str::from_utf8(&bytes) {
                Ok(n) => root.target_type(&r.path.join(n)).as_str(),
                Err(_) => "missing",
            };
            e["target_type"] = json!(target);
        }
        seen += 1;
        entries.push(Entry(bytes, e));
        if entries.len() > MAX_ENTRIES {
            entries.pop();
        }
    }
    let entries: Vec<Value> = entries.into_sorted_vec().into_iter().map(|e| e.1).collect();
    Ok(json!({
        "path": rel.display(),
        "count": entries.len(),
        "entries": entries,
        "truncated": seen > MAX_ENTRIES,
    }))
}

/// A listing entry ordered by its name's bytes.
struct Entry(Vec<u8>, Value);

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}
