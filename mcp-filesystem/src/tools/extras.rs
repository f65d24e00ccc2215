//! The additions users expect beyond the Go original (MCP-FILESYSTEM.md
//! §9): `read_multiple_files` (a batch with per-file errors),
//! `directory_tree` (depth-limited, with `exclude_patterns`) and
//! `edit_file` (exact search-and-replace edits, which models write more
//! reliably than diffs, with a unified diff of the change). Same sandbox
//! rules as every other tool.

use super::context::{Args, Fs, Outcome, ToolError, kind_of, rel_path, sandbox_error};
use super::walk::{Entry, walk};
use super::write::{open_folder, read_text, rewrite};
use crate::path::RelPath;
use crate::sandbox::SandboxError;
use serde_json::{Value, json};
use std::io::Read;
use std::time::{Duration, Instant};

/// At most this many paths in one `read_multiple_files`.
const MAX_PATHS: usize = 100;
/// At most this many entries in one `directory_tree`.
const MAX_TREE: usize = 10_000;

/// `read_multiple_files`: each file whole, as `read_file` reads it, until
/// the call's content reaches `max_full_read_size`; a file that fails (or
/// does not fit) carries its own `error`.
pub fn read_multiple_files(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("read_multiple_files", args, "root")?;
    let paths = args.strings("paths")?.ok_or_else(|| {
        ToolError("read_multiple_files: argument paths is required (a list of paths)".into())
    })?;
    if paths.len() > MAX_PATHS {
        return Err(ToolError(format!(
            "read_multiple_files: at most {MAX_PATHS} paths per call (got {})",
            paths.len()
        )));
    }
    let mut left = fs.max_full_read_size;
    let mut files = Vec::new();
    for given in paths {
        let one = (|| -> Result<Value, ToolError> {
            let rel =
                RelPath::parse(given).map_err(|e| super::context::path_error(given, root, e))?;
            let mut f = root
                .open_read(&rel)
                .map_err(|e| sandbox_error(given, root, e))?;
            let size = f
                .metadata()
                .map_err(|e| sandbox_error(given, root, e.into()))?
                .len();
            if size > left {
                return Err(ToolError(format!(
                    "not read: {size} bytes would pass this call's limit ({} bytes left of max_full_read_size); read it with read_file",
                    left
                )));
            }
            let mut buf = Vec::with_capacity(size as usize);
            (&mut f)
                .take(left)
                .read_to_end(&mut buf)
                .map_err(|e| sandbox_error(given, root, e.into()))?;
            left -= buf.len() as u64;
            let binary = buf.iter().take(8192).any(|b| *b == 0);
            let mut v = json!({"path": rel.display(), "size": size});
            if binary {
                use base64::Engine;
                v["content"] = json!(base64::engine::general_purpose::STANDARD.encode(&buf));
                v["binary"] = json!(true);
                v["encoding"] = json!("base64");
            } else {
                v["content"] = super::context::text_value(buf);
                v["encoding"] = json!("utf-8");
            }
            Ok(v)
        })();
        files.push(one.unwrap_or_else(|e| json!({"path": given, "error": e.0})));
    }
    Ok(json!({ "files": files }))
}

/// Globs that leave entries out of a walk: matched against the name, or
/// against the path under the walk's start when the pattern has a `/`.
pub struct Excludes(Vec<(globset::GlobMatcher, bool)>);

impl Excludes {
    pub fn from_args(args: &Args<'_>) -> Result<Excludes, ToolError> {
        let mut v = Vec::new();
        for p in args.strings("exclude_patterns")?.unwrap_or_default() {
            let g = globset::GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| {
                    ToolError(format!("{}: invalid exclude pattern {p:?}: {e}", args.tool))
                })?;
            v.push((g.compile_matcher(), p.contains('/')));
        }
        Ok(Excludes(v))
    }

    pub fn excludes(&self, name: &str, rel: &str) -> bool {
        self.0
            .iter()
            .any(|(g, by_path)| g.is_match(if *by_path { rel } else { name }))
    }
}

