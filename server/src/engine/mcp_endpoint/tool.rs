//! The one tool the agent serves over MCP (CLIENTS.md §1): named after
//! the agent, described by its `description`, taking a message and an
//! optional conversation to continue, and annotated with what is true.

use crate::engine::handle::Engine;
use crate::policy::config::RuleAction;
use serde_json::{Value, json};

/// The agent's tool as `tools/list` shows it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AgentTool {
    /// The agent's name reduced to MCP's tool-name characters.
    pub(crate) name: String,
    pub(crate) description: String,
    /// Some call the agent can make may wait for an approval.
    pub(crate) destructive: bool,
}

impl AgentTool {
    /// The input schema: `{"message": string, "conversation_id"?: string}`.
    pub(crate) fn input_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "message": {
                    "type": "string",
                    "description": "What the agent should do; empty with a conversation_id: the conversation's outcome so far"
                },
                "conversation_id": {
                    "type": "string",
                    "description": "Continue this conversation (from an earlier result's structuredContent) instead of starting one"
                }
            },
            "required": ["message"],
            "additionalProperties": false
        })
    }
}

/// `name` reduced to MCP's tool-name characters (`A-Z a-z 0-9 _ - .`, at
/// most 128): anything else becomes `_`; an empty name becomes `agent`.
pub(crate) fn tool_name(name: &str) -> String {
    let reduced: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect();
    if reduced.trim_matches('_').is_empty() {
        "agent".to_string()
    } else {
        reduced
    }
}

impl Engine {
    /// The agent's MCP tool, from its config and the tools it has now.
    pub(crate) fn agent_tool(&self) -> AgentTool {
        let config = &self.inner.config;
        let description = if config.description.trim().is_empty() {
            format!(
                "Ask the agent `{}` to do something; it stops for a person's approval before anything destructive",
                config.name
            )
        } else {
            config.description.clone()
        };
        AgentTool {
            name: tool_name(&config.name),
            description,
            destructive: self.may_pause_for_approval(),
        }
    }

    /// Whether any call the agent can make may wait for an approval: a
    /// destructive tool, a sub-agent (it may ask for one of its own), a
    /// rule that asks, or a pipeline (its nodes have tools of their own).
    fn may_pause_for_approval(&self) -> bool {
        let config = &self.inner.config;
        config.agent.is_some()
            || !config.a2a.is_empty()
            || config
                .approvals
                .rules
                .iter()
                .any(|r| r.action == RuleAction::Approve)
            || self.all_tools().iter().any(|t| t.destructive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_name_keeps_only_mcp_characters() {
        assert_eq!(tool_name("ops-agent.v2"), "ops-agent.v2");
        assert_eq!(tool_name("Ops agent (EU)"), "Ops_agent__EU_");
        assert_eq!(tool_name(""), "agent");
        assert_eq!(tool_name("   "), "agent");
        assert_eq!(tool_name(&"x".repeat(300)).len(), 128);
    }
}
