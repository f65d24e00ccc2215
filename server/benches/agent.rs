//! `make bench`: figures for the agent core, printed as a table.
//!
//! Runs the real release `agent` against the in-process fake provider
//! (OpenAI wire format) and the real `mcp-resources` over stdio:
//! 1. "list" turns (2 model calls + 1 MCP call) at concurrency 1 and 32,
//!    with the fake answering at once; per-turn time at concurrency 1 is an
//!    upper bound of the orchestration overhead (it includes loopback HTTP
//!    and the MCP round trip);
//! 2. read latency with 10,000 stored conversations, one at a time, and
//!    at 32 connections beside their floors ([`reads`]);
//! 3. 1,000 conversations in flight against a model that takes 1 s, on a
//!    fresh agent: wall time and peak RSS;
//! 4. A2A: `SendMessage` round trips per second (concurrency 1 and 32),
//!    beside the same against a minimal agent built with the official
//!    Python SDK (`a2a-sdk`, when `scripts/setup.sh test` installed it),
//!    and the latency a hop adds in a three-agent chain A → B → C;
//! 5. auth: the p50 that modes tokens and oidc add over none
//!    ([`auth`]);
//! 6. mcp-filesystem: read_file, grep and glob beside `fs::read`, `rg`
//!    and `find`, and the most memory one call takes ([`filesystem`]);
//! 7. observability: turns and reads with an OTLP collector configured
//!    versus without, and the page load of `/` in Chromium ([`observe`]);
//! 8. PostgreSQL beside SQLite: turns, lists with 10,000 and 1,000,000
//!    stored, 1,000 in flight over three replicas ([`replicas`]);
//! 9. approval rules: one evaluation with 100 rules ([`policy`]);
//! 10. the approver on a phone: navigation to the first Approve that takes
//!     effect on a slow link, and the WebAssembly's size ([`phone`]);
//! 11. questions: a question's round trip beside an approval's
//!     ([`questions`]);
//! 12. reach: a decision from Slack to the tool starting beside a REST
//!     one, and the gate with 1,000 live grants ([`reach`]);
//! 13. A2A's gRPC binding beside JSON-RPC, `SendMessage` at concurrency 1
//!     and 32 ([`grpc`]).
//! 14. mcp: the agent as an MCP server beside REST, a call without and
//!     with an approval, and AG-UI's resume beside REST's decide
//!     ([`clients`]).
//! 15. receipts: the approval round trip with receipts signed and
//!     required beside without, and the executor's check ([`receipt_rows`]).

#[path = "agent/auth.rs"]
mod auth;
#[path = "agent/clients.rs"]
mod clients;
#[path = "agent/filesystem.rs"]
mod filesystem;
#[path = "agent/floor.rs"]
mod floor;
#[path = "agent/grpc.rs"]
mod grpc;
#[path = "agent/notify.rs"]
mod notify;
#[path = "agent/observe.rs"]
mod observe;
#[path = "agent/phone.rs"]
mod phone;
#[path = "agent/policy.rs"]
mod policy;
#[path = "agent/questions.rs"]
mod questions;
#[path = "agent/reach.rs"]
mod reach;
#[path = "agent/reads.rs"]
mod reads;
#[path = "agent/receipts.rs"]
mod receipt_rows;
#[path = "agent/replicas.rs"]
mod replicas;

use server::llm::scripted::Rules;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::fake_llm::FakeState;
use test_support::process::Process;

const RULES: &str = r#"
rules:
  - match: "(?i)^list"
    steps:
      - call: resources_list
      - reply: "Resources: {result}"
  - match: "(?i)^add (\\w+) (\\d+)"
    steps:
      - call: resources_add
        args: {name: "$1", value: "$2"}
      - reply: "Added: {result}"
  - system: "bench agent B"
    match: "(?s)^(.*)$"
    steps:
      - call: a2a_c
        args: {message: "$1"}
      - reply: "B: {result}"
  - system: "bench agent A"
    match: "(?s)^(.*)$"
    steps:
      - call: a2a_b
        args: {message: "$1"}
      - reply: "A: {result}"
