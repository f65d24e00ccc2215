//! The typed API models shared by the server and the browser.
//!
//! These structs *are* the REST contract of DESIGN.md: the server serialises
//! them in its JSON responses and the hydrated UI deserialises the very same
//! types, so the two cannot drift apart. They compile for both the native
//! server and `wasm32`, which is why they hold only plain data (timestamps
//! are RFC 3339 strings, not a clock type the browser would have to ship).

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod conversation_status;
mod event;
mod grant;
mod question;
pub use conversation_status::ConversationStatus;
pub use event::{Event, EventKind};
pub use grant::{Grant, GrantList, GrantRequest};
pub use question::{
    AnswerQuestion, Question, QuestionCall, QuestionKind, QuestionPage, QuestionStatus,
};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    Tool,
    System,
}

impl Role {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
        }
    }

    /// Parses the wire name; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        [Role::User, Role::Assistant, Role::Tool, Role::System]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// A tool invocation recorded on a message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
    /// The MCP server or sub-agent that serves the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// How long the tool ran, once it has finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The approval this call needed, if it needed one (with its outcome).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalOutcome>,
}

/// An approval as its tool call shows it: where it stands, who asked, and
/// who decided how and when (AUTH.md §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ApprovalOutcome {
    pub uuid: String,
    pub status: ApprovalStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The principal whose request raised it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// The deciding principal's name (`anonymous` in auth mode none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// `rest`, `ui`, `a2a` or `link`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_via: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    /// The arguments the tool ran with when an approver edited the model's
    /// (POLICY.md §3); the call's `arguments` stay the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_arguments: Option<Value>,
}

/// One entry of a conversation's timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct Message {
    pub id: String,
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<ToolCall>,
    /// The orchestration node that wrote it (pipelines only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The id its client gave a user's message (A2A `messageId`), shown
    /// back in the task's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    pub created_at: String,
}

/// A destructive action waiting for an operator's decision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct PendingApproval {
    pub uuid: String,
    pub conversation_id: String,
    pub tool_name: String,
    pub tool_args: Value,
    pub description: String,
    /// The MCP server (or sub-agent) that would run the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_agent_name: Option<String>,
    /// The agents the approval came through, nearest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<Vec<String>>,
    pub created_at: String,
    /// The principal whose request raised it (AUTH.md §5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// Set once decided: the principal's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// `rest`, `ui`, `a2a` or `link`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_via: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    /// What asked for it (POLICY.md §1): the name of an `approvals:` rule,
    /// `annotation` (the tool's `destructiveHint`), `unannotated`
    /// (`unannotated_tools: approve`) or `proxy` (a sub-agent asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Who may decide it (`role:approver`, names) when a rule says; empty:
    /// any approver.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
    /// How many distinct principals must approve (POLICY.md §2); absent
    /// (or 0) means one.
    #[serde(default, skip_serializing_if = "at_most_one")]
    pub quorum: u32,
    /// The votes so far, with a quorum above one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<Vote>,
    /// When it expires if nobody decides (POLICY.md §2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The first expiry added `escalate_to` and restarted the clock.
    #[serde(default, skip_serializing_if = "is_false")]
    pub escalated: bool,
    /// The arguments as an approver edited them (POLICY.md §3); the tool
    /// runs with these, `tool_args` stay the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_args: Option<Value>,
    /// Who edited them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_by: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl PendingApproval {
    /// The approvals it needs (at least one).
    pub fn needed(&self) -> usize {
        self.quorum.max(1) as usize
    }

    /// The approving votes so far.
    pub fn approvals(&self) -> usize {
        self.votes.iter().filter(|v| v.approve).count()
    }
}

fn at_most_one(q: &u32) -> bool {
    *q <= 1
}

/// One vote on an approval with a quorum.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct Vote {
    /// The principal's name; in auth mode `none`, `session:<id>` (a quorum
    /// then counts distinct sessions).
    pub by: String,
    pub approve: bool,
    pub at: String,
    /// `rest`, `ui`, `a2a` or `link`.
    pub via: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A conversation with its whole timeline (`C` in DESIGN.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct Conversation {
    pub id: String,
    pub session_id: String,
    pub status: ConversationStatus,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_approval: Option<PendingApproval>,
    /// The question a tool asked that this conversation waits on
    /// (`waiting_input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_question: Option<Question>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_state: Option<Value>,
    /// The A2A context id, when an A2A client chose one (else the id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// A turn is running (on this replica or another): the server's view
    /// of A2A task states; not part of the REST shape.
    #[serde(skip)]
    pub running: bool,
}

/// The outcome of one turn (`R` in DESIGN.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ProcessResult {
    pub response: String,
    pub waiting_approval: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<PendingApproval>,
    /// A tool asked the human something and the turn waits for the answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waiting_input: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<Question>,
}

