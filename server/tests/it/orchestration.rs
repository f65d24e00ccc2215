//! Orchestration with the real agent, the fake provider (Gemini wire
//! format) and the real `mcp-resources`: the seed's TS-015 to TS-019 and
//! TS-022 to TS-025. The pipelines are the examples in `testdata/`, run
//! with the same rules the examples use offline; the fake tells the nodes
//! apart by their system prompts, so tests count model requests per node.

use crate::support;

use serde_json::{Value, json};
use server::llm::scripted::Rules;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use support::{Agent, client};
use test_support::fake_llm::{FakeState, Recorded};

const KEY: &str = "gm-orchestration-test-key";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rules() -> Rules {
    let text = std::fs::read_to_string(repo().join("testdata/e2e-pipeline-rules.yaml")).unwrap();
    Rules::parse(&text).unwrap()
}

/// A running example: its directory, agent and fake provider.
struct Setup {
    dir: tempfile::TempDir,
    agent: Agent,
    fake: Arc<FakeState>,
    env: Vec<(&'static str, String)>,
}

impl Setup {
    /// Starts `testdata/<example>` (or `yaml` when given) against the fake:
    /// the scripted model becomes Gemini over the wire, and the data and
    /// MCP server paths point into a temporary directory.
    async fn start(example: &str, edit: impl Fn(String) -> String) -> Setup {
        let fake = FakeState::new(rules());
        let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let yaml = std::fs::read_to_string(repo().join("testdata").join(example)).unwrap();
        let data = dir.path().join("data");
        let yaml = adapt(&yaml, &data, &dir.path().join("resources.db"));
        let yaml = edit(yaml);
        let cfg = dir.path().join("agent.yaml");
        std::fs::write(&cfg, yaml).unwrap();
        let env = vec![
            ("GEMINI_API_KEY", KEY.to_string()),
            ("GEMINI_BASE_URL", base),
        ];
        let agent = start_agent(&cfg, &env);
        Setup {
            dir,
            agent,
            fake,
            env,
        }
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("agent.yaml")
    }

    fn restart(&mut self) {
        self.agent = start_agent(&self.config_path(), &self.env);
    }

