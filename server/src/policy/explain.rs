//! `agent policy explain`: which rule decides a call, and why each rule
//! before it did not, in words an operator can check against agent.yaml.

use super::config::UnannotatedTools;
use super::{Action, Policy, Rule};
use serde_json::Value;

/// The explanation of a call to `tool` (on `server`, when given) with
/// `args`, one line per rule evaluated, then the verdict.
pub fn explain(
    policy: &Policy,
    tool: &str,
    server: Option<&str>,
    args: &Value,
    unannotated: UnannotatedTools,
) -> String {
    let mut out = format!(
        "call: {tool}{} with {args}\n",
        server.map(|s| format!(" on {s}")).unwrap_or_default()
    );
    let mut decided = None;
    for r in policy.rules() {
        let head = format!("rule {} `{}` ({}):", r.number, r.name, r.action.as_str());
        match why_not(r, tool, server, args) {
            Some(reason) => out.push_str(&format!("  {head} no: {reason}\n")),
            None => {
                out.push_str(&format!("  {head} MATCHES: {}\n", why(r, tool, args)));
                decided = Some(r);
                break;
            }
        }
    }
    if policy.rules().is_empty() {
        out.push_str("  (approvals.rules is empty)\n");
    }
    let verdict = match decided {
        Some(r) => match &r.action {
            Action::Allow => format!(
                "allow: rule `{}` runs the call without asking, whatever the tool's annotations say",
                r.name
            ),
            Action::Approve(ask) => format!(
                "approve: rule `{}` asks for approval; may decide: {} (quorum {}{})",
                r.name,
                ask.approvers
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                ask.quorum,
                ask.expires_in
                    .or(policy.expires_in)
                    .map(|d| format!(", expires after {}", super::show_duration(d)))
                    .unwrap_or_default()
            ),
            Action::Deny { reason } => format!(
                "deny: rule `{}` refuses the call; the model is told \"not allowed: {reason}\"",
                r.name
            ),
        },
        None => format!(
            "no rule matches: the tool's annotations decide (readOnlyHint true runs it, destructiveHint true asks for \
             approval; a tool without annotations {})",
            match unannotated {
                UnannotatedTools::Approve => "asks (unannotated_tools: approve)",
                UnannotatedTools::Allow => "runs (unannotated_tools: allow)",
            }
        ),
    };
    out.push_str(&format!("=> {verdict}\n"));
    out
}

/// Why `r` does not match, or `None` when it does.
fn why_not(r: &Rule, tool: &str, server: Option<&str>, args: &Value) -> Option<String> {
    if !r.matcher.is_match(tool) {
        return Some(format!("the tool `{tool}` does not match `{}`", r.tool));
    }
    if let Some(want) = &r.server {
        match server {
            None => {
                return Some(format!(
                    "the rule is for the server `{want}` (pass --server to name the call's)"
                ));
            }
            Some(s) if s != want => {
                return Some(format!("the rule is for the server `{want}`, not `{s}`"));
            }
            Some(_) => {}
        }
    }
    for (ptr, preds) in &r.when {
        let at = args.pointer(ptr);
        for p in preds {
            if !p.holds(at) {
                return Some(match at {
                    Some(v) => format!("{ptr} is {v}, which fails `{p}`"),
                    None => format!("{ptr} is absent, which fails `{p}`"),
                });
            }
        }
    }
    None
}

/// What held, for the matching rule.
fn why(r: &Rule, tool: &str, args: &Value) -> String {
    let mut parts = vec![format!("the tool `{tool}` matches `{}`", r.tool)];
    if let Some(s) = &r.server {
        parts.push(format!("the server is `{s}`"));
    }
    for (ptr, preds) in &r.when {
        let shown = args
            .pointer(ptr)
            .map(ToString::to_string)
            .unwrap_or_else(|| "absent".into());
        let list: Vec<String> = preds.iter().map(ToString::to_string).collect();
        parts.push(format!("{ptr} is {shown}: {}", list.join(", ")));
    }
    parts.join("; ")
}
