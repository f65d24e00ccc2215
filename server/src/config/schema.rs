//! The agent.yaml schema (DESIGN.md, "agent.yaml (contract)") with its defaults.
//!
//! Every struct denies unknown keys: a misspelt key silently ignored is a
//! setting the user believes is on. Every field has a default, so an empty
//! file is a working config. Secrets have no field here at all; they come from
//! the environment (see `expand`).

use crate::policy::config::UnannotatedTools;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The whole agent.yaml.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The agent's name (agent card, logs, UI).
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// System prompt in simple mode.
    #[serde(default = "default_prompt")]
    pub prompt: String,
    #[serde(default = "default_host")]
    pub host: String,
    /// 0 picks a free port (announced in the log).
    #[serde(default = "default_port")]
    pub port: u16,
    /// Where `agent.db` lives; relative paths are relative to the working directory.
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// The public base URL (agent card); derived from the request's Host when absent.
    #[serde(default)]
    pub public_url: Option<String>,
    #[serde(default)]
    pub a2a_card: A2aCardMode,
    /// Sign the agent card (A2A 1.0 §8.4): a JWS in its `signatures`.
    #[serde(default)]
    pub a2a_card_signing: Option<CardSigningConfig>,
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    #[serde(default)]
    pub llm: LlmConfig,
    #[serde(default)]
    pub unannotated_tools: UnannotatedTools,
    #[serde(default)]
    pub mcp_servers: Vec<McpServerConfig>,
    /// The seed's single-server form; becomes an `mcp_servers` entry named `mcp`.
    #[serde(default)]
    pub mcp: Option<LegacyMcp>,
    /// Sub-agents offered to the LLM as `a2a_<name>` tools (simple mode).
    #[serde(default)]
    pub a2a: Vec<A2aAgentConfig>,
    #[serde(default = "default_a2a_max_hops")]
    pub a2a_max_hops: u32,
    /// Let A2A push notifications go to loopback, private and link-local
    /// addresses (off: a task cannot make the agent call internal services).
    #[serde(default)]
    pub a2a_push_allow_private: bool,
    /// A2A extensions the card declares (`capabilities.extensions`); a
    /// message that does not activate a `required` one is refused.
    #[serde(default)]
    pub a2a_extensions: Vec<A2aExtensionConfig>,
    /// The orchestration tree; absent means simple mode.
    #[serde(default)]
    pub agent: Option<NodeConfig>,
    /// Who may call the agent (AUTH.md).
    #[serde(default)]
    pub auth: super::auth::AuthConfig,
    /// The audit trail's options.
    #[serde(default)]
    pub audit: super::auth::AuditConfig,
    /// Where durable state lives (REPLICAS.md).
    #[serde(default)]
    pub store: super::store::StoreConfig,
    /// Approval rules (POLICY.md §1).
    #[serde(default)]
    pub approvals: crate::policy::config::ApprovalsConfig,
    /// Who is told that an approval waits (POLICY.md §5).
    #[serde(default)]
    pub notifications: super::notifications::NotificationsConfig,
    /// Questions tools ask the human (QUESTIONS.md §2).
    #[serde(default)]
    pub questions: QuestionsConfig,
    /// The agent as an MCP server at `POST /mcp` (CLIENTS.md §1).
    #[serde(default)]
    pub mcp_endpoint: McpEndpointConfig,
    /// Signed approval receipts (RECEIPTS.md §1); absent: none are made.
    #[serde(default)]
    pub receipts: Option<ReceiptsConfig>,
    /// SHA-256 of the file as written (with `${VAR}` references, so no
    /// secret): `config.loaded` in the audit trail records it.
    #[serde(skip)]
    pub source_digest: String,
    /// base64url SHA-256 of the JCS form of the `approvals:` section (a
    /// receipt's `policy.sha256`).
    #[serde(skip)]
    pub approvals_sha256: String,
}

/// `receipts:`: the key every call let through after a decision is
/// signed with (RECEIPTS.md §1).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptsConfig {
    /// A PKCS#8 PEM file (P-256 for ES256, Ed25519 for EdDSA), relative
    /// to the config's folder; `a2a_card_signing`'s key may serve.
    pub signing_key: PathBuf,
    /// The key's id in each receipt and in `/.well-known/jwks.json`;
    /// absent: its RFC 7638 thumbprint.
    #[serde(default)]
    pub kid: Option<String>,
    /// How long after the decision a receipt is good for (`10m`).
    #[serde(default = "default_receipt_ttl")]
    pub ttl: String,
}

