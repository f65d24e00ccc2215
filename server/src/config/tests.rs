//! One test per config rule: each proves the rule rejects what it should,
//! names the key path, and says how to fix it.

use super::*;
use std::path::Path;

fn env(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("s3cret".into()),
        "PORT" => Some("9191".into()),
        _ => None,
    }
}

fn load_str(yaml: &str) -> Result<Config, ConfigError> {
    parse(yaml, Path::new("/etc/agent.yaml"), &env)
}

/// The problems of an invalid config as `path: message` lines.
fn problems(yaml: &str) -> Vec<String> {
    match load_str(yaml) {
        Ok(_) => panic!("expected the config to be rejected:\n{yaml}"),
        Err(e) => e.problems().iter().map(|p| p.to_string()).collect(),
    }
}

fn assert_problem(yaml: &str, path: &str, needle: &str) {
    let all = problems(yaml);
    assert!(
        all.iter()
            .any(|p| p.starts_with(&format!("{path}:")) && p.contains(needle)),
        "no problem at `{path}` containing {needle:?}; got {all:#?}"
    );
}

#[test]
fn an_empty_file_gives_every_default() {
    let c = load_str("").unwrap();
    assert_eq!(c.name, "agent");
    assert_eq!(c.host, "0.0.0.0");
    assert_eq!(c.port, 8080);
    assert_eq!(c.data_dir, Path::new("./data"));
    assert_eq!(c.llm.model, "gemini-2.5-flash");
    assert_eq!(c.llm.max_steps, 10);
    assert_eq!(c.llm.max_tokens, 4096);
    assert_eq!(c.max_body_bytes, 1024 * 1024);
    assert_eq!(c.a2a_card, A2aCardMode::Dual);
    assert_eq!(c.unannotated_tools, UnannotatedTools::Approve);
    assert_eq!(c.a2a_max_hops, 8);
    assert!(c.agent.is_none() && c.mcp_servers.is_empty() && c.a2a.is_empty());
    let mut commented = load_str("# only a comment\n").unwrap();
    assert_ne!(
        commented.source_digest, c.source_digest,
        "the digest is of the file as written"
    );
    commented.source_digest = c.source_digest.clone();
    assert_eq!(commented, c);
}

#[test]
fn the_full_schema_parses() {
    let c = load_str(
        r#"
name: orchestrator
description: Does things
prompt: Be brief.
host: 127.0.0.1
port: ${PORT}
data_dir: /tmp/x
public_url: https://agent.example.com
a2a_card: v1
max_body_bytes: 2048
llm: {model: "anthropic:claude-sonnet-4-5", max_steps: 5, max_tokens: 1000}
unannotated_tools: allow
mcp_servers:
  - {name: resources, command: mcp-resources, args: [--db, r.db], env: {RUST_LOG: info}}
  - name: remote
    url: http://localhost:9000/mcp
    headers: {Authorization: "Bearer ${TOKEN}"}
    forward_auth: false
a2a:
  - {name: helper, url: "http://localhost:9001", description: helps, destructiveHint: true}
a2a_max_hops: 4
agent:
  name: root
  type: sequential
  agents:
    - {name: analyzer, type: llm, prompt: "Analyze {user_message}", output_key: analysis, model: openai-gpt-4o}
    - name: checks
      type: loop
      max_iterations: 3
      approvals: enforce
      agents:
        - {name: checker, type: llm, prompt: "Check {analysis}", can_exit_loop: true, on_reject: stop}
    - {name: remote, type: a2a, url: "http://localhost:9002", destructiveHint: true}
"#,
    )
    .unwrap();
    assert_eq!(c.port, 9191, "a whole-value ${{VAR}} becomes a number");
    assert_eq!(c.mcp_servers[1].headers["Authorization"], "Bearer s3cret");
    assert!(!c.mcp_servers[1].forward_auth);
    assert!(
        c.mcp_servers[0].forward_auth,
        "forward_auth defaults to true"
    );
    assert!(c.a2a[0].destructive_hint);
    let root = c.agent.as_ref().unwrap();
    assert_eq!(root.kind, NodeKind::Sequential);
    assert_eq!(root.agents[1].approvals, Some(ApprovalsMode::Enforce));
    assert_eq!(root.agents[1].agents[0].on_reject, OnReject::Stop);
    assert_eq!(c.a2a_card, A2aCardMode::V1);
}