default: "hello"
"#;

struct Agent {
    process: Process,
    base: String,
    _dir: tempfile::TempDir,
}

impl Agent {
    fn start(fake_base: &str, with_tools: bool) -> Agent {
        Self::start_with(fake_base, with_tools, "")
    }

    /// With `extra` YAML appended (prompt, sub-agents).
    fn start_with(fake_base: &str, with_tools: bool, extra: &str) -> Agent {
        Self::start_env(fake_base, with_tools, extra, &[])
    }

    /// With `extra` YAML and environment variables.
    fn start_env(fake_base: &str, with_tools: bool, extra: &str, env: &[(&str, &str)]) -> Agent {
        Self::start_model("openai-gpt-4o", fake_base, with_tools, extra, env)
    }

    /// On the in-process scripted model, which echoes each message (what
    /// the Python SDK agent's executor does): no model call, so what is
    /// measured is the A2A server, the turn and its durable state.
    fn start_echo() -> Agent {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let rules = root.join("testdata/bench-echo-rules.yaml");
        Self::start_model(
            &format!("scripted:{}", rules.display()),
            "http://127.0.0.1:9",
            false,
            "",
            &[],
        )
    }

    fn start_model(
        model: &str,
        fake_base: &str,
        with_tools: bool,
        extra: &str,
        env: &[(&str, &str)],
    ) -> Agent {
        let dir = tempfile::tempdir().unwrap();
        let mut yaml = format!(
            "host: 127.0.0.1\nport: 0\ndata_dir: {}\nllm: {{model: \"{model}\"}}\n{extra}",
            dir.path().join("data").display()
        );
        if with_tools {
            yaml.push_str(&format!(
                "mcp_servers:\n  - name: resources\n    command: {}\n    args: [--db, {}]\n",
                test_support::process::workspace_bin("mcp-resources"),
                dir.path().join("r.db").display()
            ));
        }
        let cfg = dir.path().join("agent.yaml");
        std::fs::write(&cfg, yaml).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent"));
        cmd.arg("--config")
            .arg(&cfg)
            .env("RUST_LOG", "warn,agent=info")
            .env("OPENAI_API_KEY", "sk-bench")
            .env("BENCH_TOKEN", auth::TOKEN)
            .env("OPENAI_BASE_URL", format!("{fake_base}/v1"))
            .envs(env.iter().copied());
        // `listening` is logged at info by the `agent` target, which the
        // filter above keeps (and little else: the log is kept in memory).
        let process = Process::server(cmd, "agent");
        Agent {
            base: format!("http://{}", process.ready),
            process,
            _dir: dir,
        }
    }

    /// Its data directory.
    fn data_dir(&self) -> std::path::PathBuf {
        self._dir.path().join("data")
    }

    /// Peak resident set size (VmHWM) in MiB.
    fn peak_rss_mib(&self) -> f64 {
        self.process.peak_rss_mib().unwrap_or(f64::NAN)
    }
}

