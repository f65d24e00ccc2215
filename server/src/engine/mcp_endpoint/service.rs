//! The agent as an MCP tool, below the HTTP edge (CLIENTS.md §1, §2): a
//! call runs a turn, a pause comes back as a question for this caller or
//! as a page to pass on, and the caller's answer decides through the same
//! engine commands as REST (`decided_via: mcp`). `http/mcp` only speaks
//! the protocol around it.
//!
//! Key decisions: the caller is asked only what it may decide alone (its
//! roles, separation of duties, the rule's approvers, a quorum's last
//! vote); everyone else gets the waiting result and the page, so an MCP
//! client never becomes a way around the policy. A round's state is
//! sealed here and its nonce spent in the decision's transaction, so a
//! replay decides nothing, on any replica.

use super::reply::{Abilities, McpReply, Pause, Response};
use super::round_state::{BadState, RoundState, Sealer, WaitsOn};
use crate::domain::tools::CallContext;
use crate::engine::Answer;
use crate::engine::DecisionRequest;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use app::models::{Conversation, ConversationStatus, QuestionKind, Role as MessageRole};

/// The reason a declined or cancelled elicitation rejects with.
pub(crate) const DECLINED: &str = "declined in the MCP client";

/// One call of the agent's tool.
#[derive(Clone, Debug, Default)]
pub(crate) struct McpCall {
    pub(crate) message: String,
    pub(crate) conversation_id: Option<String>,
}

/// The agent's MCP tool: the engine and the key rounds are sealed with.
#[derive(Clone)]
pub(crate) struct McpEndpoint {
    engine: Engine,
    sealer: Sealer,
}

impl McpEndpoint {
    pub(crate) fn new(engine: Engine, key: &[u8]) -> McpEndpoint {
        McpEndpoint {
            engine,
            sealer: Sealer::new(key),
        }
    }

    /// Runs the call: a new conversation, or a message to one the caller
    /// may continue; an empty message with a `conversation_id` reads the
    /// conversation as it stands (a turn running on waits, up to a bound).
    pub(crate) async fn call(
        &self,
        call: McpCall,
        ctx: CallContext,
        can: Abilities,
    ) -> Result<McpReply, EngineError> {
        let message = call.message.trim().to_string();
        let Some(id) = call.conversation_id.filter(|c| !c.is_empty()) else {
            if message.is_empty() {
                return Err(EngineError::Invalid(
                    "`message` must not be empty: say what the agent should do, or pass the conversation_id of a conversation to continue".into(),
                ));
            }
            let (_, reply) = self
                .engine
                .start_conversation(Some(message), ctx.clone())
                .await?;
            let c = reply
                .map(|r| r.conversation)
                .ok_or_else(|| EngineError::Task("the first turn gave no conversation".into()))?;
            return Ok(self.reply_of(c, &ctx, can));
        };
        self.engine.may_continue(&id, &ctx).await?;
        if message.is_empty() {
            let c = self.engine.settled(&id).await?;
            return Ok(self.reply_of(c, &ctx, can));
        }
        match self.engine.send_message(&id, message, ctx.clone()).await {
            Ok(r) => Ok(self.reply_of(r.conversation, &ctx, can)),
            // The message waits behind a decision: say what waits (and ask
            // this caller, if it may decide) instead of refusing.
            Err(EngineError::WaitingApproval { .. } | EngineError::WaitingInput { .. }) => {
                let c = crate::engine::commands::load(self.engine.store(), &id).await?;
                Ok(self.reply_of(c, &ctx, can))
            }
            Err(e) => Err(e),
        }
    }

