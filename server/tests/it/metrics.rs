//! `GET /metrics` from the outside: after a scripted run with the real
//! binary, the fake Gemini provider and the real `mcp-resources` (a tool
//! call, an approval approved, one rejected, one model error), the page
//! parses as Prometheus text and every counter equals what happened.

use crate::support;

use serde_json::json;
use server::llm::scripted::Rules;
use std::collections::BTreeMap;
use support::{Agent, client, post_json, write_config};
use test_support::fake_llm::{FakeState, Fault};

const RULES: &str = r#"
rules:
  - match: "(?i)add (\\w+) (-?\\d+)"
    steps:
      - call: resources_add
        args: {name: "$1", value: "$2"}
      - reply: "added: {result}"
  - match: "(?i)list"
    steps:
      - call: resources_list
      - reply: "have: {result}"
"#;

/// One sample: name, sorted labels, value.
type Samples = BTreeMap<(String, String), f64>;

/// Parses the text exposition strictly: `# HELP`/`# TYPE` comments, and
/// samples `name{k="v",...} value` with a known TYPE for their family.
fn parse(text: &str) -> Samples {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = Samples::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (kind, name, what) = (parts.next(), parts.next(), parts.next());
            assert!(matches!(kind, Some("HELP" | "TYPE")), "{line}");
            assert!(
                name.is_some_and(|n| !n.is_empty()) && what.is_some(),
                "{line}"
            );
            if kind == Some("TYPE") {
                let t = what.unwrap().to_string();
                assert!(
                    ["counter", "gauge", "histogram", "summary", "untyped"].contains(&t.as_str()),
                    "{line}"
                );
                types.insert(name.unwrap().to_string(), t);
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("bad value in {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n, l.strip_suffix('}').unwrap_or_else(|| panic!("{line}"))),
            None => (series, ""),
        };
        let mut pairs: Vec<String> = Vec::new();
        if !labels.is_empty() {
            for pair in labels.split("\",") {
                let (k, v) = pair.split_once("=\"").unwrap_or_else(|| panic!("{line}"));
                assert!(
                    k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                    "{line}"
                );
                pairs.push(format!("{k}={}", v.trim_end_matches('"')));
            }
        }
        pairs.sort();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| types.contains_key(*f)))
            .unwrap_or(name);
        assert!(types.contains_key(family), "no TYPE for {name}");
        samples.insert((name.to_string(), pairs.join(",")), value);
    }
    samples
}

fn value(s: &Samples, name: &str, labels: &str) -> f64 {
    *s.get(&(name.to_string(), labels.to_string()))
        .unwrap_or_else(|| panic!("no {name}{{{labels}}} in {s:#?}"))
}