fn default_receipt_ttl() -> String {
    "10m".into()
}

/// `mcp_endpoint:`: on unless `enabled: false`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpEndpointConfig {
    #[serde(default = "default_true")]
    pub enabled: bool,
}

impl Default for McpEndpointConfig {
    fn default() -> Self {
        McpEndpointConfig { enabled: true }
    }
}

/// `llm:`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    #[serde(default = "default_model")]
    pub model: String,
    /// Most LLM calls in one turn before it stops with an error.
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    /// `max_tokens` for providers that require it (Anthropic).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Per-request timeout of model calls, in seconds.
    #[serde(default = "default_llm_timeout")]
    pub timeout_seconds: u64,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            model: default_model(),
            max_steps: default_max_steps(),
            max_tokens: default_max_tokens(),
            timeout_seconds: default_llm_timeout(),
        }
    }
}

/// Which agent card to serve.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum A2aCardMode {
    /// 1.0 card plus the 0.3 top-level fields.
    #[default]
    Dual,
    /// Pure 1.0 card.
    V1,
}

/// One MCP server: either `url` (Streamable HTTP) or `command` (stdio).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    pub name: String,
    #[serde(default)]
    pub url: Option<String>,
    /// Extra HTTP headers (values may use `${VAR}`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Forward the caller's `Authorization: Bearer` (HTTP servers only).
    #[serde(default = "default_true")]
    pub forward_auth: bool,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// What a question the server's tools ask (MCP elicitation) does:
    /// reach a human (`ask`, the default) or be declined at once.
    #[serde(default)]
    pub on_question: OnQuestion,
    /// How long its questions wait (`questions.expires_in` when absent).
    #[serde(default)]
    pub question_expires_in: Option<String>,
    /// How the agent signs in to an OAuth-protected HTTP server.
    #[serde(default)]
    pub auth: Option<McpAuth>,
    /// The server honours idempotency keys (RECEIPTS.md §3): a call cut
    /// by a crash is retried once with its key instead of left in doubt.
    /// Servers that declare `experimental["dev.stopgo/idempotency"]` need
    /// not be told.
    #[serde(default)]
    pub idempotent: bool,
}

/// `mcp_servers[].auth` (QUESTIONS.md §1): OAuth 2.0 client credentials.
/// The secret goes only where the operator said: `token_url` (posted
/// there, whatever the MCP server answers) or `issuer` (the MCP server's
/// first 401 must name that authorization server in its RFC 9728 protected
/// resource metadata; the token endpoint comes from the issuer's own RFC
/// 8414 / OpenID metadata). One of the two is required.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpAuth {
    ClientCredentials {
        client_id: String,
        client_secret: super::auth::Secret,
        #[serde(default)]
        scopes: Vec<String>,
        #[serde(default)]
        token_url: Option<String>,
        #[serde(default)]
        issuer: Option<String>,
    },
}

/// `mcp_servers[].on_question` (QUESTIONS.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnQuestion {
    #[default]
    Ask,
    Decline,
}

/// `questions:` (QUESTIONS.md §2).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionsConfig {
    /// How long a question waits for its answer (`1h` when absent).
    #[serde(default)]
    pub expires_in: Option<String>,
}

impl QuestionsConfig {
    /// The default lifetime of a question.
    pub const DEFAULT: std::time::Duration = std::time::Duration::from_secs(3600);

    /// How long a question of `server` waits (validated at load).
    pub fn lifetime(&self, server: Option<&McpServerConfig>) -> std::time::Duration {
        server
            .and_then(|s| s.question_expires_in.as_deref())
            .or(self.expires_in.as_deref())
            .and_then(|t| crate::domain::duration::parse(t).ok())
            .unwrap_or(Self::DEFAULT)
    }
}

/// The seed's `mcp: {command, args}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyMcp {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A remote A2A agent used as a tool.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aAgentConfig {
    pub name: String,
    pub url: String,
    #[serde(default)]
    pub description: String,
    /// Ask for local approval before delegating to it.
    #[serde(default, rename = "destructiveHint", alias = "destructive_hint")]
    pub destructive_hint: bool,
    /// Extra HTTP headers sent to the sub-agent (values may use `${VAR}`),
    /// e.g. its own `Authorization`, which replaces the forwarded bearer.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The key its card must be signed with; without one the card is
    /// read unsigned, as before.
    #[serde(default)]
    pub trust: Option<CardTrustConfig>,
    /// The A2A 1.0 binding to use when its card offers it (default: the
    /// card's JSON-RPC, then HTTP+JSON, then gRPC).
    #[serde(default)]
    pub binding: Option<A2aBinding>,
}