    /// Model requests whose system prompt contains `marker`.
    fn requests_for(&self, marker: &str) -> Vec<Recorded> {
        self.fake
            .requests()
            .into_iter()
            .filter(|r| system_of(r).contains(marker))
            .collect()
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let resp = client()
            .post(self.agent.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        support::get_json(&self.agent, path).await
    }

    /// Starts a conversation with `message`; returns (status, body).
    async fn ask(&self, message: &str) -> (u16, Value) {
        self.post("/conversations", json!({ "message": message }))
            .await
    }

    async fn resources(&self) -> Vec<Value> {
        let db = self.dir.path().join("resources.db");
        let db = mcp_resources::db::ResourceDb::open(&db).unwrap();
        db.list(None)
            .unwrap()
            .into_iter()
            .map(|r| serde_json::to_value(r).unwrap())
            .collect()
    }
}

fn start_agent(cfg: &Path, env: &[(&'static str, String)]) -> Agent {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Agent::start_with_env(cfg, &env)
}

/// The example with Gemini instead of the scripted model, and paths in `data`.
fn adapt(yaml: &str, data: &Path, db: &Path) -> String {
    let mut out = String::new();
    for line in yaml.lines() {
        let t = line.trim_start();
        let indent = &line[..line.len() - t.len()];
        let line = if t.starts_with("model: \"scripted:") {
            format!("{indent}model: gemini-2.5-flash")
        } else if t.starts_with("data_dir:") {
            format!("data_dir: {}", data.display())
        } else if t.starts_with("command: target/release/mcp-resources") {
            format!(
                "{indent}command: {}",
                test_support::process::workspace_bin("mcp-resources")
            )
        } else if t.starts_with("args: [--db,") {
            format!("{indent}args: [--db, {}]", db.display())
        } else {
            line.to_string()
        };
        out.push_str(&line);
        out.push('\n');
    }
    assert!(out.contains("gemini-2.5-flash"), "{out}");
    out
}

fn system_of(r: &Recorded) -> String {
    r.body["systemInstruction"]["parts"]
        .as_array()
        .map(|p| {
            p.iter()
                .filter_map(|x| x["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn messages(body: &Value) -> Vec<Value> {
    body["conversation"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The tool calls of a conversation, as (node, tool name, result).
fn calls(body: &Value) -> Vec<(String, String, String)> {
    messages(body)
        .iter()
        .filter_map(|m| {
            let tc = m.get("tool_call")?;
            Some((
                m["node"].as_str().unwrap_or("").to_string(),
                tc["name"].as_str().unwrap_or("").to_string(),
                tc["result"].as_str().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

fn node_status<'a>(body: &'a Value, run: &str) -> &'a Value {
    body["conversation"]["pipeline_state"]["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|x| x["run"] == run))
        .map(|x| &x["status"])
        .unwrap_or(&Value::Null)
}

/// TS-015: no `agent` tree is simple mode; a lone `llm` root node sends
/// the model exactly what simple mode sends and answers the same.
#[tokio::test]
async fn a_lone_llm_node_behaves_like_simple_mode() {
    let simple = Setup::start("e2e-sequential.yaml", |y| {
        y.split("agent:\n").next().unwrap().replace(
            "llm:\n",
            "prompt: You are the executor. Do as asked.\nllm:\n",
        )
    })
    .await;
    let lone = Setup::start("e2e-sequential.yaml", |y| {
        format!(
            "{}agent:\n  name: solo\n  type: llm\n  prompt: You are the executor. Do as asked.\n",
            y.split("agent:\n").next().unwrap()
        )
    })
    .await;
    for s in [&simple, &lone] {
        let (status, body) = s.ask("remove nothing_here").await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["result"]["waiting_approval"], true, "{body}");
        let uuid = body["result"]["approval"]["uuid"]
            .as_str()
            .unwrap()
            .to_string();
        let (status, body) = s
            .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
            .await;
        assert_eq!(status, 200, "{body}");
        assert!(
            body["result"]["response"]
                .as_str()
                .unwrap()
                .starts_with("Executed: {\"count\":0"),
            "{body}"
        );
        assert!(
            body["conversation"].get("pipeline_state").is_none(),
            "{body}"
        );
        assert!(messages(&body).iter().all(|m| m.get("node").is_none()));
        assert_eq!(s.get("/pipeline").await, json!({}));
    }
    let a = simple.fake.requests();
    let b = lone.fake.requests();
    assert_eq!(a.len(), 2);
    assert_eq!(
        a.iter().map(|r| &r.body).collect::<Vec<_>>(),
        b.iter().map(|r| &r.body).collect::<Vec<_>>(),
        "the same requests in both modes"
    );
}

/// TS-016: the executor's model request carries the analyzer's output, and
/// each node's messages and runs are recorded under its name.
#[tokio::test]
async fn sequential_passes_the_analysis_to_the_executor() {
    let s = Setup::start("e2e-sequential.yaml", |y| y).await;
    let (status, body) = s.ask("please do nothing").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["result"]["response"],
        "Nothing to execute for: please do nothing"
    );
    let analyzer = s.requests_for("You are the analyzer");
    let executor = s.requests_for("You are the executor");
    assert_eq!((analyzer.len(), executor.len()), (2, 1));
    assert!(
        system_of(&analyzer[0]).contains("please do nothing"),
        "{{user_message}} resolved"
    );
    let analysis = body["conversation"]["pipeline_state"]["state"]["analysis"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        analysis.starts_with("Analysis: the store holds {\"count\":0"),
        "{analysis}"
    );
    assert!(
        system_of(&executor[0]).contains(&analysis),
        "the executor saw the analysis: {}",
        system_of(&executor[0])
    );
    // The executor's own transcript starts at the user message: it does not
    // see the analyzer's tool steps.
    assert_eq!(executor[0].body["contents"].as_array().unwrap().len(), 1);
    let ps = &body["conversation"]["pipeline_state"];
    assert_eq!(ps["status"], "completed");
    assert_eq!(ps["user_message"], "please do nothing");
    for run in ["pipeline", "pipeline/analyzer", "pipeline/executor"] {
        assert_eq!(node_status(&body, run), "completed", "{run}: {ps}");
    }
    let tagged: Vec<(String, String)> = messages(&body)
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["node"].as_str().unwrap_or("-").to_string(),
                m["role"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        tagged,
        [
            ("-", "user"),
            ("analyzer", "tool"),
            ("analyzer", "assistant"),
            ("executor", "assistant")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert!(
        messages(&body)
            .iter()
            .any(|m| m["role"] == "system" && m["content"] == "`analyzer` finished → `{analysis}`"),
        "{body}"
    );
    // The tree is served for the UI.
    let view = s.get("/pipeline").await;
    assert_eq!(view["pipeline"]["kind"], "sequential");
    assert_eq!(view["pipeline"]["children"][1]["name"], "executor");
    assert_eq!(view["pipeline"]["children"][1]["asks_approval"], true);
}

/// TS-017: the branches overlap in time, the summarizer sees both outputs.
#[tokio::test]
async fn parallel_branches_overlap_and_the_summarizer_sees_both() {
    let s = Setup::start("e2e-parallel.yaml", |y| y).await;
    s.fake.set_latency(std::time::Duration::from_millis(300));
    let (status, body) = s.ask("report please").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["result"]["response"],
        "Summary: both branches reported."
    );
    let lister = s.requests_for("You are the lister");
    let counter = s.requests_for("You are the counter");
    assert_eq!((lister.len(), counter.len()), (2, 2));
    let overlap =
        |a: &Recorded, b: &Recorded| a.received_ms < b.answered_ms && b.received_ms < a.answered_ms;
    assert!(
        overlap(&lister[0], &counter[0]),
        "the first model calls of both branches overlap: lister {}..{} counter {}..{}",
        lister[0].received_ms,
        lister[0].answered_ms,
        counter[0].received_ms,
        counter[0].answered_ms
    );
    let summarizer = s.requests_for("You are the summarizer");
    assert_eq!(summarizer.len(), 1);
    let sys = system_of(&summarizer[0]);
    assert!(sys.contains("Listing: Listing: {\"count\":0"), "{sys}");
    assert!(sys.contains("Counts: Count report: {\"count\":0"), "{sys}");
    let ps = &body["conversation"]["pipeline_state"];
    assert!(
        ps["state"]["listing"]
            .as_str()
            .unwrap()
            .starts_with("Listing: {\"count\":0"),
        "{ps}"
    );
    assert_eq!(node_status(&body, "report/gather"), "completed");
    // Both branches' calls ran; each is tagged with its branch.
    let c = calls(&body);
    assert!(
        c.iter()
            .any(|(n, t, _)| n == "list_all" && t == "resources_list")
    );
    assert!(
        c.iter()
            .any(|(n, t, _)| n == "count_analysis" && t == "resources_list")
    );
}

/// POLICY.md §1: a `deny` rule holds inside a parallel node (which runs
/// destructive tools without asking), and an `approve` rule asks there.
#[tokio::test]
async fn rules_hold_inside_parallel_nodes() {
    let fan = |rule: &'static str| {
        move |y: String| {
            format!(
                "{}approvals:\n  rules:\n    - {rule}\nagent:\n  name: fan\n  type: parallel\n  agents:\n    - {{name: a, type: llm, prompt: You are adder a.}}\n    - {{name: b, type: llm, prompt: You are adder b.}}\n",
                y.split("agent:\n").next().unwrap(),
            )
        }
    };
    let s = Setup::start(
        "e2e-parallel.yaml",
        fan("{name: frozen, tool: resources_add, action: deny, reason: adds are frozen}"),
    )
    .await;
    let (status, body) = s.ask("add both").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"]["waiting_approval"], false, "{body}");
    assert!(s.resources().await.is_empty(), "a denied call never runs");
    let denied: Vec<&Value> = body["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["tool_call"]["name"] == "resources_add")
        .collect();
    assert_eq!(denied.len(), 2, "{body}");
    for m in denied {
        assert_eq!(
            m["tool_call"]["result"], "not allowed: adds are frozen",
            "{m}"
        );
    }

    let s = Setup::start(
        "e2e-parallel.yaml",
        fan("{name: ask-adds, tool: resources_add, action: approve}"),
    )
    .await;
    let (status, body) = s.ask("add both").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
    assert_eq!(body["result"]["approval"]["rule"], "ask-adds", "{body}");
    assert!(
        s.resources().await.is_empty(),
        "nothing ran before approval"
    );
}

/// FR-023 and `approvals: enforce`: destructive calls in parallel branches
/// run unattended by default; enforced, the pipeline pauses once with both
/// approvals listed and goes on when both are decided.
#[tokio::test]
async fn parallel_approvals_are_unattended_unless_enforced() {
    let adders = |enforce: bool| {
        move |y: String| {
            format!(
                "{}agent:\n  name: fan\n  type: parallel\n{}  agents:\n    - {{name: a, type: llm, prompt: You are adder a.}}\n    - {{name: b, type: llm, prompt: You are adder b.}}\n",
                y.split("agent:\n").next().unwrap(),
                if enforce {
                    "  approvals: enforce\n"
                } else {
                    ""
                }
            )
        }
    };
    let s = Setup::start("e2e-parallel.yaml", adders(false)).await;
    let (status, body) = s.ask("add both").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"]["waiting_approval"], false, "{body}");
    assert_eq!(s.resources().await.len(), 2);
    assert!(
        s.agent
            .log()
            .contains("destructive tools run without approval inside this node")
    );

    let s = Setup::start("e2e-parallel.yaml", adders(true)).await;
    let (status, body) = s.ask("add both").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
    let pending = body["conversation"]["pipeline_state"]["pending"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(pending.len(), 2, "{body}");
    assert_eq!(body["conversation"]["pipeline_state"]["status"], "paused");
    let inbox = s.get("/approvals").await;
    assert_eq!(inbox["approvals"].as_array().unwrap().len(), 2, "{inbox}");
    assert!(
        s.resources().await.is_empty(),
        "nothing ran before approval"
    );
    let first = pending[0]["approval"].as_str().unwrap();
    let second = pending[1]["approval"].as_str().unwrap();
    let (status, body) = s
        .post(&format!("/approvals/{first}"), json!({"approved": true}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["waiting_approval"], true,
        "still one to decide: {body}"
    );
    assert_eq!(body["result"]["approval"]["uuid"], second);
    assert_eq!(body["conversation"]["status"], "waiting_approval");
    assert!(
        s.resources().await.is_empty(),
        "the pause holds until both are decided"
    );
    let (status, body) = s
        .post(&format!("/approvals/{second}"), json!({"approved": true}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["waiting_approval"], false, "{body}");
    assert_eq!(
        body["conversation"]["pipeline_state"]["status"],
        "completed"
    );
    let names: Vec<String> = s
        .resources()
        .await
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"from_a".to_string()) && names.contains(&"from_b".to_string()));
    assert_eq!(
        body["result"]["response"]
            .as_str()
            .unwrap()
            .matches("added")
            .count(),
        2,
        "joined in declared order: {}",
        body["result"]["response"]
    );
    assert!(
        body["result"]["response"]
            .as_str()
            .unwrap()
            .starts_with("[a]\nA added")
    );
}

/// TS-018: the loop ends when the checker calls exit_loop at the
/// threshold, and never runs more than max_iterations.
#[tokio::test]
async fn loop_stops_at_the_threshold_and_never_exceeds_max_iterations() {
    let s = Setup::start("e2e-loop.yaml", |y| y).await;
    let (status, body) = s.ask("fill up").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"]["response"], "Threshold reached.");
    assert_eq!(
        s.resources().await.len(),
        3,
        "three iterations, one item each"
    );
    assert_eq!(s.requests_for("You are the worker").len(), 9);
    assert_eq!(s.requests_for("You are the checker").len(), 3);
    assert_eq!(node_status(&body, "refine/checker@3"), "completed");
    assert!(node_status(&body, "refine/worker@4").is_null());
    let loop_run = &body["conversation"]["pipeline_state"]["nodes"][0];
    assert_eq!(loop_run["iteration"], 3, "{loop_run}");
    assert!(
        calls(&body)
            .iter()
            .any(|(n, t, _)| n == "checker" && t == "exit_loop")
    );
    // No approval was asked inside the loop (FR-024).
    assert!(
        s.get("/approvals").await["approvals"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // A checker that never exits stops at max_iterations (5).
    let (status, body) = s.ask("fill forever").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(s.resources().await.len(), 3 + 5);
    assert_eq!(s.requests_for("You are the worker").len(), 9 + 15);
    assert_eq!(node_status(&body, "refine/checker@5"), "completed");
    assert!(
        messages(&body).iter().any(|m| m["content"]
            == "`refine` stopped after max_iterations (5) without an exit_loop call"),
        "{body}"
    );
}

/// TS-019/TS-022: sequential pause → kill -9 → restart → approve: the rest
/// runs, and nothing before the pause runs again.
#[tokio::test]
async fn a_paused_pipeline_survives_kill_9_and_resumes_where_it_paused() {
    let mut s = Setup::start("e2e-sequential.yaml", |y| {
        format!(
            "{y}    - name: reporter\n      type: llm\n      prompt: \"You are the reporter. Result: {{result}}\"\n"
        )
    })
    .await;
    let (status, body) = s.ask("add apples 7").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    let ps = &body["conversation"]["pipeline_state"];
    assert_eq!(ps["status"], "paused");
    assert_eq!(ps["pending"][0]["run"], "pipeline/executor");
    assert_eq!(ps["pending"][0]["path"], json!(["pipeline", "executor"]));
    assert_eq!(
        ps["pending"][0]["tool_args"],
        json!({"name": "apples", "value": 7})
    );
    assert_eq!(node_status(&body, "pipeline/analyzer"), "completed");
    assert_eq!(node_status(&body, "pipeline/executor"), "paused");
    let before = (
        s.requests_for("You are the analyzer").len(),
        s.requests_for("You are the executor").len(),
    );
    assert_eq!(before, (2, 1));

    s.agent.kill9_in_place();
    s.restart();
    let got = s.get(&format!("/conversations/{id}")).await;
    assert_eq!(got["conversation"]["status"], "waiting_approval");
    assert_eq!(got["conversation"]["pipeline_state"]["status"], "paused");
    let (status, body) = s
        .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["response"], "Report: the pipeline finished.");
    assert_eq!(
        s.requests_for("You are the analyzer").len(),
        2,
        "the analyzer did not run again"
    );
    assert_eq!(
        s.requests_for("You are the executor").len(),
        2,
        "one more step after the call"
    );
    assert_eq!(s.requests_for("You are the reporter").len(), 1);
    let reporter = s.requests_for("You are the reporter");
    assert!(
        system_of(&reporter[0]).contains("Executed: {\"resource\""),
        "{{result}} flowed on"
    );
    let res = s.resources().await;
    assert_eq!(res.len(), 1, "the tool ran once");
    assert_eq!(
        (res[0]["name"].as_str(), res[0]["value"].as_i64()),
        (Some("apples"), Some(7))
    );
    assert_eq!(
        body["conversation"]["pipeline_state"]["status"],
        "completed"
    );
    assert_eq!(body["conversation"]["status"], "active");

    // The state persists: the next turn's analyzer sees the new message and
    // the previous turn's outputs are still in state.
    let (status, body) = s
        .post(
            &format!("/conversations/{id}/messages"),
            json!({"message": "nothing more"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let ps = &body["conversation"]["pipeline_state"];
    assert_eq!(ps["user_message"], "nothing more");
    assert!(ps["state"]["result"].as_str().is_some());
    let executor = s.requests_for("You are the executor");
    let last = executor.last().unwrap();
    let contents = last.body["contents"].as_array().unwrap();
    assert_eq!(
        contents.len(),
        3,
        "the previous turn, condensed, then the new message: {contents:?}"
    );
    assert_eq!(contents[0]["parts"][0]["text"], "add apples 7");
    assert_eq!(
        contents[1]["parts"][0]["text"],
        "Report: the pipeline finished."
    );
}

/// TS-023/TS-024: a rejection is told to the node and the pipeline goes
/// on; with `on_reject: stop` it ends there.
#[tokio::test]
async fn rejection_continues_or_stops_as_configured() {
    let with_reporter = |stop: bool| {
        move |y: String| {
            let y = if stop {
                y.replace(
                    "      output_key: result\n",
                    "      output_key: result\n      on_reject: stop\n",
                )
            } else {
                y
            };
            format!(
                "{y}    - name: reporter\n      type: llm\n      prompt: You are the reporter.\n"
            )
        }
    };
    let s = Setup::start("e2e-sequential.yaml", with_reporter(false)).await;
    let (_, body) = s.ask("add pears 3").await;
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = s
        .post(
            &format!("/approvals/{uuid}"),
            json!({"approved": false, "reason": "not today"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["response"], "Report: the pipeline finished.");
    let executor = s.requests_for("You are the executor");
    assert_eq!(executor.len(), 2, "the executor heard about the rejection");
    let told = executor[1].body.to_string();
    assert!(
        told.contains("The operator rejected this action") && told.contains("not today"),
        "{told}"
    );
    assert!(s.resources().await.is_empty());
    assert_eq!(
        body["conversation"]["pipeline_state"]["status"],
        "completed"
    );

    let s = Setup::start("e2e-sequential.yaml", with_reporter(true)).await;
    let (_, body) = s.ask("add pears 3").await;
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = s
        .post(&format!("/approvals/{uuid}"), json!({"action": "reject"}))
        .await;
    assert_eq!(status, 200, "{body}");
    let response = body["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with("Stopped: the operator rejected `resources_add`"),
        "{response}"
    );
    assert_eq!(
        s.requests_for("You are the executor").len(),
        1,
        "no model call after the rejection"
    );
    assert!(
        s.requests_for("You are the reporter").is_empty(),
        "the pipeline stopped"
    );
    assert_eq!(body["conversation"]["pipeline_state"]["status"], "stopped");
    assert_eq!(node_status(&body, "pipeline/executor"), "stopped");
    assert_eq!(body["conversation"]["status"], "active");
    assert!(s.resources().await.is_empty());
}

/// TS-025: the config changed while a run was paused: a clear error in the
/// conversation, 409, the action never runs, the conversation goes on.
#[tokio::test]
async fn a_config_change_while_paused_is_a_409_not_a_panic() {
    let mut s = Setup::start("e2e-sequential.yaml", |y| y).await;
    let (_, body) = s.ask("add plums 4").await;
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    s.agent.kill9_in_place();
    let cfg = s.config_path();
    let yaml = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, yaml.replace("name: executor", "name: doer")).unwrap();
    s.restart();
    let (status, body) = s
        .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
        .await;
    assert_eq!(status, 409, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("changed while the run was paused at `pipeline/executor`")
            && error.contains("not run"),
        "{error}"
    );
    assert!(s.resources().await.is_empty(), "the action never ran");
    let got = s.get(&format!("/conversations/{id}")).await;
    let c = &got["conversation"];
    assert_eq!(c["status"], "active");
    assert_eq!(c["pipeline_state"]["status"], "failed");
    assert!(c.get("pending_approval").is_none());
    assert!(
        messages(&got)
            .iter()
            .any(|m| m["role"] == "system"
                && m["content"].as_str().unwrap().contains("cannot resume")),
        "{got}"
    );
    // Deciding again is a plain 409; the agent is still up and the
    // conversation takes a new message under the new tree.
    let (status, _) = s
        .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
        .await;
    assert_eq!(status, 409);
    let (status, body) = s
        .post(
            &format!("/conversations/{id}/messages"),
            json!({"message": "please do nothing"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["conversation"]["pipeline_state"]["status"],
        "completed"
    );

    // Removing the tree altogether while paused is caught the same way.
    let (_, body) = s.ask("add figs 1").await;
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    s.agent.kill9_in_place();
    let yaml = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, yaml.split("agent:\n").next().unwrap()).unwrap();
    s.restart();
    let (status, body) = s
        .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("without one"),
        "{body}"
    );
    assert!(s.resources().await.is_empty());
}

/// Node events are published for the UI's progress, tagged with the node.
#[tokio::test]
async fn node_events_name_the_node() {
    let s = Setup::start("e2e-sequential.yaml", |y| y).await;
    let resp = client()
        .get(s.agent.url("/events"))
        .timeout(std::time::Duration::from_secs(5))
        .send()
        .await
        .unwrap();
    let reader = tokio::spawn(async move {
        let mut resp = resp;
        let mut text = String::new();
        while let Ok(Ok(Some(chunk))) =
            tokio::time::timeout(std::time::Duration::from_secs(3), resp.chunk()).await
        {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains("\"node\":\"executor\"") && text.contains("event: node_finished") {
                break;
            }
        }
        text
    });
    let (status, _) = s.ask("please do nothing").await;
    assert_eq!(status, 201);
    let text = reader.await.unwrap();
    assert!(text.contains("event: node_started"), "{text}");
    assert!(text.contains("\"node\":\"analyzer\""), "{text}");
    assert!(text.contains("\"node\":\"executor\""), "{text}");
}

/// What the fake remote agent received.
#[derive(Default)]
struct RemoteLog {
    calls: Vec<(Vec<(String, String)>, Value)>,
}

/// A remote A2A agent on `127.0.0.1:0`: serves a card (1.0 interface when
/// `v1`, else the 0.3 top-level fields) and answers every message with a
/// completed task whose artifact echoes the text.
async fn fake_remote(v1: bool) -> (String, Arc<std::sync::Mutex<RemoteLog>>) {
    use axum::routing::{get, post};
    let log = Arc::new(std::sync::Mutex::new(RemoteLog::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = if v1 {
        json!({"name": "remote", "supportedInterfaces": [
            {"url": format!("{base}/a2a"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]})
    } else {
        json!({"name": "remote", "url": format!("{base}/a2a"), "protocolVersion": "0.3.0"})
    };
    let l = log.clone();
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move || {
                let card = card.clone();
                async move { axum::Json(card) }
            }),
        )
        .route(
            "/a2a",
            post(move |headers: axum::http::HeaderMap, axum::Json(body): axum::Json<Value>| {
                let l = l.clone();
                async move {
                    let h = headers
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                        .collect();
                    let text = body["params"]["message"]["parts"][0]["text"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    l.lock().unwrap().calls.push((h, body.clone()));
                    let task = if body["method"] == "SendMessage" {
                        json!({"task": {"id": "t1", "status": {"state": "TASK_STATE_COMPLETED"},
                            "artifacts": [{"parts": [{"text": format!("remote did: {text}")}]}]}})
                    } else {
                        json!({"kind": "task", "id": "t1", "status": {"state": "completed"},
                            "artifacts": [{"parts": [{"kind": "text", "text": format!("remote did: {text}")}]}]})
                    };
                    axum::Json(json!({"jsonrpc": "2.0", "id": body["id"], "result": task}))
                }
            }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, log)
}

/// An `a2a` node: the resolved prompt goes to the remote agent (1.0 or 0.3
/// as its card says) with the caller's token and session id; the answer is
/// the node's output; a remote that is down is said so, not waited for.
#[tokio::test]
async fn an_a2a_node_delegates_with_identity_and_its_answer_flows_on() {
    for v1 in [true, false] {
        let (remote, log) = fake_remote(v1).await;
        let s = Setup::start("e2e-sequential.yaml", |y| {
            y.replace(
                "    - name: executor\n",
                &format!(
                    "    - name: remote\n      type: a2a\n      url: {remote}\n      prompt: \"Please handle: {{analysis}}\"\n      output_key: remote_answer\n    - name: executor\n"
                ),
            )
            .replace("Carry out the user's request", "Carry out {remote_answer} and the user's request")
        })
        .await;
        let resp = client()
            .post(s.agent.url("/conversations"))
            .header("Authorization", "Bearer user-token-123")
            .header("X-Session-ID", "sess-a2a-node")
            .json(&json!({"message": "please do nothing"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 201);
        let body: Value = resp.json().await.unwrap();
        let calls_seen = log.lock().unwrap().calls.clone();
        assert_eq!(calls_seen.len(), 1, "v1={v1}");
        let (headers, sent) = &calls_seen[0];
        let header = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("authorization"), Some("Bearer user-token-123"));
        assert_eq!(header("x-session-id"), Some("sess-a2a-node"));
        assert_eq!(header("a2a-version"), Some(if v1 { "1.0" } else { "0.3" }));
        assert_eq!(
            sent["method"],
            if v1 { "SendMessage" } else { "message/send" }
        );
        let text = sent["params"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap();
        assert!(
            text.starts_with("Please handle: Analysis: the store holds"),
            "{text}"
        );
        let answer = body["conversation"]["pipeline_state"]["state"]["remote_answer"]
            .as_str()
            .unwrap();
        assert!(answer.starts_with("remote did: Please handle:"), "{answer}");
        let executor = s.requests_for("You are the executor");
        assert!(
            system_of(&executor[0]).contains("remote did:"),
            "the answer flowed on"
        );
        assert!(
            calls(&body).iter().any(|(n, t, r)| n == "remote"
                && t == "a2a_remote"
                && r.starts_with("remote did:")),
            "{body}"
        );
        assert!(
            !s.agent.log().contains("user-token-123"),
            "the token is never logged"
        );
        // Without a token, none is sent.
        let (status, _) = s.ask("please do nothing").await;
        assert_eq!(status, 201);
        let calls_seen = log.lock().unwrap().calls.clone();
        assert_eq!(calls_seen.len(), 2);
        assert!(
            !calls_seen[1].0.iter().any(|(k, _)| k == "authorization"),
            "absent when not sent"
        );
    }

    // A destructive delegation waits for approval here first; the resumed
    // call carries the approving request's token, not the asker's.
    let (remote, log) = fake_remote(true).await;
    let s = Setup::start("e2e-sequential.yaml", |y| {
        y.replace(
            "    - name: executor\n",
            &format!(
                "    - name: remote\n      type: a2a\n      url: {remote}\n      destructiveHint: true\n    - name: executor\n"
            ),
        )
    })
    .await;
    let resp = client()
        .post(s.agent.url("/conversations"))
        .header("Authorization", "Bearer asker-token")
        .json(&json!({"message": "please do nothing"}))
        .send()
        .await
        .unwrap();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["result"]["approval"]["tool_name"], "a2a_remote",
        "{body}"
    );
    assert!(
        log.lock().unwrap().calls.is_empty(),
        "nothing sent before approval"
    );
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let resp = client()
        .post(s.agent.url(&format!("/approvals/{uuid}")))
        .header("Authorization", "Bearer approver-token")
        .json(&json!({"approved": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let seen = log.lock().unwrap().calls.clone();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0]
            .0
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer approver-token"),
        "{:?}",
        seen[0].0
    );

    // A remote that is down: the node says so and the pipeline goes on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let s = Setup::start("e2e-sequential.yaml", |y| {
        y.replace(
            "    - name: executor\n",
            &format!("    - name: remote\n      type: a2a\n      url: http://{closed}\n    - name: executor\n"),
        )
    })
    .await;
    let started = std::time::Instant::now();
    let (status, body) = s.ask("please do nothing").await;
    assert_eq!(status, 201, "{body}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let c = calls(&body);
    let (_, _, result) = c.iter().find(|(n, _, _)| n == "remote").unwrap();
    assert!(
        result.starts_with("sub-agent remote unavailable: cannot reach"),
        "{result}"
    );
    assert_eq!(
        body["conversation"]["pipeline_state"]["status"],
        "completed"
    );
}

/// `approvals: enforce` on a loop: every iteration's destructive call
/// waits; each approval resumes the loop in the iteration it paused in,
/// and earlier iterations never run again.
#[tokio::test]
async fn an_enforced_loop_pauses_in_each_iteration_and_resumes_there() {
    let s = Setup::start("e2e-loop.yaml", |y| {
        y.replace(
            "  max_iterations: 5\n",
            "  max_iterations: 5\n  approvals: enforce\n",
        )
    })
    .await;
    let (status, mut body) = s.ask("fill up").await;
    assert_eq!(status, 201, "{body}");
    for round in 1..=3 {
        assert_eq!(
            body["result"]["waiting_approval"], true,
            "round {round}: {body}"
        );
        let pending = &body["conversation"]["pipeline_state"]["pending"][0];
        assert_eq!(
            pending["run"],
            format!("refine/worker@{round}"),
            "{pending}"
        );
        assert_eq!(
            s.resources().await.len(),
            round - 1,
            "nothing runs before approval"
        );
        let uuid = body["result"]["approval"]["uuid"]
            .as_str()
            .unwrap()
            .to_string();
        let (status, next) = s
            .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
            .await;
        assert_eq!(status, 200, "{next}");
        body = next;
    }
    assert_eq!(body["result"]["waiting_approval"], false, "{body}");
    assert_eq!(body["result"]["response"], "Threshold reached.");
    assert_eq!(s.resources().await.len(), 3);
    // 3 steps per worker round, each round's model calls made once.
    assert_eq!(s.requests_for("You are the worker").len(), 9);
    assert_eq!(s.requests_for("You are the checker").len(), 3);
}
