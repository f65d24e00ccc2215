//! `grep` and `glob` (MCP-FILESYSTEM.md §5.14–§5.15) over [`walk`]:
//! results root-relative and in path order, symlinks never followed,
//! `truncated` only when more existed, partial results on a timeout.
//! `grep` streams each file line by line (lines cut at 1 MiB), skips
//! binary and special files; its regex engine is linear-time, so no
//! pattern can backtrack catastrophically.
//!
//! [`walk`]: super::walk

use super::extras::Excludes;
use super::walk::{Entry, Step, walk};
use super::{Args, Fs, Outcome, ToolError, kind_of, rel_path, sandbox_error, time};
use crate::filesystem::path::RelPath;
use crate::filesystem::sandbox::SandboxError;
use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, OpenOptions};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// Lines longer than this are cut before matching.
const MAX_LINE: usize = 1024 * 1024;
/// `line_content` (and context lines) longer than this are cut.
const MAX_SHOWN: usize = 2000;
/// A NUL in this many first bytes makes a file binary.
const SNIFF: usize = 8192;

/// A limited integer argument: `default` when absent, an error above `max`.
fn bounded(args: &Args<'_>, name: &str, default: u64, max: u64) -> Result<u64, ToolError> {
    let v = args.uint(name)?.unwrap_or(default);
    if v > max {
        return Err(ToolError(format!(
            "{}: argument {name} must be at most {max} (got {v})",
            args.tool
        )));
    }
    Ok(v)
}

/// The start of a walk: the folder handle, or the single file to search.
enum Start {
    Folder(Dir, RelPath),
    File(Dir, String, RelPath),
}

fn start(fs: &Fs, tool: &str, args: &Args<'_>) -> Result<(Start, String), ToolError> {
    let root = fs.root(tool, args, "root")?;
    let (given, rel) = rel_path(root, args, "path", Some("."))?;
    let fail = |e: SandboxError| sandbox_error(&given, root, e);
    let r = root.resolve(&rel, true).map_err(fail)?;
    if !r.exists {
        return Err(fail(SandboxError::NotFound));
    }
    let m = root.lstat(&r.path).map_err(fail)?;
    let open = |p: &RelPath| {
        if p.is_root() {
            root.dir().try_clone()
        } else {
            cap_fs_ext::DirExt::open_dir_nofollow(root.dir(), p.as_path())
        }
    };
    if m.is_dir() {
        let d = open(&r.path).map_err(|e| fail(e.into()))?;
        Ok((Start::Folder(d, rel), given))
    } else {
        let d = open(&r.path.parent()).map_err(|e| fail(e.into()))?;
        let name = r.path.name().unwrap_or_default().to_string();
        Ok((Start::File(d, name, rel), given))
    }
}

/// `base/rel` as a root-relative path.
fn join(base: &RelPath, rel: &str) -> String {
    if base.is_root() {
        rel.to_string()
    } else if rel.is_empty() {
        base.display()
    } else {
        format!("{}/{rel}", base.display())
    }
}

/// Opens a regular file of a walk for reading, or `None` (links, FIFOs,
/// devices, anything swapped in meanwhile).
fn open_regular(dir: &Dir, name: &str) -> Option<cap_std::fs::File> {
    let mut o = OpenOptions::new();
    o.read(true);
    o.follow(FollowSymlinks::No);
    o.nonblock(true);
    let f = dir.open_with(name, &o).ok()?;
    f.metadata().ok()?.is_file().then_some(f)
}

/// Cuts `s` to [`MAX_SHOWN`] characters; whether it did.
fn shown(bytes: &[u8]) -> (String, bool) {
    let s = String::from_utf8_lossy(bytes);
    let s = s.strip_suffix('\r').unwrap_or(&s);
    if s.chars().count() > MAX_SHOWN {
        (s.chars().take(MAX_SHOWN).collect(), true)
    } else {
        (s.to_string(), false)
    }
}

/// Calls `f(line_number, line)` for each line of `r` (without the newline;
/// cut at [`MAX_LINE`]) until it breaks.
fn scan_lines(
    r: impl Read,
    mut f: impl FnMut(u64, &[u8]) -> ControlFlow<()>,
) -> std::io::Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, r);
    let mut line: Vec<u8> = Vec::new();
    let mut n = 1u64;
    let mut pending = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        let mut pos = 0;
        while pos < len {
            let nl = buf[pos..].iter().position(|&b| b == b'\n');
            let end = nl.map_or(len, |i| pos + i);
            let room = MAX_LINE.saturating_sub(line.len());
            line.extend_from_slice(&buf[pos..end.min(pos + room)]);
            pending = true;
            if nl.is_some() {
                if f(n, &line).is_break() {
                    return Ok(());
                }
                line.clear();
                pending = false;
                n += 1;
                pos = end + 1;
            } else {
                pos = end;
            }
        }
        reader.consume(len);
    }
    if pending && !line.is_empty() {
        let _ = f(n, &line);
    }
    Ok(())
}

