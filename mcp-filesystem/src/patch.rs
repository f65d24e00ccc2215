//! Unified diffs for `patch_file` (MCP-FILESYSTEM.md §5.6): parsing and
//! applying, with no I/O, so both can be tested and fuzzed alone.
//!
//! Accepted: `diff -u` or `git diff` output for one file, headers or not,
//! with or without a final newline. A hunk's body is read by the counts in
//! its `@@ -a,b +c,d @@` header, so a removed line `--- x` or an added
//! line `++y` is content, never a header; when the counts do not fit the
//! body (a slip common in written patches) the body runs to the next
//! `@@`, file header or end and the counts are recomputed. An empty line
//! in a body is an empty context line. `\ No newline at end of file` is
//! honoured on both sides; otherwise the file keeps its final-newline
//! state. Lines compare without a trailing `\r`, and the file keeps its
//! line endings. Each hunk goes at its stated line (shifted by the hunks
//! before it), else at the nearest place its old lines match exactly;
//! if one hunk fits nowhere the whole patch fails, naming it.

use std::fmt;

/// One hunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// `a` in `@@ -a,b`: the first old line (1-based; 0 for an insertion
    /// at the top of the file).
    pub old_start: usize,
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// `\ No newline at end of file` after an old-side line.
    pub old_no_eol: bool,
    /// The same after a new-side line.
    pub new_no_eol: bool,
}

/// A parsed patch for one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patch {
    pub hunks: Vec<Hunk>,
}

/// Why a patch cannot be read or applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchError(pub String);

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(s: impl Into<String>) -> Result<T, PatchError> {
    Err(PatchError(s.into()))
}

/// `@@ -a[,b] +c[,d] @@ ...` → (a, b, c, d).
fn hunk_header(line: &str) -> Option<(usize, usize, usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (a, b) = range(old)?;
    let (c, d) = range(new)?;
    Some((a, b, c, d))
}

