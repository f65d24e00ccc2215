//! The compiled table of rules ([`Policy`]): compiling `approvals:` once
//! at startup, then finding the rule that decides a call.

use super::approver::Approver;
use super::config::{self, ApprovalsConfig};
use super::rule::{Rule, RuleRef, compile_rule};
use crate::domain::duration::parse as parse_duration;
use crate::domain::problem::Problem;
use serde_json::Value;
use std::time::Duration;

/// The compiled rules.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    rules: Vec<Rule>,
    /// How long any approval may wait (`approvals.expires_in`); a rule's
    /// own `expires_in` wins.
    pub(crate) expires_in: Option<Duration>,
    /// What an expiry does (POLICY.md §2).
    pub(crate) on_expiry: Expiry,
    /// What a call to a changed tool does (POLICY.md §4).
    pub(crate) on_tool_change: config::OnToolChange,
}

/// `on_expiry`, compiled.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) enum Expiry {
    /// The approval expires: the call never runs, the model is told.
    #[default]
    Reject,
    /// The first expiry adds these approvers and restarts the clock once;
    /// the second rejects.
    Escalate(Vec<Approver>),
}

impl Policy {
    /// Compiles `config`; `servers` are the names a rule's `server:` may
    /// use (MCP servers and sub-agents).
    pub fn compile(config: &ApprovalsConfig, servers: &[String]) -> Result<Policy, Vec<Problem>> {
        let mut problems = Vec::new();
        let mut rules: Vec<Rule> = Vec::new();
        let expires_in = match &config.expires_in {
            None => None,
            Some(t) => match parse_duration(t) {
                Ok(d) => Some(d),
                Err(e) => {
                    problems.push(Problem::new("approvals.expires_in", e));
                    None
                }
            },
        };
        let mut escalate_to = Vec::new();
        for (j, a) in config.escalate_to.iter().enumerate() {
            match Approver::parse(a) {
                Ok(a) => escalate_to.push(a),
                Err(e) => problems.push(Problem::new(format!("approvals.escalate_to[{j}]"), e)),
            }
        }
        let on_expiry = match config.on_expiry {
            config::OnExpiry::Reject => {
                if !config.escalate_to.is_empty() {
                    problems.push(Problem::new(
                        "approvals.escalate_to",
                        "only applies with `on_expiry: escalate`: set it, or remove escalate_to",
                    ));
                }
                Expiry::Reject
            }
            config::OnExpiry::Escalate => {
                if config.escalate_to.is_empty() {
                    problems.push(Problem::new(
                        "approvals.escalate_to",
                        "is required with `on_expiry: escalate`: who may decide after the first expiry, e.g. [role:admin]",
                    ));
                }
                let any_expiry = config.expires_in.is_some()
                    || config.rules.iter().any(|r| r.expires_in.is_some());
                if !any_expiry {
                    problems.push(Problem::new(
                        "approvals.on_expiry",
                        "nothing expires: set approvals.expires_in (or a rule's expires_in)",
                    ));
                }
                Expiry::Escalate(escalate_to)
            }
        };
        for (i, rc) in config.rules.iter().enumerate() {
            let at = format!("approvals.rules[{i}]");
            match compile_rule(rc, i + 1, &at, servers, &mut problems) {
                Some(rule) => {
                    if let Some(earlier) = rules.iter().find(|e| e.shadows(&rule)) {
                        problems.push(Problem::new(
                            at,
                            format!(
                                "rule `{}` can never match: rule `{}` before it matches every call it would",
                                rule.name, earlier.name
                            ),
                        ));
                    }
                    if rules.iter().any(|e| e.name == rule.name) {
                        problems.push(Problem::new(
                            format!("approvals.rules[{i}].name"),
                            format!("`{}` names two rules: give each its own name", rule.name),
                        ));
                    }
                    rules.push(rule);
                }
                None => continue,
            }
        }
        if problems.is_empty() {
            Ok(Policy {
                rules,
                expires_in,
                on_expiry,
                on_tool_change: config.on_tool_change,
            })
        } else {
            Err(problems)
        }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule that decides a call to `tool` on `server` with `args`, if
    /// any (else the annotations decide).
    pub fn evaluate(&self, tool: &str, server: Option<&str>, args: &Value) -> Option<&Rule> {
        self.rules.iter().find(|r| r.matches(tool, server, args))
    }

    /// The rules that may decide calls to `tool` on `server`, in order, up
    /// to the first that decides every call (the rest cannot be reached).
    pub(crate) fn rules_for(&self, tool: &str, server: &str) -> (Vec<RuleRef>, bool) {
        let mut out = Vec::new();
        for r in &self.rules {
            if !r.applies_to(tool, Some(server)) {
                continue;
            }
            out.push(RuleRef {
                name: r.name.clone(),
                action: r.action.as_str(),
                conditional: !r.when.is_empty(),
            });
            if r.when.is_empty() {
                return (out, true);
            }
        }
        (out, false)
    }
}