/// `grep`.
pub fn grep(fs: &Fs, args: &Args<'_>) -> Outcome {
    let pattern = args.req_str("pattern")?;
    let ci = args.boolean("case_insensitive")?.unwrap_or(false);
    let context = bounded(args, "context_lines", 0, 50)? as usize;
    let max = bounded(args, "max_results", 100, 10_000)?.max(1) as usize;
    let timeout = bounded(args, "timeout_seconds", 25, 300)?;
    let max_depth = args.uint("max_depth")?.map(|d| d as usize);
    let re = regex::RegexBuilder::new(pattern)
        .case_insensitive(ci)
        .build()
        .map_err(|e| ToolError(format!("invalid pattern: {e}")))?;
    let excludes = Excludes::from_args(args)?;
    let filter = match args.str("glob_filter")? {
        Some(g) => Some((glob(g)?, g.contains('/'))),
        None => None,
    };
    let (start, _) = start(fs, "grep", args)?;
    let deadline = Instant::now() + Duration::from_secs(timeout);
    let mut matches: Vec<Value> = Vec::new();
    let mut files = 0u64;
    let mut truncated = false;
    let mut search =
        |dir: &Dir, name: &str, file: String, matches: &mut Vec<Value>| -> ControlFlow<()> {
            let Some(mut f) = open_regular(dir, name) else {
                return ControlFlow::Continue(());
            };
            let mut head = Vec::with_capacity(SNIFF);
            if (&mut f).take(SNIFF as u64).read_to_end(&mut head).is_err() || head.contains(&0) {
                return ControlFlow::Continue(());
            }
            files += 1;
            // The same descriptor, rewound: never a second open by name.
            if f.seek(SeekFrom::Start(0)).is_err() {
                return ControlFlow::Continue(());
            }
            let mut before: VecDeque<String> = VecDeque::with_capacity(context + 1);
            // Matches of this file still collecting their context_after.
            let mut waiting: Vec<usize> = Vec::new();
            let mut out = ControlFlow::Continue(());
            let _ = scan_lines(f, |n, line| {
                let (text, cut) = shown(line);
                for &i in &waiting {
                    if let Some(after) = matches[i]["context_after"].as_array_mut() {
                        after.push(json!(text.clone()));
                    }
                }
                waiting.retain(|&i| {
                    matches[i]["context_after"]
                        .as_array()
                        .is_some_and(|a| a.len() < context)
                });
                if Instant::now() >= deadline {
                    out = ControlFlow::Break(());
                    return ControlFlow::Break(());
                }
                let hay = String::from_utf8_lossy(line);
                if re.is_match(&hay) {
                    if matches.len() >= max {
                        truncated = true;
                        out = ControlFlow::Break(());
                        return ControlFlow::Break(());
                    }
                    let mut m = json!({
                        "file": file, "line_number": n, "line_content": text,
                        "context_before": before.iter().collect::<Vec<_>>(), "context_after": [],
                    });
                    if cut {
                        m["line_truncated"] = json!(true);
                    }
                    matches.push(m);
                    if context > 0 {
                        waiting.push(matches.len() - 1);
                    }
                }
                if context > 0 {
                    before.push_back(text);
                    if before.len() > context {
                        before.pop_front();
                    }
                }
                ControlFlow::Continue(())
            });
            out
        };
    let timed_out = match start {
        Start::File(dir, name, rel) => {
            let _ = search(&dir, &name, rel.display(), &mut matches);
            Instant::now() >= deadline
        }
        Start::Folder(dir, base) => {
            let ended = walk(&dir, max_depth, deadline, &mut |e: &Entry<'_>| {
                if excludes.excludes(e.name, e.rel) {
                    return Step::Skip;
                }
                if !e.ft.is_file() {
                    return Step::Go;
                }
                if let Some((g, by_path)) = &filter {
                    let subject = if *by_path { e.rel } else { e.name };
                    if !g.is_match(subject) {
                        return Step::Go;
                    }
                }
                match search(e.dir, e.name, join(&base, e.rel), &mut matches) {
                    ControlFlow::Break(()) => Step::Stop,
                    ControlFlow::Continue(()) => Step::Go,
                }
            });
            ended.timed_out || (Instant::now() >= deadline && !truncated)
        }
    };
    Ok(json!({
        "total_matches": matches.len(),
        "files_searched": files,
        "truncated": truncated,
        "timed_out": timed_out,
        "matches": matches,
    }))
}

