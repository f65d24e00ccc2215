//! `make fuzz`: bounded-time fuzzing of mcp-filesystem's path resolver,
//! its tools and its patch parser (MCP-FILESYSTEM.md §4, §5.6). Not part of
//! `make test` (the tests here are `#[ignore]`d); `FUZZ_SECONDS` (default
//! 60) is the budget of each target.
//!
//! Stable Rust has no `cargo fuzz`, so this is proptest driven for a time,
//! a fresh seed per batch (printed, so a failure can be replayed with
//! `FUZZ_SEED`), shrinking a failure to a small case:
//! - `tools_never_escape`: each case builds a random tree in a root (files,
//!   folders, and links whose targets are drawn from a hostile pool:
//!   absolute and relative ways out, chains, loops, dangling), then makes
//!   random calls of every tool with random paths (`..`, `.`, empty and
//!   doubled slashes, NUL, long names, look-alikes). Afterwards the folder
//!   beside the root must be byte-for-byte as before, and no answer may
//!   carry its secret or a host path.
//! - `patch_parser_never_panics`: any text made of diff-like lines is read
//!   and applied to any content without a panic.
//! - `patch_round_trips`: the unified diff of two random texts (by
//!   `similar`, the same shape as `diff -u`) turns the first into the
//!   second exactly, CRLF and missing final newlines included.

use mcp_filesystem::tools::{Fs, SPECS};
use mcp_filesystem::{config, patch};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

fn budget() -> Duration {
    let s = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(s)
}

/// Runs `check` on values of `strategy` until the budget is spent, a new
/// seed per batch; panics with the shrunk case and its seed on a failure.
fn fuzz<S: Strategy>(name: &str, strategy: S, check: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let started = Instant::now();
    let fixed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    let mut cases = 0u64;
    let mut batch = 0u64;
    while started.elapsed() < budget() {
        let seed = fixed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                ^ batch
        });
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        let config = Config {
            cases: 256,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
        if let Err(e) = runner.run(&strategy, &check) {
            panic!("{name}: FUZZ_SEED={seed}: {e}");
        }
        cases += 256;
        batch += 1;
        if fixed.is_some() {
            break;
        }
    }
    println!(
        "fuzz {name}: {cases} cases in {:.0} s, no finding",
        started.elapsed().as_secs_f64()
    );
}

// ---- tools against hostile trees ------------------------------------------

const SECRET: &str = "SECRET-outside-the-root";

/// What a tree entry is.
#[derive(Clone, Debug)]
enum Entry {
    File,
    Folder,
    Fifo,
    /// A symlink to one of the targets in [`link_target`].
    Link(usize),
}

/// Link targets: every way out and several ways round. `{out}`/`{root}`
/// are the host paths of the outside folder and of the root.
fn link_target(i: usize, out: &Path, root: &Path) -> String {
    let out = out.display();
    let root = root.display();
    let pool = [
        "../outside".to_string(),
        "../outside/secret.txt".to_string(),
        format!("{out}"),
        format!("{out}/secret.txt"),
        format!("{out}/missing"),
        "../outside/missing".to_string(),
        "../root_evil".to_string(),
        format!("{root}_evil"),
        "../../..".to_string(),
        "/".to_string(),
        "/etc/passwd".to_string(),
        "a".to_string(),
        "b/c".to_string(),
        "l0".to_string(),
        "l1".to_string(),
        ".".to_string(),
        "..".to_string(),
        "b/../..".to_string(),
        format!("{root}/a"),
        format!("{root}/b"),
        "missing".to_string(),
    ];
    pool[i % pool.len()].clone()
}

const NAMES: &[&str] = &["a", "b", "b/c", "l0", "l1", "l2", "b/l3", "p"];

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        3 => Just(Entry::File),
        2 => Just(Entry::Folder),
        1 => Just(Entry::Fifo),
        4 => (0usize..21).prop_map(Entry::Link),
    ]
}