/// Counts over all stored conversations, independent of paging and filters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct Summary {
    pub total: u64,
    pub active: u64,
    pub waiting_approval: u64,
    #[serde(default)]
    pub waiting_input: u64,
    pub completed: u64,
    #[serde(default)]
    pub failed: u64,
    #[serde(default)]
    pub cancelled: u64,
}

/// `GET /conversations`: one page, newest first, plus the summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ConversationList {
    pub conversations: Vec<ConversationItem>,
    pub summary: Summary,
    /// Pass as `?cursor=` to fetch the next (older) page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `GET /conversations?view=full`: the same page with whole conversations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct FullConversationList {
    pub conversations: Vec<Conversation>,
    pub summary: Summary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// How many characters of a message a list item carries.
pub const PREVIEW_CHARS: usize = 200;

/// One conversation in a list (`S` in DESIGN.md): what a list shows,
/// never the history, so a page costs the same however long its
/// conversations are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ConversationItem {
    pub id: String,
    pub session_id: String,
    pub status: ConversationStatus,
    pub created_at: String,
    pub updated_at: String,
    pub message_count: u64,
    /// The newest message with text (first [`PREVIEW_CHARS`] characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message: Option<MessagePreview>,
    /// The first user message (first [`PREVIEW_CHARS`] characters): what
    /// the conversation is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_approval: Option<PendingApproval>,
    /// The A2A context id, when an A2A client chose one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Whether the conversation ran the orchestration pipeline.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub has_pipeline_run: bool,
}

/// The start of one message: its role and first characters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct MessagePreview {
    pub role: Role,
    pub content: String,
}

/// `{"conversation": C}` and `{"conversation": C, "result": R}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ConversationResponse {
    pub conversation: Conversation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ProcessResult>,
}

/// `POST /conversations` body; the message is optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateConversation {
    #[serde(default)]
    pub message: Option<String>,
}

/// Query of `GET /conversations`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ListQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Only conversations with a message containing this text (any case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    /// `summary` (the default) or `full`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
}

/// The body of every error response: what is wrong and how to fix it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ErrorBody {
    pub error: String,
}

/// Where an approval stands (DESIGN.md §3). `pending → approved → executing
/// → executed | failed`, `pending → rejected`; `in_doubt` when the agent
/// stopped while the tool ran (it is never re-run); `cancelled` when the
/// task was cancelled before a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Executing,
    Executed,
    Failed,
    Rejected,
    InDoubt,
    Cancelled,
    /// Nobody decided in time (POLICY.md §2): the call never runs and the
    /// model is told; never recorded as a rejection.
    Expired,
}

impl ApprovalStatus {
    pub const ALL: [ApprovalStatus; 9] = [
        ApprovalStatus::Pending,
        ApprovalStatus::Approved,
        ApprovalStatus::Executing,
        ApprovalStatus::Executed,
        ApprovalStatus::Failed,
        ApprovalStatus::Rejected,
        ApprovalStatus::InDoubt,
        ApprovalStatus::Cancelled,
        ApprovalStatus::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Executing => "executing",
            ApprovalStatus::Executed => "executed",
            ApprovalStatus::Failed => "failed",
            ApprovalStatus::Rejected => "rejected",
            ApprovalStatus::InDoubt => "in_doubt",
            ApprovalStatus::Cancelled => "cancelled",
            ApprovalStatus::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// A tool as `GET /tools` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ToolDescription {
    pub name: String,
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    #[serde(rename = "destructiveHint")]
    pub destructive_hint: bool,
    pub server: String,
    /// False while the tool's server cannot be reached.
    #[serde(default = "yes")]
    pub available: bool,
    /// The effective rule list (POLICY.md §1): the `approvals:` rules that
    /// may decide its calls, in order, then what decides when none matches
    /// (`annotation` or `unannotated`). Empty from older servers.
    #[serde(default)]
    pub rules: Vec<ToolRule>,
    /// Its pinned definition (POLICY.md §4), for MCP tools; its pinned
    /// Agent Card, for a sub-agent whose signing key is pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<ToolPin>,
}

/// A tool's pin: `pinned` (as first seen or last accepted) or `changed`
/// (the server presents another definition; held until an admin accepts).
/// For a sub-agent whose signing key is pinned (`a2a[].trust`), its Agent
/// Card: `pinned` (the card last trusted) or `held` (its card cannot be
/// trusted; held until it verifies again or an admin accepts it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ToolPin {
    pub status: String,
    pub pinned_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<String>,
    /// What changed, one line per JSON pointer of the definition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
    /// destructiveHint went from true to false (always held).
    #[serde(default)]
    pub downgrade: bool,
    /// A sub-agent's card held (`status: held`): why it cannot be trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The admin who accepted the pinned card, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_by: Option<String>,
    /// The digest of what waits for an admin (`changed` or `held`): send
    /// it back with the accept, so only what was looked at is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// One entry of a tool's effective rule list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ToolRule {
    /// The rule's name, or `annotation` / `unannotated` for the fallback.
    pub name: String,
    /// `allow`, `approve` or `deny`.
    pub action: String,
    /// It decides only calls whose arguments satisfy its `when:`.
    #[serde(default)]
    pub conditional: bool,
}

