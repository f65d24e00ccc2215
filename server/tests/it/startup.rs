//! Startup: config errors stop the agent with a message naming the file and
//! the key; a good config serves UI pages and the API on one port.

use crate::support;

use support::{Agent, client, run_to_exit, write_config};

#[test]
fn a_bad_config_exits_with_the_file_key_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        "promt: hello\nllm: {model: llama3}\n",
    );
    let (status, out) = run_to_exit(&cfg);
    assert!(!status.success());
    let shown = cfg.display().to_string();
    assert!(out.contains(&shown), "names the file: {out}");
    assert!(out.contains("did you mean `prompt`?"), "{out}");
}

/// A sub-agent reached by two entries that disagree on its pinned card
/// key would lose the pin (one set of discovery settings per URL): the
/// agent refuses to start, naming both entries and the key.
#[test]
fn two_entries_for_one_sub_agent_url_must_agree_on_trust() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        "a2a: [{name: b, url: 'http://127.0.0.1:9', binding: jsonrpc, trust: {jwks_url: 'http://127.0.0.1:9/jwks.json'}}]\n\
         agent: {name: r, type: llm, a2a: [{name: c, url: 'http://127.0.0.1:9', binding: jsonrpc}]}\n",
    );
    // Bounded: an agent that takes the config serves until stopped.
    let log = std::fs::File::create(dir.path().join("out.log")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agent"))
        .arg("--config")
        .arg(&cfg)
        .env_remove("AGENT_CONFIG")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "the agent took the config and started: {}",
                std::fs::read_to_string(dir.path().join("out.log")).unwrap()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(dir.path().join("out.log")).unwrap();
    assert!(!status.success(), "{out}");
    assert!(out.contains("agent.a2a[0].trust"), "{out}");
    assert!(out.contains("`a2a[0]`"), "names both entries: {out}");
}

#[test]
fn a_missing_config_file_is_named() {
    let (status, out) = run_to_exit(std::path::Path::new("/nonexistent/agent.yaml"));
    assert!(!status.success());
    assert!(
        out.contains("/nonexistent/agent.yaml: cannot read the config file"),
        "{out}"
    );
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.yaml");
    std::fs::write(
        &path,
        format!(
            "host: 127.0.0.1\nport: {port}\ndata_dir: {}\n",
            dir.path().join("d").display()
        ),
    )
    .unwrap();
    let (status, out) = run_to_exit(&path);
    assert!(!status.success());
    assert!(
        out.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{out}"
    );
}