/// Whether line `i` starts another file's section.
fn file_header(lines: &[&str], i: usize) -> bool {
    let l = lines[i];
    l.starts_with("diff --git ")
        || (l.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ ")))
}

fn strip_cr(s: &str) -> &str {
    s.strip_suffix('\r').unwrap_or(s)
}

/// Reads a hunk body from `lines[i..]` by its counts; the hunk and the
/// index after it, or `None` when the counts do not fit.
fn body_by_counts(lines: &[&str], mut i: usize, b: usize, d: usize) -> Option<(Hunk, usize)> {
    let mut h = Hunk {
        old_start: 0,
        old: vec![],
        new: vec![],
        old_no_eol: false,
        new_no_eol: false,
    };
    let mut last = ' ';
    while h.old.len() < b || h.new.len() < d {
        if !body_line(&mut h, lines.get(i)?, &mut last) {
            return None;
        }
        if h.old.len() > b || h.new.len() > d {
            return None;
        }
        i += 1;
    }
    // Markers right after the last line.
    while let Some(l) = lines.get(i) {
        if l.starts_with('\\') {
            mark(&mut h, last);
            i += 1;
        } else {
            break;
        }
    }
    // What follows must be another hunk, a file header, or the end (a
    // body line here means the counts were short).
    match lines.get(i) {
        None => Some((h, i)),
        Some(l) if l.starts_with("@@") || file_header(lines, i) => Some((h, i)),
        Some(_) => None,
    }
}

/// Adds body line `l` to `h` (`last` is the kind of the line before, for
/// a no-newline marker); false when `l` is not a body line.
fn body_line(h: &mut Hunk, l: &str, last: &mut char) -> bool {
    let text = || strip_cr(l.get(1..).unwrap_or("")).to_string();
    match l.chars().next() {
        // An empty line: editors strip a context line's lone space.
        None | Some(' ') => {
            h.old.push(text());
            h.new.push(text());
            *last = ' ';
        }
        Some('-') => {
            h.old.push(text());
            *last = '-';
        }
        Some('+') => {
            h.new.push(text());
            *last = '+';
        }
        Some('\\') => mark(h, *last),
        _ => return false,
    }
    true
}

/// `\ No newline at end of file` after a line of kind `last`.
fn mark(h: &mut Hunk, last: char) {
    match last {
        '-' => h.old_no_eol = true,
        '+' => h.new_no_eol = true,
        _ => {
            h.old_no_eol = true;
            h.new_no_eol = true;
        }
    }
}

/// Reads a hunk body up to the next `@@`, file header or end, whatever
/// its header said.
fn body_to_next(lines: &[&str], mut i: usize) -> (Hunk, usize) {
    let mut h = Hunk {
        old_start: 0,
        old: vec![],
        new: vec![],
        old_no_eol: false,
        new_no_eol: false,
    };
    let mut last = ' ';
    while i < lines.len() && !lines[i].starts_with("@@") && !file_header(lines, i) {
        // Anything but a body line ends the body.
        if !body_line(&mut h, lines[i], &mut last) {
            break;
        }
        i += 1;
    }
    (h, i)
}

/// Parses a patch for one file.
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let lines: Vec<&str> = if text.is_empty() {
        vec![]
    } else {
        text.split('\n').collect()
    };
    let mut hunks = Vec::new();
    let mut i = 0;
    let mut sections = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.starts_with("GIT binary patch")
            || (l.starts_with("Binary files ") && l.ends_with(" differ"))
        {
            return err("patch_file cannot apply a binary patch");
        }
        if l.starts_with("+++ ") && strip_cr(&l[4..]).split('\t').next() == Some("/dev/null") {
            return err("the patch deletes the file (+++ /dev/null); use remove_file");
        }
        if file_header(&lines, i) {
            if !hunks.is_empty() || sections > 0 && l.starts_with("diff --git ") {
                return err("the patch has more than one file section; patch one file per call");
            }
            if l.starts_with("diff --git ") {
                sections += 1;
            }
            i += 1;
            continue;
        }
        if let Some((a, b, _c, d)) = hunk_header(l) {
            let (mut h, next) = match body_by_counts(&lines, i + 1, b, d) {
                Some(found) => found,
                None => body_to_next(&lines, i + 1),
            };
            h.old_start = a;
            hunks.push(h);
            i = next;
            continue;
        }
        if !hunks.is_empty() && !l.trim().is_empty() {
            return err(format!(
                "line {} of the patch is not part of a hunk: {:?}",
                i + 1,
                cut(l)
            ));
        }
        i += 1;
    }
    if hunks.is_empty() {
        return err("the patch has no hunks (@@ -a,b +c,d @@)");
    }
    Ok(Patch { hunks })
}

fn cut(s: &str) -> String {
    s.chars().take(80).collect()
}

/// A file's text as lines, its line ending and final-newline state.
struct Text {
    lines: Vec<String>,
    crlf: bool,
    final_eol: bool,
}

fn split(content: &str) -> Text {
    let crlf = content
        .split('\n')
        .next()
        .is_some_and(|l| l.ends_with('\r'))
        && content.contains("\r\n");
    let final_eol = content.ends_with('\n');
    let body = content.strip_suffix('\n').unwrap_or(content);
    let lines = if content.is_empty() {
        vec![]
    } else {
        body.split('\n').map(|l| strip_cr(l).to_string()).collect()
    };
    Text {
        lines,
        crlf,
        final_eol,
    }
}

/// What applying did: the new text, and how far each hunk moved.
#[derive(Debug, PartialEq, Eq)]
pub struct Applied {
    pub content: String,
    pub offsets: Vec<i64>,
}

