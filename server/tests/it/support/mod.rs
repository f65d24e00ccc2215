//! Test support: start the real `agent` binary on a free port with a
//! temporary data directory, and read what it logs; or, for tests that are
//! not about the process (its log, signals, exit, environment), serve the
//! same config in the test's own process with `server::run`.

#![allow(dead_code)]

pub mod matrix;
pub mod otlp;
pub mod peer;
pub mod specs;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
pub use test_support::process::Process;

/// Provider keys and base URLs: removed from every agent a test starts, so
/// the developer's own environment never leaks into a test.
pub const PROVIDER_ENV: &[&str] = &[
    "GEMINI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "MISTRAL_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "MISTRAL_BASE_URL",
    "OPENROUTER_BASE_URL",
    "OLLAMA_BASE_URL",
];

/// A running agent: an `agent` process (the harness is
/// `test_support::process`) or served in this process ([`Agent::serve`]).
pub struct Agent {
    process: Option<Process>,
    /// Stops an in-process agent when dropped.
    _served: Option<Served>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub config_path: PathBuf,
}

/// An in-process agent's stop switch, the task serving it and the owner
/// of every task it spawned.
struct Served {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    run: Option<tokio::task::JoinHandle<()>>,
    tasks: server::domain::tasks::Tasks,
}

impl Drop for Served {
    /// Dropped without [`Agent::stop`]: asks `run` to stop and stops every
    /// task now (no request waits for a grace period here), so nothing the
    /// agent started goes on behind the test.
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.tasks.shutdown();
    }
}

/// The start of an agent on the scripted model (`testdata/e2e-rules.yaml`)
/// with the real `mcp-resources` (its database in `dir`); add `auth:` and
/// the like after it.
pub fn resources_yaml(name: &str, dir: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    format!(
        "name: {name}\nllm: {{model: \"scripted:{rules}\"}}\nmcp_servers:\n  - name: resources\n    command: {mcp}\n    args: [--db, {db}]\n",
        rules = root.join("testdata/e2e-rules.yaml").display(),
        mcp = test_support::process::workspace_bin("mcp-resources"),
        db = dir.join("resources.db").display()
    )
}

