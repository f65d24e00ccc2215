//! Deciding from Slack and grants (REACH.md §2-§3), `BENCH_ONLY=reach`:
//!
//! - the decision latency from the request to the tool starting (the
//!   `tool_call_started` event on the agent's SSE stream), a click signed
//!   as Slack signs it beside a REST decision, alternating on one agent
//!   (scripted model, `mcp-resources` over stdio) so both pay the same;
//! - the gate's added cost with 1,000 live grants on the called tool:
//!   the rule evaluation plus the grant lookup, as the gate does them.

use super::{Agent, pct};
use server::policy::grants::{GrantIndex, LiveGrant, values_of};
use std::time::{Duration, Instant};
use test_support::slack::Slack;
use test_support::webhook::Receiver;

const SIGNING_SECRET: &str = "slack-bench-0123456789abcdef";

/// `tool_call_started` events as they arrive: (conversation, when).
fn follow_starts(
    http: &reqwest::Client,
    base: &str,
) -> tokio::sync::mpsc::UnboundedReceiver<(String, Instant)> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (http, url) = (http.clone(), format!("{base}/events"));
    tokio::spawn(async move {
        let mut resp = http.get(url).send().await.unwrap();
        let mut buf = String::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            let at = Instant::now();
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                if !frame.contains("event: tool_call_started") {
                    continue;
                }
                let data = frame
                    .lines()
                    .find_map(|l| l.strip_prefix("data:"))
                    .unwrap_or("{}");
                let v: serde_json::Value = serde_json::from_str(data.trim()).unwrap_or_default();
                if let Some(c) = v["conversation_id"].as_str() {
                    let _ = tx.send((c.to_string(), at));
                }
            }
        }
    });
    rx
}

/// Waits for `conversation`'s tool to start; the time it did.
async fn started(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<(String, Instant)>,
    conversation: &str,
) -> Instant {
    loop {
        let (c, at) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("the tool never started")
            .expect("the event stream ended");
        if c == conversation {
            return at;
        }
    }
}

/// A receiver for the Slack messages and the `response_url` posts, on a
/// runtime (and thread) of its own, so handling them never delays the
/// bench's reading of the event stream; its URL, and its keeper.
fn receiver() -> (String, std::sync::mpsc::Sender<()>) {
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let hook = Receiver::start("whsec-bench-0123456789").await;
            url_tx.send(hook.url.clone()).unwrap();
            // Until the bench is done with it.
            let _ = tokio::task::spawn_blocking(move || stop_rx.recv()).await;
            drop(hook);
        });
    });
    (url_rx.recv().unwrap(), stop_tx)
}

