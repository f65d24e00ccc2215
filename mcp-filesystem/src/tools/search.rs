//! `grep` and `glob` (MCP-FILESYSTEM.md §5.14–§5.15) over [`walk`]:
//! results root-relative and in path order, symlinks never followed,
//! `truncated` only when more existed, partial results on a timeout.
//! `grep` streams each file line by line (lines cut at 1 MiB), skips
//! binary and special files; its regex engine is linear-time, so no
//! pattern can backtrack catastrophically.
//!
//! [`walk`]: super::walk

use super::context::{Args, Fs, Outcome, ToolError, kind_of, rel_path, sandbox_error, time};
use super::extras::Excludes;
use super::walk::{Entry, Step, walk};
use crate::path::RelPath;
use crate::sandbox::SandboxError;
use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, OpenOptions};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// Lines longer than this are cut before matching.
const MAX_LINE: usize = 1024 * 1024;
/// `line_content` (and context lines) longer than this are cut.
const MAX_SHOWN: usize = 2000;
/// grep reads files in blocks of this size (a few lines each in unit
/// tests, so that matches and their context cross block edges there).
const READ_BUFFER: usize = if cfg!(test) { 16 } else { 256 * 1024 };
/// A NUL in this many first bytes makes a file binary (a few in unit
/// tests, so that their small files stream as big ones do).
const SNIFF: usize = if cfg!(test) { 8 } else { 8192 };

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

/// Opens a regular file of a walk for reading, with its size, or `None`
/// (links, FIFOs, devices, anything swapped in meanwhile).
fn open_regular(dir: &Dir, name: &str) -> Option<(cap_std::fs::File, u64)> {
    let mut o = OpenOptions::new();
    o.read(true);
    o.follow(FollowSymlinks::No);
    o.nonblock(true);
    let f = dir.open_with(name, &o).ok()?;
    let m = f.metadata().ok()?;
    m.is_file().then_some((f, m.len()))
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

/// Blocks of whole lines that need not be looked at line by line:
/// `quiet(block)` true means no line of the block can match, so only its
/// first and last `edge` lines (the context a neighbouring match may need)
/// are handed on, and the line numbers jump over the rest.
struct Skim<'a> {
    quiet: &'a dyn Fn(&str) -> bool,
    edge: usize,
}