/// `GET url` read as JSON (a bench's setup: a failure ends the bench).
async fn get_json(http: &reqwest::Client, url: &str) -> serde_json::Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// `POST url` with a JSON body, the answer read as JSON (a bench's step:
/// a failure ends the bench).
async fn post_json(
    http: &reqwest::Client,
    url: String,
    body: serde_json::Value,
) -> serde_json::Value {
    http.post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// Runs `one` `n` times over `concurrency` workers, timing each call;
/// returns (calls/s, sorted latencies).
async fn load<F, Fut>(n: usize, concurrency: usize, one: F) -> (f64, Vec<Duration>)
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (next, one) = (next.clone(), one.clone());
        workers.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < n {
                let t = Instant::now();
                one().await;
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

/// Runs `n` turns with `concurrency` workers; returns (turns/s, sorted latencies).
async fn turns(
    http: &reqwest::Client,
    base: &str,
    n: usize,
    concurrency: usize,
) -> (f64, Vec<Duration>) {
    let (http, url) = (http.clone(), format!("{base}/conversations"));
    load(n, concurrency, move || {
        let (http, url) = (http.clone(), url.clone());
        async move {
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
        }
    })
    .await
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
    let mut cmd =
        tokio::process::Command::new(test_support::process::workspace_bin("mcp-resources"));
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
    let fake_base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(2000)
        .build()
        .unwrap();
    let mut rows: Vec<(String, String, String)> = Vec::new();
    // `BENCH_ONLY=a2a make bench` (or `core`, `reads`, `auth`, `fs`, `obs`, `phone`, `pg`, `policy`, `notify`, `questions`, `reach`, `grpc`, `mcp`, `receipts`; `pgturns`, `pglists`, `pgflight`: one part of `pg`): those rows alone.
    let only = std::env::var("BENCH_ONLY").ok();
    let wants = |part: &str| only.as_deref().is_none_or(|o| o == part);
    if wants("core") {
        core_rows(&http, &fake, &fake_base, &mut rows, quick).await;
    }
    if wants("reads") {
        reads::rows(&http, &mut rows, quick).await;
    }

    // 4. A2A.
    fake.set_latency(Duration::ZERO);
    if wants("a2a") {
        a2a_rows(&http, &fake_base, &mut rows, quick).await;
    }
    if wants("grpc") {
        grpc::rows(&http, &fake_base, &mut rows, quick).await;
    }

    // 5. Auth.
    if wants("auth") {
        auth::rows(&http, &fake_base, &mut rows, quick).await;
    }

    // 6. mcp-filesystem.
    if wants("fs") {
        filesystem::rows(&mut rows, quick).await;
    }

    // 7. Observability: traces on versus off, and the UI's page load.
    if wants("obs") {
        observe::rows(&http, &fake_base, &mut rows, quick).await;
    }

    // The approver on a phone.
    if wants("phone") {
        phone::rows(&mut rows);
    }

    // 10. Notifications.
    if wants("notify") {
        notify::rows(&http, &fake_base, &mut rows, quick).await;
    }

    // 11. Questions.
    if wants("questions") {
        questions::rows(&http, &mut rows, quick).await;
    }

    // 13. The agent as an MCP server.
    if wants("mcp") {
        clients::rows(&http, &mut rows, quick).await;
    }

    // 15. Receipts.
    if wants("receipts") {
        receipt_rows::rows(&http, &mut rows, quick).await;
    }

    // 12. Slack decisions and grants.
    if wants("reach") {
        reach::rows(&http, &mut rows, quick).await;
    }

    // 9. Approval rules.
    if wants("policy") {
        policy::rows(&mut rows, quick);
    }

    // 8. PostgreSQL beside SQLite, and three replicas.
    if ["pg", "pgturns", "pglists", "pgflight"]
        .iter()
        .any(|p| wants(p))
    {
        replicas::rows(&http, &fake, &fake_base, &mut rows, quick).await;
    }

    println!(
        "\nStop & Go agent benchmark (fake provider, OpenAI wire format; mcp-resources over stdio)\n"
    );
    println!("| {:<52} | {:>20} | {:<16} |", "measure", "value", "target");
    println!("|{:-<54}|{:-<22}|{:-<18}|", "", "", "");
    for (m, v, t) in rows {
        println!("| {m:<52} | {v:>20} | {t:<16} |");
    }
}

/// `SendMessage` (1.0) round trips over JSON-RPC at `url`: (per second,
/// sorted latencies).
async fn a2a_sends(
    http: &reqwest::Client,
    url: &str,
    n: usize,
    concurrency: usize,
) -> (f64, Vec<Duration>) {
    binding_sends(http, url, false, n, concurrency).await
}

/// `SendMessage` round trips over JSON-RPC (`url` the endpoint) or over
/// HTTP+JSON (`url` the interface: `POST {url}/message:send`).
async fn binding_sends(
    http: &reqwest::Client,
    url: &str,
    rest: bool,
    n: usize,
    concurrency: usize,
) -> (f64, Vec<Duration>) {
    let http = http.clone();
    let url = if rest {
        format!("{}/message:send", url.trim_end_matches('/'))
    } else {
        url.to_string()
    };
    load(n, concurrency, move || {
        let (http, url) = (http.clone(), url.clone());
        async move {
            let message = serde_json::json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(),
                "role": "ROLE_USER", "parts": [{"text": "hello"}]}});
            let body = if rest {
                message
            } else {
                serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message})
            };
            let r = http
                .post(&url)
                .header("A2A-Version", "1.0")
                .json(&body)
                .send()
                .await
                .unwrap();
            let v: serde_json::Value = r.json().await.unwrap();
            let ok = if rest { v.get("task").or_else(|| v.get("message")).is_some() } else { v.get("result").is_some() };
            assert!(ok, "{v}");
        }
    })
    .await
}

