//! `approvals:` (POLICY.md §1–§2): the rules that decide, before a tool's
//! annotations, whether a call runs, waits for people, or is refused.
//!
//! These are the types as written in agent.yaml (the config re-exports
//! them as part of its schema), with `unannotated_tools`. They are compiled
//! (globs, regexes, pointers, durations) and checked by
//! [`super::Policy`], whose problems the config's validation reports with
//! the rule's key path: a rule that cannot be compiled is a startup error,
//! never a silent no-match. They live here, below the config, because the
//! policy is what reads them.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// `approvals:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// The default lifetime of every approval (`24h`); absent: never expires.
    #[serde(default)]
    pub expires_in: Option<String>,
    #[serde(default)]
    pub on_expiry: OnExpiry,
    /// Who may decide after an escalation (`role:admin`, names).
    #[serde(default)]
    pub escalate_to: Vec<String>,
    /// Evaluated in order; the first that matches decides.
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
    /// What a call to a tool whose definition changed since it was pinned
    /// does until an admin accepts the change (POLICY.md §4).
    #[serde(default)]
    pub on_tool_change: OnToolChange,
}

/// `approvals.on_tool_change`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnToolChange {
    /// Calls are refused with a clear result until accepted.
    #[default]
    Hold,
    /// Every call needs approval until accepted.
    Approve,
    /// Accepted at once (audited). A `destructiveHint` true → false change
    /// is held anyway.
    Allow,
}

/// `approvals.on_expiry`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnExpiry {
    #[default]
    Reject,
    Escalate,
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    pub name: String,
    /// A glob over tool names (`resources_*`, `a2a_billing`); every tool
    /// when absent.
    #[serde(default = "any_tool")]
    pub tool: String,
    /// The MCP server or sub-agent that serves the tool.
    #[serde(default)]
    pub server: Option<String>,
    /// JSON pointer into the call's arguments → what must hold there; all
    /// must hold.
    #[serde(default)]
    pub when: BTreeMap<String, PredicateConfig>,
    pub action: RuleAction,
    /// `approve` only: who may decide (`role:approver` by default).
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    /// `approve` only: how many distinct principals must approve.
    #[serde(default)]
    pub quorum: Option<u32>,
    /// `approve` only: this rule's lifetime of an approval.
    #[serde(default)]
    pub expires_in: Option<String>,
    /// `deny` only: told to the model and recorded.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `action:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleAction {
    Allow,
    Approve,
    Deny,
}

impl RuleAction {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleAction::Allow => "allow",
            RuleAction::Approve => "approve",
            RuleAction::Deny => "deny",
        }
    }
}

/// The predicates at one pointer (several may be given; all must hold).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredicateConfig {
    /// Equal to this JSON value (`null` included).
    #[serde(default, deserialize_with = "present")]
    pub equals: Option<Value>,
    /// Equal to one of these.
    #[serde(default, rename = "in")]
    pub one_of: Option<Vec<Value>>,
    /// A string matching this regex as a whole.
    #[serde(default)]
    pub regex: Option<String>,
    /// A number at least this.
    #[serde(default)]
    pub min: Option<f64>,
    /// A number at most this.
    #[serde(default)]
    pub max: Option<f64>,
    /// A URL whose host is one of these (exact, or `*.suffix`).
    #[serde(default)]
    pub host_in: Option<Vec<String>>,
    /// Whether the pointer must be present.
    #[serde(default)]
    pub exists: Option<bool>,
}

/// A key that is present is `Some`, even with the value `null`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn any_tool() -> String {
    "*".into()
}

/// What to do with an MCP tool that carries no annotations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnannotatedTools {
    /// Treat as destructive (the MCP spec's default for `destructiveHint`).
    #[default]
    Approve,
    /// Run without approval.
    Allow,
}
