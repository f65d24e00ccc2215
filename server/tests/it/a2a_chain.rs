//! A2A with real processes: agents chained over A2A (A → B → C), the fake
//! provider (Gemini wire format) scripting each agent by its prompt, and
//! the real `mcp-resources` behind C. Covers the seed's TS-009 to TS-014,
//! TS-020, TS-026 to TS-028: the card, send/get/cancel, input-required and
//! continuations, proxy approvals two and three agents deep (decided at
//! the top, over REST), kill -9 of the middle agent while an approval
//! waits, identity (bearer, session id) along the chain.

use crate::support;

use serde_json::{Value, json};
use server::llm::scripted::Rules;
use std::path::PathBuf;
use std::sync::Arc;
use support::{Agent, client, post_json};
use test_support::fake_llm::FakeState;

const KEY: &str = "gm-a2a-chain-key";
const BOB: &str = "bob-token-0123456789abcdef";
const ALICE: &str = "alice-token-0123456789abcdef";

const RULES: &str = r#"
rules:
  - system: "agent C"
    match: "(?i)add (\\w+) (-?\\d+)"
    steps:
      - call: resources_add
        args: {name: "$1", value: "$2"}
      - reply: "C added: {result}"
  - system: "agent C"
    steps:
      - call: resources_list
      - reply: "C has: {result}"
  - system: "agent B"
    match: "(?s)^(.*)$"
    steps:
      - call: a2a_c
        args: {message: "$1"}
      - reply: "B relayed: {result}"
  - system: "agent A's analyzer"
    steps:
      - reply: "Analysis: looks fine"
  - system: "agent A"
    match: "(?s)^(.*)$"
    steps:
      - call: a2a_b
        args: {message: "$1"}
      - reply: "A relayed: {result}"
"#;