fn yes() -> bool {
    true
}

/// `GET /tools`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ToolList {
    pub tools: Vec<ToolDescription>,
}

/// One notification in the outbox (POLICY.md §5): one event for one
/// target, delivered at least once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct Delivery {
    /// The idempotency key (`X-StopGo-Delivery`, the body's `id`).
    pub id: String,
    /// The `notifications.targets` entry it goes to.
    pub target: String,
    /// `approval.requested`, `approval.reminder`, ...
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_uuid: Option<String>,
    /// `pending` (waiting for its next attempt), `delivered`, `dead`
    /// (retries gave up) or `skipped` (a reminder whose approval was
    /// decided first).
    pub status: String,
    pub attempts: u32,
    /// When the next attempt is due (pending only).
    pub next_at: String,
    pub created_at: String,
    pub updated_at: String,
    /// What the last failed attempt got (a status code, a timeout...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<String>,
}

/// `GET /notifications`: the newest deliveries and the count per status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct DeliveryList {
    pub deliveries: Vec<Delivery>,
    /// `pending`, `delivered`, `dead`, `skipped` → how many.
    pub counts: std::collections::BTreeMap<String, u64>,
}

/// `GET /links/:token`: what a signed link from a notification opens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct LinkView {
    /// `approve`, `reject` or `open`.
    pub action: String,
    /// `valid`, `used`, `expired` or `decided` (the approval left pending).
    pub state: String,
    /// Why the link cannot be used, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub approval: PendingApproval,
    /// The approval's status.
    pub status: ApprovalStatus,
}

/// `GET /health`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct Health {
    pub status: String,
    /// Set when the configured LLM cannot be used (e.g. a missing API key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<String>,
}

/// `GET /agent`: who this agent is and which model it runs, for the UI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct AgentInfo {
    pub name: String,
    pub description: String,
    /// The model in use, e.g. `openai:gpt-4o` or `scripted:config/demo-rules.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Why the model cannot be used, if it cannot (e.g. a missing API key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_problem: Option<String>,
    /// Where the agent serves MCP (`/mcp`), when it does (CLIENTS.md §1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_endpoint: Option<String>,
}

impl AgentInfo {
    /// True when the model is the in-process scripted one (a demo or a test).
    pub fn is_scripted(&self) -> bool {
        self.model
            .as_deref()
            .is_some_and(|m| m.starts_with("scripted:"))
    }
}

/// `GET /auth/me`: who the caller is, as the UI shows it, and what it may
/// offer them. The server answers it and also hands it to the page
/// renderer, so the first HTML already shows the right header and buttons.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct Viewer {
    /// The auth mode: `none`, `tokens`, `oidc` or `proxy`.
    pub mode: String,
    /// A known principal (not `anonymous`) in a mode that enforces.
    pub signed_in: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub roles: Vec<String>,
    /// Holds the approver or admin role (before separation of duties,
    /// which depends on the approval).
    pub can_decide: bool,
    /// Nobody decides an approval their own request raised (admins may).
    #[serde(default)]
    pub separation_of_duties: bool,
    /// A warning every page shows (mode `none` on a non-loopback host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The token this browser's forms carry, so a decision posts as a plain
    /// HTML form before (or without) the WebAssembly (REACH.md §1). Bound
    /// to this browser's session or form cookie; absent for API clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form_token: Option<String>,
}

impl Viewer {
    /// Whether one of a rule's `approvers` (`role:<role>` or a name) is
    /// this viewer; an admin holds every role.
    pub fn named_in(&self, approvers: &[String]) -> bool {
        let admin = self.roles.iter().any(|r| r == "admin");
        approvers.iter().any(|a| match a.strip_prefix("role:") {
            // As the server's `Roles::allow`: admin holds every role, any
            // role implies viewer.
            Some(role) => {
                admin
                    || self.roles.iter().any(|r| r == role)
                    || (role == "viewer" && !self.roles.is_empty())
            }
            None => self.name.as_deref() == Some(a.as_str()),
        })
    }

