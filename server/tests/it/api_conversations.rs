//! The conversations REST API, end to end over HTTP: served in the test's
//! process (`server::run` on 127.0.0.1:0), or as the real `agent` binary
//! where its log and signals are what is tested.

use crate::support;

use serde_json::{Value, json};
use support::{Agent, client, write_config};

async fn json(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let body = resp.json::<Value>().await.unwrap_or(Value::Null);
    (status, body)
}

fn config() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &dir.path().join("data"), "name: api-test\n");
    (dir, cfg)
}

/// The agent as a process (tests of its log and signals).
fn start() -> (tempfile::TempDir, Agent) {
    let (dir, cfg) = config();
    (dir, Agent::start(&cfg))
}

/// The same agent served in this process (the other tests).
async fn serve() -> (tempfile::TempDir, Agent) {
    let (dir, cfg) = config();
    (dir, Agent::serve(&cfg).await)
}

#[tokio::test]
async fn health_answers_ok_and_names_a_missing_key() {
    let (_d, a) = start();
    let (status, body) = json(client().get(a.url("/health")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"status": "ok", "llm": "GEMINI_API_KEY is not set"})
    );
    let log = a.wait_for_log("GEMINI_API_KEY is not set");
    assert!(
        log.contains("GEMINI_API_KEY is not set"),
        "logged at startup: {log}"
    );
}

