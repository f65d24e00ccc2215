//! `agent policy explain`: which rule decides a call, and why each rule
//! before it did not, in words an operator can check against agent.yaml.

use super::config::UnannotatedTools;
use super::rule::{Action, Rule};
use super::table::Policy;
use crate::domain::duration::show as show_duration;
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
                    .map(|d| format!(", expires after {}", show_duration(d)))
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

/// What the live `grants` would do to the call (REACH.md §3), for the end
/// of an explanation: the grants that would let it run without asking,
/// or `None` when the call would not ask one approver (a grant never
/// spares a `deny`, an `allow` needs none, a quorum is never granted).
/// When no rule decides, the annotations would ask (as `annotation` or
/// `unannotated`): grants of either count.
pub fn grants_note(
    policy: &Policy,
    grants: &[app::models::Grant],
    tool: &str,
    server: Option<&str>,
    args: &Value,
) -> Option<String> {
    let rules: Vec<&str> = match policy.evaluate(tool, server, args) {
        Some(r) => match &r.action {
            Action::Approve(ask) if ask.quorum <= 1 => vec![r.name.as_str()],
            _ => return None,
        },
        None => vec!["annotation", "unannotated"],
    };
    let now = crate::domain::ids::now();
    let hits: Vec<String> = grants
        .iter()
        .filter(|g| {
            g.tool == tool
                && g.server.as_deref() == server
                && rules.contains(&g.rule.as_str())
                && g.revoked_at.is_none()
                && g.expires_at > now
                && super::grants::repeats(g.match_pointers.as_deref(), &g.values, args)
        })
        .map(|g| {
            format!(
                "  grant {} by {} ({}): {}, {}, until {}, used {} time{}\n",
                g.id,
                g.created_by,
                g.rule,
                match &g.match_pointers {
                    Some(ps) => format!(
                        "when {} repeat{}",
                        ps.join(", "),
                        if ps.len() == 1 { "s" } else { "" }
                    ),
                    None => "when every argument repeats".into(),
                },
                match &g.conversation_id {
                    Some(c) => format!("in conversation {c} only"),
                    None => "in every conversation".into(),
                },
                g.expires_at,
                g.uses,
                if g.uses == 1 { "" } else { "s" }
            )
        })
        .collect();
    Some(if hits.is_empty() {
        "=> no live grant would spare this call\n".to_string()
    } else {
        format!(
            "=> a live grant would allow it without asking (where its scope holds):\n{}",
            hits.join("")
        )
    })
}
