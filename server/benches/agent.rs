//! `make bench`: figures for the agent core, printed as a table.
//!
//! Runs the real release `agent` against the in-process fake provider
//! (OpenAI wire format) and the real `mcp-resources` over stdio:
//! 1. "list" turns (2 model calls + 1 MCP call) at concurrency 1 and 32,
//!    with the fake answering at once; per-turn time at concurrency 1 is an
//!    upper bound of the orchestration overhead (it includes loopback HTTP
//!    and the MCP round trip);
//! 2. read latency with 10,000 stored conversations;
//! 3. 1,000 conversations in flight against a model that takes 1 s, on a
//!    fresh agent: wall time and peak RSS.

use server::fake_llm::FakeState;
use server::llm::scripted::Rules;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RULES: &str = r#"
rules:
  - match: "(?i)^list"
    steps:
      - call: resources_list
      - reply: "Resources: {result}"
default: "hello"
"#;

struct Agent {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Agent {
    fn start(fake_base: &str, with_tools: bool) -> Agent {
        let dir = tempfile::tempdir().unwrap();
        let mut yaml = format!(
            "host: 127.0.0.1\nport: 0\ndata_dir: {}\nllm: {{model: openai-gpt-4o}}\n",
            dir.path().join("data").display()
        );
        if with_tools {
            yaml.push_str(&format!(
                "mcp_servers:\n  - name: resources\n    command: {}\n    args: [--db, {}]\n",
                env!("CARGO_BIN_EXE_mcp-resources"),
                dir.path().join("r.db").display()
            ));
        }
        let cfg = dir.path().join("agent.yaml");
        std::fs::write(&cfg, yaml).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent"))
            .arg("--config")
            .arg(&cfg)
            .env("RUST_LOG", "warn,agent=info")
            .env("OPENAI_API_KEY", "sk-bench")
            .env("OPENAI_BASE_URL", format!("{fake_base}/v1"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(a) = line.split("listening on http://").nth(1) {
                    let _ = tx.send(a.split_whitespace().next().unwrap_or("").to_string());
                }
            }
        });
        // `listening` is logged at info; the filter above hides info, so ask for it explicitly.
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("agent did not start");
        Agent {
            child,
            base: format!("http://{addr}"),
            _dir: dir,
        }
    }