#[test]
fn unknown_keys_are_rejected_with_a_suggestion_and_the_key_path() {
    assert_problem(
        "promt: hi\n",
        "promt",
        "unknown key `promt`: did you mean `prompt`?",
    );
    assert_problem("llm: {modle: x}\n", "llm.modle", "did you mean `model`?");
    assert_problem(
        "agent: {name: r, type: sequential, agents: [{name: a, type: llm, output_kye: x}]}\n",
        "agent.agents[0].output_kye",
        "did you mean `output_key`?",
    );
}

#[test]
fn a_secret_in_the_file_is_pointed_at_the_environment() {
    assert_problem(
        "llm: {model: gemini-2.5-flash, api_key: abc}\n",
        "llm.api_key",
        "GEMINI_API_KEY",
    );
}

#[test]
fn wrong_types_name_the_key() {
    assert_problem("port: eighty\n", "port", "invalid type");
    assert_problem("mcp_servers: {name: x}\n", "mcp_servers", "invalid type");
    assert_problem("port: 70000\n", "port", "");
}

#[test]
fn unknown_enum_values_get_a_suggestion() {
    assert_problem(
        "agent: {name: r, type: sequental, agents: []}\n",
        "agent.type",
        "did you mean `sequential`?",
    );
    assert_problem(
        "unannotated_tools: alow\n",
        "unannotated_tools",
        "did you mean `allow`?",
    );
}

#[test]
fn unset_environment_variables_name_the_key() {
    assert_problem(
        "mcp_servers: [{name: r, url: 'http://x/mcp', headers: {Authorization: 'Bearer ${MISSING}'}}]\n",
        "mcp_servers[0].headers.Authorization",
        "MISSING is not set",
    );
}

#[test]
fn yaml_syntax_errors_name_the_file_and_line() {
    let e = load_str("name: [unclosed\n").unwrap_err();
    let s = e.to_string();
    assert!(s.starts_with("/etc/agent.yaml: not valid YAML"), "{s}");
    assert!(s.contains("line"), "{s}");
}

#[test]
fn a_non_mapping_document_is_rejected() {
    assert_problem("- a\n- b\n", "(top level)", "must be a YAML mapping");
}

#[test]
fn models_must_name_a_provider() {
    assert_problem(
        "llm: {model: llama3}\n",
        "llm.model",
        "unknown model `llama3`",
    );
    assert_problem(
        "agent: {name: a, type: llm, model: 'bogus'}\n",
        "agent.model",
        "unknown model",
    );
}

