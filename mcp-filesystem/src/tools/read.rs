//! `read_file` (MCP-FILESYSTEM.md §5.3): whole, by bytes or by lines, and
//! never more than `max_full_read_size` of content in one call. Line mode
//! streams the file, holding at most one capped line besides the answer,
//! so a huge file or a huge line costs no more memory than the cap.

use super::context::{Args, Fs, Outcome, ToolError, rel_path, sandbox_error, text_value};
use crate::sandbox::SandboxError;
use base64::Engine;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

/// A NUL in this many first bytes makes a file binary.
const SNIFF: usize = 8192;

/// `read_file`.
pub fn read_file(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("read_file", args, "root")?;
    let (given, rel) = rel_path(root, args, "path", None)?;
    let (ob, lb) = (args.uint("offset_bytes")?, args.uint("limit_bytes")?);
    let (mut ol, mut ll) = (args.uint("offset_lines")?, args.uint("limit_lines")?);
    let (head, tail) = (args.uint("head")?, args.uint("tail")?);
    let bytes_mode = ob.is_some() || lb.is_some();
    let mut lines_mode = ol.is_some() || ll.is_some();
    let kinds = [bytes_mode, lines_mode, head.is_some(), tail.is_some()];
    if kinds.iter().filter(|k| **k).count() > 1 {
        return Err(ToolError(
            "read_file: give one of offset_bytes/limit_bytes, offset_lines/limit_lines, head or tail, not several".into(),
        ));
    }
    if let Some(n) = head {
        (ol, ll, lines_mode) = (Some(1), Some(n), true);
    }
    let mut file = root.open_read(&rel).map_err(|e| match e {
        SandboxError::NotRegular if is_dir(root, &rel) => ToolError(format!(
            "path {given:?} in root {} is a folder; use list_folder",
            root.name
        )),
        e => sandbox_error(&given, root, e),
    })?;
    let io = |e: std::io::Error| sandbox_error(&given, root, e.into());
    let size = file.metadata().map_err(io)?.len();
    let cap = fs.max_full_read_size;
    let binary = sniff_binary(&mut file).map_err(io)?;
    let mut out = json!({"path": rel.display(), "size": size});
    if let Some(n) = tail {
        if binary {
            return Err(ToolError(format!(
                "path {given:?} is a binary file: tail reads text lines; use offset_bytes/limit_bytes"
            )));
        }
        // One pass to count, one to read the last n lines.
        let total = read_lines(&mut file, 1, Some(0), cap).map_err(io)?.total;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        (ol, ll, lines_mode) = (Some(total.saturating_sub(n) + 1), Some(n), true);
    }
    if lines_mode {
        if binary {
            return Err(ToolError(format!(
                "path {given:?} is a binary file: line mode reads text; use offset_bytes/limit_bytes"
            )));
        }
        let start = ol.unwrap_or(1).max(1);
        let lines = read_lines(&mut file, start, ll, cap).map_err(io)?;
        if start > lines.total + 1 {
            return Err(ToolError(format!(
                "offset_lines {start} is past the end of the file ({} lines)",
                lines.total
            )));
        }
        out["content"] = text_value(lines.content);
        out["truncated"] = json!(lines.next.is_some());
        out["lines_total"] = json!(lines.total);
        out["offset_lines"] = json!(start);
        if let Some(n) = lines.next {
            out["next_offset_lines"] = json!(n);
        }
        out["encoding"] = json!("utf-8");
        return Ok(out);
    }
    let (offset, want) = if bytes_mode {
        let off = ob.unwrap_or(0);
        if off > size {
            return Err(ToolError(format!(
                "offset_bytes {off} is past the end of the file (size {size})"
            )));
        }
        (off, lb.unwrap_or(size - off).min(size - off))
    } else {
        if size > cap {
            return Err(ToolError(format!(
                "file too large for full read (size {}, limit {}); use offset_bytes/limit_bytes or offset_lines/limit_lines",
                human(size),
                human(cap)
            )));
        }
        (0, size)
    };
    let take = want.min(cap);
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut buf = Vec::with_capacity(take as usize);
    (&mut file).take(take).read_to_end(&mut buf).map_err(io)?;
    let end = offset + buf.len() as u64;
    let truncated = end < size;
    if binary {
        out["content"] = json!(base64::engine::general_purpose::STANDARD.encode(&buf));
        out["binary"] = json!(true);
        out["encoding"] = json!("base64");
    } else {
        out["content"] = text_value(buf);
        out["encoding"] = json!("utf-8");
    }
    out["truncated"] = json!(truncated);
    if bytes_mode {
        out["offset_bytes"] = json!(offset);
        if truncated {
            out["next_offset_bytes"] = json!(end);
        }
    }
    Ok(out)
}

fn is_dir(root: &crate::sandbox::Root, rel: &crate::path::RelPath) -> bool {
    root.resolve(rel, true)
        .ok()
        .and_then(|r| root.lstat(&r.path).ok())
        .is_some_and(|m| m.is_dir())
}

/// A NUL byte in the first [`SNIFF`] bytes.
fn sniff_binary(f: &mut cap_std::fs::File) -> std::io::Result<bool> {
    let mut head = Vec::with_capacity(SNIFF);
    f.seek(SeekFrom::Start(0))?;
    (&mut *f).take(SNIFF as u64).read_to_end(&mut head)?;
    f.seek(SeekFrom::Start(0))?;
    Ok(head.contains(&0))
}