/// Approves the approval `a` at `agent` over REST; returns the answer.
async fn approve(agent: &Agent, a: &Value) -> String {
    let (status, body) = post_json(
        agent,
        &format!("/approvals/{}", a["uuid"].as_str().unwrap()),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["result"]["response"].as_str().unwrap().to_string()
}

/// What [`rest_only_card`]'s server forwarded to the agent behind it.
type Forwarded = Arc<std::sync::Mutex<Vec<String>>>;

/// Serves `agent`'s card with only an HTTP+JSON interface, at this
/// server's own `/a2a`, and forwards that binding's requests (nothing else:
/// `POST /a2a`, the JSON-RPC endpoint, is a 404 here) to the agent.
/// Returns this server's URL and the paths it forwarded.
async fn rest_only_card(agent: &Agent) -> (String, Forwarded) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut card = support::get_json(agent, "/.well-known/agent-card.json").await;
    card.as_object_mut().unwrap().remove("url");
    card["supportedInterfaces"] = json!([{"url": format!("{url}/a2a"),
        "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]);
    let forwarded = Forwarded::default();
    let (seen, agent) = (forwarded.clone(), agent.base.clone());
    let forward = move |req: axum::extract::Request| {
        let (seen, agent) = (seen.clone(), agent.clone());
        async move {
            let path = req.uri().path_and_query().unwrap().to_string();
            if !path.starts_with("/a2a/") {
                return (axum::http::StatusCode::NOT_FOUND, Vec::new());
            }
            seen.lock().unwrap().push(path.clone());
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
            let mut out = client().request(parts.method, format!("{agent}{path}"));
            for (k, v) in &parts.headers {
                if k != "host" {
                    out = out.header(k, v);
                }
            }
            let answer = out.body(body).send().await.unwrap();
            let status = answer.status();
            (status, answer.bytes().await.unwrap().to_vec())
        }
    };
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            axum::routing::get(move || std::future::ready(axum::Json(card.clone()))),
        )
        .fallback(forward);
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, forwarded)
}

/// Serves `agent`'s card with only its gRPC interface (the agent's own
/// `host:port`: gRPC is HTTP/2 on the agent's port), so a client that
/// reads this card can speak nothing but gRPC to it. Returns the URL.
async fn grpc_only_card(agent: &Agent) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut card = support::get_json(agent, "/.well-known/agent-card.json").await;
    card.as_object_mut().unwrap().remove("url");
    let grpc: Vec<Value> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["protocolBinding"] == "GRPC")
        .cloned()
        .collect();
    assert_eq!(grpc.len(), 1, "{card}");
    card["supportedInterfaces"] = json!(grpc);
    let app = axum::Router::new().route(
        "/.well-known/agent-card.json",
        axum::routing::get(move || std::future::ready(axum::Json(card.clone()))),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Which of C's bindings B finds on C's card.
#[derive(Clone, Copy, PartialEq)]
enum Offers {
    All,
    RestOnly,
    GrpcOnly,
    /// All, with B's entry for C saying `binding: grpc`.
    AllPreferringGrpc,
}

/// A free port (for an agent that must come back on the same address).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Chain {
    _dirs: Vec<tempfile::TempDir>,
    fake: Arc<FakeState>,
    env: Vec<(&'static str, String)>,
    /// C, B, A (when started).
    agents: Vec<Agent>,
    configs: Vec<PathBuf>,
    db: PathBuf,
    /// The HTTP+JSON requests B sent C ([`Chain::start_rest_only`]).
    forwarded: Forwarded,
}

impl Chain {
    /// Starts C (resources), then B (delegates to C) and, with `depth` 3,
    /// A (delegates to B). `a_yaml` replaces A's agent-specific part.
    async fn start(depth: usize, a_yaml: Option<&str>) -> Chain {
        Self::start_with(depth, a_yaml, "", "").await
    }

    /// [`Chain::start`] with `c_extra` and `b_extra` appended to C's and
    /// B's configs (e.g. `approvals:`).
    async fn start_with(depth: usize, a_yaml: Option<&str>, c_extra: &str, b_extra: &str) -> Chain {
        Self::build(depth, a_yaml, c_extra, b_extra, Offers::All).await
    }

    /// A chain of two where B finds C through a card that offers C's
    /// HTTP+JSON interface alone, so B speaks only that binding to C.
    async fn start_rest_only() -> Chain {
        Self::build(2, None, "", "", Offers::RestOnly).await
    }

    /// A chain of two where C's card (as B finds it) offers only gRPC.
    async fn start_grpc_only() -> Chain {
        Self::build(2, None, "", "", Offers::GrpcOnly).await
    }

    /// A chain of two where C offers every binding and B prefers gRPC.
    async fn start_preferring_grpc() -> Chain {
        Self::build(2, None, "", "", Offers::AllPreferringGrpc).await
    }

    async fn build(
        depth: usize,
        a_yaml: Option<&str>,
        c_extra: &str,
        b_extra: &str,
        offers: Offers,
    ) -> Chain {
        let fake = FakeState::new(Rules::parse(RULES).unwrap());
        let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
        let env = vec![
            ("GEMINI_API_KEY", KEY.to_string()),
            ("GEMINI_BASE_URL", base),
            // Operator tokens for a chain whose top signs people in.
            ("CHAIN_BOB_T", BOB.to_string()),
            ("CHAIN_ALICE_T", ALICE.to_string()),
        ];
        let mut chain = Chain {
            _dirs: Vec::new(),
            fake,
            env,
            agents: Vec::new(),
            configs: Vec::new(),
            db: PathBuf::new(),
            forwarded: Forwarded::default(),
        };
        let dir = tempfile::tempdir().unwrap();
        chain.db = dir.path().join("resources.db");
        let c_yaml = format!(
            "name: agent-c\nprompt: You are agent C, the resource keeper.\nmcp_servers:\n  - name: resources\n    command: {}\n    args: [--db, {}]\n{c_extra}",
            test_support::process::workspace_bin("mcp-resources"),
            chain.db.display()
        );
        chain.add(dir, &c_yaml, None);
        let mut c_url = chain.agents[0].base.clone();
        if offers == Offers::RestOnly {
            let (url, forwarded) = rest_only_card(&chain.agents[0]).await;
            (c_url, chain.forwarded) = (url, forwarded);
        }
        if offers == Offers::GrpcOnly {
            c_url = grpc_only_card(&chain.agents[0]).await;
        }
        let b_port = free_port();
        let binding = if offers == Offers::AllPreferringGrpc {
            ", binding: grpc"
        } else {
            ""
        };
        let b_yaml = format!(
            "name: agent-b\nprompt: You are agent B, the relay.\na2a:\n  - {{name: c, url: \"{c_url}\", description: The resource keeper{binding}}}\n{b_extra}"
        );
        chain.add(tempfile::tempdir().unwrap(), &b_yaml, Some(b_port));
        if depth == 3 {
            let b_url = chain.agents[1].base.clone();
            let a_yaml = match a_yaml {
                Some(y) => y.replace("{B}", &b_url),
                None => format!(
                    "name: agent-a\nprompt: You are agent A, the front desk.\na2a:\n  - {{name: b, url: \"{b_url}\", description: The relay}}\n"
                ),
            };
            chain.add(tempfile::tempdir().unwrap(), &a_yaml, None);
        }
        chain
    }

    fn add(&mut self, dir: tempfile::TempDir, yaml: &str, port: Option<u16>) {
        let data = dir.path().join("data");
        let mut cfg = support::write_config(dir.path(), &data, yaml);
        if let Some(p) = port {
            let text = std::fs::read_to_string(&cfg).unwrap();
            cfg = dir.path().join("agent.yaml");
            std::fs::write(&cfg, text.replace("port: 0", &format!("port: {p}"))).unwrap();
        }
        let env: Vec<(&str, &str)> = self.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.agents.push(Agent::start_with_env(&cfg, &env));
        self.configs.push(cfg);
        self._dirs.push(dir);
    }

    fn c(&self) -> &Agent {
        &self.agents[0]
    }
    fn b(&self) -> &Agent {
        &self.agents[1]
    }
    fn a(&self) -> &Agent {
        &self.agents[2]
    }

    fn resources(&self) -> usize {
        mcp_resources::db::ResourceDb::open(&self.db)
            .unwrap()
            .list(None)
            .unwrap()
            .len()
    }
}

async fn rpc(agent: &Agent, version: Option<&str>, method: &str, params: Value) -> Value {
    let mut req = client()
        .post(agent.url("/a2a"))
        .timeout(std::time::Duration::from_secs(30))
        .json(&json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": params}));
    if let Some(v) = version {
        req = req.header("A2A-Version", v);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

fn v1_send(text: &str) -> Value {
    json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}})
}

/// TS-009: the card, at both paths, dual-stack, with our real address.
#[tokio::test]
async fn the_agent_card_describes_the_agent_at_both_paths() {
    let chain = Chain::start(2, None).await;
    let c = chain.c();
    let resp = client()
        .get(c.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age")
    );
    let etag = resp.headers()["etag"].to_str().unwrap().to_string();
    let card: Value = resp.json().await.unwrap();
    assert_eq!(card["name"], "agent-c");
    let endpoint = c.url("/a2a");
    assert_eq!(
        card["supportedInterfaces"][0],
        json!({"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"})
    );
    assert_eq!(card["supportedInterfaces"][1]["protocolVersion"], "0.3");
    assert_eq!(
        (card["url"].as_str(), card["protocolVersion"].as_str()),
        (Some(endpoint.as_str()), Some("0.3.0"))
    );
    assert_eq!(card["capabilities"]["streaming"], true);
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(
        skills.contains(&"resources_add") && skills.contains(&"resources_list"),
        "{skills:?}"
    );
    let legacy: Value = support::get_json(c, "/.well-known/agent.json").await;
    assert_eq!(legacy, card);
    let again = client()
        .get(c.url("/.well-known/agent-card.json"))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    // B lists its sub-agent as a tool and a skill.
    let tools = support::get_json(chain.b(), "/tools").await;
    let a2a_c = support::tool(&tools, "a2a_c").unwrap();
    assert_eq!(
        (a2a_c["server"].as_str(), a2a_c["destructiveHint"].as_bool()),
        (Some("c"), Some(false))
    );
}

/// TS-010/TS-011/TS-020: send a safe message → completed with an artifact;
/// a destructive one → input-required → approve over REST → GetTask says
/// completed; continuation over A2A approves and rejects; errors.
#[tokio::test]
async fn tasks_complete_wait_and_continue_over_a2a_and_rest() {
    let chain = Chain::start(2, None).await;
    let c = chain.c();
    let done = rpc(c, Some("1.0"), "SendMessage", v1_send("list please")).await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert!(task.get("kind").is_none());
    assert!(
        task["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("C has: {\"count\":0")
    );
    assert_eq!(task["history"][0]["role"], "ROLE_USER");

    // Destructive: input-required with the structured request.
    let waiting = rpc(c, Some("1.0"), "SendMessage", v1_send("add pears 4")).await;
    let task = &waiting["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{waiting}"
    );
    let data = &task["status"]["message"]["parts"][1]["data"];
    assert_eq!(data["tool"], "resources_add");
    assert_eq!(data["arguments"], json!({"name": "pears", "value": 4}));
    let tid = task["id"].as_str().unwrap().to_string();
    assert_eq!(chain.resources(), 0);
    // Anything but a decision is refused with an explanation.
    let unclear = rpc(c, Some("1.0"), "SendMessage", json!({"message": {"messageId": "m2", "role": "ROLE_USER", "taskId": tid, "parts": [{"text": "hmm"}]}})).await;
    assert_eq!(unclear["error"]["code"], -32602, "{unclear}");
    assert!(
        unclear["error"]["message"]
            .as_str()
            .unwrap()
            .contains("approve")
    );
    // Approve over REST; the A2A task is completed.
    let uuid = data["approval_uuid"].as_str().unwrap();
    let (status, _) = post_json(c, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(status, 200);
    let got = rpc(
        c,
        Some("1.0"),
        "GetTask",
        json!({"id": tid, "historyLength": 1}),
    )
    .await;
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{got}"
    );
    assert_eq!(got["result"]["history"].as_array().unwrap().len(), 1);
    assert_eq!(chain.resources(), 1);
    // A terminal task takes no more messages (1.0).
    let late = rpc(c, Some("1.0"), "SendMessage", json!({"message": {"messageId": "m3", "role": "ROLE_USER", "taskId": tid, "parts": [{"text": "again"}]}})).await;
    assert_eq!(late["error"]["code"], -32004, "{late}");

    // 0.3: continuation approve, then another with reject.
    let send03 = |text: &str, task: Option<&str>| {
        let mut m = json!({"kind": "message", "messageId": "x", "role": "user", "parts": [{"kind": "text", "text": text}]});
        if let Some(t) = task {
            m["taskId"] = json!(t);
        }
        json!({ "message": m })
    };
    let w = rpc(c, None, "message/send", send03("add figs 2", None)).await;
    assert_eq!(
        (
            w["result"]["kind"].as_str(),
            w["result"]["status"]["state"].as_str()
        ),
        (Some("task"), Some("input-required")),
        "{w}"
    );
    let t = w["result"]["id"].as_str().unwrap().to_string();
    let ok = rpc(c, None, "message/send", send03("approve", Some(&t))).await;
    assert_eq!(ok["result"]["status"]["state"], "completed", "{ok}");
    assert!(
        ok["result"]["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"figs\"")
    );
    assert_eq!(chain.resources(), 2);
    let w = rpc(c, None, "message/send", send03("add kiwis 9", None)).await;
    let t = w["result"]["id"].as_str().unwrap().to_string();
    let no = rpc(c, None, "message/send", send03("no", Some(&t))).await;
    assert_eq!(no["result"]["status"]["state"], "completed", "{no}");
    assert!(
        no["result"]["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("rejected")
    );
    assert_eq!(chain.resources(), 2, "never run on reject");

    // Errors in each dialect.
    let missing = rpc(c, Some("1.0"), "GetTask", json!({"id": "nope"})).await;
    assert_eq!(missing["error"]["code"], -32001);
    assert_eq!(missing["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(
        rpc(c, None, "tasks/get", json!({"id": "nope"})).await["error"]["code"],
        -32001
    );
    assert_eq!(
        rpc(c, None, "tasks/nothing", json!({})).await["error"]["code"],
        -32601
    );
    assert_eq!(
        rpc(c, Some("99.0"), "GetTask", json!({"id": "x"})).await["error"]["code"],
        -32009
    );
    assert_eq!(
        rpc(c, Some("1.0"), "SendMessage", json!({})).await["error"]["code"],
        -32602
    );
}

/// TS-028: cancelling a waiting task never runs its tool.
#[tokio::test]
async fn cancelling_a_waiting_task_never_runs_the_tool() {
    let chain = Chain::start(2, None).await;
    let c = chain.c();
    let w = rpc(c, Some("1.0"), "SendMessage", v1_send("add plums 1")).await;
    let tid = w["result"]["task"]["id"].as_str().unwrap().to_string();
    let cancelled = rpc(c, Some("1.0"), "CancelTask", json!({"id": tid})).await;
    assert_eq!(
        cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    let again = rpc(c, Some("1.0"), "CancelTask", json!({"id": tid})).await;
    assert_eq!(again["error"]["code"], -32002);
    let conv = support::get_json(c, &format!("/conversations/{tid}")).await;
    assert_eq!(conv["conversation"]["status"], "cancelled");
    assert!(conv["conversation"].get("pending_approval").is_none());
    assert_eq!(chain.resources(), 0);
    let uuid = w["result"]["task"]["status"]["message"]["parts"][1]["data"]["approval_uuid"]
        .as_str()
        .unwrap();
    let (status, _) = post_json(c, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(status, 409, "a cancelled approval cannot be approved");
    assert_eq!(chain.resources(), 0);
}

/// TS-026: two agents: C's approval is proxied by B, decided at B over
/// REST, and the result flows back; a rejection too.
#[tokio::test]
async fn a_proxied_approval_is_decided_upstream_and_the_result_flows_back() {
    let chain = Chain::start(2, None).await;
    let b = chain.b();
    let (status, body) = post_json(b, "/conversations", json!({"message": "add apples 5"})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
    let a = &body["result"]["approval"];
    assert_eq!(a["tool_name"], "resources_add");
    assert_eq!(a["tool_args"], json!({"name": "apples", "value": 5}));
    assert_eq!(a["remote_agent_name"], "c");
    assert_eq!(a["chain"], json!(["c"]));
    let remote_task = a["remote_task_id"].as_str().unwrap().to_string();
    let at_c = support::get_json(chain.c(), &format!("/conversations/{remote_task}")).await;
    assert_eq!(at_c["conversation"]["status"], "waiting_approval");
    assert_eq!(chain.resources(), 0);
    let answer = approve(b, a).await;
    let response = answer.as_str();
    assert!(
        response.starts_with("B relayed: C added: {\"resource\""),
        "{response}"
    );
    assert_eq!(chain.resources(), 1);
    let at_c = support::get_json(chain.c(), &format!("/conversations/{remote_task}")).await;
    assert_eq!(at_c["conversation"]["status"], "active");

    // Reject: C's model hears it, nothing runs, B gets C's answer.
    let (_, body) = post_json(b, "/conversations", json!({"message": "add limes 3"})).await;
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = post_json(
        b,
        &format!("/approvals/{uuid}"),
        json!({"approved": false, "reason": "no limes"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let response = body["result"]["response"].as_str().unwrap();
    assert!(
        response.contains("rejected") && response.contains("no limes"),
        "{response}"
    );
    assert_eq!(chain.resources(), 1);
}

/// The same proxy approval with C reachable over HTTP+JSON only: the
/// request, the decision (its data part) and a cancel all go over that
/// binding, and the tool runs once, after the approval.
#[tokio::test]
async fn a_sub_agent_offering_only_http_json_is_spoken_to_in_it() {
    let chain = Chain::start_rest_only().await;
    let b = chain.b();
    let (status, body) = post_json(b, "/conversations", json!({"message": "add plums 6"})).await;
    assert_eq!(status, 201, "{body}");
    let a = &body["result"]["approval"];
    assert_eq!(
        a["tool_args"],
        json!({"name": "plums", "value": 6}),
        "{body}"
    );
    assert_eq!(a["remote_agent_name"], "c");
    assert_eq!(chain.resources(), 0);
    let answer = approve(b, a).await;
    let response = answer.as_str();
    assert!(response.starts_with("B relayed: C added:"), "{response}");
    assert_eq!(chain.resources(), 1);

    // Cancelling B's task cancels C's over HTTP+JSON: nothing runs.
    let (_, body) = post_json(b, "/conversations", json!({"message": "add figs 2"})).await;
    let b_task = body["conversation"]["id"].as_str().unwrap().to_string();
    let c_task = body["result"]["approval"]["remote_task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let cancelled = rpc(b, Some("1.0"), "CancelTask", json!({"id": b_task})).await;
    assert_eq!(
        cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    let at_c = support::get_json(chain.c(), &format!("/conversations/{c_task}")).await;
    assert_eq!(at_c["conversation"]["status"], "cancelled", "{at_c}");
    assert_eq!(chain.resources(), 1);
    let forwarded = chain.forwarded.lock().unwrap().clone();
    assert_eq!(
        forwarded,
        [
            "/a2a/message:send".to_string(),
            "/a2a/message:send".to_string(),
            "/a2a/message:send".to_string(),
            format!("/a2a/tasks/{c_task}:cancel"),
        ]
    );
}

/// The same with C's card offering only gRPC: B sends the request, the
/// decision and a cancel as gRPC calls (C counts them by binding), and the
/// tool runs once, after the approval; a rejection's reason gets through.
#[tokio::test]
async fn a_sub_agent_offering_only_grpc_is_spoken_to_in_it() {
    grpc_chain(Chain::start_grpc_only().await).await;
}

/// `binding: grpc` on the entry: C's card offers every binding, B speaks
/// gRPC (the same calls, counted by C as gRPC).
#[tokio::test]
async fn an_entry_may_prefer_grpc_over_the_cards_first_binding() {
    grpc_chain(Chain::start_preferring_grpc().await).await;
}

async fn grpc_chain(chain: Chain) {
    let b = chain.b();
    let (status, body) = post_json(b, "/conversations", json!({"message": "add plums 6"})).await;
    assert_eq!(status, 201, "{body}");
    let a = &body["result"]["approval"];
    assert_eq!(
        a["tool_args"],
        json!({"name": "plums", "value": 6}),
        "{body}"
    );
    assert_eq!(a["remote_agent_name"], "c");
    assert_eq!(chain.resources(), 0);
    let answer = approve(b, a).await;
    assert!(answer.starts_with("B relayed: C added:"), "{answer}");
    assert_eq!(chain.resources(), 1);

    let (_, body) = post_json(b, "/conversations", json!({"message": "add limes 3"})).await;
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = post_json(
        b,
        &format!("/approvals/{uuid}"),
        json!({"approved": false, "reason": "no limes"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let response = body["result"]["response"].as_str().unwrap();
    assert!(response.contains("no limes"), "{response}");
    assert_eq!(chain.resources(), 1);

    let (_, body) = post_json(b, "/conversations", json!({"message": "add figs 2"})).await;
    let b_task = body["conversation"]["id"].as_str().unwrap().to_string();
    let c_task = body["result"]["approval"]["remote_task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let cancelled = rpc(b, Some("1.0"), "CancelTask", json!({"id": b_task})).await;
    assert_eq!(
        cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    let at_c = support::get_json(chain.c(), &format!("/conversations/{c_task}")).await;
    assert_eq!(at_c["conversation"]["status"], "cancelled", "{at_c}");
    assert_eq!(chain.resources(), 1);
    // Every call C answered came over gRPC: 5 sends (3 asks, 2
    // decisions) and the cancel; none over JSON-RPC or HTTP+JSON.
    let metrics = client()
        .get(chain.c().url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let count = |method: &str, binding: &str| -> u64 {
        metrics
            .lines()
            .find(|l| {
                l.starts_with("stopgo_a2a_requests_total")
                    && l.contains(&format!("method=\"{method}\""))
                    && l.contains(&format!("\"{binding}\""))
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(count("SendMessage", "grpc"), 5, "{metrics}");
    assert_eq!(count("CancelTask", "grpc"), 1, "{metrics}");
    assert!(
        !metrics
            .lines()
            .any(|l| l.starts_with("stopgo_a2a_requests_total") && !l.contains("\"grpc\"")),
        "{metrics}"
    );
}

/// POLICY.md §2 down a chain: an approval that expires at B (a proxy
/// approval) ends C's with a rejection saying so; one that expires at C
/// ends B's proxy approval, and B's call gets C's answer. Nothing runs.
#[tokio::test]
async fn an_expiry_anywhere_in_the_chain_ends_the_approvals_on_both_sides() {
    let wait_for = |agent: &'_ Agent, id: String| {
        let (http, url) = (client(), agent.url(&format!("/conversations/{id}")));
        async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
            loop {
                let c: Value = http.get(&url).send().await.unwrap().json().await.unwrap();
                let c = c["conversation"].clone();
                let last = c["messages"].as_array().and_then(|m| m.last()).cloned();
                if c["status"] != "waiting_approval"
                    && last.as_ref().is_some_and(|m| m["role"] == "assistant")
                {
                    return c;
                }
                assert!(std::time::Instant::now() < deadline, "still waiting: {c}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    };
    let call_of = |c: &Value, name: &str| -> Value {
        c["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["tool_call"]["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{c}"))
    };

    // Expiry at B (the proxy approval): C hears a rejection saying so.
    let chain = Chain::start_with(2, None, "", "approvals:\n  expires_in: 2s\n").await;
    let (_, body) = post_json(
        chain.b(),
        "/conversations",
        json!({"message": "add apples 5"}),
    )
    .await;
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    let task = body["result"]["approval"]["remote_task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let at_b = wait_for(chain.b(), id).await;
    let proxy = call_of(&at_b, "a2a_c");
    assert_eq!(
        proxy["tool_call"]["approval"]["status"], "expired",
        "{proxy}"
    );
    let at_c = wait_for(chain.c(), task).await;
    let add = call_of(&at_c, "resources_add");
    assert_eq!(add["tool_call"]["approval"]["status"], "rejected", "{add}");
    assert!(
        add["tool_call"]["approval"]["reason"]
            .as_str()
            .unwrap()
            .contains("expired after 2s"),
        "{add}"
    );
    assert_eq!(chain.resources(), 0);
    drop(chain);

    // Expiry at C: B's proxy approval ends too, with C's answer.
    let chain = Chain::start_with(2, None, "approvals:\n  expires_in: 2s\n", "").await;
    let (_, body) = post_json(
        chain.b(),
        "/conversations",
        json!({"message": "add pears 5"}),
    )
    .await;
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let at_b = wait_for(chain.b(), id).await;
    let proxy = call_of(&at_b, "a2a_c");
    assert_eq!(
        proxy["tool_call"]["approval"]["status"], "expired",
        "{proxy}"
    );
    let result = proxy["tool_call"]["result"].as_str().unwrap();
    assert!(
        result.starts_with("C added: Not run: the approval expired after 2s"),
        "B's call carries C's answer: {result}"
    );
    let (status, _) = post_json(
        chain.b(),
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(chain.resources(), 0);
}

/// POLICY.md §3 through a chain: a proxy approval edited at B sends the
/// edited arguments with the continuation; C checks them and runs them.
#[tokio::test]
async fn an_edit_at_the_top_runs_below_with_the_edited_arguments() {
    let chain = Chain::start(2, None).await;
    let (_, body) = post_json(
        chain.b(),
        "/conversations",
        json!({"message": "add apples 5"}),
    )
    .await;
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = post_json(
        chain.b(),
        &format!("/approvals/{uuid}"),
        json!({"approved": true, "arguments": {"name": "apples", "value": 9}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let response = body["result"]["response"].as_str().unwrap();
    assert!(response.contains("\"value\":9"), "{response}");
    let kept = mcp_resources::db::ResourceDb::open(&chain.db)
        .unwrap()
        .list(None)
        .unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!((kept[0].name.as_str(), kept[0].value), ("apples", 9));
}

/// A decision that names another approval than the one the task waits on
/// (the caller's view is stale: ours expired and the model asked again)
/// is refused, never applied to the new one; the right one decides.
#[tokio::test]
async fn a_continuation_for_another_approval_is_refused() {
    let chain = Chain::start(2, None).await;
    let c = chain.c();
    let waiting = rpc(c, Some("1.0"), "SendMessage", v1_send("add plums 2")).await;
    let task = &waiting["result"]["task"];
    let tid = task["id"].as_str().unwrap().to_string();
    let uuid = task["status"]["message"]["parts"][1]["data"]["approval_uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let decide = |for_uuid: &str| {
        json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "taskId": tid,
            "parts": [{"text": "approve"}, {"data": {"approved": true, "approval_uuid": for_uuid}}]}})
    };
    let stale = rpc(c, Some("1.0"), "SendMessage", decide("an-older-approval")).await;
    assert_eq!(stale["error"]["code"], -32602, "{stale}");
    assert!(
        stale["error"]["message"].as_str().unwrap().contains(&uuid),
        "{stale}"
    );
    assert_eq!(chain.resources(), 0, "never applied");
    let ok = rpc(c, Some("1.0"), "SendMessage", decide(&uuid)).await;
    assert_eq!(
        ok["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{ok}"
    );
    assert_eq!(chain.resources(), 1);
}

/// TS-027: three deep, identity along the chain, and kill -9 of the middle
/// agent while the approval waits; approved at the top afterwards.
#[tokio::test]
async fn three_agents_deep_with_a_crash_in_the_middle() {
    let mut chain = Chain::start(3, None).await;
    let resp = client()
        .post(chain.a().url("/conversations"))
        .header("Authorization", "Bearer chain-token-42")
        .header("X-Session-ID", "sid-chain-1234")
        .json(&json!({"message": "add cherries 8"}))
        .timeout(std::time::Duration::from_secs(30))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let body: Value = resp.json().await.unwrap();
    let a = &body["result"]["approval"];
    assert_eq!(a["chain"], json!(["b", "c"]), "{body}");
    assert_eq!(a["remote_agent_name"], "b");
    assert_eq!(a["tool_name"], "resources_add");
    let uuid = a["uuid"].as_str().unwrap().to_string();
    // The same session id is logged by every agent, the token by none.
    for agent in &chain.agents {
        let log = agent.wait_for_log("sid-chain-1234");
        assert!(log.contains("sid=sid-chain-1234"), "{log}");
        assert!(!log.contains("chain-token-42"), "a token in a log");
    }
    // Kill the middle agent while the approval waits, bring it back.
    chain.agents[1].kill9_in_place();
    let env: Vec<(&str, &str)> = chain.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    chain.agents[1] = Agent::start_with_env(&chain.configs[1], &env);
    assert_eq!(chain.resources(), 0);
    let (status, body) = post_json(
        chain.a(),
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let response = body["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with("A relayed: B relayed: C added:"),
        "{response}"
    );
    assert_eq!(chain.resources(), 1, "ran exactly once");
    // The bearer token reached every hop's model call? Never: LLM requests
    // carry only the provider key.
    for r in chain.fake.requests() {
        assert!(!r.headers.iter().any(|(_, v)| v.contains("chain-token-42")));
    }
}

/// A streaming send: the task, working updates with tool activity, the
/// answer as an artifact, then the terminal status.
#[tokio::test]
async fn streaming_shows_progress_then_the_answer() {
    let chain = Chain::start(2, None).await;
    let resp = client()
        .post(chain.c().url("/a2a"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": v1_send("list it")}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let text = resp.text().await.unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(events.len() >= 4, "{text}");
    assert!(events.iter().all(|e| e["id"] == 7));
    assert_eq!(
        events[0]["result"]["task"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert!(
        events.iter().any(
            |e| e["result"]["statusUpdate"]["status"]["message"]["parts"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Running resources_list"))
        ),
        "{text}"
    );
    let n = events.len();
    assert!(
        events[n - 2]["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("C has:")
    );
    assert_eq!(
        events[n - 1]["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(!text.contains("\"final\""), "no 0.3 keys in 1.0");
}

/// FR-029 inside a pipeline: an `a2a` node's remote approval pauses the
/// sequential pipeline at that node; approved at the top, the pipeline
/// resumes there and nothing before it runs again.
#[tokio::test]
async fn a_proxied_approval_pauses_and_resumes_a_pipeline_node() {
    let yaml = "name: agent-a\nagent:\n  name: flow\n  type: sequential\n  agents:\n    - {name: analyzer, type: llm, prompt: \"You are agent A's analyzer.\", output_key: analysis}\n    - {name: remote, type: a2a, url: \"{B}\", output_key: remote_answer}\n";
    let chain = Chain::start(3, Some(yaml)).await;
    let (status, body) = post_json(
        chain.a(),
        "/conversations",
        json!({"message": "add dates 6"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let a = &body["result"]["approval"];
    assert_eq!(a["chain"], json!(["remote", "c"]), "{body}");
    let ps = &body["conversation"]["pipeline_state"];
    assert_eq!(ps["status"], "paused");
    assert_eq!(ps["pending"][0]["node"], "remote");
    let analyzer = |c: &Chain| {
        c.fake
            .requests()
            .iter()
            .filter(|r| r.body.to_string().contains("agent A's analyzer"))
            .count()
    };
    assert_eq!(analyzer(&chain), 1);
    let (status, body) = post_json(
        chain.a(),
        &format!("/approvals/{}", a["uuid"].as_str().unwrap()),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let response = body["result"]["response"].as_str().unwrap();
    assert!(response.starts_with("B relayed: C added:"), "{response}");
    assert_eq!(
        body["conversation"]["pipeline_state"]["status"],
        "completed"
    );
    assert!(
        body["conversation"]["pipeline_state"]["state"]["remote_answer"]
            .as_str()
            .unwrap()
            .starts_with("B relayed")
    );
    assert_eq!(analyzer(&chain), 1, "the analyzer did not run again");
    assert_eq!(chain.resources(), 1);
}

/// REST and A2A share one state: a stream subscribed to a waiting task
/// ends with `completed` once the approval is given over REST. A client
/// that gives up on a blocking send does not stop its task. Hop limits end
/// delegation cycles.
#[tokio::test]
async fn subscriptions_detached_turns_and_hop_limits() {
    let chain = Chain::start(2, None).await;
    let c = chain.c();
    let w = rpc(c, Some("1.0"), "SendMessage", v1_send("add melons 3")).await;
    let tid = w["result"]["task"]["id"].as_str().unwrap().to_string();
    let uuid = w["result"]["task"]["status"]["message"]["parts"][1]["data"]["approval_uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let resp = client()
        .post(c.url("/a2a"))
        .header("A2A-Version", "1.0")
        .timeout(std::time::Duration::from_secs(20))
        .json(
            &json!({"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": tid}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let reader = tokio::spawn(async move { resp.text().await.unwrap() });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (status, _) = post_json(c, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(status, 200);
    let text = tokio::time::timeout(std::time::Duration::from_secs(10), reader)
        .await
        .expect("the stream ends at the terminal state")
        .unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(
        events[0]["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{text}"
    );
    let last = events.last().unwrap();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{text}"
    );

    // A client that gives up early: the turn still finishes.
    chain
        .fake
        .set_latency(std::time::Duration::from_millis(600));
    let gave_up = client()
        .post(c.url("/a2a"))
        .header("A2A-Version", "1.0")
        .timeout(std::time::Duration::from_millis(150))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": v1_send("list now")}))
        .send()
        .await;
    assert!(gave_up.is_err(), "the client timed out");
    chain.fake.set_latency(std::time::Duration::ZERO);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let list = rpc(c, Some("1.0"), "ListTasks", json!({"pageSize": 1})).await;
        let t = &list["result"]["tasks"][0];
        if t["status"]["state"] == "TASK_STATE_COMPLETED" && t["id"] != tid.as_str() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the detached turn never finished: {list}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // Too many hops: refused.
    let resp: Value = client()
        .post(c.url("/a2a"))
        .header("A2A-Version", "1.0")
        .header("X-A2A-Hop-Count", "9")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": v1_send("list")}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resp["error"]["code"], -32600, "{resp}");
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a2a_max_hops")
    );
}

/// The seed's legacy form: `type`-tagged parts, integer ids, `taskId`
/// beside the message; a completed task takes the next turn (as the seed's
/// agents did) instead of -32004.
#[tokio::test]
async fn the_seed_legacy_dialect_still_works() {
    let chain = Chain::start(2, None).await;
    let c = chain.c();
    let send = |text: &str, task: Option<&str>| {
        let mut p = json!({"message": {"role": "user", "parts": [{"type": "text", "text": text}]}});
        if let Some(t) = task {
            p["taskId"] = json!(t);
        }
        p
    };
    let first = rpc(c, None, "message/send", send("list please", None)).await;
    let t = first["result"]["id"].as_str().unwrap().to_string();
    assert_eq!(first["result"]["status"]["state"], "completed", "{first}");
    assert_eq!(first["result"]["artifacts"][0]["parts"][0]["type"], "text");
    let waiting = rpc(c, None, "message/send", send("add grapes 1", Some(&t))).await;
    assert_eq!(
        waiting["result"]["status"]["state"], "input-required",
        "{waiting}"
    );
    assert_eq!(waiting["result"]["id"], t.as_str(), "the same conversation");
    let done = rpc(c, None, "message/send", send("yes", Some(&t))).await;
    assert_eq!(done["result"]["status"]["state"], "completed", "{done}");
    assert_eq!(chain.resources(), 1);
}

/// `returnImmediately`: the answer is the task, working; the turn goes on
/// without the client and `GetTask` later shows it completed.
#[tokio::test]
async fn return_immediately_hands_the_task_over() {
    let chain = Chain::start(2, None).await;
    let c = chain.c();
    chain
        .fake
        .set_latency(std::time::Duration::from_millis(1500));
    let mut params = v1_send("list quickly");
    params["configuration"] = json!({"returnImmediately": true});
    let started = std::time::Instant::now();
    let r = rpc(c, Some("1.0"), "SendMessage", params).await;
    // The model takes 1.5 s a call: an answer well before that (with room
    // for a loaded machine), and a task still working, did not wait for it.
    assert!(
        started.elapsed() < std::time::Duration::from_millis(1200),
        "did not wait for the model"
    );
    let task = &r["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{r}");
    let tid = task["id"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let got = rpc(c, Some("1.0"), "GetTask", json!({"id": tid})).await;
        if got["result"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            assert!(
                got["result"]["artifacts"][0]["parts"][0]["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("C has:")
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{got}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Cancelling at the top of a chain cancels the waiting tasks below it:
/// nothing runs anywhere.
#[tokio::test]
async fn cancelling_at_the_top_cancels_down_the_chain() {
    let chain = Chain::start(3, None).await;
    let (status, body) = post_json(
        chain.a(),
        "/conversations",
        json!({"message": "add quinces 2"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let a_task = body["conversation"]["id"].as_str().unwrap().to_string();
    let b_task = body["result"]["approval"]["remote_task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let cancelled = rpc(chain.a(), Some("1.0"), "CancelTask", json!({"id": a_task})).await;
    assert_eq!(
        cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    let at_b = support::get_json(chain.b(), &format!("/conversations/{b_task}")).await;
    assert_eq!(at_b["conversation"]["status"], "cancelled", "{at_b}");
    let c_pending = support::get_json(chain.c(), "/approvals").await;
    assert!(
        c_pending["approvals"].as_array().unwrap().is_empty(),
        "{c_pending}"
    );
    assert_eq!(chain.resources(), 0);
}

/// `ListTasks` with a status filter: only tasks in that state, in full
/// pages, with `totalSize` counting the matching tasks (not all of them).
#[tokio::test]
async fn list_tasks_filters_by_state_with_exact_totals_and_full_pages() {
    let chain = Chain::start(1, None).await;
    let c = chain.c();
    let mut completed = Vec::new();
    let mut waiting = Vec::new();
    // Interleaved, so that a filter applied after paging would give short
    // or empty pages.
    for i in 0..5 {
        let t = rpc(c, Some("1.0"), "SendMessage", v1_send("list please")).await;
        completed.push(t["result"]["task"]["id"].as_str().unwrap().to_string());
        if i < 3 {
            let t = rpc(
                c,
                Some("1.0"),
                "SendMessage",
                v1_send(&format!("add pears {i}")),
            )
            .await;
            assert_eq!(
                t["result"]["task"]["status"]["state"],
                "TASK_STATE_INPUT_REQUIRED"
            );
            waiting.push(t["result"]["task"]["id"].as_str().unwrap().to_string());
        }
    }
    let ids = |v: &Value| -> Vec<String> {
        v["result"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    let all = rpc(c, Some("1.0"), "ListTasks", json!({"pageSize": 100})).await;
    assert_eq!(all["result"]["totalSize"], 8, "{all}");

    let w = rpc(
        c,
        Some("1.0"),
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED", "pageSize": 2}),
    )
    .await;
    assert_eq!(w["result"]["totalSize"], 3, "{w}");
    let first = ids(&w);
    assert_eq!(
        first,
        vec![waiting[2].clone(), waiting[1].clone()],
        "newest first: {w}"
    );
    let token = w["result"]["nextPageToken"].as_str().unwrap().to_string();
    assert!(!token.is_empty(), "{w}");
    let w2 = rpc(
        c,
        Some("1.0"),
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED", "pageSize": 2, "pageToken": token}),
    )
    .await;
    assert_eq!(ids(&w2), vec![waiting[0].clone()], "{w2}");
    assert_eq!(
        w2["result"]["totalSize"], 3,
        "the total stays the filter's: {w2}"
    );
    assert_eq!(w2["result"]["nextPageToken"], "", "{w2}");

    let done = rpc(
        c,
        Some("1.0"),
        "ListTasks",
        json!({"status": "TASK_STATE_COMPLETED", "pageSize": 5}),
    )
    .await;
    assert_eq!(done["result"]["totalSize"], 5, "{done}");
    let mut got = ids(&done);
    got.reverse();
    assert_eq!(got, completed, "{done}");
    for t in done["result"]["tasks"].as_array().unwrap() {
        assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED");
    }

    let none = rpc(
        c,
        Some("1.0"),
        "ListTasks",
        json!({"status": "TASK_STATE_CANCELED"}),
    )
    .await;
    assert_eq!(none["result"]["totalSize"], 0, "{none}");
    assert_eq!(none["result"]["tasks"], json!([]), "{none}");

    let bad = rpc(
        c,
        Some("1.0"),
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED", "pageToken": "nope"}),
    )
    .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

/// RECEIPTS.md §1: with receipts on every agent, the approval decided at
/// A travels down as A's receipt in the continuation's metadata (our
/// receipt extension, declared in each card), B's receipt names A's
/// approvers, and the receipt C's tool ran under names both hops in
/// `chain`, A's approver among them.
#[tokio::test]
async fn a_receipt_three_agents_down_names_the_approver_at_the_top() {
    let key = |kid: &str| {
        let pem =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/card-keys/b1.pem");
        format!(
            "receipts:\n  signing_key: {}\n  kid: {kid}\n",
            pem.display()
        )
    };
    let a_yaml = format!(
        "name: agent-a\nprompt: You are agent A, the front desk.\na2a:\n  - {{name: b, url: \"{{B}}\", description: The relay}}\nauth:\n  mode: tokens\n  tokens:\n    - {{name: bob, token: \"${{CHAIN_BOB_T}}\", roles: [requester]}}\n    - {{name: alice, token: \"${{CHAIN_ALICE_T}}\", roles: [approver]}}\n{}",
        key("a1")
    );
    let chain = Chain::start_with(3, Some(&a_yaml), &key("c1"), &key("b1")).await;
    let card: Value = client()
        .get(chain.b().url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let declared = card["capabilities"]["extensions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        declared
            .iter()
            .any(|e| e["uri"] == "https://stopgo.dev/a2a/extensions/receipt/v1"),
        "{card}"
    );
    let (status, body) = support::post_bearer(
        chain.a(),
        BOB,
        "/conversations",
        json!({"message": "add quinces 3"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let uuid = support::waiting_uuid(&body);
    let (status, body) = support::post_bearer(
        chain.a(),
        ALICE,
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(chain.resources(), 1);
    // A signed its proxy approval's relay.
    let at_a = support::get_bearer(chain.a(), BOB, &format!("/approvals/{uuid}")).await;
    let a_claims = &at_a["receipt_claims"];
    assert_eq!(a_claims["approvers"][0]["sub"], "alice", "{at_a}");
    assert_eq!(
        a_claims["authorization_details"][0]["server"], "b",
        "{at_a}"
    );
    // C's call ran under a receipt whose chain names B, then A (alice).
    let rows: Vec<Value> = client()
        .get(chain.c().url("/audit?format=jsonl"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ran = rows
        .iter()
        .find(|r| r["event"] == "tool.executed" && r["details"]["tool"] == "resources_add")
        .unwrap_or_else(|| panic!("{rows:?}"));
    let c_uuid = ran["approval_uuid"].as_str().unwrap();
    let at_c: Value = client()
        .get(chain.c().url(&format!("/approvals/{c_uuid}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let chain_claim = &at_c["receipt_claims"]["chain"];
    assert_eq!(chain_claim.as_array().map(Vec::len), Some(2), "{at_c}");
    assert_eq!(chain_claim[0]["iss"], chain.b().base.as_str(), "{at_c}");
    assert_eq!(chain_claim[0]["approvers"][0]["via"], "a2a", "{at_c}");
    assert_eq!(chain_claim[1]["iss"], chain.a().base.as_str(), "{at_c}");
    assert_eq!(chain_claim[1]["jti"], uuid.as_str());
    assert_eq!(chain_claim[1]["approvers"][0]["sub"], "alice", "{at_c}");
    assert_eq!(
        at_c["receipt_claims"]["authorization_details"][0]["tool"],
        "resources_add"
    );
}
