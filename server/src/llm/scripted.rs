//! The scripted model: deterministic answers from a rules file.
//!
//! `model: "scripted:rules.yaml"` lets a user run their agent.yaml offline
//! and lets the test suite script a provider. The answer is a pure function
//! of the request: the first rule whose `match` regex matches the latest
//! user message (and whose optional `system` regex matches the system
//! prompt, which is how a pipeline's nodes get different scripts) is chosen,
//! and the number of model steps already taken since that message picks its
//! step. Being stateless, it behaves the same after a restart and when the
//! same rules drive the fake provider server.
//!
//! ```yaml
//! rules:
//!   - system: "(?i)you are the executor"     # optional; `match` defaults to any message
//!     match: "(?i)add (\\w+) (\\d+)"
//!     steps:
//!       - call: resources_add
//!         args: {name: "$1", value: "$2"}   # "$2" alone becomes the number 2…
//!       - reply: "Done: {result}"           # {result}: the latest tool result; $1 works here too
//! default: "Try: list resources"            # {user}: the latest user message
//! ```

use super::client::LlmClient;
use super::types::{
    ChatMessage, ChatRequest, ChatResponse, FinishReason, LlmError, ToolCallRequest, Usage,
};
use crate::domain::BoxFuture;
use regex::Regex;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// One tool call of a step.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    pub name: String,
    #[serde(default)]
    pub args: Value,
}

/// One model step: text, tool calls, or both.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Final text (ends the turn when there are no calls).
    #[serde(default)]
    pub reply: Option<String>,
    /// A single call (shorthand).
    #[serde(default)]
    pub call: Option<String>,
    #[serde(default)]
    pub args: Option<Value>,
    /// Several calls in one step.
    #[serde(default)]
    pub calls: Vec<CallSpec>,
}

/// A rule: a regex over the latest user message (and optionally one over
/// the system prompt) and the steps to take.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    #[serde(rename = "match", default)]
    pub pattern: String,
    #[serde(default)]
    pub system: Option<String>,
    pub steps: Vec<Step>,
}

/// A compiled rule.
#[derive(Clone, Debug)]
struct Rule {
    user: Regex,
    system: Option<Regex>,
    steps: Vec<Step>,
}

/// The rules file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesFile {
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
    #[serde(default = "default_reply")]
    pub default: String,
}

fn default_reply() -> String {
    "I am a scripted model and have no rule for that message.".into()
}

/// Compiled rules.
#[derive(Clone, Debug)]
pub struct Rules {
    rules: Vec<Rule>,
    default: String,
}

impl Rules {
    /// Parses and compiles rules; errors name the rule.
    pub fn parse(yaml: &str) -> Result<Rules, String> {
        let file: RulesFile = serde_yaml::from_str(yaml).map_err(|e| e.to_string())?;
        let mut rules = Vec::new();
        for (i, r) in file.rules.into_iter().enumerate() {
            let user = Regex::new(&r.pattern).map_err(|e| format!("rules[{i}].match: {e}"))?;
            let system = r
                .system
                .as_deref()
                .map(Regex::new)
                .transpose()
                .map_err(|e| format!("rules[{i}].system: {e}"))?;
            if r.steps.is_empty() {
                return Err(format!("rules[{i}].steps: give at least one step"));
            }
            rules.push(Rule {
                user,
                system,
                steps: r.steps,
            });
        }
        Ok(Rules {
            rules,
            default: file.default,
        })
    }

    /// The next step for a system prompt and a transcript.
    pub fn respond(&self, system: &str, messages: &[ChatMessage]) -> ChatResponse {
        let last_user = messages
            .iter()
            .rposition(|m| matches!(m, ChatMessage::User(_)));
        let user = last_user
            .and_then(|i| match &messages[i] {
                ChatMessage::User(t) => Some(t.as_str()),
                _ => None,
            })
            .unwrap_or("");
        let since = last_user.map(|i| &messages[i + 1..]).unwrap_or(messages);
        let taken = since
            .iter()
            .filter(|m| matches!(m, ChatMessage::Assistant { .. }))
            .count();
        let result = since
            .iter()
            .rev()
            .find_map(|m| match m {
                ChatMessage::ToolResults(r) => Some(
                    r.iter()
                        .map(|t| t.content.as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                _ => None,
            })
            .unwrap_or_default();
        let rule = self.rules.iter().find(|r| {
            r.user.is_match(user) && r.system.as_ref().is_none_or(|s| s.is_match(system))
        });
        let caps = rule.and_then(|r| r.user.captures(user));
        let fill = |s: &str| {
            let mut out = s.replace("{result}", &result).replace("{user}", user);
            if let Some(c) = &caps {
                for i in (1..c.len()).rev() {
                    out = out.replace(&format!("${i}"), c.get(i).map(|m| m.as_str()).unwrap_or(""));
                }
            }
            out
        };
        let Some(Rule { steps, .. }) = rule else {
            return text_response(fill(&self.default));
        };
        let Some(step) = steps.get(taken) else {
            // The script ran out: end the turn rather than loop.
            return text_response(fill(
                steps
                    .last()
                    .and_then(|s| s.reply.as_deref())
                    .unwrap_or("Done."),
            ));
        };
        let mut calls: Vec<CallSpec> = step.calls.clone();
        if let Some(name) = &step.call {
            calls.insert(
                0,
                CallSpec {
                    name: name.clone(),
                    args: step
                        .args
                        .clone()
                        .unwrap_or(Value::Object(Default::default())),
                },
            );
        }
        let tool_calls: Vec<ToolCallRequest> = calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| ToolCallRequest {
                id: format!("call_{}_{}", taken, i),
                name: c.name,
                arguments: substitute(&c.args, caps.as_ref()),
                arguments_error: None,
                signature: None,
            })
            .collect();
        let finish = if tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        };
        ChatResponse {
            text: step.reply.as_deref().map(fill),
            tool_calls,
            finish,
            usage: None,
        }
    }
}

