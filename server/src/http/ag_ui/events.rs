//! AG-UI 1.0 events, written from the spec's schema
//! (`https://ag-ui.com/spec/1.0/schema.json`, as `@ag-ui/core` 1.0.0
//! generates its zod models from it): the run, text message, tool call
//! and outcome events this agent sends, each with the fields the schema
//! names. Written here rather than taken from a community crate: the
//! dozen shapes we send are a page, and the official validators check
//! every stream in the tests.

use serde::Serialize;
use serde_json::Value;

/// One event, `type` in SCREAMING_SNAKE_CASE, fields in camelCase.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Event {
    RunStarted {
        thread_id: String,
        run_id: String,
    },
    RunFinished {
        thread_id: String,
        run_id: String,
        /// The conversation the thread is bound to, and its status.
        result: Value,
        outcome: Outcome,
    },
    RunError {
        message: String,
        code: String,
    },
    /// The application's own event: here, the client-side tools this
    /// version does not offer to the model, said once per run.
    Custom {
        name: &'static str,
        value: Value,
    },
    TextMessageStart {
        message_id: String,
        role: &'static str,
    },
    TextMessageContent {
        message_id: String,
        delta: String,
    },
    TextMessageEnd {
        message_id: String,
    },
    ToolCallStart {
        tool_call_id: String,
        tool_call_name: String,
    },
    ToolCallArgs {
        tool_call_id: String,
        delta: String,
    },
    ToolCallEnd {
        tool_call_id: String,
    },
    ToolCallResult {
        message_id: String,
        tool_call_id: String,
        content: String,
        role: &'static str,
    },
    /// A sub-agent's invocation (an A2A task), here the one an interrupt
    /// came from.
    SubagentStarted {
        subagent_run_id: String,
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    SubagentFinished {
        subagent_run_id: String,
        outcome: SubagentOutcome,
    },
}

/// Why a sub-agent's segment of the run ended (`SubagentFinishedOutcome`).
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub(crate) enum SubagentOutcome {
    /// Waiting on these interrupts; a later run continues it.
    Suspended { interrupt_ids: Vec<String> },
}

/// Why a run ended (`RunFinishedOutcome`).
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum Outcome {
    Success,
    Interrupt { interrupts: Vec<Interrupt> },
}

/// Something the run needs from outside before it goes on (`Interrupt`).
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Interrupt {
    /// The sub-agent invocation it came from (a proxy approval's task).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) subagent_run_id: Option<String>,
    pub(crate) id: String,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_call_id: Option<String>,
    pub(crate) response_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<String>,
    pub(crate) metadata: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_serialize_as_the_schema_names_them() {
        let e = Event::ToolCallStart {
            tool_call_id: "m1".into(),
            tool_call_name: "resources_add".into(),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "TOOL_CALL_START", "toolCallId": "m1", "toolCallName": "resources_add"})
        );
        let done = Event::RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: json!({"conversationId": "c"}),
            outcome: Outcome::Success,
        };
        assert_eq!(
            serde_json::to_value(&done).unwrap(),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                   "result": {"conversationId": "c"}, "outcome": {"type": "success"}})
        );
    }
}