/// `1.0MB`, `5.2MB`, `512B`.
fn human(n: u64) -> String {
    match n {
        0..1024 => format!("{n}B"),
        1024..1_048_576 => format!("{:.1}KB", n as f64 / 1024.0),
        _ => format!("{:.1}MB", n as f64 / 1_048_576.0),
    }
}

/// What a line-mode read found.
#[derive(Debug, PartialEq)]
struct Lines {
    /// The selected lines joined with `\n`.
    content: Vec<u8>,
    /// Lines in the file (a last line without a newline counts).
    total: u64,
    /// Where to go on, when the file goes on after `content`.
    next: Option<u64>,
}

/// Lines `start..start+limit` (1-based) of `r`, at most `cap` bytes of
/// content, with the file's line count. A line larger than the cap on its
/// own is cut; otherwise content stops at the last whole line that fits.
fn read_lines(r: impl Read, start: u64, limit: Option<u64>, cap: u64) -> std::io::Result<Lines> {
    let end = limit.map_or(u64::MAX, |l| start.saturating_add(l)); // exclusive
    let cap = cap as usize;
    let mut reader = BufReader::with_capacity(64 * 1024, r);
    let (mut line, mut total) = (1u64, 0u64);
    let mut cur: Vec<u8> = Vec::new();
    let mut cur_cut = false;
    let mut in_line = false;
    let mut content: Vec<u8> = Vec::new();
    let mut first = true;
    let mut stop: Option<u64> = None; // where the answer stopped short
    let finish = |line: u64,
                  cur: &mut Vec<u8>,
                  cut: bool,
                  content: &mut Vec<u8>,
                  first: &mut bool,
                  stop: &mut Option<u64>| {
        if stop.is_none() && line >= start && line < end {
            if cur.last() == Some(&b'\r') {
                cur.pop();
            }
            let need = content.len() + usize::from(!*first) + cur.len();
            if need <= cap && !cut {
                if !*first {
                    content.push(b'\n');
                }
                content.extend_from_slice(cur);
                *first = false;
            } else if *first {
                // One line larger than the cap: cut inside it.
                content.extend_from_slice(&cur[..cur.len().min(cap)]);
                *first = false;
                *stop = Some(line + 1);
            } else {
                *stop = Some(line);
            }
        }
        cur.clear();
    };
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        let mut pos = 0;
        while pos < n {
            let nl = buf[pos..].iter().position(|&b| b == b'\n');
            let seg_end = nl.map_or(n, |i| pos + i);
            let seg = &buf[pos..seg_end];
            if !seg.is_empty() {
                in_line = true;
            }
            if stop.is_none() && line >= start && line < end {
                let room = (cap + 1).saturating_sub(cur.len());
                if seg.len() > room {
                    cur.extend_from_slice(&seg[..room]);
                    cur_cut = true;
                } else {
                    cur.extend_from_slice(seg);
                }
            }
            if nl.is_some() {
                total += 1;
                finish(line, &mut cur, cur_cut, &mut content, &mut first, &mut stop);
                cur_cut = false;
                line += 1;
                in_line = false;
                pos = seg_end + 1;
            } else {
                pos = seg_end;
            }
        }
        reader.consume(n);
    }
    if in_line {
        total += 1;
        finish(line, &mut cur, cur_cut, &mut content, &mut first, &mut stop);
    }
    let next = stop.or_else(|| (total >= end).then_some(end));
    Ok(Lines {
        content,
        total,
        next: next.filter(|n| *n <= total),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str, start: u64, limit: Option<u64>, cap: u64) -> (String, u64, Option<u64>) {
        let l = read_lines(text.as_bytes(), start, limit, cap).unwrap();
        (String::from_utf8(l.content).unwrap(), l.total, l.next)
    }

    #[test]
    fn line_ranges_count_and_go_on() {
        let t = "one\ntwo\r\nthree\nfour";
        assert_eq!(
            lines(t, 1, None, 100),
            ("one\ntwo\nthree\nfour".into(), 4, None)
        );
        assert_eq!(lines(t, 2, Some(2), 100), ("two\nthree".into(), 4, Some(4)));
        assert_eq!(lines(t, 4, Some(9), 100), ("four".into(), 4, None));
        assert_eq!(lines(t, 5, None, 100), ("".into(), 4, None));
        assert_eq!(lines(t, 1, Some(0), 100), ("".into(), 4, Some(1)));
        assert_eq!(lines("a\nb\n", 1, None, 100), ("a\nb".into(), 2, None));
        assert_eq!(lines("", 1, None, 100), ("".into(), 0, None));
    }

    #[test]
    fn the_cap_stops_at_a_whole_line_or_cuts_one_huge_line() {
        let t = "aaaa\nbbbb\ncccc\n";
        assert_eq!(lines(t, 1, None, 9), ("aaaa\nbbbb".into(), 3, Some(3)));
        assert_eq!(lines(t, 1, None, 7), ("aaaa".into(), 3, Some(2)));
        let huge = format!("{}\nshort\n", "x".repeat(100));
        assert_eq!(lines(&huge, 1, None, 10), ("x".repeat(10), 2, Some(2)));
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human(512), "512B");
        assert_eq!(human(1_048_576), "1.0MB");
        assert_eq!(human(5_452_595), "5.2MB");
    }
}
