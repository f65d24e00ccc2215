//! `mcp-filesystem`, the real binary, driven by a real MCP client (rmcp)
//! over stdio and Streamable HTTP (MCP-FILESYSTEM.md §1–§5): the tool list
//! and annotations, the allowlists, arguments in the spellings providers
//! send, and the escape corpus through every tool that takes a path:
//! nothing outside the temp root is read, listed or hashed, and no answer
//! carries outside content or a host path.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value, json};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Stdio;

const SECRET: &str = "TOP-SECRET-OUTSIDE";

struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    config: PathBuf,
}

/// Paths that try to leave `ws` (with a 5,000-byte one added where used).
const HOSTILE: &[&str] = &[
    "..",
    "../outside/secret",
    "sub/../../outside/secret",
    "/../outside/secret",
    "abs_out",
    "rel_out",
    "prefix_out",
    "dir_out",
    "dir_out/secret",
    "dangling_out",
    "chain_out",
    "loop_a",
    "a\u{0}b",
    "\u{ff0e}\u{ff0e}/outside/secret",
    "..\\outside\\secret",
    "%2e%2e/outside/secret",
];

/// `ws` (every tool), `docs` (read-only), and outside them a secret, a
/// sibling sharing ws's name prefix, and hostile links inside ws.
fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    for d in ["ws/sub/deep", "docs", "scratch", "outside/dir", "ws-evil"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    let ws = base.join("ws");
    std::fs::write(ws.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(ws.join("sub/deep/note.md"), "deep note").unwrap();
    std::fs::write(ws.join("bin.dat"), b"\x00\x01\x02binary").unwrap();
    std::fs::write(base.join("docs/readme.md"), "# docs").unwrap();
    std::fs::write(base.join("outside/secret"), SECRET).unwrap();
    std::fs::write(base.join("outside/dir/secret"), SECRET).unwrap();
    std::fs::write(base.join("ws-evil/secret"), SECRET).unwrap();
    let l = |target: &Path, at: &str| symlink(target, ws.join(at)).unwrap();
    l(&base.join("outside/secret"), "abs_out");
    l(Path::new("../outside/secret"), "rel_out");
    l(Path::new("../ws-evil/secret"), "prefix_out");
    l(&base.join("outside/dir"), "dir_out");
    l(&base.join("outside/nothing"), "dangling_out");
    l(Path::new("rel_out"), "chain_out");
    l(Path::new("loop_b"), "loop_a");
    l(Path::new("loop_a"), "loop_b");
    l(Path::new("a.txt"), "in_link");
    l(&ws.join("sub/deep"), "in_abs_dir");
    let status = std::process::Command::new("mkfifo")
        .arg(ws.join("fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    // A hard link to an outside file cannot be told apart (MCP-FILESYSTEM
    // §4.4); it is not in the corpus of things that must be refused.
    let config = base.join("mcp-filesystem.yaml");
    std::fs::write(
        &config,
        format!(
            "roots:\n  - {{name: ws, path: '{}', allowed_tools: ['*']}}\n  - {{name: docs, path: '{}', allowed_tools: [read_file, list_folder, stat_file, glob]}}\n  - {{name: scratch, path: '{}', allowed_tools: [copy, move, read_file, list_folder]}}\n",
            ws.display(),
            base.join("docs").display(),
            base.join("scratch").display()
        ),
    )
    .unwrap();
    World {
        _tmp: tmp,
        base,
        config,
    }
}

async fn client(config: &Path) -> RunningService<RoleClient, ()> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-filesystem"));
    cmd.arg("--config").arg(config).stderr(Stdio::null());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    ().serve(transport).await.unwrap()
}

async fn call(c: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> CallToolResult {
    let map: Map<String, Value> = serde_json::from_value(args).unwrap();
    c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await
        .unwrap()
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("")
}

/// The JSON answer of a successful call (text and structuredContent agree).
fn ok(r: &CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "{}", text(r));
    let v: Value = serde_json::from_str(&text(r)).unwrap();
    assert_eq!(r.structured_content.as_ref(), Some(&v));
    v
}

fn err(r: &CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "expected an error: {}", text(r));
    text(r)
}

#[tokio::test]
async fn tools_annotations_roots_and_allowlists() {
    let w = world();
    let c = client(&w.config).await;
    let tools = c.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names[0], "list_roots", "{names:?}");
    for t in &tools {
        let a = t.annotations.as_ref().unwrap();
        assert_eq!(a.open_world_hint, Some(false), "{}", t.name);
        if [
            "list_roots",
            "list_folder",
            "read_file",
            "stat_file",
            "hash_file",
            "permissions_file",
        ]
        .contains(&t.name.as_ref())
        {
            assert_eq!(
                (a.read_only_hint, a.destructive_hint),
                (Some(true), Some(false)),
                "{}",
                t.name
            );
        }
        if t.name != "list_roots" {
            assert!(
                t.description
                    .as_deref()
                    .unwrap_or("")
                    .contains("list_roots"),
                "{}",
                t.name
            );
        }
    }
    let roots = ok(&call(&c, "list_roots", json!({})).await);
    assert_eq!(roots["roots"][0]["name"], "docs");
    assert_eq!(roots["roots"][0]["read_only"], true);
    assert_eq!(
        roots["roots"][0]["allowed_tools"],
        json!(["glob", "list_folder", "read_file", "stat_file"])
    );
    assert_eq!(roots["roots"][2]["read_only"], false);
    assert!(!roots.to_string().contains(&w.base.display().to_string()));
    // Allowlist, unknown root, unknown tool.
    let e = err(&call(
        &c,
        "hash_file",
        json!({"root": "docs", "path": "readme.md"}),
    )
    .await);
    assert!(
        e.contains("not allowed on root docs (allowed: glob, list_folder, read_file, stat_file)"),
        "{e}"
    );
    let e = err(&call(&c, "read_file", json!({"root": "nope", "path": "a"})).await);
    assert!(
        e.contains("unknown root: nope (roots: docs, scratch, ws)"),
        "{e}"
    );
    let r = c
        .call_tool(CallToolRequestParams::new("rm_rf"))
        .await
        .unwrap();
    assert!(err(&r).contains("not allowed on any root"));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn read_file_modes_and_argument_spellings() {
    let w = world();
    let c = client(&w.config).await;
    let v = ok(&call(&c, "read_file", json!({"root": "ws", "path": "/a.txt"})).await);
    assert_eq!(
        (v["content"].as_str(), v["truncated"].as_bool()),
        (Some("one\ntwo\nthree\n"), Some(false))
    );
    let v = ok(&call(
        &c,
        "read_file",
        json!({"root": "ws", "path": "a.txt", "offset_lines": "2", "limit_lines": 1.0}),
    )
    .await);
    assert_eq!(v["content"], "two");
    assert_eq!(
        (v["lines_total"].as_u64(), v["next_offset_lines"].as_u64()),
        (Some(3), Some(3))
    );
    let v = ok(&call(
        &c,
        "read_file",
        json!({"root": "ws", "path": "a.txt", "offset_bytes": 4, "limit_bytes": 3}),
    )
    .await);
    assert_eq!(
        (v["content"].as_str(), v["next_offset_bytes"].as_u64()),
        (Some("two"), Some(7))
    );
    let v = ok(&call(
        &c,
        "read_file",
        json!({"root": "ws", "path": "a.txt", "offset_bytes": 14}),
    )
    .await);
    assert_eq!(
        (v["content"].as_str(), v["truncated"].as_bool()),
        (Some(""), Some(false))
    );
    let e = err(&call(
        &c,
        "read_file",
        json!({"root": "ws", "path": "a.txt", "offset_bytes": 900}),
    )
    .await);
    assert!(
        e.contains("offset_bytes 900 is past the end of the file (size 14)"),
        "{e}"
    );
    let e = err(&call(
        &c,
        "read_file",
        json!({"root": "ws", "path": "a.txt", "offset_bytes": -1}),
    )
    .await);
    assert!(e.contains("offset_bytes"), "{e}");
    let e = err(&call(
        &c,
        "read_file",
        json!({"root": "ws", "path": "a.txt", "offset_bytes": 1, "offset_lines": 1}),
    )
    .await);
    assert!(e.contains("not several"), "{e}");
    let e = err(&call(&c, "read_file", json!({"root": "ws"})).await);
    assert!(e.contains("path is required"), "{e}");
    let v = ok(&call(&c, "read_file", json!({"root": "ws", "path": "bin.dat"})).await);
    assert_eq!(
        (v["binary"].as_bool(), v["encoding"].as_str()),
        (Some(true), Some("base64"))
    );
    assert_eq!(v["content"], "AAECYmluYXJ5");
    let v = ok(&call(&c, "read_file", json!({"root": "ws", "path": "in_link"})).await);
    assert_eq!(v["content"], "one\ntwo\nthree\n");
    let e = err(&call(&c, "read_file", json!({"root": "ws", "path": "sub"})).await);
    assert!(e.contains("is a folder"), "{e}");
    // A FIFO answers at once.
    let e = err(&call(&c, "read_file", json!({"root": "ws", "path": "fifo"})).await);
    assert!(e.contains("not a regular file"), "{e}");
    let v = ok(&call(
        &c,
        "hash_file",
        json!({"root": "ws", "path": "a.txt", "algorithm": "SHA-256"}),
    )
    .await);
    assert_eq!(v["size"], 14);
    let v = ok(&call(&c, "list_folder", json!({"root": "ws"})).await);
    let entries = v["entries"].as_array().unwrap();
    let of = |n: &str| entries.iter().find(|e| e["name"] == n).unwrap().clone();
    assert_eq!(of("abs_out")["target_type"], "external");
    assert_eq!(of("dangling_out")["target_type"], "external");
    assert_eq!(of("in_link")["target_type"], "file");
    assert_eq!(of("in_abs_dir")["target_type"], "directory");
    assert_eq!(of("loop_a")["target_type"], "missing");
    assert_eq!(of("sub")["type"], "directory");
    let v = ok(&call(&c, "stat_file", json!({"root": "ws", "path": "in_link"})).await);
    assert_eq!(
        (
            v["is_symlink"].as_bool(),
            v["target"].as_str(),
            v["size"].as_u64()
        ),
        (Some(true), Some("a.txt"), Some(14))
    );
    let v = ok(&call(&c, "stat_file", json!({"root": "ws", "path": "abs_out"})).await);
    assert_eq!(v["target_type"], "external");
    assert!(v.get("target").is_none());
    assert_ne!(v["size"].as_u64(), Some(SECRET.len() as u64 + 1000));
    let v = ok(&call(
        &c,
        "permissions_file",
        json!({"root": "ws", "path": "a.txt"}),
    )
    .await);
    assert!(
        v["mode"].as_str().unwrap().len() == 4
            && v["mode_string"].as_str().unwrap().starts_with('-')
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn the_escape_corpus_gets_nothing_from_outside() {
    let w = world();
    let c = client(&w.config).await;
    let long = "a/".repeat(2500);
    let hostile: Vec<&str> = HOSTILE.iter().copied().chain([long.as_str()]).collect();
    let host = w.base.display().to_string();
    for tool in [
        "read_file",
        "list_folder",
        "hash_file",
        "permissions_file",
        "stat_file",
    ] {
        for p in hostile.iter().copied() {
            let r = call(&c, tool, json!({"root": "ws", "path": p})).await;
            let t = text(&r);
            assert!(!t.contains(SECRET), "{tool} {p:?} leaked the secret");
            assert!(!t.contains(&host), "{tool} {p:?} leaked a host path: {t}");
            // stat_file may describe the link itself; everything else fails.
            if tool != "stat_file" || !p.ends_with("_out") && p != "loop_a" {
                assert_eq!(r.is_error, Some(true), "{tool} {p:?}: {t}");
            }
        }
    }
    c.cancel().await.unwrap();
}

/// Everything under `dir` (links not followed): path → kind, mode and
/// content.
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let what = if m.is_dir() {
                stack.push(p.clone());
                format!("dir {:o}", m.permissions().mode())
            } else if m.file_type().is_symlink() {
                format!("link {:?}", std::fs::read_link(&p).unwrap())
            } else {
                format!(
                    "file {:o} {:?}",
                    m.permissions().mode(),
                    std::fs::read(&p).unwrap()
                )
            };
            out.push((p.display().to_string(), what));
        }
    }
    out.sort();
    out
}