async fn decision_rows(
    http: &reqwest::Client,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    let (hook_url, _keep) = receiver();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let rules = root.join("testdata/e2e-rules.yaml");
    let extra = format!(
        "notifications:\n  targets:\n    - name: slack\n      url: \"{}\"\n      format: slack\n      events: [approval.decided]\n      interactive:\n        signing_secret: \"${{SLACK_SIGNING_SECRET}}\"\n        users: {{U0BENCH: bench}}\n        response_hosts: [\"127.0.0.1\"]\n",
        hook_url
    );
    let agent = Agent::start_model(
        &format!("scripted:{}", rules.display()),
        "http://127.0.0.1:9",
        true,
        &extra,
        &[("SLACK_SIGNING_SECRET", SIGNING_SECRET)],
    );
    let slack = Slack::new(SIGNING_SECRET);
    let mut starts = follow_starts(http, &agent.base);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let n = if quick { 20 } else { 100 };
    let (mut by_slack, mut by_rest) = (Vec::new(), Vec::new());
    for i in 0..2 * (n + 5) {
        let r: serde_json::Value = http
            .post(format!("{}/conversations", agent.base))
            .json(&serde_json::json!({"message": format!("add apples{i} {i}")}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let conversation = r["conversation"]["id"].as_str().unwrap().to_string();
        let uuid = r["result"]["approval"]["uuid"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_string();
        let from_slack = i % 2 == 0;
        let t = Instant::now();
        if from_slack {
            let s = slack.click(
                "U0BENCH",
                "stopgo_approve",
                &uuid,
                &hook_url,
                &serde_json::json!({}),
                0,
            );
            let resp = http
                .post(format!("{}/integrations/slack/interactions", agent.base))
                .header("content-type", "application/x-www-form-urlencoded")
                .header("x-slack-request-timestamp", s.timestamp)
                .header("x-slack-signature", s.signature)
                .body(s.body)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status().as_u16(), 200);
        } else {
            let http = http.clone();
            let url = format!("{}/approvals/{uuid}", agent.base);
            // The REST answer waits for the turn; the tool starts before.
            tokio::spawn(async move {
                let _ = http
                    .post(url)
                    .json(&serde_json::json!({"approved": true}))
                    .send()
                    .await;
            });
        }
        let at = started(&mut starts, &conversation).await;
        let took = at.duration_since(t);
        if i >= 10 {
            if from_slack {
                by_slack.push(took);
            } else {
                by_rest.push(took);
            }
        }
        // Let the turn end before the next one starts.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let c: serde_json::Value = http
                .get(format!("{}/conversations/{conversation}", agent.base))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if c["conversation"]["running"] != true || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    by_slack.sort();
    by_rest.sort();
    let (s50, r50) = (pct(&by_slack, 0.5), pct(&by_rest, 0.5));
    rows.push((
        "decision → tool starts, from Slack, p50 / p99 (ms)".into(),
        format!("{s50:.2} / {:.2}", pct(&by_slack, 0.99)),
        "p50 ≤ 1.2x REST".into(),
    ));
    rows.push((
        "  the same from REST (POST /approvals), p50 / p99 (ms)".into(),
        format!("{r50:.2} / {:.2}", pct(&by_rest, 0.99)),
        "".into(),
    ));
    rows.push((
        "  Slack / REST, p50".into(),
        format!("{:.2}x", s50 / r50),
        "≤ 1.2x".into(),
    ));
}

/// 1,000 live grants on one tool, each for another `/name`.
fn thousand_grants() -> GrantIndex {
    let idx = GrantIndex::new();
    idx.replace_all(
        (0..1000)
            .map(|i| {
                let pointers = Some(vec!["/name".to_string()]);
                let args = serde_json::json!({"name": format!("svc-{i}"), "value": i});
                LiveGrant {
                    id: format!("g{i}"),
                    tool: "deploy".into(),
                    server: Some("ops".into()),
                    conversation_id: (i % 2 == 0).then(|| format!("c{i}")),
                    rule: "ship-it".into(),
                    granter: "alice".into(),
                    roles: vec!["approver".into()],
                    values: values_of(pointers.as_deref(), &args).unwrap(),
                    pointers,
                    expires_at: "2999-01-01T00:00:00.000Z".into(),
                }
            })
            .collect(),
    );
    idx
}

/// p50 and p99 in µs of the gate's two steps, `n` times: the rules, then
/// (they ask) the grant lookup.
fn gate(policy: &server::policy::Policy, idx: Option<&GrantIndex>, n: usize) -> (f64, f64) {
    let args = serde_json::json!({"name": "svc-777", "value": 3});
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let rule = policy.evaluate("deploy", Some("ops"), &args);
        let found = idx.and_then(|i| {
            i.find(
                ("deploy", Some("ops"), "c-other"),
                &args,
                "ship-it",
                // The gate formats the time on each call too.
                &chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                |_, _| true,
            )
        });
        lat.push(t.elapsed());
        std::hint::black_box((rule, found));
    }
    lat.sort();
    let at = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e6;
    (at(0.5), at(0.99))
}

fn gate_rows(rows: &mut Vec<(String, String, String)>, quick: bool) {
    let cfg: server::config::ApprovalsConfig =
        serde_yaml::from_str("rules:\n  - {name: ship-it, tool: deploy, action: approve}\n")
            .expect("rules");
    let policy = server::policy::Policy::compile(&cfg, &[]).expect("compile");
    let idx = thousand_grants();
    assert_eq!(idx.len(), 1000);
    let n = if quick { 20_000 } else { 200_000 };
    let (g50, g99) = gate(&policy, Some(&idx), n);
    let (f50, f99) = gate(&policy, None, n);
    rows.push((
        "gate with 1,000 live grants (rule + grant lookup), p50 / p99 (µs)".into(),
        format!("{g50:.2} / {g99:.2}"),
        "p99 < 50 µs".into(),
    ));
    rows.push((
        "  the same rule, no grants, p50 / p99 (µs)".into(),
        format!("{f50:.2} / {f99:.2}"),
        "floor".into(),
    ));
}

pub(super) async fn rows(
    http: &reqwest::Client,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    gate_rows(rows, quick);
    decision_rows(http, rows, quick).await;
}