#[tokio::test]
async fn pages_render_on_the_server_and_api_paths_stay_json() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &dir.path().join("data"), "");
    // A process: in-process pages link target/site's hashed script, not /pkg/stopgo.js.
    let a = Agent::start(&cfg);
    let http = client();
    let created: serde_json::Value = http
        .post(a.url("/conversations"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["conversation"]["id"].as_str().unwrap();

    let home = http
        .get(a.url("/"))
        .header("Accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(home.status().as_u16(), 200);
    let html = home.text().await.unwrap();
    assert!(html.contains("New conversation"), "{html}");
    assert!(
        html.contains(id),
        "the list is rendered on the server: {html}"
    );
    assert!(
        html.contains("/pkg/stopgo.js"),
        "hydration script is linked"
    );

    let page = http
        .get(a.url(&format!("/ui/conversations/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("No messages yet"));

    let missing = http.get(a.url("/ui/nope")).send().await.unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    assert!(missing.text().await.unwrap().contains("Page not found"));

    let api = http
        .get(a.url("/conversations/x/extra"))
        .header("Accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(api.status().as_u16(), 404);
    assert_eq!(api.headers()["content-type"], "application/json");
}

/// Mode `none` on an address others can reach: one WARN line at startup and
/// a banner on every page (AUTH.md §3); on loopback neither.
#[tokio::test]
async fn no_auth_on_a_reachable_address_warns_and_every_page_says_so() {
    let banner =
        "No operator authentication: anyone who can reach this address can approve actions";
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("agent.yaml");
    std::fs::write(
        &cfg,
        format!(
            "host: 0.0.0.0\nport: 0\ndata_dir: {}\n",
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    let a = Agent::start(&cfg);
    let log = a.wait_for_log(banner);
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains(banner)),
        "{log}"
    );
    let port = a.base.rsplit(':').next().unwrap();
    let local = format!("http://127.0.0.1:{port}");
    for page in ["/", "/ui/approvals", "/ui/tools"] {
        let html = client()
            .get(format!("{local}{page}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(html.contains(banner), "{page} has no banner");
    }
    let me: serde_json::Value = client()
        .get(format!("{local}/auth/me"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["warning"], banner);
    drop(a);
    // On loopback: no banner.
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &dir.path().join("data"), "");
    let a = Agent::start(&cfg);
    let html = client()
        .get(a.url("/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!html.contains(banner));
    assert!(!a.log().contains(banner));
}

/// Issue 40 (3): the configs `make run` starts (the demo without a key,
/// agent.yaml with one) listen on this machine only, so a newcomer's first
/// page is not the "anyone can approve" banner and nobody else on their
/// network can approve. The demo, started as `make run` starts it.
#[tokio::test]
async fn the_configs_make_run_starts_listen_on_this_machine_only() {
    let banner = "anyone who can reach this address can approve";
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in ["demo.yaml", "agent.yaml"] {
        let c = server::config::load(&root.join("config").join(name)).unwrap();
        assert!(
            server::domain::net::is_loopback_host(&c.host),
            "config/{name} listens on {}",
            c.host
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let demo = std::fs::read_to_string(root.join("config/demo.yaml")).unwrap();
    let rules = root.join("config/demo-rules.yaml");
    let demo = demo
        .replace("port: 8080", "port: 0")
        .replace(
            "data_dir: ./data/demo",
            &format!("data_dir: {}", dir.path().join("data").display()),
        )
        .replace(
            "scripted:demo-rules.yaml",
            &format!("scripted:{}", rules.display()),
        )
        .replace(
            "command: target/release/mcp-resources",
            &format!(
                "command: {}",
                test_support::process::workspace_bin("mcp-resources")
            ),
        )
        .replace(
            "./data/demo/resources.db",
            &dir.path().join("resources.db").display().to_string(),
        );
    let cfg = dir.path().join("demo.yaml");
    std::fs::write(&cfg, demo).unwrap();
    let a = Agent::start(&cfg);
    assert!(a.base.starts_with("http://127.0.0.1:"), "{}", a.base);
    let html = client()
        .get(a.url("/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("Stop &amp; Go") || html.contains("Stop & Go"));
    assert!(!html.contains(banner), "the demo's first page warns");
    assert!(!a.log().contains(banner));
}

/// A browser that goes away while a page renders (a closed tab, a reload)
/// must not panic the renderer: 200 loads of the home page and 100 of the
/// inbox, tools, pipeline and conversation pages aborted at different
/// points, ten at a time, and the log holds no panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_loads_aborted_mid_render_never_panic() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &dir.path().join("data"), "name: abort-test\n");
    let a = Agent::start(&cfg);
    let http = client();
    let mut last = String::new();
    for _ in 0..30 {
        let created = http
            .post(a.url("/conversations"))
            .json(&serde_json::json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status().as_u16(), 201);
        let body: serde_json::Value = created.json().await.unwrap();
        last = body["conversation"]["id"].as_str().unwrap().to_string();
    }
    let addr = a.base.trim_start_matches("http://").to_string();
    let conversation_page = format!("/ui/conversations/{last}");
    let pages = [
        ("/", 20u64),
        ("/ui/approvals", 10),
        ("/ui/tools", 10),
        ("/ui/pipeline", 10),
        (conversation_page.as_str(), 10),
    ];
    for (path, rounds) in pages {
        for round in 0..rounds {
            let tasks: Vec<_> = (0..10u64)
                .map(|i| {
                    let addr = addr.clone();
                    let request =
                        format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\n\r\n");
                    tokio::spawn(async move {
                        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
                        s.write_all(request.as_bytes()).await.unwrap();
                        let mut buf = [0u8; 512];
                        match (round + i) % 4 {
                            0 => {}
                            1 => {
                                let wait = std::time::Duration::from_micros(100 * (round % 5 + i));
                                tokio::time::sleep(wait).await
                            }
                            2 => {
                                let _ = s.read(&mut buf[..1]).await;
                            }
                            _ => {
                                let _ = s.read(&mut buf).await;
                            }
                        }
                        drop(s);
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        }
    }
    // Renders that were cut off finish (or are dropped) in the background.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let home = http
        .get(a.url("/"))
        .header("Accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(home.status().as_u16(), 200, "still serving");
    let log = a.log();
    assert!(!log.contains("panicked"), "a panic in the log: {log}");
    assert!(!log.contains("disposed"), "{log}");
}