/// An A2A 1.0 protocol binding, as `a2a[].binding` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum A2aBinding {
    Jsonrpc,
    HttpJson,
    Grpc,
}

/// `a2a_extensions[]`: an A2A extension this agent declares.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aExtensionConfig {
    pub uri: String,
    #[serde(default)]
    pub description: String,
    /// Clients must activate it (`A2A-Extensions` header, or the message's
    /// `extensions`), else their messages get ExtensionSupportRequired.
    #[serde(default)]
    pub required: bool,
}

/// `a2a_card_signing`: the private key our card is signed with.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardSigningConfig {
    /// The PEM (PKCS#8, P-256 for ES256 or Ed25519 for EdDSA) from the
    /// environment (`${VAR}`).
    #[serde(default)]
    pub key: Option<super::auth::Secret>,
    /// Or a file holding it (relative to the config's folder).
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// The key's id, in each signature's protected header and the JWKS.
    pub kid: String,
}

/// `a2a[].trust`: the key a sub-agent's card must be signed with.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardTrustConfig {
    /// A public key PEM (P-256 or Ed25519).
    #[serde(default)]
    pub public_key: Option<String>,
    /// Or a file holding it.
    #[serde(default)]
    pub public_key_file: Option<PathBuf>,
    /// Or the agent's JWKS (`https://b/.well-known/jwks.json`), read
    /// with the card, so a key the agent rotates to is trusted once it
    /// publishes it there.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// Only this key id (with a JWKS: the one key of the set to trust).
    #[serde(default)]
    pub kid: Option<String>,
}

/// The kind of an orchestration node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Llm,
    Sequential,
    Parallel,
    Loop,
    A2a,
}

impl NodeKind {
    /// Kinds that run child nodes.
    pub fn has_children(self) -> bool {
        matches!(
            self,
            NodeKind::Sequential | NodeKind::Parallel | NodeKind::Loop
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Llm => "llm",
            NodeKind::Sequential => "sequential",
            NodeKind::Parallel => "parallel",
            NodeKind::Loop => "loop",
            NodeKind::A2a => "a2a",
        }
    }
}

/// `approvals:` on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalsMode {
    /// Ask for approval even inside parallel and loop nodes.
    Enforce,
}

/// `on_reject:` on a node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnReject {
    /// Tell the LLM the user declined and go on.
    #[default]
    Continue,
    /// Stop the pipeline.
    Stop,
}

/// A node of the orchestration tree.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: NodeKind,
    #[serde(default)]
    pub agents: Vec<NodeConfig>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub output_key: Option<String>,
    #[serde(default)]
    pub can_exit_loop: bool,
    #[serde(default)]
    pub max_iterations: Option<u32>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default, rename = "destructiveHint", alias = "destructive_hint")]
    pub destructive_hint: bool,
    /// Node-level A2A tools (llm nodes).
    #[serde(default)]
    pub a2a: Vec<A2aAgentConfig>,
    #[serde(default)]
    pub approvals: Option<ApprovalsMode>,
    #[serde(default)]
    pub on_reject: OnReject,
    /// `a2a` nodes: extra HTTP headers for the remote agent (see
    /// [`A2aAgentConfig::headers`]).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// Default loop bound when `max_iterations` is absent.
pub const DEFAULT_MAX_ITERATIONS: u32 = 10;
/// The hard cap on `max_iterations`.
pub const MAX_ITERATIONS_CAP: u32 = 1000;

fn default_true() -> bool {
    true
}
fn default_name() -> String {
    "agent".into()
}
fn default_prompt() -> String {
    "You are a helpful assistant. Use the tools you are given when they help.".into()
}
fn default_host() -> String {
    "0.0.0.0".into()
}
fn default_port() -> u16 {
    8080
}
fn default_data_dir() -> PathBuf {
    PathBuf::from("./data")
}
fn default_max_body_bytes() -> usize {
    1024 * 1024
}
fn default_a2a_max_hops() -> u32 {
    8
}
fn default_model() -> String {
    "gemini-2.5-flash".into()
}
fn default_max_steps() -> u32 {
    10
}
fn default_max_tokens() -> u32 {
    4096
}
fn default_llm_timeout() -> u64 {
    60
}
