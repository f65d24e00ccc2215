//! A seed-style MCP server (hints at the top level of each tool, no
//! `annotations`) behind the agent: its hints decide what needs approval.

mod support;

use support::{Agent, get_json, tool, write_config};

#[tokio::test]
async fn top_level_hints_of_a_seed_server_decide_approval() {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/seed_mcp_server.py");
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "mcp_servers:\n  - name: seed\n    command: python3\n    args: [{}]\n",
        script.display()
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::start(&cfg);
    let tools = get_json(&a, "/tools").await;
    let hint = |n: &str| {
        tool(&tools, n).unwrap_or_else(|| panic!("{n} missing: {tools}"))["destructiveHint"].clone()
    };
    assert_eq!(hint("seed_delete"), true);
    assert_eq!(
        hint("seed_peek"),
        false,
        "a top-level destructiveHint: false is honoured"
    );
    assert_eq!(
        hint("seed_read"),
        false,
        "a top-level readOnlyHint: true is honoured"
    );
    assert_eq!(
        hint("seed_plain"),
        true,
        "no hints: unannotated_tools (approve)"
    );
}