/// Applies `patch` to `content` (all or nothing).
pub fn apply(patch: &Patch, content: &str) -> Result<Applied, PatchError> {
    let Text {
        mut lines,
        crlf,
        mut final_eol,
    } = split(content);
    let was_empty = lines.is_empty();
    let mut delta: i64 = 0;
    let mut offsets = Vec::new();
    for (n, h) in patch.hunks.iter().enumerate() {
        // Where the hunk starts in the original numbering (0-based); an
        // insertion goes after line `old_start`.
        let base = if h.old.is_empty() {
            h.old_start
        } else {
            h.old_start.max(1) - 1
        } as i64;
        let want = (base + delta).clamp(0, lines.len() as i64) as usize;
        let pos = if h.old.is_empty() {
            Some(want)
        } else {
            nearest(&lines, &h.old, want)
        };
        let Some(pos) = pos else {
            let found = lines
                .get(want)
                .map(String::as_str)
                .unwrap_or("(end of file)");
            return err(format!(
                "patch failed: hunk {} does not match at line {} (expected {:?}, found {:?})",
                n + 1,
                want + 1,
                cut(h.old.first().map(String::as_str).unwrap_or("")),
                cut(found)
            ));
        };
        offsets.push(pos as i64 - want as i64);
        let touches_end = pos + h.old.len() == lines.len();
        lines.splice(pos..pos + h.old.len(), h.new.iter().cloned());
        // The original line after this hunk is now at pos + new.len().
        delta = (pos + h.new.len()) as i64 - (base + h.old.len() as i64);
        if touches_end {
            if h.new_no_eol {
                final_eol = false;
            } else if h.old_no_eol || was_empty {
                final_eol = true;
            }
        }
    }
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut out = lines.join(eol);
    if final_eol && !lines.is_empty() {
        out.push_str(eol);
    }
    Ok(Applied {
        content: out,
        offsets,
    })
}