/// The corpus through every tool that takes a path, the mutating ones
/// included, each path in every path argument: nothing outside the root
/// changes (content, mode, links), and no answer carries the secret or a
/// host path.
#[tokio::test]
async fn the_escape_corpus_through_every_tool_changes_nothing_outside() {
    let w = world();
    let c = client(&w.config).await;
    let long = "a/".repeat(2500);
    // The read-only corpus, a 5,000-byte path, and places a write could
    // land: the root itself, new names behind links out, a FIFO.
    let extra = ["/", "../outside/new", "dir_out/new", "loop_a/new", "fifo"];
    let hostile: Vec<&str> = HOSTILE
        .iter()
        .copied()
        .chain([long.as_str()])
        .chain(extra)
        .collect();
    let outside = [w.base.join("outside"), w.base.join("ws-evil")];
    let before: Vec<_> = outside.iter().map(|d| snapshot(d)).collect();
    let host = w.base.display().to_string();
    let tools: Value = serde_json::to_value(c.list_all_tools().await.unwrap()).unwrap();
    let mut calls = 0;
    for tool in tools.as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        if name == "list_roots" {
            continue;
        }
        for p in hostile.iter().copied() {
            // The hostile path as source and as destination, beside a
            // harmless one.
            for (p1, p2) in [(p, "copy_target"), ("a.txt", p), (p, p)] {
                let args = json!({
                    "root": "ws", "path": p1, "source_path": p1, "destination_path": p2,
                    "source_root": "ws", "dest_root": "ws", "dest_path": p2,
                    "paths": [p1, p2], "content": "written\n", "overwrite": true,
                    "recursive": true, "pattern": "TOP|one", "dry_run": false,
                    "patch": "--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+patched\n",
                    "edits": [{"old_text": "TOP-SECRET", "new_text": "gone"}],
                });
                let r = call(&c, name, args).await;
                calls += 1;
                let t = text(&r);
                assert!(
                    !t.contains(SECRET),
                    "{name} {p1:?} {p2:?} leaked the secret: {t}"
                );
                assert!(
                    !t.contains(&host),
                    "{name} {p1:?} {p2:?} leaked a host path: {t}"
                );
            }
        }
    }
    let after: Vec<_> = outside.iter().map(|d| snapshot(d)).collect();
    assert_eq!(after, before, "something outside the root changed");
    assert!(calls > 16 * hostile.len() * 3 - 1, "{calls} calls");
    // The server is still up and the root still works.
    let v = ok(&call(
        &c,
        "read_file",
        json!({"root": "ws", "path": "sub/deep/note.md"}),
    )
    .await);
    assert_eq!(v["content"], "deep note");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn http_refuses_foreign_origins_and_hosts_and_a_bad_config_exits_2() {
    let w = world();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-filesystem"));
    cmd.arg("--config")
        .arg(&w.config)
        .args(["--http", "127.0.0.1:0"]);
    let mut server = test_support::process::Process::server(cmd, "mcp-filesystem --http");
    let url = format!("http://{}", server.ready);
    let base = url.trim_end_matches("/mcp").to_string();
    let http = reqwest::Client::new();
    let health: Value = http
        .get(format!("{base}/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health, json!({"status": "ok"}));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |origin: Option<&str>, host: Option<&str>| {
        let mut r = http
            .post(&url)
            .header("Accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(o) = origin {
            r = r.header("Origin", o);
        }
        if let Some(h) = host {
            r = r.header("Host", h);
        }
        r.send()
    };
    assert_eq!(
        post(Some("http://evil.example"), None)
            .await
            .unwrap()
            .status(),
        403
    );
    assert_eq!(
        post(None, Some("evil.example")).await.unwrap().status(),
        403
    );
    assert_eq!(
        post(Some("http://localhost:5173"), None)
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(post(None, None).await.unwrap().status(), 200);
    // A real client over HTTP.
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.clone());
    let c = ().serve(transport).await.unwrap();
    let v = ok(&call(
        &c,
        "read_file",
        json!({"root": "docs", "path": "readme.md"}),
    )
    .await);
    assert_eq!(v["content"], "# docs");
    c.cancel().await.unwrap();
    server.kill9();

    // A config with a typo: exit 2, one line naming the file and the key.
    let bad = w.base.join("bad.yaml");
    std::fs::write(
        &bad,
        "roots:\n  - {name: ws, path: '/tmp', allowed_tool: ['*']}\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-filesystem"))
        .arg("--config")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.yaml") && err.contains("allowed_tool"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[tokio::test]
async fn writes_are_atomic_contained_and_links_are_names() {
    let w = world();
    let c = client(&w.config).await;
    let ws = w.base.join("ws");
    // Create with parents, overwrite keeps the mode, append, create_only.
    let v = ok(&call(
        &c,
        "write_file",
        json!({"root": "ws", "path": "new/dir/f.txt", "content": "hello"}),
    )
    .await);
    assert_eq!(
        (v["created"].as_bool(), v["size"].as_u64()),
        (Some(true), Some(5))
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("new/dir/f.txt")).unwrap(),
        "hello"
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        ws.join("new/dir/f.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let v = ok(&call(
        &c,
        "write_file",
        json!({"root": "ws", "path": "new/dir/f.txt", "content": ""}),
    )
    .await);
    assert_eq!(v["created"], false);
    assert_eq!(
        std::fs::read_to_string(ws.join("new/dir/f.txt")).unwrap(),
        ""
    );
    let mode = std::fs::metadata(ws.join("new/dir/f.txt"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600, "overwrite kept the permission bits");
    ok(&call(
        &c,
        "write_file",
        json!({"root": "ws", "path": "new/dir/f.txt", "content": "a", "mode": "append"}),
    )
    .await);
    ok(&call(
        &c,
        "write_file",
        json!({"root": "ws", "path": "new/dir/f.txt", "content": "b", "mode": "append"}),
    )
    .await);
    assert_eq!(
        std::fs::read_to_string(ws.join("new/dir/f.txt")).unwrap(),
        "ab"
    );
    for (args, want) in [
        (
            json!({"root": "ws", "path": "a.txt", "content": "x", "mode": "create_only"}),
            "already exists",
        ),
        (
            json!({"root": "ws", "path": "in_link", "content": "x", "mode": "create_only"}),
            "already exists",
        ),
        (
            json!({"root": "ws", "path": "a.txt", "content": "x", "mode": "truncate"}),
            "overwrite, append, create_only",
        ),
        (
            json!({"root": "ws", "path": "sub", "content": "x"}),
            "is a folder",
        ),
    ] {
        let e = err(&call(&c, "write_file", args.clone()).await);
        assert!(e.contains(want), "{args}: {e}");
    }
    // Through an in-root link: the target changes, the link stays a link.
    ok(&call(
        &c,
        "write_file",
        json!({"root": "ws", "path": "in_link", "content": "via link"}),
    )
    .await);
    assert!(
        std::fs::symlink_metadata(ws.join("in_link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "via link"
    );
    // Never through a link that leaves, dangling or not, in any mode.
    for p in [
        "abs_out",
        "rel_out",
        "dangling_out",
        "dir_out/new",
        "chain_out",
        "prefix_out",
    ] {
        for mode in ["overwrite", "append", "create_only"] {
            let r = call(
                &c,
                "write_file",
                json!({"root": "ws", "path": p, "content": "pwned", "mode": mode}),
            )
            .await;
            assert_eq!(r.is_error, Some(true), "{p} {mode}: {}", text(&r));
        }
        let r = call(
            &c,
            "create_folder",
            json!({"root": "ws", "path": format!("{p}/x")}),
        )
        .await;
        assert_eq!(r.is_error, Some(true), "create_folder {p}: {}", text(&r));
    }
    assert!(
        !w.base.join("outside/nothing").exists(),
        "created through a dangling link"
    );
    assert!(!w.base.join("outside/dir/new").exists());
    assert_eq!(
        std::fs::read_to_string(w.base.join("outside/secret")).unwrap(),
        SECRET
    );
    assert_eq!(
        std::fs::read_to_string(w.base.join("ws-evil/secret")).unwrap(),
        SECRET
    );
    // A hard link to an outside file: overwrite replaces the name, never
    // the outside inode; append refuses it.
    std::fs::hard_link(w.base.join("outside/secret"), ws.join("hard")).unwrap();
    let e = err(&call(
        &c,
        "write_file",
        json!({"root": "ws", "path": "hard", "content": "x", "mode": "append"}),
    )
    .await);
    assert!(e.contains("hard links"), "{e}");
    ok(&call(
        &c,
        "write_file",
        json!({"root": "ws", "path": "hard", "content": "replaced"}),
    )
    .await);
    assert_eq!(
        std::fs::read_to_string(w.base.join("outside/secret")).unwrap(),
        SECRET
    );
    // create_folder: idempotent; a file in the way is an error.
    let v = ok(&call(
        &c,
        "create_folder",
        json!({"root": "ws", "path": "made/deeper"}),
    )
    .await);
    assert_eq!(v["created"], true);
    let v = ok(&call(
        &c,
        "create_folder",
        json!({"root": "ws", "path": "made/deeper"}),
    )
    .await);
    assert_eq!(v["created"], false);
    assert!(
        err(&call(&c, "create_folder", json!({"root": "ws", "path": "a.txt"})).await)
            .contains("is a file")
    );
    // remove_file removes links themselves, refuses folders.
    ok(&call(&c, "remove_file", json!({"root": "ws", "path": "abs_out"})).await);
    assert!(
        w.base.join("outside/secret").exists(),
        "the link's target was removed"
    );
    assert!(!ws.join("abs_out").exists() && std::fs::symlink_metadata(ws.join("abs_out")).is_err());
    assert!(
        err(&call(&c, "remove_file", json!({"root": "ws", "path": "sub"})).await)
            .contains("remove_folder")
    );
    assert!(
        err(&call(&c, "remove_file", json!({"root": "ws", "path": "nope"})).await)
            .contains("does not exist")
    );
    // remove_folder: recursive, links inside unlinked not followed; never
    // the root, a link, or a file.
    symlink(w.base.join("outside/dir"), ws.join("made/deeper/out")).unwrap();
    std::fs::write(ws.join("made/deeper/f"), "x").unwrap();
    let v = ok(&call(&c, "remove_folder", json!({"root": "ws", "path": "made"})).await);
    assert_eq!(v["entries_removed"], 3);
    assert!(!ws.join("made").exists());
    assert_eq!(
        std::fs::read_to_string(w.base.join("outside/dir/secret")).unwrap(),
        SECRET
    );
    for p in [".", "/", "sub/..", ""] {
        assert!(
            err(&call(&c, "remove_folder", json!({"root": "ws", "path": p})).await)
                .contains("never removed"),
            "{p}"
        );
    }
    assert!(
        err(&call(
            &c,
            "remove_folder",
            json!({"root": "ws", "path": "dir_out"})
        )
        .await)
        .contains("symlink")
    );
    assert!(
        err(&call(&c, "remove_folder", json!({"root": "ws", "path": "a.txt"})).await)
            .contains("remove_file")
    );
    // The read-only root refuses every write.
    let e = err(&call(
        &c,
        "write_file",
        json!({"root": "docs", "path": "x", "content": "y"}),
    )
    .await);
    assert!(e.contains("not allowed on root docs"), "{e}");
    assert!(ws.exists() && w.base.join("docs/readme.md").exists());
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_directory_swapped_for_an_outside_link_in_a_loop_never_lets_a_write_out() {
    let w = world();
    let c = client(&w.config).await;
    let ws = w.base.join("ws");
    std::fs::create_dir_all(ws.join("race")).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (ws, base, stop) = (ws.clone(), w.base.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::rename(ws.join("race"), ws.join("race-real"));
                let _ = symlink(base.join("outside/dir"), ws.join("race"));
                // Leave the link in place long enough for calls to meet it.
                std::thread::sleep(std::time::Duration::from_micros(300));
                let _ = std::fs::remove_file(ws.join("race"));
                let _ = std::fs::rename(ws.join("race-real"), ws.join("race"));
            }
        })
    };
    let mut refused = 0;
    for i in 0..300 {
        let r = call(
            &c,
            "write_file",
            json!({"root": "ws", "path": format!("race/f{i}"), "content": "pwned"}),
        )
        .await;
        if r.is_error == Some(true) {
            refused += 1;
        }
        let r = call(
            &c,
            "read_file",
            json!({"root": "ws", "path": "race/secret"}),
        )
        .await;
        assert!(!text(&r).contains(SECRET), "read through the swapped link");
        let _ = call(
            &c,
            "create_folder",
            json!({"root": "ws", "path": format!("race/d{i}")}),
        )
        .await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    // The swap did meet some calls (else this test proves nothing).
    assert!(refused > 0, "no write met the swapped link");
    let outside: Vec<_> = std::fs::read_dir(w.base.join("outside/dir"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        outside,
        vec![std::ffi::OsString::from("secret")],
        "something was written outside"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn copy_and_move_stay_inside_and_never_swallow_themselves() {
    let w = world();
    let c = client(&w.config).await;
    let ws = w.base.join("ws");
    let cp = |sr: &str, sp: &str, dr: &str, dp: &str| json!({"source_root": sr, "source_path": sp, "dest_root": dr, "dest_path": dp});
    // A file, replacing one at the destination; setuid dropped.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(ws.join("a.txt"), std::fs::Permissions::from_mode(0o4755)).unwrap();
    let v = ok(&call(&c, "copy", cp("ws", "a.txt", "scratch", "x/copied.txt")).await);
    assert_eq!(
        (v["is_directory"].as_bool(), v["size"].as_u64()),
        (Some(false), Some(14))
    );
    let copied = w.base.join("scratch/x/copied.txt");
    assert_eq!(
        std::fs::read_to_string(&copied).unwrap(),
        "one\ntwo\nthree\n"
    );
    assert_eq!(
        std::fs::metadata(&copied).unwrap().permissions().mode() & 0o7777,
        0o755
    );
    ok(&call(
        &c,
        "copy",
        cp("ws", "sub/deep/note.md", "scratch", "x/copied.txt"),
    )
    .await);
    assert_eq!(std::fs::read_to_string(&copied).unwrap(), "deep note");
    // A folder: links and specials skipped and listed, nothing from outside.
    std::fs::create_dir_all(ws.join("tree/inner")).unwrap();
    std::fs::write(ws.join("tree/inner/f"), "f").unwrap();
    symlink(w.base.join("outside/secret"), ws.join("tree/leak")).unwrap();
    symlink(w.base.join("outside/dir"), ws.join("tree/leakdir")).unwrap();
    let v = ok(&call(&c, "copy", cp("ws", "tree", "scratch", "tree2")).await);
    assert_eq!(v["files_copied"], 1);
    assert_eq!(v["skipped"], json!(["tree/leak", "tree/leakdir"]));
    assert!(!w.base.join("scratch/tree2/leak").exists());
    assert_eq!(
        std::fs::read_to_string(w.base.join("scratch/tree2/inner/f")).unwrap(),
        "f"
    );
    // Refused: into itself, onto an existing folder, the root into itself,
    // a leaving link as source, a read-only destination.
    for (args, want) in [
        (cp("ws", "tree", "ws", "tree/inner/again"), "into itself"),
        (cp("ws", ".", "ws", "copy-of-root"), "into itself"),
        (cp("ws", "tree", "scratch", "tree2"), "existing folder"),
        (cp("ws", "abs_out", "scratch", "leak"), "outside"),
        (cp("ws", "dir_out", "scratch", "leak"), "outside"),
        (
            cp("ws", "a.txt", "docs", "a.txt"),
            "not allowed on root docs",
        ),
        (cp("ws", "fifo", "scratch", "fifo"), "not a regular file"),
    ] {
        let e = err(&call(&c, "copy", args.clone()).await);
        assert!(e.contains(want), "{args}: {e}");
    }
    assert!(!ws.join("tree/inner/again").exists() && !ws.join("copy-of-root").exists());
    assert!(!w.base.join("scratch/leak").exists());
    // Move: a rename; a link moves as itself within its root.
    let v = ok(&call(&c, "move", cp("ws", "tree", "scratch", "moved")).await);
    assert_eq!(v["is_directory"], true);
    assert!(!ws.join("tree").exists() && w.base.join("scratch/moved/inner/f").exists());
    ok(&call(&c, "move", cp("ws", "rel_out", "ws", "renamed_link")).await);
    assert!(
        std::fs::symlink_metadata(ws.join("renamed_link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(w.base.join("outside/secret")).unwrap(),
        SECRET
    );
    for (args, want) in [
        (cp("ws", ".", "scratch", "root"), "never moves"),
        (cp("ws", "in_link", "scratch", "l"), "only within root"),
        (cp("ws", "sub", "ws", "sub/deep/sub"), "into itself"),
        (cp("ws", "a.txt", "ws", "sub"), "existing folder"),
    ] {
        let e = err(&call(&c, "move", args.clone()).await);
        assert!(e.contains(want), "{args}: {e}");
    }
    // A file at the destination is replaced.
    std::fs::write(w.base.join("scratch/target"), "old").unwrap();
    ok(&call(&c, "move", cp("ws", "a.txt", "scratch", "target")).await);
    assert_eq!(
        std::fs::read_to_string(w.base.join("scratch/target")).unwrap(),
        "one\ntwo\nthree\n"
    );
    assert!(!ws.join("a.txt").exists());
    c.cancel().await.unwrap();
}

/// `mcp-filesystem --http` on a free port and a client of it: `(server,
/// client)`; the server is killed when dropped.
async fn http_client(
    config: &Path,
) -> (
    test_support::process::Process,
    RunningService<RoleClient, ()>,
) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-filesystem"));
    cmd.arg("--config")
        .arg(config)
        .args(["--http", "127.0.0.1:0"]);
    let server = test_support::process::Process::server(cmd, "mcp-filesystem --http");
    let url = format!("http://{}", server.ready);
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
    let c = ().serve(transport).await.unwrap();
    (server, c)
}

/// Issue 40 (1), MCP-FILESYSTEM.md §4.2: a link that leaves the root is
/// never written through, replaced or moved across roots by any mutating
/// tool (every write mode, patch, edit, create_folder, copy and move, as
/// destination within a root and from another root; as the source of a
/// cross-root move), over stdio and over HTTP: each call fails, the link
/// is still the same link, and nothing outside changes.
#[tokio::test]
async fn links_that_leave_are_never_replaced_by_any_tool_over_either_transport() {
    for transport in ["stdio", "http"] {
        let w = world();
        let ws = w.base.join("ws");
        std::fs::write(w.base.join("scratch/from-scratch.txt"), "scratch").unwrap();
        let (_server, c) = if transport == "stdio" {
            (None, client(&w.config).await)
        } else {
            let (s, c) = http_client(&w.config).await;
            (Some(s), c)
        };
        let outside = [w.base.join("outside"), w.base.join("ws-evil")];
        let before: Vec<_> = outside.iter().map(|d| snapshot(d)).collect();
        let leaving = [
            "abs_out",
            "rel_out",
            "prefix_out",
            "dir_out",
            "dangling_out",
            "chain_out",
        ];
        let target = |l: &str| std::fs::read_link(ws.join(l)).unwrap();
        let targets: Vec<_> = leaving.iter().map(|l| target(l)).collect();
        let cp = |sr: &str, sp: &str, dr: &str, dp: &str| json!({"source_root": sr, "source_path": sp, "dest_root": dr, "dest_path": dp});
        for l in leaving {
            let mut calls: Vec<(&str, Value)> = Vec::new();
            for mode in ["overwrite", "append", "create_only"] {
                calls.push((
                    "write_file",
                    json!({"root": "ws", "path": l, "content": "pwned", "mode": mode}),
                ));
            }
            calls.push((
                "patch_file",
                json!({"root": "ws", "path": l, "patch": "--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+pwned\n"}),
            ));
            calls.push((
                "edit_file",
                json!({"root": "ws", "path": l, "edits": [{"old_text": "TOP-SECRET", "new_text": "gone"}]}),
            ));
            calls.push(("create_folder", json!({"root": "ws", "path": l})));
            calls.push(("copy", cp("ws", "a.txt", "ws", l)));
            calls.push(("copy", cp("scratch", "from-scratch.txt", "ws", l)));
            calls.push(("move", cp("ws", "sub/deep/note.md", "ws", l)));
            calls.push(("move", cp("scratch", "from-scratch.txt", "ws", l)));
            calls.push(("move", cp("ws", l, "scratch", "moved-link")));
            for (tool, args) in calls {
                let r = call(&c, tool, args.clone()).await;
                assert_eq!(
                    r.is_error,
                    Some(true),
                    "{transport} {tool} {args}: {}",
                    text(&r)
                );
                assert!(
                    std::fs::symlink_metadata(ws.join(l))
                        .unwrap()
                        .file_type()
                        .is_symlink(),
                    "{transport} {tool} {args} replaced the link"
                );
            }
        }
        let now: Vec<_> = leaving.iter().map(|l| target(l)).collect();
        assert_eq!(now, targets, "{transport}: a link changed");
        let after: Vec<_> = outside.iter().map(|d| snapshot(d)).collect();
        assert_eq!(
            after, before,
            "{transport}: something outside the root changed"
        );
        assert!(
            !w.base.join("outside/nothing").exists(),
            "{transport}: created through a dangling link"
        );
        assert!(!w.base.join("scratch/moved-link").exists());
        assert!(
            ws.join("sub/deep/note.md").exists()
                && w.base.join("scratch/from-scratch.txt").exists()
        );
        // An in-root link is a name too: it is not silently replaced by a
        // copy either (remove it first), and moves only within its root.
        let e = err(&call(&c, "copy", cp("ws", "a.txt", "ws", "in_link")).await);
        assert!(e.contains("symlink"), "{transport}: {e}");
        let e = err(&call(&c, "move", cp("ws", "in_link", "scratch", "l")).await);
        assert!(e.contains("only within root"), "{transport}: {e}");
        c.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn grep_and_glob_walk_in_path_order_and_never_follow_links() {
    let w = world();
    let c = client(&w.config).await;
    let ws = w.base.join("ws");
    std::fs::write(ws.join("sub/b.md"), "alpha\nbeta\ngamma\ndelta\n").unwrap();
    std::fs::write(ws.join(".hidden"), "beta hidden\n").unwrap();
    let grep = |args: Value| call(&c, "grep", args);
    // Nothing behind a link that leaves is ever searched.
    let v = ok(&grep(json!({"root": "ws", "pattern": "TOP-SECRET"})).await);
    assert_eq!(v["total_matches"], 0, "{v}");
    // Root-relative files, path order, context, dotfiles searched.
    let v = ok(&grep(json!({"root": "ws", "pattern": "beta", "context_lines": 1})).await);
    let files: Vec<&str> = v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, [".hidden", "sub/b.md"], "{v}");
    let m = &v["matches"][1];
    assert_eq!(
        (m["line_number"].as_u64(), m["line_content"].as_str()),
        (Some(2), Some("beta"))
    );
    assert_eq!(
        (m["context_before"].clone(), m["context_after"].clone()),
        (json!(["alpha"]), json!(["gamma"]))
    );
    // From a sub-folder the file is still root-relative.
    let v = ok(&grep(json!({"root": "ws", "pattern": "deep", "path": "sub"})).await);
    assert_eq!(v["matches"][0]["file"], "sub/deep/note.md");
    // Filters, depth, case, limits.
    let v = ok(&grep(
        json!({"root": "ws", "pattern": "A", "case_insensitive": true, "glob_filter": "*.md"}),
    )
    .await);
    assert!(
        v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["file"].as_str().unwrap().ends_with(".md"))
    );
    let v = ok(&grep(json!({"root": "ws", "pattern": "e", "max_depth": 0})).await);
    assert!(
        v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| !m["file"].as_str().unwrap().contains('/')),
        "{v}"
    );
    let v = ok(&grep(
        json!({"root": "ws", "pattern": "^(alpha|beta)$", "path": "sub/b.md", "max_results": 1}),
    )
    .await);
    assert_eq!(
        (v["total_matches"].as_u64(), v["truncated"].as_bool()),
        (Some(1), Some(true))
    );
    let v = ok(&grep(
        json!({"root": "ws", "pattern": "^(alpha|beta)$", "path": "sub/b.md", "max_results": 2}),
    )
    .await);
    assert_eq!(
        (v["total_matches"].as_u64(), v["truncated"].as_bool()),
        (Some(2), Some(false))
    );
    assert!(err(&grep(json!({"root": "ws", "pattern": "("})).await).contains("invalid pattern"));
    assert!(
        err(&grep(json!({"root": "ws", "pattern": "x", "context_lines": 51})).await)
            .contains("context_lines")
    );
    assert!(
        err(&grep(json!({"root": "ws", "pattern": "x", "path": "dir_out"})).await)
            .contains("outside")
    );
    // glob: names at any depth, ** paths, links reported not entered.
    let glob = |args: Value| call(&c, "glob", args);
    let paths = |v: &Value| -> Vec<String> {
        v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap().to_string())
            .collect()
    };
    let v = ok(&glob(json!({"root": "ws", "pattern": "*.md"})).await);
    assert_eq!(paths(&v), ["sub/b.md", "sub/deep/note.md"]);
    let v = ok(&glob(json!({"root": "ws", "pattern": "sub/**/*.md"})).await);
    assert_eq!(paths(&v), ["sub/b.md", "sub/deep/note.md"]);
    let v = ok(&glob(json!({"root": "ws", "regex": "deep", "type_filter": "directory"})).await);
    assert_eq!(paths(&v), ["sub/deep"]);
    let v = ok(&glob(json!({"root": "ws", "pattern": "*", "type_filter": "symlink"})).await);
    let links = paths(&v);
    assert!(
        links.contains(&"abs_out".to_string()) && links.contains(&"in_abs_dir".to_string()),
        "{links:?}"
    );
    let v = ok(&glob(json!({"root": "ws", "pattern": "**/note.md"})).await);
    assert_eq!(paths(&v), ["sub/deep/note.md"], "a link was descended into");
    let v = ok(&glob(json!({"root": "ws", "pattern": "*.md", "max_results": 2})).await);
    assert_eq!(v["truncated"], false);
    let v = ok(&glob(json!({"root": "ws", "pattern": "*.md", "max_results": 1})).await);
    assert_eq!(v["truncated"], true);
    assert!(err(&glob(json!({"root": "ws"})).await).contains("exactly one"));
    assert!(
        err(&glob(json!({"root": "ws", "pattern": "*", "regex": "x"})).await)
            .contains("exactly one")
    );
    assert!(!text(&glob(json!({"root": "ws", "pattern": "**"})).await).contains(SECRET));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn patch_file_applies_real_diff_output_atomically_or_not_at_all() {
    let w = world();
    let c = client(&w.config).await;
    let ws = w.base.join("ws");
    // Real `diff -u` output for a change, with its trailing newline.
    std::fs::write(w.base.join("new.txt"), "one\nTWO\nthree\nfour\n").unwrap();
    let out = std::process::Command::new("diff")
        .arg("-u")
        .arg(ws.join("a.txt"))
        .arg(w.base.join("new.txt"))
        .output()
        .unwrap();
    let diff = String::from_utf8(out.stdout).unwrap();
    assert!(diff.starts_with("--- "), "{diff}");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(ws.join("a.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let v = ok(&call(
        &c,
        "patch_file",
        json!({"root": "ws", "path": "a.txt", "patch": diff, "dry_run": true}),
    )
    .await);
    assert_eq!(
        (v["dry_run"].as_bool(), v["hunks_applied"].as_u64()),
        (Some(true), Some(1))
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "one\ntwo\nthree\n",
        "dry_run wrote"
    );
    let v = ok(&call(
        &c,
        "patch_file",
        json!({"root": "ws", "path": "a.txt", "patch": diff}),
    )
    .await);
    assert_eq!(
        (v["created"].as_bool(), v["offsets"].clone()),
        (Some(false), json!([0]))
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "one\nTWO\nthree\nfour\n"
    );
    assert_eq!(
        std::fs::metadata(ws.join("a.txt"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o640
    );
    // A hunk that fits nowhere: named, and the file untouched.
    let bad = "@@ -1,2 +1,2 @@\n one\n-TWO\n+2\n@@ -3,1 +3,1 @@\n-nope\n+x\n";
    let e = err(&call(
        &c,
        "patch_file",
        json!({"root": "ws", "path": "a.txt", "patch": bad}),
    )
    .await);
    assert!(e.contains("hunk 2 does not match"), "{e}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "one\nTWO\nthree\nfour\n"
    );
    // A missing file is created (parents too); never through a leaving link.
    let create = "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n";
    let v = ok(&call(
        &c,
        "patch_file",
        json!({"root": "ws", "path": "made/n.txt", "patch": create}),
    )
    .await);
    assert_eq!(v["created"], true);
    assert_eq!(
        std::fs::read_to_string(ws.join("made/n.txt")).unwrap(),
        "a\nb\n"
    );
    for p in ["abs_out", "dangling_out", "dir_out/x", "rel_out"] {
        let r = call(
            &c,
            "patch_file",
            json!({"root": "ws", "path": p, "patch": create}),
        )
        .await;
        assert_eq!(r.is_error, Some(true), "{p}: {}", text(&r));
    }
    assert!(!w.base.join("outside/nothing").exists() && !w.base.join("outside/dir/x").exists());
    assert_eq!(
        std::fs::read_to_string(w.base.join("outside/secret")).unwrap(),
        SECRET
    );
    let e = err(&call(
        &c,
        "patch_file",
        json!({"root": "ws", "path": "bin.dat", "patch": create}),
    )
    .await);
    assert!(e.contains("binary"), "{e}");
    let e = err(&call(
        &c,
        "patch_file",
        json!({"root": "ws", "path": "a.txt", "patch": "not a diff"}),
    )
    .await);
    assert!(e.contains("no hunks"), "{e}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn the_additions_batch_read_tree_edit_head_tail_and_excludes() {
    let w = world();
    let c = client(&w.config).await;
    let ws = w.base.join("ws");
    // read_multiple_files: per-file errors, nothing from outside.
    let v = ok(&call(
        &c,
        "read_multiple_files",
        json!({"root": "ws", "paths": ["a.txt", "abs_out", "nope", "sub/deep/note.md"]}),
    )
    .await);
    let files = v["files"].as_array().unwrap();
    assert_eq!(files[0]["content"], "one\ntwo\nthree\n");
    assert!(files[1]["error"].as_str().unwrap().contains("outside"));
    assert!(
        files[2]["error"]
            .as_str()
            .unwrap()
            .contains("does not exist")
    );
    assert_eq!(files[3]["content"], "deep note");
    assert!(!v.to_string().contains(SECRET));
    // directory_tree: nested, links shown not entered, excludes, depth.
    let v = ok(&call(
        &c,
        "directory_tree",
        json!({"root": "ws", "exclude_patterns": ["*_out", "loop_*"]}),
    )
    .await);
    let tree = v["tree"].as_array().unwrap();
    let names: Vec<&str> = tree.iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with("_out") || n.starts_with("loop_")),
        "{names:?}"
    );
    let sub = tree.iter().find(|n| n["name"] == "sub").unwrap();
    assert_eq!(sub["children"][0]["name"], "deep");
    assert_eq!(sub["children"][0]["children"][0]["name"], "note.md");
    let link = tree.iter().find(|n| n["name"] == "in_abs_dir").unwrap();
    assert_eq!(link["type"], "symlink");
    assert!(link.get("children").is_none());
    let v = ok(&call(&c, "directory_tree", json!({"root": "ws", "max_depth": 1})).await);
    let sub = v["tree"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "sub")
        .unwrap()
        .clone();
    assert_eq!(sub["children"], json!([]));
    // edit_file: exact, once, all or nothing, with the diff.
    let edits = json!([{"old_text": "two", "new_text": "2"}, {"oldText": "three\n", "newText": "3\nfour\n"}]);
    let v = ok(&call(
        &c,
        "edit_file",
        json!({"root": "ws", "path": "a.txt", "edits": edits, "dry_run": true}),
    )
    .await);
    let diff = v["diff"].as_str().unwrap();
    assert!(
        diff.starts_with("--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,4 @@"),
        "{v}"
    );
    assert!(
        diff.contains("-two\n") && diff.contains("+2\n") && diff.contains("+four\n"),
        "{v}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    ok(&call(
        &c,
        "edit_file",
        json!({"root": "ws", "path": "a.txt", "edits": edits}),
    )
    .await);
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "one\n2\n3\nfour\n"
    );
    let e = err(&call(&c, "edit_file", json!({"root": "ws", "path": "a.txt", "edits": [{"old_text": "one", "new_text": "1"}, {"old_text": "zzz", "new_text": "y"}]})).await);
    assert!(e.contains("edit 2") && e.contains("not found"), "{e}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "one\n2\n3\nfour\n"
    );
    std::fs::write(ws.join("twice.txt"), "x\nx\n").unwrap();
    let e = err(&call(
        &c,
        "edit_file",
        json!({"root": "ws", "path": "twice.txt", "edits": [{"old_text": "x", "new_text": "y"}]}),
    )
    .await);
    assert!(e.contains("occurs 2 times"), "{e}");
    let r = call(
        &c,
        "edit_file",
        json!({"root": "ws", "path": "abs_out", "edits": [{"old_text": "TOP", "new_text": "y"}]}),
    )
    .await;
    assert!(err(&r).contains("outside"));
    assert_eq!(
        std::fs::read_to_string(w.base.join("outside/secret")).unwrap(),
        SECRET
    );
    // head and tail.
    let v = ok(&call(
        &c,
        "read_file",
        json!({"root": "ws", "path": "a.txt", "head": 2}),
    )
    .await);
    assert_eq!(v["content"], "one\n2");
    let v = ok(&call(
        &c,
        "read_file",
        json!({"root": "ws", "path": "a.txt", "tail": 2}),
    )
    .await);
    assert_eq!(v["content"], "3\nfour");
    assert!(
        err(&call(
            &c,
            "read_file",
            json!({"root": "ws", "path": "a.txt", "head": 1, "tail": 1})
        )
        .await)
        .contains("not several")
    );
    // exclude_patterns on grep and glob.
    let v = ok(&call(
        &c,
        "grep",
        json!({"root": "ws", "pattern": "deep", "exclude_patterns": ["sub"]}),
    )
    .await);
    assert_eq!(v["total_matches"], 0);
    let v = ok(&call(
        &c,
        "glob",
        json!({"root": "ws", "pattern": "*.md", "exclude_patterns": ["deep"]}),
    )
    .await);
    assert_eq!(v["total_matches"], 0);
    c.cancel().await.unwrap();
}