/// A path a caller might send.
fn hostile_path() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        8 => proptest::sample::select(vec![
            "a", "b", "c", "l0", "l1", "l2", "l3", "p", "..", ".", "", "new", "outside",
            "secret.txt", "root_evil", "a\u{2215}b", "\u{ff0e}\u{ff0e}", "b\u{0}x", "*",
        ])
        .prop_map(str::to_string),
        1 => "[a-z]{200,260}".prop_map(|s| s),
        1 => any::<String>(),
    ];
    (proptest::collection::vec(part, 0..6), any::<bool>(), 0u8..4).prop_map(|(parts, abs, long)| {
        let mut p = parts.join("/");
        if abs {
            p.insert(0, '/');
        }
        if long == 0 {
            p.push_str(&"/x".repeat(2500));
        }
        p
    })
}

/// Every file under `dir` (links not followed): path → kind and content.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let key = p.strip_prefix(dir).unwrap_or(&p).display().to_string();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let what = if m.is_dir() {
                stack.push(p.clone());
                format!("dir {:o}", m.permissions().mode_bits())
            } else if m.file_type().is_symlink() {
                format!("link {:?}", std::fs::read_link(&p).ok())
            } else if !m.is_file() {
                format!("special {:?}", m.file_type())
            } else {
                format!(
                    "file {:o} {:?}",
                    m.permissions().mode_bits(),
                    std::fs::read(&p).unwrap_or_default()
                )
            };
            out.insert(key, what);
        }
    }
    out
}

fn mkfifo(p: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes())?;
    // SAFETY: a valid NUL-terminated path; mkfifo reads it and nothing else.
    match unsafe { libc::mkfifo(c.as_ptr(), 0o600) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

trait ModeBits {
    fn mode_bits(&self) -> u32;
}

impl ModeBits for std::fs::Permissions {
    fn mode_bits(&self) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        self.mode()
    }
}

/// The arguments every tool might read; the ones a tool does not know are
/// ignored (MCP-FILESYSTEM.md §3.1).
fn arguments(p1: &str, p2: &str, n: u64) -> Map<String, Value> {
    let v = json!({
        "root": "ws",
        "path": p1,
        "source_path": p1,
        "destination_path": p2,
        "paths": [p1, p2],
        "content": "written by the fuzzer\n",
        "patch": "--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+patched\n",
        "edits": [{"old_text": "SECRET", "new_text": "gone"}],
        "pattern": if n.is_multiple_of(2) { "SECRET|root" } else { "**/*" },
        "recursive": true,
        "overwrite": n.is_multiple_of(3),
        "mode": "0777",
        "offset_bytes": n,
        "limit_lines": n,
        "max_depth": n % 5,
    });
    serde_json::from_value(v).unwrap_or_default()
}

/// One call: a tool (index into SPECS), two paths and a number.
type Call = (usize, String, String, u64);

fn tools_case((tree, calls): (Vec<Entry>, Vec<Call>)) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    let out = base.join("outside");
    let evil = base.join("root_evil");
    for d in [&root, &out, &evil] {
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("secret.txt"), SECRET).unwrap();
    }
    std::fs::write(root.join("secret.txt"), "inside\n").unwrap();
    for (name, e) in NAMES.iter().zip(&tree) {
        let p = root.join(name);
        // Only under a real folder of the root: the fixture itself must
        // not write through a link it just made.
        let parent_ok = p
            .parent()
            .and_then(|d| std::fs::symlink_metadata(d).ok())
            .is_some_and(|m| m.is_dir());
        if !parent_ok {
            continue;
        }
        let _ = match e {
            Entry::File => std::fs::write(&p, "inside text\n"),
            Entry::Folder => std::fs::create_dir_all(&p),
            Entry::Fifo => mkfifo(&p),
            Entry::Link(i) => std::os::unix::fs::symlink(link_target(*i, &out, &root), &p),
        };
    }
    let outside_before = (snapshot(&out), snapshot(&evil));
    let cfg = format!(
        "max_full_read_size: 4096\nroots:\n  - name: ws\n    path: '{}'\n    allowed_tools: ['*']\n",
        root.display()
    );
    let checked = config::parse(&cfg).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
    let fs = Fs::open(&checked).unwrap();
    let host = base.display().to_string();
    for (tool, p1, p2, n) in &calls {
        let spec = &SPECS[tool % SPECS.len()];
        let args = arguments(p1, p2, *n);
        let answer = match (spec.run)(&fs, &mcp_filesystem::tools::Args::new(spec.name, &args)) {
            Ok(v) => v.to_string(),
            Err(e) => e.0,
        };
        prop_assert!(
            !answer.contains(SECRET),
            "{} {p1:?} {p2:?} answered the outside secret: {answer}",
            spec.name
        );
        prop_assert!(
            !answer.contains(&host),
            "{} {p1:?} {p2:?} answered a host path: {answer}",
            spec.name
        );
    }
    prop_assert_eq!(
        (snapshot(&out), snapshot(&evil)),
        outside_before,
        "a call changed something outside the root: {:?}",
        calls
    );
    Ok(())
}