/// The start nearest `want` where `old` matches exactly.
fn nearest(lines: &[String], old: &[String], want: usize) -> Option<usize> {
    let fits = |p: usize| p + old.len() <= lines.len() && lines[p..p + old.len()] == *old;
    let max = lines.len();
    (0..=max).find_map(|d| {
        if want >= d && fits(want - d) {
            Some(want - d)
        } else if want + d <= max && fits(want + d) {
            Some(want + d)
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(file: &str, patch: &str) -> Result<String, PatchError> {
        apply(&parse(patch)?, file).map(|a| a.content)
    }

    #[test]
    fn diff_u_with_and_without_the_final_newline() {
        let p = "--- a.txt\t2026-01-01\n+++ a.txt\t2026-01-02\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";
        assert_eq!(run("one\ntwo\nthree\n", p).unwrap(), "one\nTWO\nthree\n");
        assert_eq!(
            run("one\ntwo\nthree\n", p.trim_end()).unwrap(),
            "one\nTWO\nthree\n"
        );
    }

    #[test]
    fn git_diff_headers_are_skipped() {
        let p = "diff --git a/x b/x\nindex 83db48f..bf269f4 100644\n--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n a\n+b\n c\n";
        assert_eq!(run("a\nc\n", p).unwrap(), "a\nb\nc\n");
        let two = format!("{p}diff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-q\n+r\n");
        assert!(parse(&two).unwrap_err().0.contains("more than one file"));
    }

    #[test]
    fn add_only_hunks_at_the_end_and_the_top() {
        let p = "@@ -3,0 +4,2 @@\n+four\n+five\n";
        assert_eq!(
            run("one\ntwo\nthree\n", p).unwrap(),
            "one\ntwo\nthree\nfour\nfive\n"
        );
        let p = "@@ -0,0 +1 @@\n+zero\n";
        assert_eq!(run("one\n", p).unwrap(), "zero\none\n");
        // A new file (missing or empty).
        let p = "--- /dev/null\n+++ b/new\n@@ -0,0 +1,2 @@\n+a\n+b\n";
        assert_eq!(run("", p).unwrap(), "a\nb\n");
    }

    #[test]
    fn dashes_and_pluses_inside_a_body_are_content() {
        let file = "x\n-- y\n++ z\n";
        let p = "@@ -1,3 +1,3 @@\n x\n--- y\n+++ y2\n ++ z\n";
        assert_eq!(run(file, p).unwrap(), "x\n++ y2\n++ z\n");
    }

    #[test]
    fn no_newline_markers_on_both_sides() {
        let p = "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n";
        assert_eq!(run("a\nb", p).unwrap(), "a\nb\n");
        let p = "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n";
        assert_eq!(run("a\nb\n", p).unwrap(), "a\nb");
        let p = "@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n";
        assert_eq!(run("a\nb", p).unwrap(), "A\nb");
        // No marker: the file keeps its state.
        let p = "@@ -1 +1 @@\n-a\n+A\n";
        assert_eq!(run("a", p).unwrap(), "A");
    }

    #[test]
    fn crlf_files_keep_their_endings() {
        let p = "@@ -1,2 +1,2 @@\n a\n-b\n+B\n";
        assert_eq!(run("a\r\nb\r\n", p).unwrap(), "a\r\nB\r\n");
        let p = "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n";
        assert_eq!(run("a\r\nb\r\n", p).unwrap(), "a\r\nB\r\n");
    }

    #[test]
    fn wrong_counts_are_recomputed_and_empty_lines_are_context() {
        let p = "@@ -1,9 +1,9 @@\n a\n-b\n+B\n c\n";
        assert_eq!(run("a\nb\nc\n", p).unwrap(), "a\nB\nc\n");
        let p = "@@ -1,1 +1,1 @@\n a\n-b\n+B\n c\n";
        assert_eq!(run("a\nb\nc\n", p).unwrap(), "a\nB\nc\n");
        let p = "@@ -1,3 +1,3 @@\n a\n\n-c\n+C\n";
        assert_eq!(run("a\n\nc\n", p).unwrap(), "a\n\nC\n");
    }

    #[test]
    fn hunks_move_to_the_nearest_match_and_report_it() {
        let file = "x\ny\na\nb\nc\n";
        let p = "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n";
        let a = apply(&parse(p).unwrap(), file).unwrap();
        assert_eq!(
            (a.content.as_str(), a.offsets.clone()),
            ("x\ny\na\nB\nc\n", vec![2])
        );
        // Two hunks; the second shifted by the first.
        let file = "1\n2\n3\n4\n5\n6\n7\n8\n";
        let p = "@@ -1,2 +1,3 @@\n 1\n+1.5\n 2\n@@ -7,2 +8,2 @@\n 7\n-8\n+eight\n";
        let a = apply(&parse(p).unwrap(), file).unwrap();
        assert_eq!(a.content, "1\n1.5\n2\n3\n4\n5\n6\n7\neight\n");
        assert_eq!(a.offsets, vec![0, 0]);
    }

    #[test]
    fn a_mismatch_names_the_hunk_and_changes_nothing() {
        let p = "@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -5,2 +5,2 @@\n q\n-r\n+R\n";
        let e = run("a\nb\nc\nd\ne\nf\n", p).unwrap_err();
        assert!(
            e.0.starts_with("patch failed: hunk 2 does not match at line 5"),
            "{e}"
        );
        assert!(
            e.0.contains("expected \"q\"") && e.0.contains("found \"e\""),
            "{e}"
        );
    }

    #[test]
    fn refusals() {
        assert!(parse("").unwrap_err().0.contains("no hunks"));
        assert!(
            parse("--- a/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n")
                .unwrap_err()
                .0
                .contains("deletes")
        );
        assert!(
            parse("diff --git a/x b/x\nGIT binary patch\nliteral 5\n")
                .unwrap_err()
                .0
                .contains("binary")
        );
        assert!(
            parse("Binary files a/x and b/x differ\n")
                .unwrap_err()
                .0
                .contains("binary")
        );
    }
}