    /// A 2026-07-28 retry: opens the round's state (forged, altered,
    /// expired, someone else's or replayed: refused, nothing decided),
    /// then answers what it waits on.
    pub(crate) async fn resume(
        &self,
        state: &str,
        responses: &std::collections::BTreeMap<String, serde_json::Value>,
        ctx: CallContext,
        can: Abilities,
    ) -> Result<McpReply, RoundError> {
        let now = chrono::Utc::now().timestamp();
        let round = self.sealer.open(state, &ctx.principal.name, now)?;
        let response = match responses.get(&round.waits_on.key()) {
            None => None,
            Some(v) => Some(response_of(v)?),
        };
        let once = format!("mcp:{}", round.nonce);
        if self
            .engine
            .store()
            .link_used(&once)
            .await
            .map_err(EngineError::from)?
        {
            return Err(RoundError::Replayed);
        }
        let Some(response) = response else {
            // No answer for the key: the same wait, asked again.
            let c =
                crate::engine::commands::load(self.engine.store(), &round.conversation_id).await?;
            return Ok(self.reply_of(c, &ctx, can));
        };
        Ok(self.respond(&round, response, Some(once), ctx, can).await?)
    }

    /// Answers what `round` waits on with the client's `response` (a
    /// 2025-11-25 session's elicitation passes no `once`): a decision or
    /// an answer through the engine's one command, then the call goes on.
    /// Decided elsewhere meanwhile: the conversation as it stands.
    pub(crate) async fn respond(
        &self,
        round: &RoundState,
        response: Response,
        once: Option<String>,
        mut ctx: CallContext,
        can: Abilities,
    ) -> Result<McpReply, EngineError> {
        ctx.via = crate::domain::channel::Channel::Mcp;
        let done = match &round.waits_on {
            WaitsOn::Approval(uuid) => {
                let decision = decision_of(&response)?;
                self.engine
                    .decide_once(uuid, decision, ctx.clone(), once)
                    .await
            }
            WaitsOn::Question(uuid) => {
                let answer = Answer {
                    action: response.action.clone(),
                    content: response.content.clone(),
                };
                self.engine.answer(uuid, answer, ctx.clone()).await
            }
        };
        match done {
            Ok(reply) => Ok(self.reply_of(reply.conversation, &ctx, can)),
            Err(EngineError::AlreadyDecided { .. } | EngineError::AlreadyAnswered { .. }) => {
                let c = self.engine.settled(&round.conversation_id).await?;
                Ok(self.reply_of(c, &ctx, can))
            }
            Err(e) => Err(e),
        }
    }

    pub(super) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The round a 2025-11-25 session asks without a state of its own.
    pub(crate) fn round_of(
        &self,
        conversation_id: &str,
        on: &Pause,
        ctx: &CallContext,
    ) -> RoundState {
        RoundState {
            conversation_id: conversation_id.to_string(),
            waits_on: on.waits_on(),
            principal: ctx.principal.name.clone(),
            expires: i64::MAX,
            nonce: String::new(),
        }
    }

    /// What the caller sees of `c`: asked, if it waits on what this caller
    /// may settle and the client can show it; else the waiting result;
    /// else the last answer.
    pub(super) fn reply_of(&self, c: Conversation, ctx: &CallContext, can: Abilities) -> McpReply {
        let pause = match (c.pending_approval, c.pending_question) {
            (Some(a), _) if c.status == ConversationStatus::WaitingApproval => {
                Some(Pause::Approval(Box::new(a)))
            }
            (_, Some(q)) if c.status == ConversationStatus::WaitingInput => {
                Some(Pause::Question(Box::new(q)))
            }
            _ => None,
        };
        let Some(on) = pause else {
            let response = c
                .messages
                .iter()
                .rev()
                .find(|m| m.role == MessageRole::Assistant)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            return McpReply::Ended {
                conversation_id: c.id,
                status: if c.running {
                    ConversationStatus::Active
                } else {
                    c.status
                },
                response,
            };
        };
        match self.asks(&on, ctx, can) {
            Some(form) => {
                let now = chrono::Utc::now().timestamp();
                let state = self
                    .sealer
                    .seal(&c.id, on.waits_on(), &ctx.principal.name, now);
                McpReply::Ask {
                    conversation_id: c.id,
                    on,
                    form,
                    state,
                }
            }
            None => McpReply::Waiting {
                conversation_id: c.id,
                on,
            },
        }
    }