#[tokio::test]
async fn the_counters_equal_what_happened() {
    let fake = FakeState::new(Rules::parse(RULES).unwrap());
    let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "llm: {{model: gemini-2.5-flash}}\nmcp_servers:\n  - name: resources\n    command: {}\n    args: [--db, {}]\n",
        test_support::process::workspace_bin("mcp-resources"),
        dir.path().join("resources.db").display()
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let agent = Agent::start_with_env(
        &cfg,
        &[("GEMINI_API_KEY", "gm-metrics"), ("GEMINI_BASE_URL", &base)],
    );

    let (status, _) = post_json(&agent, "/conversations", json!({"message": "list please"})).await;
    assert_eq!(status, 201);
    let mut uuids = Vec::new();
    for text in ["add apples 5", "add pears 1"] {
        let (status, body) = post_json(&agent, "/conversations", json!({"message": text})).await;
        assert_eq!(status, 201, "{body}");
        uuids.push(
            body["result"]["approval"]["uuid"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let before = parse(
        &client()
            .get(agent.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    );
    assert_eq!(value(&before, "stopgo_approvals_pending", ""), 2.0);
    for (uuid, approved) in uuids.iter().zip([true, false]) {
        let (status, body) = post_json(
            &agent,
            &format!("/approvals/{uuid}"),
            json!({"approved": approved}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    // A model error the client does not retry (400).
    fake.push_fault(Fault {
        status: 400,
        retry_after: None,
        delay: std::time::Duration::ZERO,
    });
    let (status, body) =
        post_json(&agent, "/conversations", json!({"message": "list again"})).await;
    assert!(status >= 400, "{status} {body}");

    let resp = client().get(agent.url("/metrics")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let m = parse(&resp.text().await.unwrap());
    let tool = |t: &str| format!("outcome=ok,server=resources,tool={t}");
    assert_eq!(
        value(&m, "stopgo_tool_calls_total", &tool("resources_list")),
        1.0
    );
    assert_eq!(
        value(&m, "stopgo_tool_calls_total", &tool("resources_add")),
        1.0
    );
    assert_eq!(value(&m, "stopgo_approvals_total", "outcome=approved"), 1.0);
    assert_eq!(value(&m, "stopgo_approvals_total", "outcome=rejected"), 1.0);
    for none in ["expired", "in_doubt", "cancelled"] {
        assert_eq!(
            value(&m, "stopgo_approvals_total", &format!("outcome={none}")),
            0.0
        );
    }
    assert_eq!(value(&m, "stopgo_approvals_pending", ""), 0.0);
    assert_eq!(value(&m, "stopgo_approval_wait_seconds_count", ""), 2.0);
    assert_eq!(value(&m, "stopgo_turns_total", "outcome=completed"), 3.0);
    assert_eq!(
        value(&m, "stopgo_turns_total", "outcome=waiting_approval"),
        2.0
    );
    assert_eq!(value(&m, "stopgo_turns_total", "outcome=failed"), 1.0);
    assert_eq!(value(&m, "stopgo_turn_duration_seconds_count", ""), 6.0);
    assert_eq!(
        value(&m, "stopgo_llm_errors_total", "kind=status,provider=gemini"),
        1.0
    );
    // Every model request the fake saw, timed once (retries included).
    assert_eq!(
        value(
            &m,
            "stopgo_llm_request_duration_seconds_count",
            "provider=gemini"
        ),
        fake.requests().len() as f64
    );
    // The tokens the fake reported in Gemini's usageMetadata, summed.
    let reported = |k: &str| -> f64 {
        fake.requests()
            .iter()
            .filter_map(|r| r.reply.as_ref()?["usageMetadata"][k].as_u64())
            .sum::<u64>() as f64
    };
    assert!(reported("promptTokenCount") > 0.0);
    assert_eq!(
        value(
            &m,
            "stopgo_llm_tokens_total",
            "direction=input,provider=gemini"
        ),
        reported("promptTokenCount")
    );
    assert_eq!(
        value(
            &m,
            "stopgo_llm_tokens_total",
            "direction=output,provider=gemini"
        ),
        reported("candidatesTokenCount")
    );
    assert_eq!(value(&m, "stopgo_mcp_server_up", "server=resources"), 1.0);
    assert_eq!(
        value(
            &m,
            "stopgo_http_requests_total",
            "route=/conversations,status=201"
        ),
        3.0
    );
    assert_eq!(
        value(
            &m,
            "stopgo_http_requests_total",
            "route=/approvals/{uuid},status=200"
        ),
        2.0
    );
    assert_eq!(
        value(
            &m,
            "stopgo_http_request_duration_seconds_count",
            "route=/approvals/{uuid}"
        ),
        2.0
    );
    // Labels carry templates and names, never ids or user text.
    let text: String = m.keys().map(|(n, l)| format!("{n}{{{l}}}\n")).collect();
    for secret in uuids
        .iter()
        .map(String::as_str)
        .chain(["apples", "pears", "gm-metrics"])
    {
        assert!(!text.contains(secret), "{secret} in a label:\n{text}");
    }
}

/// With operator tokens on, `/metrics` needs a viewer.
#[tokio::test]
async fn metrics_need_a_viewer_when_auth_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "llm: {model: \"scripted:none.yaml\"}\nauth:\n  mode: tokens\n  tokens:\n    - {name: watcher, token: \"${WATCH_TOKEN}\", roles: [viewer]}\n";
    std::fs::write(dir.path().join("none.yaml"), "rules: []\n").unwrap();
    let cfg = write_config(dir.path(), &dir.path().join("data"), yaml);
    let token = "mt-0123456789abcdef0123456789abcdef";
    let agent = Agent::start_with_env(&cfg, &[("WATCH_TOKEN", token)]);
    let anon = client().get(agent.url("/metrics")).send().await.unwrap();
    assert_eq!(anon.status(), 401);
    let ok = client()
        .get(agent.url("/metrics"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert!(
        ok.text()
            .await
            .unwrap()
            .contains("stopgo_approvals_pending 0")
    );
}