#[tokio::test]
async fn create_get_and_list_follow_the_contract() {
    let (_d, a) = serve().await;
    let http = client();
    let resp = http
        .post(a.url("/conversations"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let sid = resp.headers()["x-session-id"].to_str().unwrap().to_string();
    let (status, body) = json(resp).await;
    assert_eq!(status, 201, "{body}");
    let c = &body["conversation"];
    let id = c["id"].as_str().unwrap().to_string();
    assert_eq!(c["status"], "active");
    assert_eq!(c["messages"], json!([]));
    assert_eq!(
        c["session_id"],
        sid.as_str(),
        "the generated session id is stored"
    );
    assert_eq!(sid.len(), 8);
    assert!(sid.bytes().all(|b| b.is_ascii_hexdigit()));
    for key in ["created_at", "updated_at"] {
        assert!(
            c[key].as_str().unwrap().ends_with('Z'),
            "{key} is RFC 3339 UTC"
        );
    }
    assert!(body.get("result").is_none());

    let (status, got) = json(
        http.get(a.url(&format!("/conversations/{id}")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(&got["conversation"], c);

    let (status, list) = json(http.get(a.url("/conversations")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(list["conversations"][0]["id"], id.as_str());
    assert_eq!(list["summary"]["total"], 1);
    assert_eq!(list["summary"]["active"], 1);
    assert_eq!(list["summary"]["waiting_approval"], 0);
    assert_eq!(list["summary"]["completed"], 0);
    assert!(list.get("next_cursor").is_none());
}

#[tokio::test]
async fn a_post_with_no_body_creates_and_a_body_without_json_type_is_415() {
    let (_d, a) = serve().await;
    let resp = client().post(a.url("/conversations")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    // AUTH.md §4: a body a foreign page could send without a preflight.
    let resp = client()
        .post(a.url("/conversations"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 415);
}

#[tokio::test]
async fn a_client_session_id_is_kept_stored_echoed_and_logged() {
    let (_d, a) = start();
    let resp = client()
        .post(a.url("/conversations"))
        .header("X-Session-ID", "user-42.run:7")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-session-id"], "user-42.run:7");
    let (_, body) = json(resp).await;
    assert_eq!(body["conversation"]["session_id"], "user-42.run:7");
    // The access line ("done") is the request's last; an earlier line of
    // the same request carries the sid too, so wait for the status.
    let log = a.wait_for_log("status=201");
    let line = log
        .lines()
        .find(|l| l.contains("sid=user-42.run:7") && l.contains("status=201"))
        .unwrap_or_else(|| panic!("no access log line with sid, status:\n{log}"));
    assert!(
        line.contains("method=POST")
            && line.contains("path=/conversations")
            && line.contains("latency_ms="),
        "{line}"
    );

    let (status, body) = json(
        client()
            .get(a.url("/health"))
            .header("X-Session-ID", "bad id with spaces")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("X-Session-ID"));
}

#[tokio::test]
async fn paging_and_filters_walk_the_list() {
    let (_d, a) = serve().await;
    let http = client();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let (_, b) = json(http.post(a.url("/conversations")).send().await.unwrap()).await;
        ids.push(b["conversation"]["id"].as_str().unwrap().to_string());
    }
    ids.reverse();
    let (_, p1) = json(
        http.get(a.url("/conversations?limit=2"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let cursor = p1["next_cursor"].as_str().unwrap().to_string();
    let (_, p2) = json(
        http.get(a.url(&format!("/conversations?limit=2&cursor={cursor}")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let cursor = p2["next_cursor"].as_str().unwrap().to_string();
    let (_, p3) = json(
        http.get(a.url(&format!("/conversations?limit=2&cursor={cursor}")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(p3.get("next_cursor").is_none());
    let seen: Vec<String> = [&p1, &p2, &p3]
        .iter()
        .flat_map(|p| {
            p["conversations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(seen, ids, "newest first, each exactly once");
    assert_eq!(p3["summary"]["total"], 5);

    let (status, filtered) = json(
        http.get(a.url("/conversations?status=waiting_approval"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(filtered["conversations"], json!([]));
    assert_eq!(
        filtered["summary"]["total"], 5,
        "the summary ignores filters"
    );
}

#[tokio::test]
async fn bad_requests_get_a_json_error_naming_the_problem() {
    let (_d, a) = serve().await;
    let http = client();
    let cases: Vec<(reqwest::RequestBuilder, u16, &str)> = vec![
        (
            http.post(a.url("/conversations"))
                .header("content-type", "application/json")
                .body("{not json"),
            400,
            "invalid JSON",
        ),
        (
            http.post(a.url("/conversations")).body("{}"),
            415,
            "Content-Type: application/json",
        ),
        (
            http.post(a.url("/conversations"))
                .header("content-type", "application/json")
                .body(r#"{"mesage":"hi"}"#),
            400,
            "mesage",
        ),
        (
            http.post(a.url("/conversations"))
                .header("content-type", "application/json")
                .body(r#"{"message":5}"#),
            400,
            "invalid type",
        ),
        (
            http.get(a.url("/conversations/does-not-exist")),
            404,
            "not found",
        ),
        (
            http.get(a.url("/conversations?limit=0")),
            400,
            "limit must be between 1 and 200",
        ),
        (
            http.get(a.url("/conversations?limit=abc")),
            400,
            "invalid query string",
        ),
        (http.get(a.url("/conversations?cursor=xyz")), 400, "cursor"),
        (
            http.get(a.url("/conversations?status=done")),
            400,
            "unknown status",
        ),
        (http.get(a.url("/conversations?limt=5")), 400, "limt"),
        // PostgreSQL's text cannot hold U+0000: refused on both backends.
        (
            http.post(a.url("/conversations"))
                .json(&json!({"message": "hi\u{0}there"})),
            400,
            "NUL character (U+0000)",
        ),
        (http.get(a.url("/no/such/route")), 404, "no API route"),
        (
            http.delete(a.url("/conversations")),
            405,
            "DELETE is not supported",
        ),
        (
            http.post(a.url("/conversations/nope/messages"))
                .json(&json!({"message": "hi"})),
            404,
            "not found",
        ),
    ];
    for (req, want, needle) in cases {
        let resp = req.send().await.unwrap();
        let ct = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string());
        let (status, body) = json(resp).await;
        assert_eq!(status, want, "{needle}: {body}");
        assert_eq!(ct.as_deref(), Some("application/json"), "{needle}");
        let error = body["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error field: {body}"));
        assert!(
            error.contains(needle),
            "{error:?} should contain {needle:?}"
        );
    }
    let (status, list) = json(http.get(a.url("/conversations")).send().await.unwrap()).await;
    assert_eq!(status, 200, "the server is still up");
    assert_eq!(
        list["summary"]["total"], 0,
        "no failed request stored anything"
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_413_and_the_limit_is_configurable() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        "max_body_bytes: 2048\n",
    );
    let a = Agent::serve(&cfg).await;
    let big = format!(r#"{{"message":"{}"}}"#, "x".repeat(4096));
    let (status, body) = json(
        client()
            .post(a.url("/conversations"))
            .header("content-type", "application/json")
            .body(big)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 413);
    assert!(body["error"].as_str().unwrap().contains("max_body_bytes"));
    let default = {
        let (_d, a) = serve().await;
        let big = format!(r#"{{"message":"{}"}}"#, "x".repeat(1024 * 1024 + 10));
        client()
            .post(a.url("/conversations"))
            .header("content-type", "application/json")
            .body(big)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(default, 413, "the default limit is 1 MiB");
}

#[tokio::test]
async fn acknowledged_conversations_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &dir.path().join("data"), "");
    let a = Agent::start(&cfg);
    let mut ids = Vec::new();
    for _ in 0..20 {
        let (status, b) = json(client().post(a.url("/conversations")).send().await.unwrap()).await;
        assert_eq!(status, 201);
        ids.push(b["conversation"]["id"].as_str().unwrap().to_string());
    }
    a.kill9();
    let a = Agent::start(&cfg);
    for id in &ids {
        let resp = client()
            .get(a.url(&format!("/conversations/{id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(
            resp.status().as_u16(),
            200,
            "conversation {id} was acknowledged, then lost"
        );
    }
}

#[tokio::test]
async fn sigterm_stops_the_agent_cleanly() {
    let (_d, a) = start();
    let status = a.terminate();
    assert!(status.success(), "exit status {status:?}");
}
