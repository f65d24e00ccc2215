//! The stored timeline as a provider-neutral transcript.
//!
//! Messages that came from one model answer share a `step` id: its text (if
//! any) and one tool message per call. They become one assistant message
//! with all its calls, followed by one tool-results message answering every
//! call, which is the shape all three wire formats need. System messages
//! (errors, notes) are for people and are not sent to the model.

use crate::llm::{ChatMessage, ToolCallRequest, ToolResultMessage};
use crate::store::StoredMessage;
use app::models::Role;

/// Builds the transcript from the stored messages.
pub(crate) fn transcript(messages: &[StoredMessage]) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        match m.message.role {
            Role::User => {
                out.push(ChatMessage::User(m.message.content.clone()));
                i += 1;
            }
            Role::System => i += 1,
            Role::Assistant | Role::Tool => {
                let step = m.step.clone();
                let mut text: Option<String> = None;
                let mut calls = Vec::new();
                let mut results = Vec::new();
                while i < messages.len() {
                    let n = &messages[i];
                    let same_step = n.step == step && step.is_some();
                    let first = std::ptr::eq(n, m);
                    if !(first || same_step)
                        || !matches!(n.message.role, Role::Assistant | Role::Tool)
                    {
                        break;
                    }
                    match (&n.message.role, &n.message.tool_call) {
                        (Role::Tool, Some(tc)) => {
                            let call_id = n.call_id.clone().unwrap_or_else(|| n.message.id.clone());
                            calls.push(ToolCallRequest {
                                id: call_id.clone(),
                                name: tc.name.clone(),
                                arguments: tc.arguments.clone(),
                                arguments_error: None,
                                signature: n.signature.clone(),
                            });
                            results.push(ToolResultMessage {
                                call_id,
                                name: tc.name.clone(),
                                content: tc.result.clone().unwrap_or_else(|| "(no result)".into()),
                                is_error: tc.is_error.unwrap_or(false) || tc.result.is_none(),
                            });
                        }
                        _ => {
                            let t = &n.message.content;
                            if !t.is_empty() {
                                text = Some(match text {
                                    Some(prev) => format!("{prev}\n{t}"),
                                    None => t.clone(),
                                });
                            }
                        }
                    }
                    i += 1;
                    if step.is_none() {
                        break;
                    }
                }
                out.push(ChatMessage::Assistant {
                    text,
                    tool_calls: calls,
                });
                if !results.is_empty() {
                    out.push(ChatMessage::ToolResults(results));
                }
            }
        }
    }
    out
}

/// Earlier turns for a pipeline node: each user message and the last
/// answer of its turn, without the tool steps (those belong to other
/// nodes' runs and would only cost tokens).
pub(crate) fn condensed(messages: &[StoredMessage]) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    let mut answer: Option<String> = None;
    for m in messages {
        match m.message.role {
            Role::User => {
                if let Some(a) = answer.take() {
                    out.push(ChatMessage::Assistant {
                        text: Some(a),
                        tool_calls: Vec::new(),
                    });
                }
                out.push(ChatMessage::User(m.message.content.clone()));
            }
            Role::Assistant if !m.message.content.is_empty() => {
                answer = Some(m.message.content.clone());
            }
            _ => {}
        }
    }
    if let Some(a) = answer {
        out.push(ChatMessage::Assistant {
            text: Some(a),
            tool_calls: Vec::new(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::models::{Message, ToolCall};
    use serde_json::json;

    fn msg(
        role: Role,
        content: &str,
        step: Option<&str>,
        call: Option<(&str, Option<&str>)>,
    ) -> StoredMessage {
        StoredMessage {
            message: Message {
                id: format!("m-{content}"),
                client_id: None,
                role,
                content: content.into(),
                tool_call: call.map(|(name, result)| ToolCall {
                    name: name.into(),
                    arguments: json!({}),
                    server: None,
                    result: result.map(str::to_string),
                    ..Default::default()
                }),
                node: None,
                created_at: String::new(),
            },
            call_id: call.map(|(n, _)| format!("id-{n}")),
            step: step.map(str::to_string),
            signature: None,
            started_at: None,
            finished_at: None,
            node_run: None,
        }
    }

    #[test]
    fn condensed_keeps_each_turns_question_and_last_answer() {
        let stored = vec![
            msg(Role::User, "first", None, None),
            msg(Role::Assistant, "thinking", Some("s1"), None),
            msg(Role::Tool, "", Some("s1"), Some(("a", Some("ra")))),
            msg(Role::Assistant, "answer one", Some("s2"), None),
            msg(Role::System, "note", None, None),
            msg(Role::User, "second", None, None),
        ];
        assert_eq!(
            condensed(&stored),
            vec![
                ChatMessage::User("first".into()),
                ChatMessage::Assistant {
                    text: Some("answer one".into()),
                    tool_calls: vec![]
                },
                ChatMessage::User("second".into()),
            ]
        );
    }

    #[test]
    fn one_step_becomes_one_assistant_message_and_one_results_message() {
        let stored = vec![
            msg(Role::User, "hi", None, None),
            msg(Role::Assistant, "checking", Some("s1"), None),
            msg(Role::Tool, "", Some("s1"), Some(("a", Some("ra")))),
            msg(Role::Tool, "", Some("s1"), Some(("b", Some("rb")))),
            msg(Role::System, "note", None, None),
            msg(Role::Assistant, "done", Some("s2"), None),
            msg(Role::User, "next", None, None),
        ];
        let t = transcript(&stored);
        assert_eq!(t.len(), 5, "{t:#?}");
        match &t[1] {
            ChatMessage::Assistant { text, tool_calls } => {
                assert_eq!(text.as_deref(), Some("checking"));
                assert_eq!(tool_calls.len(), 2);
            }
            other => panic!("{other:?}"),
        }
        match &t[2] {
            ChatMessage::ToolResults(r) => {
                assert_eq!(r.len(), 2);
                assert_eq!(r[1].content, "rb");
                assert_eq!(r[0].call_id, "id-a");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            t[3],
            ChatMessage::Assistant {
                text: Some("done".into()),
                tool_calls: vec![]
            }
        );
        assert_eq!(t[4], ChatMessage::User("next".into()));
    }
}