    /// Why this viewer may not decide `approval` (the server refuses it
    /// too), or `None` when they may.
    pub fn refusal(&self, approval: &PendingApproval) -> Option<String> {
        if self.mode == "none" || self.mode.is_empty() {
            return None;
        }
        let who = self.name.as_deref().unwrap_or("anonymous");
        if !self.can_decide {
            let had = if self.roles.is_empty() {
                "no role".to_string()
            } else {
                self.roles.join(", ")
            };
            return Some(format!(
                "You ({who}) cannot decide: that needs the approver or admin role, and you have {had}."
            ));
        }
        if !approval.approvers.is_empty() && !self.named_in(&approval.approvers) {
            return Some(format!(
                "You ({who}) cannot decide this one: the rule `{}` lets {} decide it.",
                approval.rule.as_deref().unwrap_or("?"),
                approval.approvers.join(", ")
            ));
        }
        if let Some(name) = &self.name
            && approval.votes.iter().any(|v| &v.by == name)
        {
            return Some(format!(
                "You have voted on this one: {} more approver(s) must.",
                approval.needed().saturating_sub(approval.approvals())
            ));
        }
        let own = self.separation_of_duties
            && self.name.is_some()
            && approval.requested_by.as_deref() == self.name.as_deref();
        let admin = self.roles.iter().any(|r| r == "admin");
        (own && !admin).then(|| {
            "You asked for this action, so someone else must decide it (separation of duties)."
                .to_string()
        })
    }
}

/// `POST /conversations/:id/messages` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct SendMessage {
    pub message: String,
}

/// `POST /approvals/:uuid` body, as the UI sends it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ApprovalDecision {
    pub approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Approve with these arguments instead of the model's (POLICY.md §3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Approve, and let later identical calls run without asking for a
    /// while (REACH.md §3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<GrantRequest>,
}

/// `GET /approvals/:uuid`: one approval in whatever state it is, with the
/// signed receipt of the call it let through (RECEIPTS.md §1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ApprovalRecord {
    pub approval: PendingApproval,
    pub status: ApprovalStatus,
    /// A rejection's, cancellation's or resolution's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The receipt as the executor got it: a compact JWS
    /// (`typ: stopgo-receipt+jwt`), verifiable with `/.well-known/jwks.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<String>,
    /// The receipt's claims, decoded for reading (verify the JWS to trust
    /// them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_claims: Option<Value>,
}

/// `POST /approvals/:uuid/resolve`: what a person found of a call left
/// `in_doubt` (RECEIPTS.md §3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ResolveInDoubt {
    /// `executed` (it ran), `failed` (it did not) or `retry` (send it
    /// again with its idempotency key; only where the server honours keys).
    pub outcome: String,
    /// Why, for the audit trail and the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `GET /approvals`: a page of the approvals waiting for a decision,
/// oldest first, and how many wait in all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ApprovalList {
    pub approvals: Vec<PendingApproval>,
    /// Every approval waiting for a decision, on this page or not.
    #[serde(default)]
    pub total: u64,
    /// Pass as `?cursor=` to fetch the next (newer) page; absent on the
    /// last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Query of `GET /approvals`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ApprovalQuery {
    /// Approvals per page (0: only the total).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The `next_cursor` of the page before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversation_serialises_in_the_contract_shape() {
        let c = Conversation {
            running: false,
            id: "c1".into(),
            session_id: "abcd1234".into(),
            status: ConversationStatus::WaitingApproval,
            messages: vec![Message {
                id: "m1".into(),
                client_id: None,
                role: Role::Tool,
                content: "ok".into(),
                tool_call: Some(ToolCall {
                    name: "resources_add".into(),
                    arguments: serde_json::json!({"name": "a", "value": 1}),
                    server: None,
                    ..Default::default()
                }),
                node: None,
                created_at: "2026-01-01T00:00:00.000Z".into(),
            }],
            pending_approval: None,
            pending_question: None,
            pipeline_state: None,
            context_id: None,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            updated_at: "2026-01-01T00:00:00.000Z".into(),
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["status"], "waiting_approval");
        assert_eq!(v["messages"][0]["role"], "tool");
        assert_eq!(v["messages"][0]["tool_call"]["arguments"]["value"], 1);
        assert!(v["messages"][0]["tool_call"].get("result").is_none());
        assert!(v.get("pending_approval").is_none());
        let back: Conversation = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn status_wire_names_round_trip() {
        for st in ConversationStatus::ALL {
            assert_eq!(ConversationStatus::parse(st.as_str()), Some(st));
            let json = serde_json::to_string(&st).unwrap();
            assert_eq!(json, format!("\"{}\"", st.as_str()));
        }
        assert_eq!(ConversationStatus::parse("done"), None);
    }

    #[test]
    fn create_conversation_rejects_unknown_fields() {
        let err = serde_json::from_str::<CreateConversation>(r#"{"mesage":"hi"}"#).unwrap_err();
        assert!(err.to_string().contains("mesage"), "{err}");
        let ok: CreateConversation = serde_json::from_str("{}").unwrap();
        assert_eq!(ok.message, None);
    }
}
