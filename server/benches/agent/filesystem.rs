//! mcp-filesystem (issue 13): the release binary over stdio, driven by a
//! real MCP client (rmcp), on trees built for the run in a temp folder:
//! - `read_file` of a 1 MiB text file: calls per second at concurrency 1,
//!   beside `std::fs::read` of the same file in this process (the floor:
//!   what is left is JSON encoding and the pipe);
//! - `grep` over 10,000 files of 10 KB (about 100 MB), beside `rg` on the
//!   same tree (target: within 3×); best of three each, page cache warm;
//! - `glob` over 100,000 entries, beside `find -name`;
//! - the most memory one call takes: the server's peak RSS is reset
//!   (`/proc/PID/clear_refs` 5) before each of the heaviest calls (a full
//!   read at the cap, a capped read of a 64 MiB file, the 100 MB grep,
//!   eight capped files in one `read_multiple_files`) and read after it
//!   (`VmHWM` − `VmRSS` before), each on a fresh server warmed by two
//!   small calls (a heap warmed by big ones would hide the growth; a cold
//!   one would count thread and arena set-up), beside 2 × `max_full_read_size`.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIB: usize = 1024 * 1024;
/// `max_full_read_size` in the bench's config (the default).
const CAP: usize = MIB;

type Client = RunningService<RoleClient, ()>;

async fn call(c: &Client, tool: &str, args: Value) -> CallToolResult {
    let map: Map<String, Value> = serde_json::from_value(args).unwrap_or_default();
    c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// The answer's JSON: `structuredContent`, or the text block (large
/// answers carry only that).
fn structured(r: &CallToolResult, tool: &str) -> Value {
    assert_ne!(r.is_error, Some(true), "{tool} failed: {:?}", r.content);
    r.structured_content.clone().unwrap_or_else(|| {
        r.content
            .first()
            .and_then(|c| c.as_text())
            .and_then(|t| serde_json::from_str(&t.text).ok())
            .unwrap_or(Value::Null)
    })
}

/// A line of text that looks like source: words, digits, punctuation.
fn text_line(seed: &mut u64, out: &mut String) {
    const WORDS: &[&str] = &[
        "let", "value", "match", "return", "config", "stream", "handle", "error", "buffer",
        "request", "answer", "approve", "tool", "root", "path", "=", "{", "}", "(", ");", "//",
    ];
    for _ in 0..10 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push_str(WORDS[(*seed >> 33) as usize % WORDS.len()]);
        out.push(' ');
    }
    out.push_str(&(*seed % 100_000).to_string());
    out.push('\n');
}