/// Waits, without blocking the runtime, until `done` holds; panics
/// saying `what` did not happen within `timeout`. For a test that must
/// see a state before its next step, instead of sleeping a guessed time.
pub async fn until(timeout: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Writes `yaml` plus `host`, `port: 0` and `data_dir` into `dir/agent.yaml`.
/// With `STOPGO_TEST_BACKEND=postgres` (`make unit` runs the REST and A2A
/// suites so a second time) the agent also gets a fresh database of its own
/// in the cluster named by `STOPGO_TEST_DATABASE_URL`.
pub fn write_config(dir: &Path, data_dir: &Path, yaml: &str) -> PathBuf {
    let path = dir.join("agent.yaml");
    let mut full = format!(
        "host: 127.0.0.1\nport: 0\ndata_dir: {}\n{yaml}",
        data_dir.display()
    );
    if std::env::var("STOPGO_TEST_BACKEND").as_deref() == Ok("postgres")
        && !yaml.contains("\nstore:")
    {
        full.push_str(&format!(
            "\nstore:\n  backend: postgres\n  url: \"{}\"\n  lease_seconds: 3\n",
            test_support::postgres::fresh_database("t")
        ));
    }
    std::fs::write(&path, full).unwrap();
    path
}

impl Agent {
    /// Starts the agent with `config` and waits until it listens.
    pub fn start(config: &Path) -> Agent {
        Self::start_with_env(config, &[])
    }

    pub fn start_with_env(config: &Path, env: &[(&str, &str)]) -> Agent {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent"));
        cmd.arg("--config")
            .arg(config)
            .env("RUST_LOG", "info")
            .env_remove("AGENT_CONFIG");
        for key in PROVIDER_ENV {
            cmd.env_remove(key);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let process = Process::server(cmd, "agent");
        Agent {
            base: format!("http://{}", process.ready),
            process: Some(process),
            _served: None,
            config_path: config.to_path_buf(),
        }
    }

    /// Serves `config` in this test process: `server::build_state`, then
    /// `server::run` on 127.0.0.1:0, as the binary does; listening when
    /// this returns, stopped when dropped. For tests that are not about
    /// the process: it has no log of its own, and the model's keys come
    /// from this process's environment (which tests never set).
    pub async fn serve(config: &Path) -> Agent {
        Self::serve_loaded(config, server::config::load(config).unwrap()).await
    }

    /// [`Agent::serve`] with `env` for the config's `${VAR}` (operator
    /// tokens, secrets), as [`Agent::start_with_env`] gives them to the
    /// process, without setting them in this process (tests run in
    /// parallel). Only the config reads them: a provider's key or base URL
    /// is read by the model from the process environment, so a test that
    /// needs one keeps the process.
    pub async fn serve_with_env(config: &Path, env: &[(&str, &str)]) -> Agent {
        for (k, _) in env {
            assert!(
                !PROVIDER_ENV.contains(k),
                "{k} is read by the model from the process environment: use Agent::start_with_env"
            );
        }
        let text = std::fs::read_to_string(config).unwrap();
        let lookup = |name: &str| match env.iter().find(|(k, _)| *k == name) {
            Some((_, v)) => Some(v.to_string()),
            None if PROVIDER_ENV.contains(&name) => None,
            None => std::env::var(name).ok(),
        };
        let loaded = server::config::parse(&text, config, &lookup).unwrap();
        Self::serve_loaded(config, loaded).await
    }

    async fn serve_loaded(config: &Path, loaded: server::config::Config) -> Agent {
        let state = server::build_state(server::Startup {
            config: loaded,
            config_dir: config.parent().unwrap().to_path_buf(),
            site_root: concat!(env!("CARGO_MANIFEST_DIR"), "/../target/site").into(),
            tools: None,
            a2a_conformance: false,
        })
        .await
        .unwrap();
        let listener = mcp_serve::listen("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let tasks = state.tasks.clone();
        let run = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            if let Err(e) = server::run(listener, state, shutdown).await {
                eprintln!("the in-process agent stopped: {e}");
            }
        });
        Agent {
            base: format!("http://{addr}"),
            process: None,
            _served: Some(Served {
                stop: Some(stop),
                run: Some(run),
                tasks,
            }),
            config_path: config.to_path_buf(),
        }
    }

    /// Stops an in-process agent as SIGTERM stops the binary (requests in
    /// flight get their grace, then every task is stopped and drained) and
    /// waits until `run` has returned; answers the owner of the agent's
    /// tasks, for a test to see that none is left.
    pub async fn stop(mut self) -> server::domain::tasks::Tasks {
        let mut served = self
            ._served
            .take()
            .expect("only an in-process agent (Agent::serve) stops this way: use terminate");
        if let Some(stop) = served.stop.take() {
            let _ = stop.send(());
        }
        if let Some(run) = served.run.take() {
            run.await.expect("the in-process agent's run panicked");
        }
        served.tasks.clone()
    }

    /// The owner of an in-process agent's tasks (what runs now).
    pub fn tasks(&self) -> server::domain::tasks::Tasks {
        self._served
            .as_ref()
            .expect("only an in-process agent (Agent::serve) shows its tasks")
            .tasks
            .clone()
    }

    /// The process, for what only a process has.
    fn process(&mut self) -> &mut Process {
        self.process
            .as_mut()
            .expect("an in-process agent (Agent::serve) has no process: use Agent::start")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn log(&self) -> String {
        self.process
            .as_ref()
            .expect("an in-process agent (Agent::serve) has no log of its own: use Agent::start")
            .log()
    }

    /// Waits until the log contains `needle` (log lines arrive asynchronously).
    pub fn wait_for_log(&self, needle: &str) -> String {
        self.process
            .as_ref()
            .expect("an in-process agent (Agent::serve) has no log of its own: use Agent::start")
            .wait_for_log(needle)
    }

    /// The agent process's own children (the stdio MCP servers it
    /// started): pid and command line.
    pub fn children(&self) -> Vec<(u32, String)> {
        self.process
            .as_ref()
            .expect(
                "an in-process agent (Agent::serve) has no children of its own: use Agent::start",
            )
            .children()
    }

    /// `kill -9`.
    pub fn kill9(mut self) {
        self.kill9_in_place();
    }

    /// `kill -9`, keeping the handle (and its log) for a restart.
    pub fn kill9_in_place(&mut self) {
        self.process().kill9();
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        self.terminate_in_place()
    }

    /// SIGTERM, then the exit status, keeping the handle (and its log).
    pub fn terminate_in_place(&mut self) -> std::process::ExitStatus {
        self.process().terminate(Duration::from_secs(20))
    }
}

/// The test OpenID provider (`testdata/oidc`, the certified npm
/// `oidc-provider`), on a free loopback port; stopped when dropped.
pub struct OidcProvider {
    _process: Process,
    /// The issuer, `http://127.0.0.1:PORT`.
    pub issuer: String,
}

impl OidcProvider {
    /// Starts it; `client_secret` makes the UI client confidential.
    pub fn start(client_secret: Option<&str>) -> OidcProvider {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut cmd = Command::new("node");
        cmd.arg(root.join("testdata/oidc/provider.mjs"))
            .args(["--port", "0"]);
        if let Some(s) = client_secret {
            cmd.args(["--client-secret", s]);
        }
        let process = Process::server(cmd, "the test OpenID provider");
        OidcProvider {
            issuer: format!("http://{}", process.ready),
            _process: process,
        }
    }

    /// `POST /test/token`: a token as the test asks (see testdata/oidc).
    pub async fn token(&self, spec: serde_json::Value) -> String {
        let v: serde_json::Value = client()
            .post(format!("{}/test/token", self.issuer))
            .json(&spec)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        v["token"].as_str().expect("a token").to_string()
    }

    /// `POST /test/...` with a JSON body; the JSON answer.
    pub async fn control(&self, path: &str, body: serde_json::Value) -> serde_json::Value {
        client()
            .post(format!("{}/test/{path}", self.issuer))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

/// Runs the agent binary to completion (for startup errors).
pub fn run_to_exit(config: &Path) -> (std::process::ExitStatus, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent"));
    cmd.arg("--config").arg(config).env_remove("AGENT_CONFIG");
    for key in PROVIDER_ENV {
        cmd.env_remove(key);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status, text)
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// `GET path` on the agent, decoded as JSON.
pub async fn get_json(a: &Agent, path: &str) -> serde_json::Value {
    client()
        .get(a.url(path))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `POST path` with a JSON body (30 s to answer: turns may chain agents);
/// the status and the JSON answer (`null` when it is not JSON).
pub async fn post_json(a: &Agent, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    post_json_as(a, None, path, body).await
}

/// [`post_json`] with an `X-Session-ID`.
pub async fn post_json_as(
    a: &Agent,
    sid: Option<&str>,
    path: &str,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let mut req = client()
        .post(a.url(path))
        .timeout(Duration::from_secs(30))
        .json(&body);
    if let Some(sid) = sid {
        req = req.header("X-Session-ID", sid);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(serde_json::Value::Null))
}

/// `POST` of `body` to `path` signed in as the bearer `token`: the status
/// and the JSON answer (null when there is none).
pub async fn post_bearer(
    a: &Agent,
    token: &str,
    path: &str,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let resp = client()
        .post(a.url(path))
        .bearer_auth(token)
        .timeout(Duration::from_secs(60))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(serde_json::Value::Null))
}

/// `GET` of `path` signed in as the bearer `token`: its JSON.
pub async fn get_bearer(a: &Agent, token: &str, path: &str) -> serde_json::Value {
    client()
        .get(a.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The audit log as JSON lines (`GET /audit?format=jsonl`), read by
/// `token` (an admin's).
pub async fn audit_rows(a: &Agent, token: &str) -> Vec<serde_json::Value> {
    let text = client()
        .get(a.url("/audit?format=jsonl"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The uuid of the approval a `POST /conversations` answer waits for
/// (failing the test when it does not wait).
pub fn waiting_uuid(body: &serde_json::Value) -> String {
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
    body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("no approval uuid: {body}"))
        .to_string()
}

/// Scripted rules for a chain A → B → C: A relays every message to its
/// sub-agent `b`, B to `c`, and C adds a resource when asked ("add NAME N").
pub const CHAIN_RULES: &str = r#"
rules:
  - system: "agent C"
    match: "(?i)add (\\w+) (-?\\d+)"
    steps:
      - call: resources_add
        args: {name: "$1", value: "$2"}
      - reply: "C added: {result}"
  - system: "agent B"
    match: "(?s)^(.*)$"
    steps:
      - call: a2a_c
        args: {message: "$1"}
      - reply: "B relayed: {result}"
  - system: "agent A"
    match: "(?s)^(.*)$"
    steps:
      - call: a2a_b
        args: {message: "$1"}
      - reply: "A relayed: {result}"
"#;

/// The `approval` of the tool call whose approval is `uuid`, in a
/// `{"conversation": C, ...}` answer.
pub fn approval_outcome(answer: &serde_json::Value, uuid: &str) -> serde_json::Value {
    answer["conversation"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| &m["tool_call"]["approval"])
        .find(|a| a["uuid"] == uuid)
        .unwrap_or_else(|| panic!("no tool call with approval {uuid}: {answer}"))
        .clone()
}

/// The entry named `name` in a `GET /tools` answer.
pub fn tool<'a>(tools: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    tools["tools"]
        .as_array()?
        .iter()
        .find(|t| t["name"] == name)
}

/// A model name of `format`'s provider and the environment that points it
/// at the fake provider at `base` with the API key `key`.
pub fn model_and_env(
    format: test_support::fake_llm::Format,
    base: &str,
    key: &str,
) -> (&'static str, Vec<(&'static str, String)>) {
    use test_support::fake_llm::Format;
    match format {
        Format::Gemini => (
            "gemini-2.5-flash",
            vec![
                ("GEMINI_API_KEY", key.into()),
                ("GEMINI_BASE_URL", base.into()),
            ],
        ),
        Format::Anthropic => (
            "claude-sonnet-4-5",
            vec![
                ("ANTHROPIC_API_KEY", key.into()),
                ("ANTHROPIC_BASE_URL", base.into()),
            ],
        ),
        Format::OpenAi => (
            "openai-gpt-4o",
            vec![
                ("OPENAI_API_KEY", key.into()),
                ("OPENAI_BASE_URL", format!("{base}/v1")),
            ],
        ),
    }
}