#[test]
#[ignore = "fuzzing: make fuzz"]
fn tools_never_escape() {
    let strategy = (
        proptest::collection::vec(entry(), NAMES.len()),
        proptest::collection::vec(
            (
                0usize..SPECS.len(),
                hostile_path(),
                hostile_path(),
                0u64..20,
            ),
            1..6,
        ),
    );
    fuzz("tools_never_escape", strategy, tools_case);
}

// ---- the patch parser ------------------------------------------------------

fn diffish_line() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "--- a/f.txt",
            "+++ b/f.txt",
            "--- /dev/null",
            "diff --git a/f b/f",
            "index 1..2 100644",
            "@@ -1 +1 @@",
            "@@ -1,3 +1,4 @@",
            "@@ -0,0 +1,2 @@",
            "@@ -5,2 +4,0 @@",
            "@@ -18446744073709551615,3 +1 @@",
            "@@ -1,99999999999 +1,2 @@",
            "@@ @@",
            "@@ -x +y @@",
            "\\ No newline at end of file",
            "Binary files a and b differ",
            "+",
            "-",
            " ",
            "",
            "--",
            "++",
            "+--",
            "-++",
            "+\r",
            " line\r",
            "\t",
        ])
        .prop_map(str::to_string),
        "[-+ ][a-c]{0,3}".prop_map(|s| s),
        any::<String>(),
    ]
}

#[test]
#[ignore = "fuzzing: make fuzz"]
fn patch_parser_never_panics() {
    let strategy = (
        proptest::collection::vec(diffish_line(), 0..30),
        any::<bool>(),
        proptest::collection::vec("[a-c]{0,3}", 0..10),
        any::<bool>(),
    );
    fuzz(
        "patch_parser_never_panics",
        strategy,
        |(lines, crlf, content, eol)| {
            let nl = if crlf { "\r\n" } else { "\n" };
            let text = lines.join(nl);
            let mut content = content.join(nl);
            if eol && !content.is_empty() {
                content.push_str(nl);
            }
            if let Ok(p) = patch::parse(&text) {
                let _ = patch::apply(&p, &content);
            }
            Ok(())
        },
    );
}

fn text() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec("[a-d]{0,2}", 0..24),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, eol, crlf)| {
            let nl = if crlf { "\r\n" } else { "\n" };
            let mut s = lines.join(nl);
            if eol && !lines.is_empty() {
                s.push_str(nl);
            }
            s
        })
}

#[test]
#[ignore = "fuzzing: make fuzz"]
fn patch_round_trips() {
    fuzz("patch_round_trips", (text(), text()), |(old, new)| {
        // One line-ending style per file, as the tool expects of a file.
        let new = if old.contains("\r\n") {
            new.replace("\r\n", "\n").replace('\n', "\r\n")
        } else {
            new.replace("\r\n", "\n")
        };
        if old == new {
            return Ok(());
        }
        let diff = similar::TextDiff::from_lines(&old, &new)
            .unified_diff()
            .context_radius(3)
            .header("a/f.txt", "b/f.txt")
            .to_string();
        let p = patch::parse(&diff).map_err(|e| TestCaseError::fail(format!("{e}: {diff:?}")))?;
        let got =
            patch::apply(&p, &old).map_err(|e| TestCaseError::fail(format!("{e}: {diff:?}")))?;
        prop_assert_eq!(got.content, new, "diff {:?}", diff);
        Ok(())
    });
}