/// Turns, reads and 1,000 in flight against one agent.
async fn core_rows(
    http: &reqwest::Client,
    fake: &FakeState,
    fake_base: &str,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    // 1. Turns.
    let agent = Agent::start(fake_base, true);
    let _ = turns(http, &agent.base, 20, 1).await; // warm up (MCP child, caches)
    let (tps1, lat1) = turns(http, &agent.base, if quick { 100 } else { 500 }, 1).await;
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
    let (tps32, lat32) = turns(http, &agent.base, total - done_so_far, 32).await;
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
    let llm_lat = model_round_trips(http, fake_base).await;
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
    let list = get_json(http, &format!("{}/conversations?limit=200", agent.base)).await;
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
    let lat = reads(http, &one).await;
    rows.push((
        "GET /conversations/:id p50 / p99 (ms), 10k stored".into(),
        format!("{:.2} / {:.2}", pct(&lat, 0.5), pct(&lat, 0.99)),
        "p99 < 5 ms".into(),
    ));
    let page: Vec<String> = (0..500)
        .map(|_| format!("{}/conversations?limit=50", agent.base))
        .collect();
    let lat = reads(http, &page).await;
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
    let agent = Agent::start(fake_base, false);
    let (wall, ok) = in_flight(http, std::slice::from_ref(&agent)).await;
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
}

/// 1,000 conversations started at once, spread over `agents` in turn:
/// (wall seconds, how many answered 201).
async fn in_flight(http: &reqwest::Client, agents: &[Agent]) -> (f64, usize) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..1000 {
        let http = http.clone();
        let url = format!("{}/conversations", agents[i % agents.len()].base);
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
    (started.elapsed().as_secs_f64(), ok)
}

/// A minimal agent on the official Python SDK, if installed: its base URL.
struct PyAgent {
    _process: Process,
    base: String,
}

impl PyAgent {
    /// `rest`: the SDK's HTTP+JSON application instead of JSON-RPC.
    fn start(rest: bool) -> Option<PyAgent> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let python = root.join(".tools/a2a-sdk-1/bin/python");
        let script = root.join("testdata/a2a_interop/agent.py");
        if !python.is_file() || !script.is_file() {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let mut cmd = Command::new(python);
        cmd.arg(script).arg(port.to_string());
        if rest {
            cmd.arg("--rest");
        }
        let process = Process::try_start(
            cmd,
            "listening on",
            "the Python SDK agent",
            Duration::from_secs(30),
        )
        .ok()?;
        Some(PyAgent {
            _process: process,
            base: format!("http://127.0.0.1:{port}"),
        })
    }
}