/// A glob: `*` `?` `[..]` within a segment, `**` for any number of them.
fn glob(pattern: &str) -> Result<globset::GlobMatcher, ToolError> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError(format!("invalid glob: {e}")))
}

/// `glob`.
pub fn glob_tool(fs: &Fs, args: &Args<'_>) -> Outcome {
    let max = bounded(args, "max_results", 100, 10_000)?.max(1) as usize;
    let timeout = bounded(args, "timeout_seconds", 25, 300)?;
    let max_depth = args.uint("max_depth")?.map(|d| d as usize);
    let type_filter = args.str("type_filter")?.unwrap_or("all");
    let excludes = Excludes::from_args(args)?;
    if !["file", "directory", "symlink", "all"].contains(&type_filter) {
        return Err(ToolError(format!(
            "glob: type_filter {type_filter:?} is not one of file, directory, symlink, all"
        )));
    }
    enum Matcher {
        Glob(globset::GlobMatcher, bool),
        Regex(regex::Regex),
    }
    let matcher = match (args.str("pattern")?, args.str("regex")?) {
        (Some(p), None) => Matcher::Glob(glob(p)?, p.contains('/')),
        (None, Some(r)) => Matcher::Regex(
            regex::Regex::new(r).map_err(|e| ToolError(format!("invalid regex: {e}")))?,
        ),
        _ => {
            return Err(ToolError(
                "glob: give exactly one of pattern (a glob) or regex".into(),
            ));
        }
    };
    let (start, given) = start(fs, "glob", args)?;
    let Start::Folder(dir, base) = start else {
        return Err(ToolError(format!(
            "path {given:?} is a file; glob searches folders"
        )));
    };
    let deadline = Instant::now() + Duration::from_secs(timeout);
    let mut matches: Vec<Value> = Vec::new();
    let mut truncated = false;
    let ended = walk(&dir, max_depth, deadline, &mut |e: &Entry<'_>| {
        if excludes.excludes(e.name, e.rel) {
            return Step::Skip;
        }
        let kind = kind_of(&e.ft);
        if type_filter != "all" && kind != type_filter {
            return Step::Go;
        }
        let hit = match &matcher {
            Matcher::Glob(g, true) => g.is_match(e.rel),
            Matcher::Glob(g, false) => g.is_match(e.name),
            Matcher::Regex(r) => r.is_match(e.rel),
        };
        if !hit {
            return Step::Go;
        }
        if matches.len() >= max {
            truncated = true;
            return Step::Stop;
        }
        let meta = e.dir.symlink_metadata(e.name).ok();
        matches.push(json!({
            "path": join(&base, e.rel),
            "type": kind,
            "size": meta.as_ref().map_or(0, |m| m.len()),
            "modified_at": meta.and_then(|m| time(m.modified())),
        }));
        Step::Go
    });
    Ok(json!({
        "total_matches": matches.len(),
        "truncated": truncated,
        "timed_out": ended.timed_out,
        "matches": matches,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<(u64, String)> {
        let mut v = Vec::new();
        scan_lines(text.as_bytes(), |n, l| {
            v.push((n, String::from_utf8_lossy(l).into_owned()));
            ControlFlow::Continue(())
        })
        .unwrap();
        v
    }

    #[test]
    fn lines_are_numbered_and_the_last_needs_no_newline() {
        assert_eq!(
            lines("a\nb\nc"),
            [(1, "a".into()), (2, "b".into()), (3, "c".into())]
        );
        assert_eq!(
            lines("a\n\nb\n"),
            [(1, "a".into()), (2, "".into()), (3, "b".into())]
        );
        assert!(lines("").is_empty());
    }

    #[test]
    fn globs_match_segments_and_double_stars() {
        let g = glob("**/*.md").unwrap();
        assert!(g.is_match("a/b/c.md") && g.is_match("c.md") && !g.is_match("c.txt"));
        let g = glob("src/**/test/**/*.rs").unwrap();
        assert!(g.is_match("src/a/test/b/x.rs") && g.is_match("src/test/x.rs"));
        let g = glob("*.go").unwrap();
        assert!(g.is_match("main.go") && !g.is_match("a/main.go"));
        assert!(glob("[").is_err());
    }
}