    /// Peak resident set size (VmHWM) in MiB.
    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(f64::NAN)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// Runs `n` turns with `concurrency` workers; returns (turns/s, sorted latencies).
async fn turns(
    http: &reqwest::Client,
    base: &str,
    n: usize,
    concurrency: usize,
) -> (f64, Vec<Duration>) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let http = http.clone();
        let url = format!("{base}/conversations");
        let next = next.clone();
        workers.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < n {
                let t = Instant::now();
                let resp = http
                    .post(&url)
                    .json(&serde_json::json!({"message": "list"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(
                    resp.status().as_u16(),
                    201,
                    "{}",
                    resp.text().await.unwrap_or_default()
                );
                let _ = resp.bytes().await;
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.await.unwrap());
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort();
    (all.len() as f64 / secs, all)
}

async fn reads(http: &reqwest::Client, urls: &[String]) -> Vec<Duration> {
    let mut lat = Vec::with_capacity(urls.len());
    for u in urls {
        let t = Instant::now();
        let resp = http.get(u).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let _ = resp.bytes().await;
        lat.push(t.elapsed());
    }
    lat.sort();
    lat
}

/// `resources_list` round trips to a fresh `mcp-resources` over stdio.
async fn mcp_round_trips() -> Vec<Duration> {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-resources"));
    cmd.arg("--db")
        .arg(dir.path().join("r.db"))
        .stderr(Stdio::null());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let client = ().serve(transport).await.unwrap();
    let mut lat = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        client
            .call_tool(CallToolRequestParams::new("resources_list"))
            .await
            .unwrap();
        lat.push(t.elapsed());
    }
    let _ = client.cancel().await;
    lat.sort();
    lat
}

#[tokio::main]
async fn main() {
    let quick = std::env::var("BENCH_QUICK").is_ok();
    let fake = FakeState::new(Rules::parse(RULES).unwrap());
    let fake_base = server::fake_llm::spawn(fake.clone()).await.unwrap();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(2000)
        .build()
        .unwrap();
    let mut rows: Vec<(String, String, String)> = Vec::new();

    // 1. Turns.
    let agent = Agent::start(&fake_base, true);
    let _ = turns(&http, &agent.base, 20, 1).await; // warm up (MCP child, caches)
    let (tps1, lat1) = turns(&http, &agent.base, if quick { 100 } else { 500 }, 1).await;
    rows.push((
        "\"list\" turns/s, concurrency 1".into(),
        format!("{tps1:.0}"),
        "".into(),
    ));
    rows.push((
        "  per-turn latency p50 / p99 (ms)".into(),
        format!("{:.2} / {:.2}", pct(&lat1, 0.5), pct(&lat1, 0.99)),
        "".into(),
    ));
    let total = 10_000usize;
    let done_so_far = 20 + lat1.len();
    let (tps32, lat32) = turns(&http, &agent.base, total - done_so_far, 32).await;
    rows.push((
        "\"list\" turns/s, concurrency 32".into(),
        format!("{tps32:.0}"),
        "".into(),
    ));
    rows.push((
        "  per-turn latency p50 / p99 (ms)".into(),
        format!("{:.2} / {:.2}", pct(&lat32, 0.5), pct(&lat32, 0.99)),
        "".into(),
    ));

    // What a turn spends outside the agent: the fake's round trip (twice per
    // turn) and the MCP server's (once), measured directly from here.
    let llm_body =
        serde_json::json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]});
    let mut llm_lat = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        let r = http
            .post(format!("{fake_base}/v1/chat/completions"))
            .bearer_auth("k")
            .json(&llm_body)
            .send()
            .await
            .unwrap();
        let _ = r.bytes().await;
        llm_lat.push(t.elapsed());
    }
    llm_lat.sort();
    let mcp_lat = mcp_round_trips().await;
    let outside = 2.0 * pct(&llm_lat, 0.5) + pct(&mcp_lat, 0.5);
    rows.push((
        "  of which model (2x) + MCP round trips (ms)".into(),
        format!("{outside:.2}"),
        "".into(),
    ));
    rows.push((
        "  orchestration overhead per turn, p50 (ms)".into(),
        format!("{:.2}", pct(&lat1, 0.5) - outside),
        "< 2 ms".into(),
    ));

    // 2. Reads with 10,000 stored conversations.
    let list: serde_json::Value = http
        .get(format!("{}/conversations?limit=200", agent.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(list["summary"]["total"].as_u64().unwrap() >= 10_000);
    let ids: Vec<String> = list["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let one: Vec<String> = (0..2000)
        .map(|i| format!("{}/conversations/{}", agent.base, ids[i % ids.len()]))
        .collect();
    let lat = reads(&http, &one).await;
    rows.push((
        "GET /conversations/:id p50 / p99 (ms), 10k stored".into(),
        format!("{:.2} / {:.2}", pct(&lat, 0.5), pct(&lat, 0.99)),
        "p99 < 5 ms".into(),
    ));
    let page: Vec<String> = (0..500)
        .map(|_| format!("{}/conversations?limit=50", agent.base))
        .collect();
    let lat = reads(&http, &page).await;
    rows.push((
        "GET /conversations?limit=50 p50 / p99 (ms)".into(),
        format!("{:.2} / {:.2}", pct(&lat, 0.5), pct(&lat, 0.99)),
        "p99 < 5 ms".into(),
    ));
    rows.push((
        "peak RSS of that agent (MiB)".into(),
        format!("{:.1}", agent.peak_rss_mib()),
        "".into(),
    ));
    drop(agent);

    // 3. 1,000 in flight against a 1 s model.
    fake.set_latency(Duration::from_secs(1));
    let agent = Agent::start(&fake_base, false);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..1000 {
        let http = http.clone();
        let url = format!("{}/conversations", agent.base);
        tasks.push(tokio::spawn(async move {
            http.post(url)
                .json(&serde_json::json!({"message": "hi"}))
                .send()
                .await
                .map(|r| r.status().as_u16())
        }));
    }
    let mut ok = 0;
    for t in tasks {
        if let Ok(Ok(201)) = t.await {
            ok += 1;
        }
    }
    let wall = started.elapsed().as_secs_f64();
    rows.push((
        "1,000 in flight, 1 s model: wall (s)".into(),
        format!("{wall:.2} ({ok}/1000 ok)"),
        "< 2 s".into(),
    ));
    rows.push((
        "  peak RSS (MiB)".into(),
        format!("{:.1}", agent.peak_rss_mib()),
        "< 150 MB".into(),
    ));

    println!(
        "\nStop & Go agent benchmark (fake provider, OpenAI wire format; mcp-resources over stdio)\n"
    );
    println!("| {:<52} | {:>20} | {:<16} |", "measure", "value", "target");
    println!("|{:-<54}|{:-<22}|{:-<18}|", "", "", "");
    for (m, v, t) in rows {
        println!("| {m:<52} | {v:>20} | {t:<16} |");
    }
}
