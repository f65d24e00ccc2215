//! The real agent against the fake provider, for each wire format: the key
//! travels in the right header and nowhere else, retries and timeouts behave,
//! and provider errors come back as honest statuses.

use crate::support;

use serde_json::{Value, json};
use server::llm::scripted::Rules;
use std::sync::Arc;
use std::time::Duration;
use support::{Agent, client, write_config};
use test_support::fake_llm::{FakeState, Fault, Format};

const SECRET: &str = "sk-test-SECRET-0123456789";

const RULES: &str = r#"
rules:
  - match: "(?i)^echo (.*)"
    steps:
      - reply: "you said: $1"
default: "hello {user}"
"#;

/// One provider under test: its model name and the environment that points
/// the agent at the fake.
struct Provider {
    format: Format,
    model: &'static str,
}

const PROVIDERS: [Provider; 3] = [
    Provider {
        format: Format::Gemini,
        model: "gemini-2.5-flash",
    },
    Provider {
        format: Format::Anthropic,
        model: "claude-sonnet-4-5",
    },
    Provider {
        format: Format::OpenAi,
        model: "openai-gpt-4o",
    },
];

fn env_for(format: Format, base: &str) -> Vec<(&'static str, String)> {
    match format {
        Format::Gemini => vec![
            ("GEMINI_API_KEY", SECRET.into()),
            ("GEMINI_BASE_URL", base.into()),
        ],
        Format::Anthropic => vec![
            ("ANTHROPIC_API_KEY", SECRET.into()),
            ("ANTHROPIC_BASE_URL", base.into()),
        ],
        Format::OpenAi => vec![
            ("OPENAI_API_KEY", SECRET.into()),
            ("OPENAI_BASE_URL", format!("{base}/v1")),
        ],
    }
}

/// `llm_extra` goes inside the `llm:` mapping (e.g. `timeout_seconds: 1`).
async fn start(p: &Provider, llm_extra: &str) -> (tempfile::TempDir, Agent, Arc<FakeState>) {
    let fake = FakeState::new(Rules::parse(RULES).unwrap());
    let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        &format!("llm: {{model: {}, {llm_extra}}}\n", p.model),
    );
    let env = env_for(p.format, &base);
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let agent = Agent::start_with_env(&cfg, &env_refs);
    (dir, agent, fake)
}

async fn post(a: &Agent, path: &str, body: Value) -> (u16, Value, String) {
    let resp = client().post(a.url(path)).json(&body).send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    )
}

#[tokio::test]
async fn each_format_answers_a_message_with_the_key_only_in_its_header() {
    for p in &PROVIDERS {
        let (dir, a, fake) = start(p, "").await;
        let (status, body, raw) = post(&a, "/conversations", json!({"message": "echo ping"})).await;
        assert_eq!(status, 201, "{:?}: {raw}", p.format);
        assert_eq!(
            body["result"]["response"], "you said: ping",
            "{:?}",
            p.format
        );
        assert_eq!(body["result"]["waiting_approval"], false);
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 1);
        let r = &reqs[0];
        assert_eq!(r.format, p.format);
        assert_eq!(r.status, 200, "the fake accepted the request: {:?}", r.body);
        support::specs::assert_conform(&reqs);
        match p.format {
            Format::Gemini => {
                assert_eq!(r.header("x-goog-api-key"), Some(SECRET));
                assert!(
                    r.path.ends_with("gemini-2.5-flash:generateContent"),
                    "{}",
                    r.path
                );
                assert!(!r.path.contains("key="));
            }
            Format::Anthropic => {
                assert_eq!(r.header("x-api-key"), Some(SECRET));
                assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(r.body["max_tokens"], 4096);
            }
            Format::OpenAi => {
                assert_eq!(
                    r.header("authorization"),
                    Some(format!("Bearer {SECRET}").as_str())
                );
                assert_eq!(r.body["model"], "gpt-4o");
            }
        }
        // The key is in no response, no log line and no stored byte.
        assert!(!raw.contains(SECRET));
        let list = client()
            .get(a.url("/conversations"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!list.contains(SECRET));
        assert!(!a.log().contains(SECRET), "key in the log");
        drop(a);
        for entry in std::fs::read_dir(dir.path().join("data")).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(SECRET),
                "key in the data directory"
            );
        }
    }
}

#[tokio::test]
async fn a_500_then_a_200_is_retried_transparently() {
    for p in &PROVIDERS {
        let (_d, a, fake) = start(p, "").await;
        fake.push_fault(Fault {
            status: 500,
            retry_after: None,
            delay: Duration::ZERO,
        });
        fake.push_fault(Fault {
            status: 429,
            retry_after: Some(0),
            delay: Duration::ZERO,
        });
        let (status, body, raw) =
            post(&a, "/conversations", json!({"message": "echo again"})).await;
        assert_eq!(status, 201, "{raw}");
        assert_eq!(body["result"]["response"], "you said: again");
        let statuses: Vec<u16> = fake.requests().iter().map(|r| r.status).collect();
        assert_eq!(statuses, [500, 429, 200], "{:?}", p.format);
    }
}

#[tokio::test]
async fn a_provider_that_keeps_failing_gives_502_and_the_error_is_recorded() {
    let p = &PROVIDERS[2];
    let (_d, a, fake) = start(p, "").await;
    for _ in 0..4 {
        fake.push_fault(Fault {
            status: 503,
            retry_after: None,
            delay: Duration::ZERO,
        });
    }
    let (status, body, raw) = post(&a, "/conversations", json!({"message": "hi"})).await;
    assert_eq!(status, 502, "{raw}");
    assert!(
        body["error"].as_str().unwrap().contains("HTTP 503"),
        "{raw}"
    );
    assert_eq!(body["conversation"]["status"], "failed");
    assert_eq!(fake.requests().len(), 4, "1 attempt + 3 retries");
    let id = body["conversation"]["id"].as_str().unwrap();
    // The conversation goes on once the provider recovers.
    let (status, body, raw) = post(
        &a,
        &format!("/conversations/{id}/messages"),
        json!({"message": "echo back"}),
    )
    .await;
    assert_eq!(status, 200, "{raw}");
    assert_eq!(body["result"]["response"], "you said: back");
    assert_eq!(body["conversation"]["status"], "active");
}

#[tokio::test]
async fn a_slow_provider_times_out_with_504() {
    let p = &PROVIDERS[1];
    let (_d, a, fake) = start(p, "timeout_seconds: 1").await;
    fake.push_fault(Fault {
        status: 200,
        retry_after: None,
        delay: Duration::from_secs(3),
    });
    let started = std::time::Instant::now();
    let (status, body, raw) = post(&a, "/conversations", json!({"message": "hi"})).await;
    assert_eq!(status, 504, "{raw}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("did not answer within 1 s"),
        "{raw}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "timeouts are not retried"
    );
}
