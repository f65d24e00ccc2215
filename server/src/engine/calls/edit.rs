//! Edit before approving (POLICY.md §3): an approver fixes an argument
//! instead of rejecting and re-prompting. The edit is checked like the
//! model's call would be, against the tool's `inputSchema` (400 naming the
//! field) and against the rules again (a `deny` → 403, the approval stays
//! pending; a rule that needs more approvers than this approval has → 403
//! too, so an edit cannot slip a bigger change past a quorum). The tool
//! then runs once with the edited arguments, and the model sees the call
//! it made, the edit and the result. A proxy approval's edit is checked by
//! the sub-agent that owns the tool (its schema and its rules).

use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::policy::Action;
use crate::store::approvals::Approval;
use serde_json::Value;

impl Engine {
    /// Whether an approver may edit `a`'s arguments at all: not under a
    /// quorum (each vote would approve something else), and the tool's
    /// schema is known here (a sub-agent checks its own proxy approvals).
    pub(crate) fn may_edit(&self, a: &app::models::PendingApproval) -> bool {
        a.needed() <= 1 && (a.remote_task_id.is_some() || self.input_schema(&a.tool_name).is_some())
    }

    /// Checks `edited` as the arguments of the call `a` waits on.
    pub(in crate::engine) fn check_edit(
        &self,
        a: &Approval,
        edited: &Value,
    ) -> Result<(), EngineError> {
        if a.approval.needed() > 1 {
            return Err(EngineError::Invalid(format!(
                "approval {} needs {} approvers, so its arguments cannot be edited (each vote would approve something else): reject it and ask for the change",
                a.approval.uuid,
                a.approval.needed()
            )));
        }
        if !edited.is_object() {
            return Err(EngineError::Invalid(
                "\"arguments\" must be a JSON object".into(),
            ));
        }
        // The sub-agent that owns the tool checks a proxy approval's edit.
        if a.approval.remote_task_id.is_some() {
            return Ok(());
        }
        let tool = &a.approval.tool_name;
        let schema = self
            .input_schema(tool)
            .ok_or_else(|| EngineError::Invalid(format!(
                "the input schema of `{tool}` is not known now (its server may be down), so its arguments cannot be edited"
            )))?;
        let validator = jsonschema::validator_for(&schema).map_err(|_| {
            EngineError::Invalid(format!(
                "the input schema of `{tool}` cannot be checked here, so its arguments cannot be edited"
            ))
        })?;
        let problems: Vec<String> = validator
            .iter_errors(edited)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                let field = if at.is_empty() {
                    "arguments".to_string()
                } else {
                    format!("arguments{at}")
                };
                format!("{field}: {e}")
            })
            .collect();
        if !problems.is_empty() {
            return Err(EngineError::Invalid(format!(
                "the edited arguments do not fit `{tool}`'s input schema: {}",
                problems.join("; ")
            )));
        }
        let server = a.approval.server.as_deref();
        if let Some(rule) = self.inner.policy.evaluate(tool, server, edited) {
            match &rule.action {
                Action::Deny { reason } => {
                    return Err(EngineError::Forbidden(format!(
                        "the edited call is denied by the rule `{}` ({reason}); the approval is still pending",
                        rule.name
                    )));
                }
                Action::Approve(ask)
                    if a.approval.rule.as_deref() != Some(rule.name.as_str())
                        && ask.quorum as usize > a.approval.needed() =>
                {
                    return Err(EngineError::Forbidden(format!(
                        "the edited call falls under the rule `{}`, which needs {} approvers; the approval is still pending: reject it and ask for the change",
                        rule.name, ask.quorum
                    )));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The input schema of a tool this agent offers (MCP tools, sub-agents,
    /// `a2a` nodes).
    fn input_schema(&self, tool: &str) -> Option<Value> {
        if let Some(t) = self
            .inner
            .tools
            .tools()
            .into_iter()
            .find(|t| t.name == tool)
        {
            return Some(t.input_schema);
        }
        // Sub-agents (`a2a_<name>`) all take one `message`.
        tool.strip_prefix("a2a_")
            .filter(|name| self.sub_agent_url(name).is_some())
            .map(|name| {
                crate::engine::scope::LocalTool::a2a(name, "", "", false)
                    .info
                    .input_schema
            })
    }
}

/// What an edit changed, one line per JSON pointer: `/value: 50 → 5`.
pub(crate) fn diff(before: &Value, after: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk("", before, after, &mut out);
    out
}

fn walk(at: &str, before: &Value, after: &Value, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (k, bv) in b {
                let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match a.get(k) {
                    Some(av) => walk(&here, bv, av, out),
                    None => out.push(format!("{here}: {bv} → (removed)")),
                }
            }
            for (k, av) in a {
                if !b.contains_key(k) {
                    let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    out.push(format!("{here}: (absent) → {av}"));
                }
            }
        }
        (b, a) if b != a => out.push(format!(
            "{}: {b} → {a}",
            if at.is_empty() { "/" } else { at }
        )),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::diff;
    use serde_json::json;

    #[test]
    fn the_diff_names_each_changed_pointer() {
        assert_eq!(
            diff(
                &json!({"name": "apples", "value": 50, "tags": {"a": 1}, "gone": true}),
                &json!({"name": "apples", "value": 5, "tags": {"a": 2}, "new": "x"})
            ),
            [
                "/gone: true → (removed)",
                "/tags/a: 1 → 2",
                "/value: 50 → 5",
                "/new: (absent) → \"x\""
            ]
        );
        assert!(diff(&json!({"a": 1}), &json!({"a": 1})).is_empty());
    }
}
