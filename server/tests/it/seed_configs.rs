//! The seed's own multi-agent configs (`testdata/seed/`), run end to end
//! with real processes and the fake Gemini provider: only addresses and
//! paths are changed (port, host, data_dir, the `mcp-resources` path, and
//! the sub-agent's host:port), never the shape. Each orchestrator names
//! agent B by its JSON-RPC endpoint (`…:8082/a2a`), as the seed does; a
//! destructive request at the orchestrator waits as a proxy approval, is
//! approved there, and the resource appears at agent B.

use crate::support;

use serde_json::json;
use server::llm::scripted::Rules;
use std::path::{Path, PathBuf};
use support::{Agent, post_json_as};
use test_support::fake_llm::FakeState;

const RULES: &str = r#"
rules:
  - system: "You are the resource agent"
    match: "(?i)add (\\w+) (-?\\d+)"
    steps:
      - call: resources_add
        args: {name: "$1", value: "$2"}
      - reply: "B added: {result}"
  - system: "You are the resource agent"
    steps:
      - call: resources_list
      - reply: "B has: {result}"
  - system: "You are the planner"
    steps:
      - reply: "Plan: one resource changes"
  - system: "You are the (orchestrator|coordinator)"
    match: "(?s)^(.*)$"
    steps:
      - call: a2a_resource_agent
        args: {message: "$1"}
      - reply: "Relayed: {result}"
"#;

fn seed(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/seed")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `text` with only its addresses and paths made local to this test.
fn localize(text: &str, data: &Path, b: Option<&str>) -> String {
    let mut out = text
        .replace("host: \"0.0.0.0\"", "host: \"127.0.0.1\"")
        .replace("port: 8082", "port: 0")
        .replace("port: 8081", "port: 0")
        .replace("./data/", &format!("{}/", data.display()))
        .replace(
            "target/release/mcp-resources",
            &test_support::process::workspace_bin("mcp-resources"),
        );
    if let Some(b) = b {
        out = out
            .replace("http://localhost:8082", b)
            .replace("http://agent-b:8082", b);
    }
    let settings: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(
        !settings
            .iter()
            .any(|l| l.contains(":8082") || l.contains("0.0.0.0")),
        "{out}"
    );
    out
}

struct Stack {
    _dir: tempfile::TempDir,
    b: Agent,
    a: Agent,
    b_db: PathBuf,
}

async fn start(orchestrator: &str, env: &[(&str, &str)]) -> Stack {
    let dir = tempfile::tempdir().unwrap();
    let b_cfg = dir.path().join("agent-b.yaml");
    std::fs::write(&b_cfg, localize(&seed("agent-b.yaml"), dir.path(), None)).unwrap();
    let b = Agent::start_with_env(&b_cfg, env);
    let a_cfg = dir.path().join(orchestrator);
    std::fs::write(
        &a_cfg,
        localize(&seed(orchestrator), dir.path(), Some(&b.base)),
    )
    .unwrap();
    let a = Agent::start_with_env(&a_cfg, env);
    let b_db = dir.path().join("seed-agent-b/resources.db");
    Stack {
        _dir: dir,
        b,
        a,
        b_db,
    }
}

/// The session id the orchestrator's caller sends (B's log must show it).
const SID: &str = "seed-session-1";

fn resources(db: &Path) -> Vec<String> {
    mcp_resources::db::ResourceDb::open(db)
        .unwrap()
        .list(None)
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect()
}

/// Each orchestrator config: ask, see the proxy approval, approve it at the
/// orchestrator, find the resource at B; B saw the caller's session id.
#[tokio::test]
async fn the_seeds_multi_agent_configs_run_unchanged() {
    let fake = FakeState::new(Rules::parse(RULES).unwrap());
    let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
    let env = [
        ("GEMINI_API_KEY", "gm-seed-key"),
        ("GEMINI_BASE_URL", base.as_str()),
    ];
    for (i, config) in ["agent-a.yaml", "sequential-a2a.yaml", "node-a2a.yaml"]
        .into_iter()
        .enumerate()
    {
        let stack = start(config, &env).await;
        let name = format!("pears{i}");
        let (status, body) = post_json_as(
            &stack.a,
            Some(SID),
            "/conversations",
            json!({"message": format!("add {name} 4")}),
        )
        .await;
        assert_eq!(status, 201, "{config}: {body}");
        assert_eq!(body["result"]["waiting_approval"], true, "{config}: {body}");
        let approval = &body["result"]["approval"];
        assert_eq!(approval["tool_name"], "resources_add", "{config}: {body}");
        assert_eq!(
            approval["chain"],
            json!(["resource_agent"]),
            "{config}: {body}"
        );
        assert!(
            resources(&stack.b_db).is_empty(),
            "{config}: ran before approval"
        );
        let uuid = approval["uuid"].as_str().unwrap();
        let (status, body) = post_json_as(
            &stack.a,
            Some(SID),
            &format!("/approvals/{uuid}"),
            json!({"approved": true}),
        )
        .await;
        assert_eq!(status, 200, "{config}: {body}");
        assert_eq!(resources(&stack.b_db), [name.as_str()], "{config}: {body}");
        assert!(
            body.to_string().contains("B added"),
            "{config}: the answer flows back: {body}"
        );
        // The user's session id reached B (its log line for the A2A request).
        assert!(
            stack
                .b
                .wait_for_log(&format!("sid={SID}"))
                .contains(&format!("sid={SID}")),
            "{config}: {}",
            stack.b.log()
        );
    }
}