/// Calls `f(line_number, line)` for each line of `reader` (without the
/// newline; cut at [`MAX_LINE`]) until it breaks, skimming quiet blocks.
/// A `&[u8]` holding a whole file is read in place, without a copy.
fn scan_lines(
    mut reader: impl BufRead,
    skim: Option<&Skim<'_>>,
    mut f: impl FnMut(u64, &[u8]) -> ControlFlow<()>,
) -> std::io::Result<()> {
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
            if let Some(s) = skim
                && !pending
                && let Some(last) = memchr::memrchr(b'\n', &buf[pos..])
            {
                let block = &buf[pos..=pos + last];
                // UTF-8 as it is, so the block reads as its lines do.
                if let Ok(text) = std::str::from_utf8(block)
                    && (s.quiet)(text)
                {
                    // Newline positions only when edge lines are wanted;
                    // a plain count otherwise (the compiler vectorises it).
                    let nls: Vec<usize> = if s.edge > 0 {
                        memchr::memchr_iter(b'\n', block).collect()
                    } else {
                        Vec::new()
                    };
                    let count = if s.edge > 0 {
                        nls.len()
                    } else {
                        block.iter().filter(|&&b| b == b'\n').count()
                    };
                    if count > 2 * s.edge {
                        let line_at = |i: usize| {
                            let start = if i == 0 { 0 } else { nls[i - 1] + 1 };
                            &block[start..nls[i]]
                        };
                        for i in (0..s.edge).chain(count - s.edge..count) {
                            if f(n + i as u64, line_at(i)).is_break() {
                                return Ok(());
                            }
                        }
                        n += count as u64;
                        pos += last + 1;
                        continue;
                    }
                }
            }
            let nl = memchr::memchr(b'\n', &buf[pos..]);
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

/// The pattern again, for whole blocks of lines, when that is sound: with
/// `^`/`$` at line ends, any match within one line is also a match within
/// the block (the reverse may not hold, which only costs a closer look).
/// Not when the pattern anchors to the text's ends (`\A`, `\z`) or may
/// turn multi-line mode off (`(?-m)`).
fn block_pattern(pattern: &str, ci: bool) -> Option<regex::Regex> {
    if pattern.contains("\\A")
        || pattern.contains("\\z")
        || pattern.contains("(?") && pattern.contains('-')
    {
        return None;
    }
    regex::RegexBuilder::new(pattern)
        .case_insensitive(ci)
        .multi_line(true)
        .build()
        .ok()
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
    let block_re = block_pattern(pattern, ci);
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
            let Some((mut f, size)) = open_regular(dir, name) else {
                return ControlFlow::Continue(());
            };
            let mut head =
                Vec::with_capacity((size as usize).saturating_add(1).min(READ_BUFFER + SNIFF));
            if (&mut f).take(SNIFF as u64).read_to_end(&mut head).is_err() || head.contains(&0) {
                return ControlFlow::Continue(());
            }
            files += 1;
            // The rest from the same descriptor (never a second open by
            // name): a file that fits one buffer is then searched in place;
            // a bigger one streams, what was sniffed first.
            let sniffed = head.len();
            if (&mut f)
                .take(READ_BUFFER as u64)
                .read_to_end(&mut head)
                .is_err()
            {
                return ControlFlow::Continue(());
            }
            let whole = head.len() - sniffed < READ_BUFFER;
            let mut before: VecDeque<String> = VecDeque::with_capacity(context + 1);
            // Matches of this file still collecting their context_after.
            let mut waiting: Vec<usize> = Vec::new();
            let mut out = ControlFlow::Continue(());
            let quiet = |block: &str| {
                Instant::now() < deadline && block_re.as_ref().is_some_and(|b| !b.is_match(block))
            };
            let skim = Skim {
                quiet: &quiet,
                edge: context,
            };
            let reader: Box<dyn BufRead> = if whole {
                Box::new(&head[..])
            } else {
                Box::new(BufReader::with_capacity(READ_BUFFER, (&head[..]).chain(f)))
            };
            let _ = scan_lines(reader, Some(&skim), |n, line| {
                // Shown text only where it is needed: matches and context.
                let text = (context > 0).then(|| shown(line));
                for &i in &waiting {
                    if let (Some(after), Some((t, _))) =
                        (matches[i]["context_after"].as_array_mut(), &text)
                    {
                        after.push(json!(t));
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
                    let (t, cut) = text.clone().unwrap_or_else(|| shown(line));
                    let mut m = json!({
                        "file": file, "line_number": n, "line_content": t,
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
                if let Some((t, _)) = text {
                    before.push_back(t);
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
        scan_lines(text.as_bytes(), None, |n, l| {
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

    /// grep's answer for `text` in a one-file root.
    fn grep_text(text: &str, pattern: &str, context: usize) -> Value {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.txt"), text).unwrap();
        let cfg = format!(
            "roots:\n  - name: ws\n    path: '{}'\n    allowed_tools: [grep]\n",
            d.path().display()
        );
        let fs = Fs::open(&crate::config::parse(&cfg).unwrap()).unwrap();
        let map = json!({"root": "ws", "pattern": pattern, "context_lines": context, "max_results": 10000});
        let map = map.as_object().unwrap().clone();
        grep(&fs, &Args::new("grep", &map)).unwrap()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Skimming blocks finds what reading every line finds: the same
        /// matches, line numbers and context (an empty `(?-u:)` group
        /// turns skimming off without changing what the pattern means).
        #[test]
        fn skimming_changes_nothing(
            lines in proptest::collection::vec(
                proptest::sample::select(vec!["a", "ab", "abc", "b c", "", "ca", "xyz", "a\u{e9}"]),
                0..40,
            ),
            crlf in proptest::bool::ANY,
            eol in proptest::bool::ANY,
            pattern in proptest::sample::select(vec![
                "a", "^a", "a$", "^$", "b+c", "\\bab\\b", "(?i)A", "a.c", "^[^a]*$", "\\s", "c\\r?$", "\\w\\W",
            ]),
            context in 0usize..4,
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(nl);
            if eol && !text.is_empty() {
                text.push_str(nl);
            }
            proptest::prop_assert!(block_pattern(pattern, false).is_some());
            let skimmed = grep_text(&text, pattern, context);
            let plain = grep_text(&text, &format!("(?-u:){pattern}"), context);
            proptest::prop_assert_eq!(&skimmed["matches"], &plain["matches"]);
        }
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
