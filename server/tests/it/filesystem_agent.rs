//! The agent with the built-in `mcp-filesystem` in `mcp_servers`
//! (config/filesystem-agent.yaml on the scripted model): what needs approval,
//! and a write that runs once when approved. The server's own contract is
//! tested in its crate (mcp-filesystem/tests).

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
}

/// A workspace `ws` holding `a.txt`.
fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir_all(base.join("ws")).unwrap();
    std::fs::write(base.join("ws/a.txt"), "one\ntwo\nthree\n").unwrap();
    World { _tmp: tmp, base }
}

/// The agent with mcp-filesystem in `mcp_servers` (config/filesystem-agent.yaml
/// on the scripted model): a write stops for approval, runs once when
/// approved, and a rejected edit leaves the disk as it was.
#[tokio::test]
async fn the_agent_asks_before_writing_and_a_rejection_changes_nothing() {
    let w = world();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let fs_config = w.base.join("fs.yaml");
    std::fs::write(
        &fs_config,
        format!(
            "roots:\n  - {{name: workspace, path: '{}', allowed_tools: ['*']}}\n",
            w.base.join("ws").display()
        ),
    )
    .unwrap();
    let agent_yaml = std::fs::read_to_string(repo.join("config/filesystem-agent.yaml"))
        .unwrap()
        .replace(
            "gemini-2.5-flash",
            &format!(
                "\"scripted:{}\"",
                repo.join("config/filesystem-rules.yaml").display()
            ),
        )
        .replace(
            "target/release/mcp-filesystem",
            &test_support::process::workspace_bin("mcp-filesystem"),
        )
        .replace(
            "config/mcp-filesystem.yaml",
            &fs_config.display().to_string(),
        )
        .replace("host: 127.0.0.1\nport: 8080\n", "")
        .replace("data_dir: ./data/files\n", "");
    let cfg = support::write_config(&w.base, &w.base.join("agent-data"), &agent_yaml);
    let a = support::Agent::serve(&cfg).await;
    let http = support::client();
    let post = |path: String, body: Value| http.post(a.url(&path)).json(&body).send();
    // Starts a conversation with `message`; its answer.
    let ask = |message: &'static str| {
        let sent = post("/conversations".into(), json!({ "message": message }));
        async move { sent.await.unwrap().json::<Value>().await.unwrap() }
    };
    // A read runs at once.
    let v = ask("read a.txt").await;
    assert_eq!(v["result"]["waiting_approval"], false, "{v}");
    assert!(
        v["result"]["response"].as_str().unwrap().contains("one"),
        "{v}"
    );
    // A write waits; approved, it runs exactly once.
    let v = ask("write notes.md: hello").await;
    assert_eq!(v["result"]["waiting_approval"], true, "{v}");
    assert_eq!(v["result"]["approval"]["tool_name"], "write_file");
    assert!(
        !w.base.join("ws/notes.md").exists(),
        "written before approval"
    );
    let uuid = v["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = post(format!("/approvals/{uuid}"), json!({"approved": true}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        std::fs::read_to_string(w.base.join("ws/notes.md")).unwrap(),
        "hello"
    );
    // An edit waits; rejected, the file is untouched.
    let v = ask("in notes.md replace hello with goodbye").await;
    assert_eq!(v["result"]["approval"]["tool_name"], "edit_file", "{v}");
    let uuid = v["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = post(
        format!("/approvals/{uuid}"),
        json!({"approved": false, "reason": "keep it"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        std::fs::read_to_string(w.base.join("ws/notes.md")).unwrap(),
        "hello"
    );
    // The tools the agent sees: only the mutating ones (not create_folder)
    // ask for approval.
    let tools: Value = http
        .get(a.url("/tools"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let needs = |name: &str| support::tool(&tools, name).unwrap()["destructiveHint"].as_bool();
    assert_eq!(needs("write_file"), Some(true));
    assert_eq!(needs("edit_file"), Some(true));
    assert_eq!(needs("create_folder"), Some(false));
    assert_eq!(needs("read_file"), Some(false));
}
