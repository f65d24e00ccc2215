//! The receipt's claims (RECEIPTS.md §1), as they are signed.

use serde::{Deserialize, Serialize};

/// The JWS `typ` every receipt carries.
pub const TYPE: &str = "stopgo-receipt+jwt";

/// Where an MCP `tools/call` carries the receipt: `params._meta[..]`.
pub const META_RECEIPT: &str = "dev.stopgo/receipt";

/// Where an MCP `tools/call` carries the call's idempotency key
/// (RECEIPTS.md §3): `params._meta[..]`.
pub const META_IDEMPOTENCY_KEY: &str = "dev.stopgo/idempotency-key";

/// `authorization_details[].type` of a tool call.
pub const DETAIL_TYPE: &str = "stopgo_tool_call";

/// A receipt's claims.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// The issuing agent's public base URL.
    pub iss: String,
    /// The approval's uuid (for a grant's use, the row the use created).
    pub jti: String,
    /// Issued at, seconds since the epoch.
    pub iat: i64,
    /// Expires at, seconds since the epoch.
    pub exp: i64,
    /// The conversation.
    pub txn: String,
    /// The agent that acts on the decision.
    pub act: Actor,
    /// The one call it allows (RFC 9396 shape).
    pub authorization_details: Vec<Detail>,
    /// Every approving vote (a grant: its granter, `via: "grant"`).
    pub approvers: Vec<Approver>,
    /// The rule that asked, and the digest of the `approvals:` section.
    pub policy: Policy,
    /// For a proxy approval: the agents it came through, nearest first,
    /// with the approvers each upstream receipt named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<ChainLink>,
}

/// `act`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Actor {
    pub sub: String,
}

/// One `authorization_details` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    #[serde(rename = "type")]
    pub kind: String,
    pub server: String,
    pub tool: String,
    /// base64url SHA-256 of the JCS form of the arguments that run.
    pub arguments_sha256: String,
    pub decision: String,
}

impl Detail {
    /// An approved call of `tool` on `server` with `arguments`.
    pub fn approved(server: &str, tool: &str, arguments: &serde_json::Value) -> Detail {
        Detail {
            kind: DETAIL_TYPE.into(),
            server: server.into(),
            tool: tool.into(),
            arguments_sha256: crate::digest::arguments_sha256(arguments),
            decision: "approved".into(),
        }
    }
}

/// One approving vote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Approver {
    /// The principal.
    pub sub: String,
    /// The channel it decided through (`ui`, `rest`, `mcp`, `grant`, ...).
    pub via: String,
    /// When, RFC 3339.
    pub at: String,
}

/// `policy`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// The rule's name, `annotation`, `unannotated` or `proxy`.
    pub rule: String,
    /// base64url SHA-256 of the JCS form of the `approvals:` section.
    pub sha256: String,
}

/// One upstream agent of a proxy approval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainLink {
    /// The upstream receipt's issuer.
    pub iss: String,
    /// Its approval.
    pub jti: String,
    /// Who approved there.
    pub approvers: Vec<Approver>,
}