#[test]
fn a_scripted_model_needs_its_rules_file() {
    assert_problem(
        "llm: {model: 'scripted:nope.yaml'}\n",
        "llm.model",
        "does not exist",
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rules.yaml"), "rules: []\n").unwrap();
    let cfg = dir.path().join("agent.yaml");
    let c = parse("llm: {model: 'scripted:rules.yaml'}\n", &cfg, &env).unwrap();
    assert_eq!(
        parse_model(&c.llm.model).unwrap().provider,
        Provider::Scripted
    );
}

#[test]
fn numeric_ranges_are_enforced() {
    assert_problem("llm: {max_steps: 0}\n", "llm.max_steps", "use 1 to 100");
    assert_problem("llm: {max_tokens: 0}\n", "llm.max_tokens", "at least 1");
    assert_problem("max_body_bytes: 10\n", "max_body_bytes", "at least 1024");
    assert_problem("a2a_max_hops: 0\n", "a2a_max_hops", "use 1 to 64");
}

#[test]
fn mcp_servers_need_exactly_one_transport_and_unique_names() {
    assert_problem(
        "mcp_servers: [{name: a}]\n",
        "mcp_servers[0]",
        "needs `url`",
    );
    assert_problem(
        "mcp_servers: [{name: a, url: 'http://x/mcp', command: y}]\n",
        "mcp_servers[0]",
        "both `url` and `command`",
    );
    assert_problem(
        "mcp_servers: [{name: a, command: x}, {name: a, command: y}]\n",
        "mcp_servers[1].name",
        "duplicate MCP server name `a` (also at mcp_servers[0])",
    );
    assert_problem(
        "mcp_servers: [{name: a, url: 'localhost:9000'}]\n",
        "mcp_servers[0].url",
        "not an http(s) URL",
    );
    assert_problem(
        "mcp_servers: [{name: a, url: 'http://x', args: [b]}]\n",
        "mcp_servers[0]",
        "apply to stdio servers",
    );
    assert_problem(
        "mcp_servers: [{name: a, command: x, headers: {A: b}}]\n",
        "mcp_servers[0].headers",
        "apply to HTTP servers",
    );
    assert_problem(
        "mcp_servers: [{name: 'a b', command: x}]\n",
        "mcp_servers[0].name",
        "not a valid name",
    );
    assert_problem(
        "mcp_servers: [{name: a, command: x, auth: {type: client_credentials, client_id: c, client_secret: '${NOPE:-x}'}}]\n",
        "mcp_servers[0].auth",
        "OAuth applies to HTTP servers",
    );
    assert_problem(
        "mcp_servers: [{name: a, url: 'https://x/mcp', auth: {type: client_credentials, client_id: c, client_secret: s3cret, issuer: 'https://as'}}]\n",
        "mcp_servers[0].auth.client_secret",
        "must come from the environment",
    );
    assert_problem(
        "mcp_servers: [{name: a, url: 'https://x/mcp', auth: {type: client_credentials, client_id: c, client_secret: '${NOPE:-x}', token_url: 'ftp://x'}}]\n",
        "mcp_servers[0].auth.token_url",
        "not an http(s) URL",
    );
    assert_problem(
        "mcp_servers: [{name: a, url: 'http://x/mcp', auth: {type: password, client_id: c}}]\n",
        "mcp_servers[0].auth.type",
        "client_credentials",
    );
}

/// Issue 53 item 3: the client secret goes where the operator says, over
/// https unless to this machine.
#[test]
fn mcp_oauth_needs_a_token_url_or_an_issuer_and_https_off_this_machine() {
    let cc = |url: &str, rest: &str| {
        format!(
            "mcp_servers: [{{name: a, url: '{url}', auth: {{type: client_credentials, client_id: c, client_secret: '${{NOPE:-x}}'{rest}}}}}]\n"
        )
    };
    assert_problem(
        &cc("https://x/mcp", ""),
        "mcp_servers[0].auth",
        "needs `token_url` (the token endpoint the client secret is posted to) or `issuer`",
    );
    assert_problem(
        &cc(
            "https://x/mcp",
            ", token_url: 'https://as/token', issuer: 'https://as'",
        ),
        "mcp_servers[0].auth",
        "has both `token_url` and `issuer`",
    );
    for (url, rest, key) in [
        (
            "https://x/mcp",
            ", issuer: 'http://as.example'",
            "auth.issuer",
        ),
        (
            "https://x/mcp",
            ", token_url: 'http://10.0.0.9/token'",
            "auth.token_url",
        ),
        ("http://x/mcp", ", issuer: 'https://as'", "url"),
    ] {
        assert_problem(
            &cc(url, rest),
            &format!("mcp_servers[0].{key}"),
            "is plain http to another machine",
        );
    }
    assert_problem(
        &cc("https://x/mcp", ", issuer: 'ftp://as'"),
        "mcp_servers[0].auth.issuer",
        "not an http(s) URL",
    );
    for (url, rest) in [
        ("https://x/mcp", ", issuer: 'https://as.example/realms/a'"),
        ("https://x/mcp", ", token_url: 'https://as.example/token'"),
        ("http://127.0.0.1:9/mcp", ", issuer: 'http://localhost:8/'"),
        ("http://[::1]:9/mcp", ", token_url: 'http://a.localhost/t'"),
    ] {
        let c = load_str(&cc(url, rest)).unwrap();
        let Some(McpAuth::ClientCredentials {
            token_url, issuer, ..
        }) = &c.mcp_servers[0].auth
        else {
            panic!("no auth");
        };
        assert!(token_url.is_some() != issuer.is_some());
    }
}

#[test]
fn the_legacy_mcp_key_becomes_a_server_named_mcp() {
    let c = load_str("mcp: {command: mcp-resources, args: [--db, x.db]}\nmcp_servers: [{name: other, command: y}]\n").unwrap();
    let all = c.effective_mcp_servers();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].name, "mcp");
    assert_eq!(all[0].args, vec!["--db", "x.db"]);
    assert_problem(
        "mcp: {command: a}\nmcp_servers: [{name: mcp, command: b}]\n",
        "mcp_servers[0].name",
        "duplicate MCP server name `mcp`",
    );
}

