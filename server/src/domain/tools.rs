//! The tools the agent can call, whatever serves them.
//!
//! The engine sees one [`ToolRouter`]: a flat list of tools (with the
//! `destructiveHint` that decides whether a call needs approval) and one
//! `call`. MCP servers implement it today (`mcp::CompositeClient`); A2A
//! sub-agents join the same list later, so the turn loop never cares where
//! a tool lives.

use crate::domain::BoxFuture;
use app::models::ToolDescription;
use serde_json::Value;
use std::time::Duration;

/// A tool as the engine knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// Calls need an operator's approval first.
    pub destructive: bool,
    /// `destructive` comes from the tool's annotations (or the config, for
    /// sub-agents), not from `unannotated_tools`: an approval it asks for
    /// records `annotation` rather than `unannotated`.
    pub hinted: bool,
    /// The MCP annotations as the server sent them (part of the pinned
    /// definition, POLICY.md §4); `None` for the engine's own tools.
    pub annotations: Option<Value>,
    /// SHA-256 of [`ToolInfo::definition`], computed once when the tool
    /// list is read (the pins compare it on every call); empty for the
    /// engine's own tools, which are not pinned.
    pub digest: String,
    /// The MCP server or sub-agent serving it.
    pub server: String,
    /// False while the server cannot be reached.
    pub available: bool,
}

impl ToolInfo {
    /// The definition a tool is pinned by (POLICY.md §4): what the model
    /// and the gate rely on.
    pub fn definition(&self) -> Value {
        serde_json::json!({
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": self.annotations,
        })
    }

    /// With [`ToolInfo::digest`] filled in.
    pub fn with_digest(mut self) -> ToolInfo {
        let canonical = crate::domain::digest::canonical(&self.definition());
        self.digest = crate::domain::digest::hex(&sha2::Digest::finalize(
            <sha2::Sha256 as sha2::Digest>::new_with_prefix(canonical.as_bytes()),
        ));
        self
    }

    pub fn describe(&self) -> ToolDescription {
        ToolDescription {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            destructive_hint: self.destructive,
            server: self.server.clone(),
            available: self.available,
            rules: Vec::new(),
            pin: None,
        }
    }
}

/// What a tool answered. `is_error` results go back to the model as
/// errors; they are not failures of the turn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    /// MCP 2026-07-28: the tool did not finish; it asks these questions
    /// and is to be called again with the answers (QUESTIONS.md §3).
    pub input_required: Option<InputRequired>,
}

impl ToolOutput {
    /// A finished call's text.
    pub fn text(text: impl Into<String>, is_error: bool) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error,
            input_required: None,
        }
    }
}

/// What a tool asks the human (an MCP elicitation), before the agent knows
/// which conversation it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct Ask {
    /// The key of the request in an MRTR round; `None` on a live session.
    pub key: Option<String>,
    pub kind: app::models::QuestionKind,
    pub message: String,
    /// `form`: the requested schema, as the server sent it.
    pub schema: Option<Value>,
    /// `url`: the page to visit.
    pub url: Option<String>,
    /// `url` on a live session: the server's id for it.
    pub elicitation_id: Option<String>,
}

/// The human's answer to an [`Ask`], as MCP's `ElicitResult` carries it.
#[derive(Clone, Debug, PartialEq)]
pub struct AskAnswer {
    /// `accept`, `decline` or `cancel`.
    pub action: String,
    pub content: Option<serde_json::Map<String, Value>>,
}

impl AskAnswer {
    /// The answer given on the human's behalf when nobody may be asked.
    pub fn decline() -> AskAnswer {
        AskAnswer {
            action: "decline".into(),
            content: None,
        }
    }

    /// The `ElicitResult` JSON.
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::json!({ "action": self.action });
        if let Some(c) = &self.content {
            v["content"] = Value::Object(c.clone());
        }
        v
    }
}

/// An MRTR round (MCP 2026-07-28): the questions, the responses the agent
/// gave by itself (a `roots/list`, a sampling request it does not serve),
/// and the server's opaque state, to be echoed verbatim on the retry.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequired {
    pub asks: Vec<Ask>,
    pub answered: serde_json::Map<String, Value>,
    pub state: Option<String>,
}