/// 10,000 files of about 10 KB in 100 folders; one file in 100 holds
/// `needle_NNN` once.
fn grep_tree(dir: &Path) {
    let mut seed = 7u64;
    for d in 0..100 {
        let sub = dir.join(format!("pkg{d:03}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..100 {
            let mut s = String::with_capacity(10_400);
            while s.len() < 10_000 {
                text_line(&mut seed, &mut s);
            }
            if f == 42 {
                s.push_str(&format!("fn needle_{d:03}() {{}}\n"));
            }
            std::fs::write(sub.join(format!("mod{f:03}.rs")), s).unwrap();
        }
    }
}

/// 100,000 entries: 1,000 folders of 99 empty files (one in ten a `.rs`).
fn glob_tree(dir: &Path) {
    for d in 0..1000 {
        let sub = dir.join(format!("d{:02}/e{d:03}", d % 10));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..99 {
            let ext = if f % 10 == 0 { "rs" } else { "txt" };
            std::fs::File::create(sub.join(format!("f{f:02}.{ext}"))).unwrap();
        }
    }
}

/// `VmHWM` or `VmRSS` of `pid`, in bytes.
fn vm(pid: u32, field: &str) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The most the server's RSS grows during `one` call.
async fn peak_growth(pid: u32, one: impl std::future::Future<Output = ()>) -> Option<usize> {
    let before = vm(pid, "VmRSS:");
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").ok()?;
    one.await;
    Some(vm(pid, "VmHWM:").saturating_sub(before))
}

/// Best wall time of `runs` runs of a command, and its stdout of the last.
fn best_of_cmd(runs: usize, cmd: &mut Command) -> Option<(Duration, String)> {
    let mut best = None::<Duration>;
    let mut out = String::new();
    for _ in 0..runs {
        let t = Instant::now();
        let o = cmd.stderr(Stdio::null()).output().ok()?;
        let d = t.elapsed();
        out = String::from_utf8_lossy(&o.stdout).to_string();
        best = Some(best.map_or(d, |b| b.min(d)));
    }
    best.map(|b| (b, out))
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

/// The release server over stdio, and its pid.
async fn start(config: &Path) -> (Client, u32) {
    let mut cmd =
        tokio::process::Command::new(test_support::process::workspace_bin("mcp-filesystem"));
    cmd.arg("--config").arg(config).stderr(Stdio::null());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let pid = transport.id().unwrap_or(0);
    (().serve(transport).await.unwrap(), pid)
}

/// The filesystem rows.
pub async fn rows(rows: &mut Vec<(String, String, String)>, quick: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("grep")).unwrap();
    std::fs::create_dir_all(root.join("glob")).unwrap();
    let t = Instant::now();
    grep_tree(&root.join("grep"));
    glob_tree(&root.join("glob"));
    let mut one_mib = String::with_capacity(CAP);
    let mut seed = 1u64;
    while one_mib.len() < CAP - 200 {
        text_line(&mut seed, &mut one_mib);
    }
    std::fs::write(root.join("one.txt"), &one_mib).unwrap();
    {
        let mut big = std::fs::File::create(root.join("big.txt")).unwrap();
        for _ in 0..64 {
            big.write_all(one_mib.as_bytes()).unwrap();
        }
    }
    eprintln!(
        "filesystem bench: trees built in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let config = tmp.path().join("fs.yaml");
    std::fs::write(
        &config,
        format!(
            "max_full_read_size: {CAP}\nroots:\n  - name: ws\n    path: '{}'\n    allowed_tools: ['*']\n",
            root.display()
        ),
    )
    .unwrap();
    let (c, _) = start(&config).await;

    // read_file of 1 MiB.
    let n = if quick { 50 } else { 300 };
    let args = json!({"root": "ws", "path": "one.txt"});
    let got = structured(&call(&c, "read_file", args.clone()).await, "read_file");
    assert_eq!(got["content"].as_str().map(str::len), Some(one_mib.len()));
    let t = Instant::now();
    for _ in 0..n {
        call(&c, "read_file", args.clone()).await;
    }
    let per_s = n as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(std::fs::read(root.join("one.txt")).unwrap());
    }
    let floor = n as f64 / t.elapsed().as_secs_f64();
    rows.push((
        "fs: read_file 1 MiB, calls/s (concurrency 1)".into(),
        format!("{per_s:.0}"),
        format!("fs::read {floor:.0}/s"),
    ));

    // grep over 10,000 files.
    let runs = if quick { 1 } else { 3 };
    let args =
        json!({"root": "ws", "path": "grep", "pattern": "needle_[0-9]+", "max_results": 1000});
    let mut best = Duration::MAX;
    let mut matches = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let v = structured(&call(&c, "grep", args.clone()).await, "grep");
        best = best.min(t.elapsed());
        matches = v["matches"].as_array().map_or(0, Vec::len);
    }
    assert_eq!(matches, 100, "grep found {matches} of the 100 needles");
    let rg = best_of_cmd(
        runs,
        Command::new("rg")
            .args(["-n", "--no-heading", "needle_[0-9]+"])
            .arg(root.join("grep")),
    );
    let rg1 = best_of_cmd(
        runs,
        Command::new("rg")
            .args(["-j1", "-n", "--no-heading", "needle_[0-9]+"])
            .arg(root.join("grep")),
    );
    let (floor, ratio) = match (&rg, &rg1) {
        (Some((d, out)), Some((d1, _))) if out.lines().count() == 100 => (
            format!("rg {} (-j1 {})", secs(*d), secs(*d1)),
            format!(" ({:.1}× rg)", best.as_secs_f64() / d.as_secs_f64()),
        ),
        _ => ("rg (not installed)".into(), String::new()),
    };
    rows.push((
        "fs: grep 10,000 files / 100 MB, best of 3".into(),
        format!("{}{ratio}", secs(best)),
        format!("≤ 3× {floor}"),
    ));

    // glob over 100,000 entries.
    let args = json!({"root": "ws", "path": "glob", "pattern": "**/f0?.rs", "max_results": 10000});
    let mut best = Duration::MAX;
    let mut found = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let v = structured(&call(&c, "glob", args.clone()).await, "glob");
        best = best.min(t.elapsed());
        found = v["matches"].as_array().map_or(0, Vec::len);
    }
    assert_eq!(found, 1000, "glob found {found} of the 1,000 names");
    let find = best_of_cmd(
        runs,
        Command::new("find")
            .arg(root.join("glob"))
            .args(["-name", "f0?.rs"]),
    );
    let floor = match &find {
        Some((d, out)) if out.lines().count() == 1000 => format!("find {}", secs(*d)),
        _ => "find failed".into(),
    };
    rows.push((
        "fs: glob over 100,000 entries, best of 3".into(),
        secs(best),
        floor,
    ));

    // The most memory one call takes: each on a fresh server, whose heap
    // holds nothing from earlier calls to reuse.
    let _ = c.cancel().await;
    let heavy: [(&str, &str, Value); 4] = [
        (
            "read_file 1 MiB",
            "read_file",
            json!({"root": "ws", "path": "one.txt"}),
        ),
        (
            "read_file 64 MiB by lines",
            "read_file",
            json!({"root": "ws", "path": "big.txt", "offset_lines": 1, "limit_lines": 10_000_000}),
        ),
        (
            "grep 100 MB",
            "grep",
            json!({"root": "ws", "path": "grep", "pattern": "needle"}),
        ),
        (
            "read_multiple_files 8 × 1 MiB",
            "read_multiple_files",
            json!({"root": "ws", "paths": vec!["one.txt"; 8]}),
        ),
    ];
    let mut last_rss = 0;
    for (what, tool, args) in heavy {
        let (c, pid) = start(&config).await;
        // Warm: the blocking thread, its malloc arena and the runtime's
        // buffers exist before the measured call, which then counts only
        // what it holds itself.
        for (tool, args) in [
            (
                "read_file",
                json!({"root": "ws", "path": "grep/pkg000/mod000.rs"}),
            ),
            (
                "grep",
                json!({"root": "ws", "path": "grep/pkg000", "pattern": "needle"}),
            ),
        ] {
            structured(&call(&c, tool, args).await, tool);
        }
        let grew = peak_growth(pid, async {
            structured(&call(&c, tool, args).await, tool);
        })
        .await;
        last_rss = vm(pid, "VmRSS:");
        let _ = c.cancel().await;
        rows.push((
            format!("fs: peak RSS growth in one call: {what}"),
            grew.map_or("n/a (no /proc)".into(), |g| {
                format!("{:.1} MiB", g as f64 / MIB as f64)
            }),
            format!("≤ ~2 × {} MiB", CAP / MIB),
        ));
    }
    rows.push((
        "fs: server RSS after one call".into(),
        format!("{:.1} MiB", last_rss as f64 / MIB as f64),
        String::new(),
    ));
}