#[test]
fn a2a_sub_agents_need_valid_unique_names_and_urls() {
    assert_problem(
        "a2a: [{name: 'has space', url: 'http://x'}]\n",
        "a2a[0].name",
        "not a valid sub-agent name",
    );
    assert_problem(
        "a2a: [{name: b, url: 'http://x'}, {name: b, url: 'http://y'}]\n",
        "a2a[1].name",
        "duplicate sub-agent name `b`",
    );
    assert_problem(
        "a2a: [{name: b, url: 'x'}]\n",
        "a2a[0].url",
        "not an http(s) URL",
    );
    assert_problem("a2a: [{name: b}]\n", "a2a[0]", "missing field `url`");
}

#[test]
fn a_tree_needs_a_root_with_a_name_and_type() {
    assert_problem("agent: {}\n", "agent", "missing field `name`");
    assert_problem("agent: {name: root}\n", "agent", "missing field `type`");
    assert!(
        load_str("agent:\n").unwrap().agent.is_none(),
        "an empty `agent:` means simple mode"
    );
}

#[test]
fn container_nodes_need_children_and_leaves_have_none() {
    assert_problem(
        "agent: {name: l, type: loop}\n",
        "agent.agents",
        "a `loop` node needs at least one child",
    );
    assert_problem(
        "agent: {name: s, type: sequential, agents: []}\n",
        "agent.agents",
        "needs at least one child",
    );
    assert_problem(
        "agent: {name: p, type: parallel}\n",
        "agent.agents",
        "needs at least one child",
    );
    assert_problem(
        "agent: {name: l, type: llm, agents: [{name: x, type: llm}]}\n",
        "agent.agents",
        "has no children",
    );
}

#[test]
fn node_names_are_unique_across_the_tree() {
    assert_problem(
        "agent: {name: r, type: sequential, agents: [{name: a, type: llm}, {name: s, type: sequential, agents: [{name: a, type: llm}]}]}\n",
        "agent.agents[1].agents[0].name",
        "duplicate node name `a` (also at agent.agents[0])",
    );
}