/// The retry of an MRTR round: every response by key, and the state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resume {
    pub responses: serde_json::Map<String, Value>,
    pub state: Option<String>,
}

/// Puts a question asked on a live session (MCP before 2026-07-28) in
/// front of a human and waits for the answer. The engine gives one to each
/// call it makes; the call's own timeout does not run while it waits.
pub trait Asker: Send + Sync {
    fn ask(&self, ask: Ask) -> BoxFuture<'_, AskAnswer>;
}

/// An [`Asker`] in a [`CallContext`].
#[derive(Clone)]
pub struct AskerRef(pub std::sync::Arc<dyn Asker>);

impl std::fmt::Debug for AskerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Asker")
    }
}

/// Per-call context: who asked, for forwarding identity to tool servers.
#[derive(Clone, Debug, Default)]
pub struct CallContext {
    /// The caller's `Authorization: Bearer` token, forwarded to HTTP servers
    /// that allow it; never logged or stored.
    pub bearer: Option<String>,
    pub session_id: String,
    /// How many agents this request has already passed through
    /// (`X-A2A-Hop-Count`); a sub-agent call sends one more.
    pub hops: u32,
    /// Who is calling (AUTH.md): recorded as who asked or decided.
    pub(crate) principal: crate::domain::principal::Principal,
    /// How the request came in (a decision's `decided_via`, an answer's
    /// `answered_via`); `rest` unless the edge says otherwise.
    pub(crate) via: crate::domain::channel::Channel,
    /// Headers configured for the sub-agent being called (`headers` on an
    /// `a2a` entry or node); an `Authorization` among them replaces the
    /// forwarded bearer.
    pub headers: Vec<(String, String)>,
    /// The id the client gave the message that starts this turn (A2A
    /// `messageId`), stored with it.
    pub message_id: Option<String>,
    /// Who answers a question the tool asks while it runs; `None`: it is
    /// declined on the human's behalf.
    pub asker: Option<AskerRef>,
    /// The answers this call is retried with (an MRTR round).
    pub resume: Option<Resume>,
    /// The signed receipt of the decision this call runs under
    /// (RECEIPTS.md §1), sent with it as `_meta["dev.stopgo/receipt"]`.
    pub(crate) receipt: Option<String>,
    /// The call's idempotency key (RECEIPTS.md §3), the same on every
    /// retry: `_meta["dev.stopgo/idempotency-key"]`.
    pub(crate) idempotency_key: Option<String>,
    /// The browser sign-in session the request came with, if any (a grant
    /// made in it ends with it).
    pub(crate) signin: Option<crate::domain::principal::SignIn>,
}

/// Why a call could not be made. The engine records the text in the
/// conversation as the tool's (error) result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool `{0}`")]
    Unknown(String),
    #[error("the tool server `{server}` is unavailable: {reason}")]
    Unavailable { server: String, reason: String },
    #[error("the tool `{tool}` did not answer within {} s", timeout.as_secs())]
    Timeout { tool: String, timeout: Duration },
    #[error("the tool `{tool}` failed: {message}")]
    Failed { tool: String, message: String },
    /// The result is over the size limit (`mcp::frames`), said as
    /// "the tool's result is N MB, over the M MB limit".
    #[error("the tool `{tool}` answered, but {message}")]
    ResultTooLarge { tool: String, message: String },
}

/// Lists and calls tools.
pub trait ToolRouter: Send + Sync {
    /// Every tool, in a stable order.
    fn tools(&self) -> Vec<ToolInfo>;

    /// Calls `name` with `args`.
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// The servers behind the tools and their health.
    fn servers(&self) -> Vec<ServerStatus> {
        Vec::new()
    }

    /// The servers a call cut by a crash may be retried on with its
    /// idempotency key (RECEIPTS.md §3).
    fn keyed_servers(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The health of one tool server, for `GET /tools`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub tools: usize,
    /// The MCP revision the server speaks with us (`2026-07-28`,
    /// `2025-11-25`…), once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

/// A router with no tools (an agent with no `mcp_servers`).
pub struct NoTools;

impl ToolRouter for NoTools {
    fn tools(&self) -> Vec<ToolInfo> {
        Vec::new()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        _args: Value,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Err(ToolError::Unknown(name.to_string())) })
    }
}