/// `directory_tree`: nested entries under a folder, links shown and never
/// entered, `max_depth` levels (default 3), `exclude_patterns` left out.
pub fn directory_tree(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("directory_tree", args, "root")?;
    let (given, rel) = rel_path(root, args, "path", Some("."))?;
    let depth = args.uint("max_depth")?.unwrap_or(3).min(64) as usize;
    let excludes = Excludes::from_args(args)?;
    let fail = |e: SandboxError| sandbox_error(&given, root, e);
    let r = root.resolve(&rel, true).map_err(fail)?;
    if !r.exists {
        return Err(fail(SandboxError::NotFound));
    }
    if !root.lstat(&r.path).map_err(fail)?.is_dir() {
        return Err(ToolError(format!(
            "path {given:?} in root {} is not a folder",
            root.name
        )));
    }
    let dir = open_folder(root, &r.path).map_err(|e| fail(e.into()))?;
    // Flat, in path order, then nested.
    let mut flat: Vec<(String, &'static str)> = Vec::new();
    let mut truncated = false;
    let deadline = Instant::now() + Duration::from_secs(25);
    let ended = walk(
        &dir,
        Some(depth.saturating_sub(1)),
        deadline,
        &mut |e: &Entry<'_>| {
            if excludes.excludes(e.name, e.rel) {
                return super::walk::Step::Skip;
            }
            if flat.len() >= MAX_TREE {
                truncated = true;
                return super::walk::Step::Stop;
            }
            flat.push((e.rel.to_string(), kind_of(&e.ft)));
            super::walk::Step::Go
        },
    );
    let tree = nest(&flat);
    Ok(json!({
        "path": rel.display(),
        "tree": tree,
        "entries": flat.len(),
        "truncated": truncated,
        "timed_out": ended.timed_out,
    }))
}

/// Nests `(path, type)` entries given in path order: each folder's
/// entries come right after it.
fn nest(flat: &[(String, &'static str)]) -> Vec<Value> {
    fn attach(stack: &mut [(String, Value)], top: &mut Vec<Value>, node: Value) {
        match stack.last_mut() {
            Some((_, parent)) => {
                if let Some(c) = parent["children"].as_array_mut() {
                    c.push(node);
                }
            }
            None => top.push(node),
        }
    }
    let mut top: Vec<Value> = Vec::new();
    let mut open: Vec<(String, Value)> = Vec::new();
    for (path, kind) in flat {
        while let Some((p, _)) = open.last() {
            if path.starts_with(&format!("{p}/")) {
                break;
            }
            if let Some((_, done)) = open.pop() {
                attach(&mut open, &mut top, done);
            }
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        if *kind == "directory" {
            open.push((
                path.clone(),
                json!({"name": name, "type": kind, "children": []}),
            ));
        } else {
            attach(&mut open, &mut top, json!({"name": name, "type": kind}));
        }
    }
    while let Some((_, done)) = open.pop() {
        attach(&mut open, &mut top, done);
    }
    top
}

/// `edit_file`: each `{old_text, new_text}` must match exactly once (in
/// the file as the earlier edits left it); all apply or none. The answer
/// carries the unified diff of the change, also with `dry_run`.
pub fn edit_file(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("edit_file", args, "root")?;
    let (given, rel) = rel_path(root, args, "path", None)?;
    let dry_run = args.boolean("dry_run")?.unwrap_or(false);
    let Some(Value::Array(edits)) = args.raw("edits") else {
        return Err(ToolError(
            "edit_file: argument edits is required: a list of {old_text, new_text}".into(),
        ));
    };
    if edits.is_empty() {
        return Err(ToolError("edit_file: edits is empty".into()));
    }
    let file = read_text(fs, root, "edit_file", &given, &rel)?;
    if !file.exists {
        return Err(sandbox_error(&given, root, SandboxError::NotFound));
    }
    let old = &file.text;
    let mut text = old.clone();
    for (i, e) in edits.iter().enumerate() {
        let field = |a: &str, b: &str| e.get(a).or_else(|| e.get(b)).and_then(Value::as_str);
        let (Some(from), Some(to)) = (field("old_text", "oldText"), field("new_text", "newText"))
        else {
            return Err(ToolError(format!(
                "edit_file: edit {} needs old_text and new_text (strings)",
                i + 1
            )));
        };
        if from.is_empty() {
            return Err(ToolError(format!(
                "edit_file: edit {} has an empty old_text",
                i + 1
            )));
        }
        match text.matches(from).count() {
            1 => text = text.replacen(from, to, 1),
            0 => {
                return Err(ToolError(format!(
                    "edit_file: edit {}: old_text not found in {given:?} (it must match exactly, whitespace included); nothing was changed",
                    i + 1
                )));
            }
            n => {
                return Err(ToolError(format!(
                    "edit_file: edit {}: old_text occurs {n} times in {given:?}; add surrounding lines so it matches once; nothing was changed",
                    i + 1
                )));
            }
        }
    }
    let name = rel.display();
    let diff = similar::TextDiff::from_lines(old.as_str(), &text)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string();
    if !dry_run && text != *old {
        rewrite(root, &given, &file, &text)?;
    }
    Ok(json!({
        "path": name,
        "edits_applied": edits.len(),
        "size": text.len(),
        "diff": diff,
        "dry_run": dry_run,
    }))
}