#[test]
fn node_keys_apply_only_to_their_kinds() {
    assert_problem("agent: {name: r, type: a2a}\n", "agent.url", "needs `url`");
    assert_problem(
        "agent: {name: r, type: llm, url: 'http://x'}\n",
        "agent.url",
        "applies to `a2a` nodes",
    );
    assert_problem(
        "agent: {name: r, type: sequential, model: gemini-2.5-flash, agents: [{name: a, type: llm}]}\n",
        "agent.model",
        "applies to `llm` nodes",
    );
    assert_problem(
        "agent: {name: r, type: llm, max_iterations: 3}\n",
        "agent.max_iterations",
        "applies to `loop` nodes",
    );
    assert_problem(
        "agent: {name: r, type: loop, max_iterations: 0, agents: [{name: a, type: llm}]}\n",
        "agent.max_iterations",
        "out of range",
    );
    assert_problem(
        "agent: {name: r, type: llm, can_exit_loop: true}\n",
        "agent.can_exit_loop",
        "inside a `loop`",
    );
    assert_problem(
        "agent: {name: r, type: sequential, a2a: [{name: x, url: 'http://x'}], agents: [{name: a, type: llm}]}\n",
        "agent.a2a",
        "apply to `llm` nodes",
    );
    // A name whose card key is pinned names one agent in the whole config.
    assert_problem(
        "a2a: [{name: b, url: 'http://x', trust: {jwks_url: 'http://x/jwks'}}]\nagent: {name: r, type: llm, a2a: [{name: b, url: 'http://y'}]}\n",
        "a2a",
        "used by more than one `a2a` entry",
    );
    assert!(
        load_str("a2a: [{name: b, url: 'http://x'}]\nagent: {name: r, type: llm, a2a: [{name: b, url: 'http://y'}]}\n").is_ok(),
        "without trust a name may repeat across lists, as before"
    );
    assert_problem(
        "agent: {name: r, type: llm, output_key: '9x'}\n",
        "agent.output_key",
        "not a valid key",
    );
    assert_problem(
        "agent: {name: r, type: llm, approvals: sometimes}\n",
        "agent.approvals",
        "expected",
    );
    assert_problem(
        "agent: {name: r, type: llm, on_reject: halt}\n",
        "agent.on_reject",
        "expected",
    );
}

#[test]
fn placeholders_must_be_produced_by_some_node() {
    assert_problem(
        "agent: {name: r, type: sequential, agents: [{name: a, type: llm, prompt: 'Do {analysis}'}]}\n",
        "agent.agents[0].prompt",
        "uses {analysis} but no node sets `output_key: analysis`",
    );
    load_str(
        "agent: {name: r, type: sequential, agents: [{name: a, type: llm, output_key: analysis}, {name: b, type: llm, prompt: 'Use {analysis} for {user_message}; JSON {\"k\": 1}'}]}\n",
    )
    .unwrap();
}

#[test]
fn every_problem_is_reported_at_once() {
    let all = problems("llm: {max_steps: 0}\na2a_max_hops: 0\nmcp_servers: [{name: a}]\n");
    assert_eq!(all.len(), 3, "{all:#?}");
    let e = load_str("llm: {max_steps: 0}\na2a_max_hops: 0\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("/etc/agent.yaml: 2 problems:"), "{e}");
}

#[test]
fn shipped_configs_are_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut pipelines = Vec::new();
    for dir in ["config", "testdata"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let is_agent_config = path.extension().is_some_and(|e| e == "yaml")
                && !name.contains("rules")
                && (name.starts_with("agent")
                    || name.starts_with("e2e-")
                    || name.starts_with("pipeline-")
                    || name.starts_with("demo")
                    || name.starts_with("filesystem-agent"));
            if is_agent_config {
                let c = load(&path).unwrap_or_else(|e| panic!("{e}"));
                if c.agent.is_some() {
                    pipelines.push(name.clone());
                }
            }
            if name.contains("rules") {
                let text = std::fs::read_to_string(&path).unwrap();
                crate::llm::scripted::Rules::parse(&text)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
        }
    }
    pipelines.sort();
    assert_eq!(
        pipelines,
        [
            "e2e-chain-a.yaml",
            "e2e-loop.yaml",
            "e2e-parallel.yaml",
            "e2e-sequential.yaml",
            "pipeline-loop.yaml",
            "pipeline-parallel.yaml",
            "pipeline-sequential.yaml"
        ]
    );
}

