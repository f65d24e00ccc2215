//! The rule table: each predicate, absent pointers, first match, tool
//! globs, servers, sub-agents, and every config error.

use super::approver::Approver;
use super::*;
use crate::config::ApprovalsConfig;
use crate::domain::principal::Role;
use crate::domain::problem::Problem;
use serde_json::json;

fn servers() -> Vec<String> {
    vec!["resources".into(), "files".into(), "billing".into()]
}

fn policy(yaml: &str) -> Result<Policy, Vec<Problem>> {
    let cfg: ApprovalsConfig = serde_yaml::from_str(yaml).expect("yaml");
    Policy::compile(&cfg, &servers())
}

fn ok(yaml: &str) -> Policy {
    policy(yaml).unwrap_or_else(|p| panic!("{p:?}"))
}

/// The name of the deciding rule, or `-`.
fn decide(p: &Policy, tool: &str, server: &str, args: serde_json::Value) -> String {
    p.evaluate(tool, Some(server), &args)
        .map(|r| r.name.clone())
        .unwrap_or_else(|| "-".into())
}

fn errors(yaml: &str) -> String {
    match policy(yaml) {
        Ok(_) => panic!("accepted: {yaml}"),
        Err(p) => p
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[test]
fn each_predicate_with_present_and_absent_pointers() {
    let table: &[(&str, serde_json::Value, bool)] = &[
        ("{equals: apples}", json!({"v": "apples"}), true),
        ("{equals: apples}", json!({"v": "pears"}), false),
        ("{equals: 12}", json!({"v": 12.0}), true),
        ("{equals: null}", json!({"v": null}), true),
        ("{equals: null}", json!({}), false),
        ("{in: [a, b]}", json!({"v": "b"}), true),
        ("{in: [a, b]}", json!({"v": "c"}), false),
        ("{regex: 'prod-.*'}", json!({"v": "prod-eu"}), true),
        ("{regex: 'prod'}", json!({"v": "my-prod-eu"}), false),
        ("{regex: '\\d+'}", json!({"v": 12}), false),
        ("{min: 10}", json!({"v": 10}), true),
        ("{min: 10}", json!({"v": 9.5}), false),
        ("{min: 10}", json!({"v": "1000"}), true),
        ("{min: 10}", json!({"v": "lots"}), false),
        ("{max: 10}", json!({"v": 10}), true),
        ("{max: 10}", json!({"v": 11}), false),
        ("{max: 10}", json!({"v": " 7 "}), true),
        ("{min: 1, max: 10}", json!({"v": 5}), true),
        ("{min: 1, max: 10}", json!({"v": 0}), false),
        (
            "{host_in: [example.com]}",
            json!({"v": "https://example.com/x"}),
            true,
        ),
        (
            "{host_in: [example.com]}",
            json!({"v": "https://EXAMPLE.com./x"}),
            true,
        ),
        (
            "{host_in: [example.com]}",
            json!({"v": "https://evil.com/?example.com"}),
            false,
        ),
        (
            "{host_in: [example.com]}",
            json!({"v": "https://example.com.evil.com/"}),
            false,
        ),
        (
            "{host_in: ['*.example.com']}",
            json!({"v": "http://api.example.com"}),
            true,
        ),
        (
            "{host_in: ['*.example.com']}",
            json!({"v": "http://a.b.example.com:8080/"}),
            true,
        ),
        (
            "{host_in: ['*.example.com']}",
            json!({"v": "http://example.com"}),
            false,
        ),
        (
            "{host_in: ['*.example.com']}",
            json!({"v": "http://badexample.com"}),
            false,
        ),
        ("{host_in: [example.com]}", json!({"v": "not a url"}), false),
        ("{exists: true}", json!({"v": null}), true),
        ("{exists: true}", json!({}), false),
        ("{exists: false}", json!({}), true),
        ("{exists: false}", json!({"v": 1}), false),
    ];
    for (pred, args, want) in table {
        let p = ok(&format!(
            "rules: [{{name: r, tool: t, when: {{/v: {pred}}}, action: deny}}]"
        ));
        let got = decide(&p, "t", "resources", args.clone()) == "r";
        assert_eq!(got, *want, "{pred} on {args}");
    }
    // An absent pointer fails every predicate but `exists: false`.
    for pred in [
        "{equals: 1}",
        "{in: [1]}",
        "{regex: '.*'}",
        "{min: 0}",
        "{max: 0}",
        "{host_in: [a.com]}",
    ] {
        let p = ok(&format!(
            "rules: [{{name: r, tool: t, when: {{/missing: {pred}}}, action: allow}}]"
        ));
        assert_eq!(decide(&p, "t", "resources", json!({"v": 1})), "-", "{pred}");
    }
    // Nested pointers.
    let p = ok("rules: [{name: r, tool: t, when: {/items/0/name: {equals: x}}, action: deny}]");
    assert_eq!(
        decide(&p, "t", "resources", json!({"items": [{"name": "x"}]})),
        "r"
    );
    assert_eq!(decide(&p, "t", "resources", json!({"items": []})), "-");
}

#[test]
fn first_match_wins_with_globs_servers_and_sub_agents() {
    let p = ok(r#"
rules:
  - {name: small-adds, tool: resources_add, server: resources, when: {/value: {max: 10}}, action: allow}
  - {name: big-adds, tool: resources_add, action: approve}
  - {name: never-drop, tool: "*drop*", action: deny, reason: dropping is done by the DBA team}
  - {name: billing-agent, tool: a2a_billing, action: approve}
  - {name: files-read, tool: "read_*", server: files, action: allow}
"#);
    let table = [
        (
            "resources_add",
            "resources",
            json!({"value": 5}),
            "small-adds",
        ),
        (
            "resources_add",
            "resources",
            json!({"value": 50}),
            "big-adds",
        ),
        ("resources_add", "other", json!({"value": 5}), "big-adds"),
        ("resources_add", "resources", json!({}), "big-adds"),
        ("table_drop", "resources", json!({}), "never-drop"),
        ("drop", "files", json!({}), "never-drop"),
        (
            "a2a_billing",
            "billing",
            json!({"message": "pay"}),
            "billing-agent",
        ),
        ("a2a_other", "other", json!({"message": "x"}), "-"),
        ("read_file", "files", json!({}), "files-read"),
        ("read_file", "resources", json!({}), "-"),
        ("resources_list", "resources", json!({}), "-"),
    ];
    for (tool, server, args, want) in table {
        assert_eq!(
            decide(&p, tool, server, args.clone()),
            want,
            "{tool} on {server} {args}"
        );
    }
    let Action::Deny { reason } = &p
        .evaluate("x_drop", Some("files"), &json!({}))
        .unwrap()
        .action
    else {
        panic!("deny");
    };
    assert_eq!(reason, "dropping is done by the DBA team");
    // The effective list of one tool stops at the rule that decides all calls.
    let (list, total) = p.rules_for("resources_add", "resources");
    let names: Vec<&str> = list.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["small-adds", "big-adds"]);
    assert!(total && list[0].conditional && !list[1].conditional);
    let (list, total) = p.rules_for("resources_list", "resources");
    assert!(list.is_empty() && !total);
}

#[test]
fn approvers_default_to_the_approver_role() {
    let p = ok(
        "rules: [{name: a, tool: t, action: approve}, {name: b, tool: u, action: approve, approvers: [role:admin, alice], quorum: 2}]",
    );
    let Action::Approve(ask) = &p.rules()[0].action else {
        panic!()
    };
    assert_eq!(ask.approvers, [Approver::Role(Role::Approver)]);
    assert_eq!(ask.quorum, 1);
    let Action::Approve(ask) = &p.rules()[1].action else {
        panic!()
    };
    assert_eq!(
        ask.approvers,
        [Approver::Role(Role::Admin), Approver::Name("alice".into())]
    );
    assert_eq!(ask.quorum, 2);
}

#[test]
fn config_errors_name_the_rule_and_the_fix() {
    let table = [
        // Shadowed: an earlier rule matches everything the later one would.
        (
            "rules: [{name: all, tool: '*', action: approve}, {name: late, tool: x, action: deny}]",
            "approvals.rules[1]: rule `late` can never match: rule `all` before it",
        ),
        (
            "rules: [{name: a, tool: 'res_*', action: allow}, {name: b, tool: res_add, when: {/v: {max: 1}}, action: deny}]",
            "rule `b` can never match: rule `a`",
        ),
        (
            "rules: [{name: a, tool: x, when: {/v: {max: 1}}, action: allow}, {name: b, tool: x, when: {/v: {max: 1}, /w: {exists: true}}, action: deny}]",
            "rule `b` can never match: rule `a`",
        ),
        (
            "rules: [{name: a, tool: x, action: allow}, {name: b, tool: x, server: files, action: deny}]",
            "rule `b` can never match",
        ),
        // Unknown server.
        (
            "rules: [{name: a, tool: x, server: nope, action: deny}]",
            "approvals.rules[0].server: `nope` names no MCP server or sub-agent of this agent (known are resources, files, billing)",
        ),
        // Bad predicates.
        (
            "rules: [{name: a, tool: x, when: {/v: {regex: '('}}, action: deny}]",
            "approvals.rules[0].when./v: `regex` \"(\" is not a valid regular expression",
        ),
        (
            "rules: [{name: a, tool: x, when: {/v: {min: 5, max: 1}}, action: deny}]",
            "`min` 5 is above `max` 1, so it can never hold",
        ),
        (
            "rules: [{name: a, tool: x, when: {/v: {}}, action: deny}]",
            "names no predicate",
        ),
        (
            "rules: [{name: a, tool: x, when: {v: {exists: true}}, action: deny}]",
            "\"v\" is not a JSON pointer",
        ),
        (
            "rules: [{name: a, tool: x, when: {/v: {exists: false, equals: 1}}, action: deny}]",
            "can never hold",
        ),
        (
            "rules: [{name: a, tool: x, when: {/v: {in: []}}, action: deny}]",
            "`in` is an empty list",
        ),
        (
            "rules: [{name: a, tool: x, when: {/v: {host_in: ['https://x.com']}}, action: deny}]",
            "is not a host name",
        ),
        // Globs, names, options of another action.
        (
            "rules: [{name: a, tool: '[', action: deny}]",
            "approvals.rules[0].tool: \"[\" is not a valid glob",
        ),
        (
            "rules: [{name: '', tool: x, action: deny}]",
            "approvals.rules[0].name: must not be empty",
        ),
        (
            "rules: [{name: a, tool: x, action: deny}, {name: a, tool: y, action: deny}]",
            "`a` names two rules",
        ),
        (
            "rules: [{name: a, tool: x, action: allow, quorum: 2}]",
            "approvals.rules[0].quorum: only applies to `action: approve`",
        ),
        (
            "rules: [{name: a, tool: x, action: approve, reason: because}]",
            "approvals.rules[0].reason: only applies to `action: deny`",
        ),
        (
            "rules: [{name: a, tool: x, action: approve, approvers: [role:boss]}]",
            "approvals.rules[0].approvers[0]: \"role:boss\" names no role",
        ),
        (
            "rules: [{name: a, tool: x, action: approve, approvers: []}]",
            "nobody could decide",
        ),
        (
            "rules: [{name: a, tool: x, action: approve, quorum: 0}]",
            "approvals.rules[0].quorum: must be at least 1",
        ),
        (
            "rules: [{name: a, tool: x, action: approve, quorum: 3, approvers: [alice, bob]}]",
            "approvals.rules[0].quorum: needs 3 distinct approvers but `approvers` names only 2",
        ),
        (
            "rules: [{name: a, tool: x, action: approve, expires_in: soon}]",
            "approvals.rules[0].expires_in: \"soon\" is not a duration",
        ),
    ];
    for (yaml, want) in table {
        let got = errors(yaml);
        assert!(got.contains(want), "{yaml}\n  wanted: {want}\n  got: {got}");
    }
    // Unknown predicate keys are refused by the types.
    let typed: Result<ApprovalsConfig, _> =
        serde_yaml::from_str("rules: [{name: a, tool: x, when: {/v: {maxx: 1}}, action: deny}]");
    assert!(
        typed
            .unwrap_err()
            .to_string()
            .contains("unknown field `maxx`")
    );
    let typed: Result<ApprovalsConfig, _> =
        serde_yaml::from_str("rules: [{name: a, tool: x, action: maybe}]");
    assert!(typed.is_err());
}

#[test]
fn not_shadowed_when_the_earlier_rule_is_narrower() {
    ok(r#"
rules:
  - {name: a, tool: x, when: {/v: {max: 1}}, action: allow}
  - {name: b, tool: x, action: deny}
  - {name: c, tool: "y*", server: files, action: allow}
  - {name: d, tool: "y*", action: approve}
  - {name: e, tool: "z*", action: allow}
  - {name: f, tool: "*", action: approve}
"#);
}

#[test]
fn explain_says_why_each_rule_did_or_did_not_match() {
    let p = ok(r#"
rules:
  - {name: small-adds, tool: resources_add, server: resources, when: {/value: {max: 10}}, action: allow}
  - {name: big-adds, tool: resources_add, action: approve, approvers: [role:approver, alice]}
"#);
    let text = explain(
        &p,
        "resources_add",
        Some("resources"),
        &json!({"value": 12}),
        crate::config::UnannotatedTools::Approve,
    );
    assert!(
        text.contains("rule 1 `small-adds` (allow): no: /value is 12, which fails `max 10`"),
        "{text}"
    );
    assert!(
        text.contains("rule 2 `big-adds` (approve): MATCHES"),
        "{text}"
    );
    assert!(
        text.contains("=> approve: rule `big-adds`") && text.contains("role:approver, alice"),
        "{text}"
    );
    let text = explain(
        &p,
        "resources_list",
        None,
        &json!({}),
        crate::config::UnannotatedTools::Approve,
    );
    assert!(
        text.contains("=> no rule matches: the tool's annotations decide"),
        "{text}"
    );
    let text = explain(
        &p,
        "resources_add",
        None,
        &json!({"value": 1}),
        crate::config::UnannotatedTools::Approve,
    );
    assert!(text.contains("pass --server"), "{text}");
}

#[test]
fn a_hundred_rules_evaluate_in_microseconds() {
    let mut yaml = String::from("rules:\n");
    for i in 0..99 {
        yaml.push_str(&format!(
            "  - {{name: r{i}, tool: 'tool_{i}_*', when: {{/amount: {{min: {i}}}, /target: {{host_in: ['*.example.com']}}}}, action: deny}}\n"
        ));
    }
    yaml.push_str("  - {name: last, tool: '*', action: approve}\n");
    let p = ok(&yaml);
    let args = json!({"amount": 5, "target": "https://api.example.com/x"});
    let start = std::time::Instant::now();
    for _ in 0..1000 {
        assert_eq!(decide(&p, "other_tool", "resources", args.clone()), "last");
    }
    // Generous (debug build, shared CI core): the bench measures the real figure.
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn expiry_and_escalation_compile_and_explain() {
    let p = ok(
        "expires_in: 24h\non_expiry: escalate\nescalate_to: [role:admin]\nrules: [{name: quick, tool: x, action: approve, expires_in: 90s}, {name: slow, tool: y, action: approve}]",
    );
    assert_eq!(p.expires_in, Some(std::time::Duration::from_secs(86_400)));
    assert_eq!(
        p.on_expiry,
        Expiry::Escalate(vec![Approver::Role(Role::Admin)])
    );
    let u = crate::config::UnannotatedTools::Approve;
    assert!(explain(&p, "x", None, &json!({}), u).contains("expires after 90s"));
    assert!(explain(&p, "y", None, &json!({}), u).contains("expires after 1d"));
    for (yaml, want) in [
        (
            "on_expiry: escalate\nexpires_in: 1h",
            "approvals.escalate_to: is required with `on_expiry: escalate`",
        ),
        (
            "on_expiry: escalate\nescalate_to: [role:admin]",
            "approvals.on_expiry: nothing expires",
        ),
        (
            "escalate_to: [role:admin]",
            "approvals.escalate_to: only applies with `on_expiry: escalate`",
        ),
        (
            "expires_in: soon",
            "approvals.expires_in: \"soon\" is not a duration",
        ),
    ] {
        let got = errors(yaml);
        assert!(got.contains(want), "{yaml}\n wanted: {want}\n got: {got}");
    }
}
