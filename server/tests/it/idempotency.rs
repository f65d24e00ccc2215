//! Calls cut by a crash (RECEIPTS.md §3), with the real agent killed with
//! SIGKILL while a destructive call is on its way to a real server that
//! outlives it:
//!
//! - against `mcp-resources` (which honours idempotency keys and says so),
//!   50 kills at random moments around the approval: after each restart
//!   the call ends `executed`, exactly once (the server's own row count
//!   proves it), and none is left `in_doubt`; some of the kills must have
//!   cut a call in flight (`approval.retried` in the audit), or the test
//!   proved nothing;
//! - against a server without keys (the seed-style Python server), a call
//!   cut while it runs stays `in_doubt` and is never sent again; a person
//!   resolves it (`POST /approvals/:uuid/resolve`): it ran, it did not, or
//!   (once the operator says the server honours keys) send it again.
//!
//! A small TCP proxy between the agent and `mcp-resources` holds each
//! `tools/call` for [`HOLD`] before passing it on, so a kill lands while
//! the call is on its way, as a slow network or a slow tool would make it.

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::{Agent, write_config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long the proxy holds a `tools/call` before the server gets it.
const HOLD: Duration = Duration::from_millis(60);
const OPS: &str = "ops-token-0123456789abcdef";

/// Forwards `127.0.0.1:<port>` to `upstream`, holding each chunk that
/// carries a `tools/call` for [`HOLD`]; its port.
async fn holding_proxy(upstream: String) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (mut cr, mut cw) = client.split();
                let (mut sr, mut sw) = server.split();
                let up = async {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match cr.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if buf[..n].windows(10).any(|w| w == b"tools/call") {
                            tokio::time::sleep(HOLD).await;
                        }
                        if sw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    // The server still gets what the client sent before it died.
                    let _ = sw.flush().await;
                    tokio::time::sleep(Duration::from_secs(2)).await;
                };
                let down = tokio::io::copy(&mut sr, &mut cw);
                let _ = tokio::join!(up, down);
            });
        }
    });
    port
}

async fn status_of(a: &Agent, uuid: &str) -> Value {
    support::get_bearer(a, OPS, &format!("/approvals/{uuid}")).await["status"].clone()
}