fn text_response(text: String) -> ChatResponse {
    ChatResponse {
        text: Some(text),
        tool_calls: Vec::new(),
        finish: FinishReason::Stop,
        usage: None,
    }
}

/// Replaces `$N` with regex captures; a string that is exactly `$N` and
/// whose capture is a number becomes that number.
fn substitute(v: &Value, caps: Option<&regex::Captures<'_>>) -> Value {
    let Some(caps) = caps else { return v.clone() };
    match v {
        Value::String(s) => {
            if let Some(n) = s.strip_prefix('$').and_then(|d| d.parse::<usize>().ok()) {
                let cap = caps.get(n).map(|m| m.as_str()).unwrap_or("");
                if let Ok(i) = cap.parse::<i64>() {
                    return Value::from(i);
                }
                return Value::String(cap.to_string());
            }
            let mut out = s.clone();
            for i in (1..caps.len()).rev() {
                out = out.replace(
                    &format!("${i}"),
                    caps.get(i).map(|m| m.as_str()).unwrap_or(""),
                );
            }
            Value::String(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, Some(caps))).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), substitute(x, Some(caps))))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The scripted model as an [`LlmClient`].
pub struct Scripted {
    rules: Rules,
    label: String,
}

impl Scripted {
    /// A scripted model from rules already parsed.
    pub fn from_rules(rules: Rules, label: &str) -> Scripted {
        Scripted {
            rules,
            label: label.to_string(),
        }
    }

    /// Loads a rules file.
    pub fn load(path: &Path) -> Result<Scripted, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let rules = Rules::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Scripted {
            rules,
            label: format!("scripted:{}", path.display()),
        })
    }
}

impl LlmClient for Scripted {
    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let mut answer = self.rules.respond(&req.system, &req.messages);
            answer.usage = Some(Usage::estimate(req.chars(), answer.chars()));
            Ok(answer)
        })
    }

    fn describe(&self) -> String {
        self.label.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolResultMessage;

    const RULES: &str = r#"
rules:
  - match: "(?i)add (\\w+) (\\d+)"
    steps:
      - call: resources_add
        args: {name: "$1", value: "$2", note: "for $1"}
      - reply: "Added. {result}"
  - match: "(?i)list"
    steps:
      - calls: [{name: resources_list}, {name: other, args: {a: 1}}]
        reply: thinking
      - reply: "Here: {result}"
default: "No rule for {user}"
"#;

    fn user(t: &str) -> ChatMessage {
        ChatMessage::User(t.into())
    }

    #[test]
    fn the_first_step_calls_with_captures() {
        let r = Rules::parse(RULES).unwrap();
        let resp = r.respond("", &[user("please add apples 12")]);
        assert_eq!(resp.finish, FinishReason::ToolCalls);
        assert_eq!(resp.tool_calls[0].name, "resources_add");
        assert_eq!(
            resp.tool_calls[0].arguments,
            serde_json::json!({"name": "apples", "value": 12, "note": "for apples"})
        );
    }

    #[test]
    fn the_step_follows_the_transcript() {
        let r = Rules::parse(RULES).unwrap();
        let first = r.respond("", &[user("add a 1")]);
        let history = vec![
            user("add a 1"),
            ChatMessage::Assistant {
                text: None,
                tool_calls: first.tool_calls.clone(),
            },
            ChatMessage::ToolResults(vec![ToolResultMessage {
                call_id: first.tool_calls[0].id.clone(),
                name: "resources_add".into(),
                content: "{\"id\":\"r1\"}".into(),
                is_error: false,
            }]),
        ];
        let second = r.respond("", &history);
        assert_eq!(second.text.as_deref(), Some("Added. {\"id\":\"r1\"}"));
        assert!(second.tool_calls.is_empty());
    }

    #[test]
    fn several_calls_and_text_in_one_step() {
        let r = Rules::parse(RULES).unwrap();
        let resp = r.respond("", &[user("list all")]);
        assert_eq!(resp.tool_calls.len(), 2);
        assert_eq!(resp.text.as_deref(), Some("thinking"));
        assert_ne!(resp.tool_calls[0].id, resp.tool_calls[1].id);
    }

    #[test]
    fn a_system_regex_picks_the_rule_per_prompt() {
        let r = Rules::parse(
            r#"
rules:
  - system: "(?i)you are the checker"
    steps: [{call: exit_loop}]
  - match: "go"
    steps: [{reply: "worker"}]
"#,
        )
        .unwrap();
        let checker = r.respond("You are the checker.", &[user("go")]);
        assert_eq!(checker.tool_calls[0].name, "exit_loop");
        let worker = r.respond("You are the worker.", &[user("go")]);
        assert_eq!(worker.text.as_deref(), Some("worker"));
        assert!(Rules::parse("rules: [{system: '(', steps: [{reply: x}]}]").is_err());
    }

    #[test]
    fn no_rule_uses_the_default() {
        let r = Rules::parse(RULES).unwrap();
        assert_eq!(
            r.respond("", &[user("hello")]).text.as_deref(),
            Some("No rule for hello")
        );
    }

    #[test]
    fn bad_rules_are_explained() {
        assert!(
            Rules::parse("rules: [{match: '(', steps: [{reply: x}]}]")
                .unwrap_err()
                .contains("rules[0].match")
        );
        assert!(
            Rules::parse("rules: [{match: 'x', steps: []}]")
                .unwrap_err()
                .contains("at least one step")
        );
        assert!(Rules::parse("rulez: []").is_err());
    }
}