#[test]
fn interactive_slack_targets_are_checked_against_auth() {
    let target = |users: &str| {
        format!(
            "notifications:\n  targets:\n    - name: s\n      url: https://hooks.slack.com/services/T/B/x\n      format: slack\n      interactive: {{signing_secret: \"${{TOKEN}}\", users: {users}}}\n"
        )
    };
    // The secret from the environment only.
    assert_problem(
        "notifications:\n  targets:\n    - {name: s, url: \"https://hooks.slack.com/x\", format: slack, interactive: {signing_secret: literal}}\n",
        "notifications.targets[0].interactive.signing_secret",
        "environment",
    );
    // Mode tokens: every mapped principal is a token's name.
    assert_problem(
        &format!(
            "auth:\n  mode: tokens\n  tokens:\n    - {{name: alice, token: \"${{TOKEN}}\", roles: [approver]}}\n{}",
            target("{U1: alice, U2: alcie}")
        ),
        "notifications.targets[0].interactive.users.U2",
        "\"alcie\" is not the name of any auth.tokens entry",
    );
    // Mode proxy: no roles for a Slack user.
    assert_problem(
        &format!(
            "auth:\n  mode: proxy\n  proxy: {{user_header: X-User, trusted_proxies: [127.0.0.1]}}\n{}",
            target("{U1: alice}")
        ),
        "notifications.targets[0].interactive.users",
        "auth mode proxy",
    );
    // Only on Slack targets.
    assert_problem(
        "notifications:\n  targets:\n    - {name: j, url: \"https://example.com/h\", interactive: {signing_secret: \"${TOKEN}\"}}\n",
        "notifications.targets[0].interactive",
        "format: slack",
    );
    assert!(
        load_str(&target("{U1: anyone}")).is_ok(),
        "mode none maps anyone"
    );
}

/// One URL, one agent: entries for it that disagree on `trust` or
/// `binding` are refused naming both, since discovery keeps one set of
/// settings per URL and a later entry's would replace the pinned key.
#[test]
fn entries_for_one_url_agree_on_trust_and_binding() {
    let trusted = "a2a: [{name: b, url: 'http://x/', binding: jsonrpc, trust: {jwks_url: 'http://x/jwks'}}]\n";
    // The defect: a node's entry, same URL and binding, no trust.
    let yaml = format!(
        "{trusted}agent: {{name: r, type: llm, a2a: [{{name: c, url: 'http://x', binding: jsonrpc}}]}}\n"
    );
    assert_problem(&yaml, "agent.a2a[0].trust", "`agent.a2a[0]` and `a2a[0]`");
    assert_eq!(problems(&yaml).len(), 1, "{:#?}", problems(&yaml));
    // Another binding, in a nested node.
    let yaml = format!(
        "{trusted}agent: {{name: r, type: sequential, agents: [{{name: s, type: llm, a2a: [{{name: c, url: 'http://x', binding: grpc, trust: {{jwks_url: 'http://x/jwks'}}}}]}}]}}\n"
    );
    assert_problem(
        &yaml,
        "agent.agents[0].a2a[0].binding",
        "`agent.agents[0].a2a[0]` and `a2a[0]` both reach `http://x` but give different `binding`",
    );
    // Another key, within one list.
    assert_problem(
        "a2a:\n  - {name: b, url: 'http://x', trust: {jwks_url: 'http://x/jwks'}}\n  - {name: c, url: 'http://x', trust: {jwks_url: 'http://x/other'}}\n",
        "a2a[1].trust",
        "`a2a[1]` and `a2a[0]`",
    );
    // Entries that agree stay valid, as do entries for other URLs.
    let yaml = format!(
        "{trusted}agent: {{name: r, type: llm, a2a: [{{name: c, url: 'http://x', binding: jsonrpc, trust: {{jwks_url: 'http://x/jwks'}}}}, {{name: d, url: 'http://y'}}]}}\n"
    );
    assert!(load_str(&yaml).is_ok(), "{:#?}", load_str(&yaml).err());
    assert!(
        load_str("a2a: [{name: b, url: 'http://x'}, {name: c, url: 'http://x/'}]\n").is_ok(),
        "neither pins nor binds: nothing to disagree on"
    );
}