    /// Whether to ask this caller, and how (`true`: a form, `false`: the
    /// page as a URL); `None`: the waiting result.
    fn asks(&self, on: &Pause, ctx: &CallContext, can: Abilities) -> Option<bool> {
        if !can.any() {
            return None;
        }
        match on {
            Pause::Approval(a) => self.engine.may_decide_alone(a, ctx).then_some(can.form),
            Pause::Question(q) => {
                if !self.engine.may_answer(q, &ctx.principal) {
                    return None;
                }
                match q.kind {
                    QuestionKind::Form if can.form => Some(true),
                    QuestionKind::Url if can.url => Some(false),
                    _ => None,
                }
            }
        }
    }
}

/// Why a 2026-07-28 retry was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RoundError {
    #[error(transparent)]
    State(#[from] BadState),
    #[error("requestState was used already: each round is answered once")]
    Replayed,
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// A client's `ElicitResult` for one key.
pub(super) fn response_of(v: &serde_json::Value) -> Result<Response, EngineError> {
    let action = v.get("action").and_then(|a| a.as_str()).ok_or_else(|| {
        EngineError::Invalid(
            "each of inputResponses is an elicitation result: {\"action\": \"accept\" | \"decline\" | \"cancel\", \"content\"?: {...}}".into(),
        )
    })?;
    let content = match v.get("content") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Object(m)) => Some(m.clone()),
        Some(_) => {
            return Err(EngineError::Invalid(
                "an elicitation result's content is an object".into(),
            ));
        }
    };
    Ok(Response {
        action: action.to_string(),
        content,
    })
}

/// The decision an approval's elicitation came back with.
fn decision_of(r: &Response) -> Result<DecisionRequest, EngineError> {
    let reject = |reason: String| DecisionRequest {
        approve: false,
        reason: Some(reason),
        arguments: None,
        grant: None,
        upstream_receipt: None,
    };
    match r.action.as_str() {
        "decline" | "cancel" => Ok(reject(DECLINED.to_string())),
        "accept" => {
            let content = r.content.clone().unwrap_or_default();
            let reason = content
                .get("reason")
                .and_then(|v| v.as_str())
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string);
            match content.get("decision").and_then(|v| v.as_str()) {
                Some("approve") => Ok(DecisionRequest {
                    approve: true,
                    reason,
                    arguments: None,
                    grant: None,
                    upstream_receipt: None,
                }),
                Some("reject") => Ok(reject(
                    reason.unwrap_or_else(|| "rejected in the MCP client".into()),
                )),
                _ => Err(EngineError::Invalid(
                    "the approval's answer needs `decision`: \"approve\" or \"reject\"".into(),
                )),
            }
        }
        other => Err(EngineError::Invalid(format!(
            "unknown elicitation action {other:?}: use accept, decline or cancel"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn accept(content: serde_json::Value) -> Response {
        Response {
            action: "accept".into(),
            content: content.as_object().cloned(),
        }
    }

    #[test]
    fn an_elicitation_answer_becomes_a_decision() {
        let d = decision_of(&accept(json!({"decision": "approve"}))).unwrap();
        assert!(d.approve && d.reason.is_none());
        let d = decision_of(&accept(json!({"decision": "reject", "reason": " no "}))).unwrap();
        assert!(!d.approve);
        assert_eq!(d.reason.as_deref(), Some("no"));
        for action in ["decline", "cancel"] {
            let d = decision_of(&Response {
                action: action.into(),
                content: None,
            })
            .unwrap();
            assert!(!d.approve);
            assert_eq!(d.reason.as_deref(), Some(DECLINED));
        }
        assert!(decision_of(&accept(json!({"decision": "maybe"}))).is_err());
        assert!(decision_of(&accept(json!({}))).is_err());
        assert!(
            decision_of(&Response {
                action: "shrug".into(),
                content: None
            })
            .is_err()
        );
    }
}