/// Waits until approval `uuid` has an outcome; the outcome.
async fn settled(a: &Agent, uuid: &str) -> String {
    for _ in 0..500 {
        let s = status_of(a, uuid).await;
        if let Some(s) = s.as_str()
            && ["executed", "failed", "in_doubt", "rejected", "cancelled"].contains(&s)
        {
            return s.to_string();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "approval {uuid} has no outcome after 10 s: {}",
        status_of(a, uuid).await
    );
}

fn config(dir: &Path, mcp: &str, rules: &Path) -> std::path::PathBuf {
    write_config(
        dir,
        &dir.join("data"),
        &format!(
            "name: cut\nllm: {{model: \"scripted:{}\"}}\nmcp_servers:\n{mcp}auth:\n  mode: tokens\n  tokens:\n    - {{name: ops, token: \"${{OPS_T}}\", roles: [admin]}}\n",
            rules.display()
        ),
    )
}

/// Asks for a destructive call, approves it and kills the agent at a
/// random moment around the approval; restarts it. The approval's uuid.
async fn cut(a: &mut Agent, cfg: &Path, message: &str) -> String {
    let (status, body) =
        support::post_bearer(a, OPS, "/conversations", json!({"message": message})).await;
    assert_eq!(status, 201, "{body}");
    let uuid = support::waiting_uuid(&body);
    let url = a.url(&format!("/approvals/{uuid}"));
    tokio::spawn(async move {
        let _ = support::client()
            .post(url)
            .bearer_auth(OPS)
            .json(&json!({"approved": true}))
            .send()
            .await;
    });
    tokio::time::sleep(Duration::from_millis(
        rand::random::<u64>() % (HOLD.as_millis() as u64 + 30),
    ))
    .await;
    a.kill9_in_place();
    *a = Agent::start_with_env(cfg, &[("OPS_T", OPS)]);
    // Killed before the approval arrived: the person approves again.
    if status_of(a, &uuid).await == "pending" {
        let (status, body) = support::post_bearer(
            a,
            OPS,
            &format!("/approvals/{uuid}"),
            json!({"approved": true}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    uuid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_kills_mid_call_run_each_call_once_where_keys_are_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(test_support::process::workspace_bin("mcp-resources"));
    cmd.args(["--http", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("resources.db"));
    let server = support::Process::server(cmd, "mcp-resources --http");
    let upstream = server.ready.trim_end_matches("/mcp").to_string();
    let port = holding_proxy(upstream).await;
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/e2e-rules.yaml");
    let cfg = config(
        dir.path(),
        &format!("  - name: resources\n    url: http://127.0.0.1:{port}/mcp\n"),
        &rules,
    );
    let mut a = Agent::start_with_env(&cfg, &[("OPS_T", OPS)]);
    let mut uuids = Vec::new();
    for i in 0..50 {
        let uuid = cut(&mut a, &cfg, &format!("add cut{i} {i}")).await;
        let outcome = settled(&a, &uuid).await;
        assert_eq!(outcome, "executed", "call {i} ({uuid})");
        uuids.push(uuid);
    }
    // Each exactly once: the server's own count.
    let (_, body) =
        support::post_bearer(&a, OPS, "/conversations", json!({"message": "list cut"})).await;
    let listed = body["result"]["response"].as_str().unwrap().to_string();
    assert!(listed.contains("\"count\":50"), "{listed}");
    let rows = support::audit_rows(&a, OPS).await;
    let retried = rows
        .iter()
        .filter(|r| r["event"] == "approval.retried")
        .count();
    let in_doubt = rows
        .iter()
        .filter(|r| r["event"] == "approval.in_doubt")
        .count();
    assert_eq!(in_doubt, 0);
    assert!(
        retried > 0,
        "no kill landed while a call was on its way: the test proved nothing"
    );
    eprintln!("50 kills: {retried} cut a call in flight, retried once with its key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_on_a_server_without_keys_stays_in_doubt() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let mut cmd = Command::new("python3");
    cmd.env("SEED_CALL_LOG", &calls)
        .env("SEED_DELETE_SECONDS", "1")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/seed_mcp_server.py"))
        .arg("--http");
    let server = support::Process::server(cmd, "the seed MCP server");
    let rules = dir.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - match: \"^delete (\\\\S+)\"\n    steps:\n      - call: seed_delete\n        args: {id: \"$1\"}\n      - reply: \"{result}\"\n",
    )
    .unwrap();
    let cfg = config(
        dir.path(),
        &format!("  - name: seed\n    url: http://{}\n", server.ready),
        &rules,
    );
    let mut a = Agent::start_with_env(&cfg, &[("OPS_T", OPS)]);
    let mut uuids = Vec::new();
    for i in 0..3 {
        let (status, body) = support::post_bearer(
            &a,
            OPS,
            "/conversations",
            json!({"message": format!("delete x{i}")}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        let uuid = support::waiting_uuid(&body);
        let url = a.url(&format!("/approvals/{uuid}"));
        tokio::spawn(async move {
            let _ = support::client()
                .post(url)
                .bearer_auth(OPS)
                .json(&json!({"approved": true}))
                .send()
                .await;
        });
        // Killed while seed_delete runs (it takes a second).
        let log = calls.clone();
        support::until(Duration::from_secs(10), "seed_delete started", || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .matches("seed_delete")
                .count()
                > i
        })
        .await;
        a.kill9_in_place();
        a = Agent::start_with_env(&cfg, &[("OPS_T", OPS)]);
        assert_eq!(settled(&a, &uuid).await, "in_doubt");
        uuids.push(uuid);
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let log = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(
        log.matches("seed_delete").count(),
        3,
        "never sent again: {log}"
    );

    // A person resolves them.
    let resolve = |uuid: &str, body: Value| {
        let (a, path) = (&a, format!("/approvals/{uuid}/resolve"));
        async move { support::post_bearer(a, OPS, &path, body).await }
    };
    let (status, body) = resolve(&uuids[0], json!({"outcome": "ran"})).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("executed"),
        "{body}"
    );
    let (status, body) = resolve(&uuids[0], json!({"outcome": "retry"})).await;
    assert_eq!(status, 400, "no keys, no retry: {body}");
    assert!(
        body["error"].as_str().unwrap().contains("idempotency"),
        "{body}"
    );
    let (status, body) = resolve(
        &uuids[0],
        json!({"outcome": "executed", "note": "the row is gone"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "executed");
    let (status, _) = resolve(&uuids[0], json!({"outcome": "failed"})).await;
    assert_eq!(status, 409, "resolved once");
    // The second through the form on the conversation page, as a browser
    // without JavaScript posts it.
    let conversation = support::get_bearer(&a, OPS, &format!("/approvals/{}", uuids[1])).await
        ["approval"]["conversation_id"]
        .as_str()
        .unwrap()
        .to_string();
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let token_in = |html: &str| {
        let at = html
            .find("name=\"form_token\" value=\"")
            .unwrap_or_else(|| panic!("no form token: {html}"));
        let rest = &html[at + "name=\"form_token\" value=\"".len()..];
        rest[..rest.find('"').unwrap()].to_string()
    };
    let sign_in = browser
        .get(a.url("/ui/sign-in"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let r = browser
        .post(a.url("/ui/sign-in"))
        .form(&[
            ("token", OPS),
            ("next", "/ui"),
            ("form_token", &token_in(&sign_in)),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let here = format!("/ui/conversations/{conversation}");
    let html = browser
        .get(a.url(&here))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let action = format!("action=\"/ui/approvals/{}/resolve\"", uuids[1]);
    assert!(html.contains(&action), "the card offers the form: {html}");
    let r = browser
        .post(a.url(&format!("/ui/approvals/{}/resolve", uuids[1])))
        .form(&[
            ("outcome", "failed"),
            ("note", "nothing changed"),
            ("back", here.as_str()),
            ("form_token", &token_in(&html)),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], here.as_str());
    let got = support::get_bearer(&a, OPS, &format!("/approvals/{}", uuids[1])).await;
    assert_eq!(got["status"], "failed", "{got}");
    let (status, _) = resolve("no-such-approval", json!({"outcome": "failed"})).await;
    assert_eq!(status, 404);
    let rows = support::audit_rows(&a, OPS).await;
    let resolved: Vec<&Value> = rows
        .iter()
        .filter(|r| r["event"] == "approval.resolved")
        .collect();
    assert_eq!(resolved.len(), 2, "{resolved:?}");
    assert_eq!(resolved[0]["details"]["note"], "the row is gone");
    assert_eq!(resolved[0]["actor"], "ops");
    assert_eq!(resolved[1]["details"]["via"], "ui");

    // The operator says the server honours keys: the third is sent again.
    a.kill9_in_place();
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace("    url: http://", "    idempotent: true\n    url: http://"),
    )
    .unwrap();
    let a = Agent::start_with_env(&cfg, &[("OPS_T", OPS)]);
    let (status, body) = support::post_bearer(
        &a,
        OPS,
        &format!("/approvals/{}/resolve", uuids[2]),
        json!({"outcome": "retry"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "executed", "{body}");
    let log = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(
        log.matches("seed_delete").count(),
        4,
        "sent once more: {log}"
    );
}