/// The JSON-RPC endpoint an agent card names (1.0 interface, else `url`).
async fn endpoint_of(http: &reqwest::Client, base: &str) -> Option<String> {
    let card: serde_json::Value = http
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    card["supportedInterfaces"]
        .as_array()
        .and_then(|l| {
            l.iter().find(|i| {
                i["protocolVersion"]
                    .as_str()
                    .is_some_and(|v| v.starts_with('1'))
            })
        })
        .and_then(|i| i["url"].as_str())
        .or_else(|| card["url"].as_str())
        .map(str::to_string)
}

/// HTTP+JSON beside JSON-RPC on our agent, and beside the SDK's own
/// HTTP+JSON server (rounds alternate, each figure the median).
async fn rest_rows(
    http: &reqwest::Client,
    base: &str,
    rpc_url: &str,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    let n32 = if quick { 500 } else { 3000 };
    let rest_url = format!("{base}/a2a");
    let _ = binding_sends(http, &rest_url, true, 20, 1).await;
    let echo = Agent::start_echo();
    let echo_url = format!("{}/a2a", echo.base);
    let _ = binding_sends(http, &echo_url, true, 20, 1).await;
    let py = PyAgent::start(true);
    let py_url = py.as_ref().map(|p| p.base.clone());
    if let Some(u) = &py_url {
        let _ = binding_sends(http, u, true, 20, 1).await;
    }
    let rounds = if quick { 1 } else { 3 };
    let (mut rest, mut rpc, mut theirs, mut echoed) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        rest.push(binding_sends(http, &rest_url, true, n32, 32).await.0);
        rpc.push(binding_sends(http, rpc_url, false, n32, 32).await.0);
        echoed.push(binding_sends(http, &echo_url, true, n32, 32).await.0);
        if let Some(u) = &py_url {
            theirs.push(binding_sends(http, u, true, n32.min(1000), 32).await.0);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let (rest, rpc) = (median(rest).unwrap_or(0.0), median(rpc).unwrap_or(0.0));
    rows.push((
        format!("A2A SendMessage/s, c=32: HTTP+JSON vs JSON-RPC ({rounds}r)"),
        format!(
            "{rest:.0} vs {rpc:.0} ({:+.1}%)",
            (rest / rpc.max(1.0) - 1.0) * 100.0
        ),
        "within 10%".into(),
    ));
    let theirs = median(theirs);
    let versus = |ours: f64| match theirs {
        Some(t) => format!("{ours:.0} vs {t:.0} ({:.1}x)", ours / t),
        None => format!("{ours:.0} vs n/a"),
    };
    rows.push((
        format!("A2A HTTP+JSON SendMessage/s, c=32: ours vs a2a-sdk ({rounds}r)"),
        versus(rest),
        "".into(),
    ));
    let echoed = median(echoed).unwrap_or(0.0);
    rows.push((
        "  the same, both echoing (no model call)".into(),
        versus(echoed),
        ">= 10x".into(),
    ));
}

async fn a2a_rows(
    http: &reqwest::Client,
    fake_base: &str,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    let (n1, n32) = if quick { (100, 500) } else { (500, 3000) };
    let c = Agent::start(fake_base, false);
    let url = format!("{}/a2a", c.base);
    let _ = a2a_sends(http, &url, 20, 1).await;
    let py = PyAgent::start(false);
    let py_url = match &py {
        Some(p) => endpoint_of(http, &p.base).await,
        None => None,
    };
    if let Some(u) = &py_url {
        let _ = a2a_sends(http, u, 20, 1).await;
    }
    // Both agents share this machine with the bench (client and fake model)
    // and with whatever else runs on it: rounds alternate between them and
    // each figure is the median of its rounds, so a slow second hits both.
    let rounds = if quick { 1 } else { 3 };
    let (mut ours1, mut ours32, mut theirs1, mut theirs32) = (vec![], vec![], vec![], vec![]);
    let mut lat_c = Vec::new();
    for _ in 0..rounds {
        let (t, lat) = a2a_sends(http, &url, n1, 1).await;
        ours1.push(t);
        lat_c.extend(lat);
        ours32.push(a2a_sends(http, &url, n32, 32).await.0);
        if let Some(u) = &py_url {
            theirs1.push(a2a_sends(http, u, n1.min(300), 1).await.0);
            theirs32.push(a2a_sends(http, u, n32.min(1000), 32).await.0);
        }
    }
    lat_c.sort();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let (ours1, ours32) = (median(ours1).unwrap_or(0.0), median(ours32).unwrap_or(0.0));
    let (theirs1, theirs32) = (median(theirs1), median(theirs32));
    let fmt = |ours: f64, theirs: Option<f64>| match theirs {
        Some(t) => format!("{ours:.0} vs {t:.0} ({:.1}x)", ours / t),
        None => format!("{ours:.0} vs n/a"),
    };
    rows.push((
        format!("A2A SendMessage/s, c=1: ours vs Python a2a-sdk ({rounds}r)"),
        fmt(ours1, theirs1),
        ">= 10x".into(),
    ));
    rows.push((
        format!("A2A SendMessage/s, c=32: ours vs Python a2a-sdk ({rounds}r)"),
        fmt(ours32, theirs32),
        ">= 10x".into(),
    ));
    rest_rows(http, &c.base, &url, rows, quick).await;
    if py.is_none() || py_url.is_none() {
        rows.push((
            "  (Python SDK agent not installed: scripts/setup.sh test)".into(),
            "".into(),
            "".into(),
        ));
    }
    // The floor at c=1: each of our SendMessages waits for one model call,
    // itself an HTTP round trip to the fake; the SDK agent calls no model.
    let mut floor = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        let r = http.get(format!("{}/health", c.base)).send().await.unwrap();
        let _ = r.bytes().await;
        floor.push(t.elapsed());
    }
    floor.sort();
    let llm = model_round_trips(http, fake_base).await;
    let floor_ms = pct(&floor, 0.5) + pct(&llm, 0.5);
    rows.push((
        "  c=1 floor: an HTTP round trip + a model call (ms)".into(),
        format!(
            "{floor_ms:.2} = {:.0}/s",
            if floor_ms > 0.0 {
                1000.0 / floor_ms
            } else {
                0.0
            }
        ),
        "".into(),
    ));
    // A → B → C: each hop is an agent turn (two model calls) and an A2A call.
    let b = Agent::start_with(
        fake_base,
        false,
        &format!(
            "prompt: You are bench agent B.\na2a: [{{name: c, url: \"{}\"}}]\n",
            c.base
        ),
    );
    let a = Agent::start_with(
        fake_base,
        false,
        &format!(
            "prompt: You are bench agent A.\na2a: [{{name: b, url: \"{}\"}}]\n",
            b.base
        ),
    );
    let url_a = format!("{}/a2a", a.base);
    let _ = a2a_sends(http, &url_a, 20, 1).await;
    let (_, lat_a) = a2a_sends(http, &url_a, if quick { 100 } else { 300 }, 1).await;
    let hop = (pct(&lat_a, 0.5) - pct(&lat_c, 0.5)) / 2.0;
    rows.push((
        "A2A chain A→B→C p50 (ms) vs C alone".into(),
        format!("{:.2} vs {:.2}", pct(&lat_a, 0.5), pct(&lat_c, 0.5)),
        "".into(),
    ));
    rows.push((
        "  added per hop, p50 (ms): all / without 2 model calls".into(),
        format!("{hop:.2} / {:.2}", hop - 2.0 * pct(&llm, 0.5)),
        "< 3 ms".into(),
    ));
}

/// Round trips of a model call to the fake (OpenAI wire format), sorted.
async fn model_round_trips(http: &reqwest::Client, fake_base: &str) -> Vec<Duration> {
    let mut llm = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        let r = http
            .post(format!("{fake_base}/v1/chat/completions"))
            .bearer_auth("k")
            .json(&serde_json::json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}))
            .send()
            .await
            .unwrap();
        let _ = r.bytes().await;
        llm.push(t.elapsed());
    }
    llm.sort();
    llm
}
