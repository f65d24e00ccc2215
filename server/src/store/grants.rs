//! Grants as rows (REACH.md §3): an approval that lets later calls of the
//! same tool with the same arguments (at its pointers) run without asking,
//! until it expires or is revoked.
//!
//! A grant is written in its decision's transaction (`decisions.rs`), with
//! `grant.created`. A use is one transaction too: the grant's row is
//! bumped only while it is live (`revoked_at IS NULL AND expires_at >
//! now`), and in the same transaction the call gets an approval row
//! already approved by `grant:<id>` (so every surface shows why it ran,
//! and the call is claimed and run exactly as an approved one) and the
//! audit gets `grant.used`. A revoked or expired grant therefore spares
//! nothing, whatever a replica's in-memory index still holds.

use super::approvals::Approval;
use super::audit::Event;
use super::error::StoreError;
use crate::domain::digest::digest;
use crate::domain::ids::now;
use app::models::Grant;

/// A grant's row: the grant as REST shows it, and what only the store
/// and the gate need.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GrantRow {
    pub(crate) grant: Grant,
    /// The granter's roles when they granted.
    pub(crate) roles: Vec<String>,
    /// The hash of the sign-in session it was granted in (it ends with
    /// it); `None`: a bearer token's grant, bounded by its `for` alone.
    pub(crate) signin: Option<String>,
}

pub(super) const GRANT_COLUMNS: &str = "id, created_at, created_by, created_roles, created_via, signin, approval_uuid, scope, \
     conversation_id, tool, server, rule, match_pointers, match_values, expires_at, uses, last_used_at, revoked_at, revoked_by";

/// The columns of [`GRANT_COLUMNS`] as read, in order.
pub(super) struct RawGrant {
    pub(super) id: String,
    pub(super) created_at: String,
    pub(super) created_by: String,
    pub(super) created_roles: String,
    pub(super) created_via: String,
    pub(super) signin: Option<String>,
    pub(super) approval_uuid: String,
    pub(super) scope: String,
    pub(super) conversation_id: Option<String>,
    pub(super) tool: String,
    pub(super) server: Option<String>,
    pub(super) rule: String,
    pub(super) match_pointers: Option<String>,
    pub(super) match_values: String,
    pub(super) expires_at: String,
    pub(super) uses: i64,
    pub(super) last_used_at: Option<String>,
    pub(super) revoked_at: Option<String>,
    pub(super) revoked_by: Option<String>,
}

impl RawGrant {
    pub(super) fn decode(self) -> Result<GrantRow, StoreError> {
        let corrupt = |e: serde_json::Error| StoreError::Corrupt(format!("grant {}: {e}", self.id));
        let match_pointers = match &self.match_pointers {
            Some(j) => Some(serde_json::from_str(j).map_err(corrupt)?),
            None => None,
        };
        let values = serde_json::from_str(&self.match_values).map_err(corrupt)?;
        Ok(GrantRow {
            roles: self
                .created_roles
                .split(',')
                .filter(|r| !r.is_empty())
                .map(str::to_string)
                .collect(),
            signin: self.signin,
            grant: Grant {
                id: self.id,
                tool: self.tool,
                server: self.server,
                scope: self.scope,
                conversation_id: self.conversation_id,
                rule: self.rule,
                match_pointers,
                values,
                created_by: self.created_by,
                created_via: self.created_via,
                created_at: self.created_at,
                expires_at: self.expires_at,
                approval_uuid: self.approval_uuid,
                uses: self.uses.max(0) as u64,
                last_used_at: self.last_used_at,
                revoked_at: self.revoked_at,
                revoked_by: self.revoked_by,
            },
        })
    }
}

/// The JSON texts a grant row stores: (match pointers, values).
pub(super) fn encode(g: &Grant) -> Result<(Option<String>, String), StoreError> {
    let pointers = match &g.match_pointers {
        Some(p) => Some(serde_json::to_string(p).map_err(|e| StoreError::Corrupt(e.to_string()))?),
        None => None,
    };
    let values =
        serde_json::to_string(&g.values).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok((pointers, values))
}

/// Records `grant.created` for `g` (in the decision's transaction).
pub(super) fn audit_created(tx: &dyn super::tx::Tx, g: &GrantRow) -> Result<(), StoreError> {
    let gr = &g.grant;
    tx.audit(&Event {
        actor: &gr.created_by,
        event: "grant.created",
        conversation_id: gr.conversation_id.as_deref(),
        approval_uuid: Some(&gr.approval_uuid),
        details: serde_json::json!({
            "grant": gr.id,
            "tool": gr.tool,
            "server": gr.server,
            "scope": gr.scope,
            "rule": gr.rule,
            "match": gr.match_pointers,
            "values_digest": digest(&gr.values),
            "expires_at": gr.expires_at,
            "via": gr.created_via,
        }),
    })
}

/// What revoking did.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Revoked {
    /// Revoked now (the row as it was).
    Done(Box<GrantRow>),
    /// No such grant, or it had ended already.
    NotLive,
}

/// A use of a grant, as the engine asks for it.
#[derive(Clone, Debug)]
pub(crate) struct GrantUse {
    pub(crate) grant: String,
    /// Who granted it, whether they are an admin now, and whether
    /// separation of duties is in force.
    pub(crate) granter: String,
    pub(crate) granter_admin: bool,
    pub(crate) separation_of_duties: bool,
}

/// What using a grant did.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Used {
    /// The call may run under this approval (approved by the grant).
    Ran(Box<Approval>),
    /// The grant had ended (revoked, expired): the call must ask.
    Ended,
    /// The granter asked for this call themselves and may not decide their
    /// own request: the call must ask.
    OwnRequest,
}

/// Ends the live grants made in the sign-in session `signin` (in its
/// sign-out's transaction), each audited `grant.revoked`; their ids.
pub(super) fn end_signin_grants(
    tx: &dyn super::tx::Tx,
    signin: &str,
    by: &str,
) -> Result<Vec<String>, StoreError> {
    let mut ended = Vec::new();
    for id in tx.signin_grants(signin)? {
        if let Some(g) = tx.grant(&id)?
            && tx.revoke_grant(&id, by, &now())?
        {
            audit_revoked(tx, &g, by, Some("the granter signed out"))?;
            ended.push(id);
        }
    }
    Ok(ended)
}

pub(super) fn audit_revoked(
    tx: &dyn super::tx::Tx,
    g: &GrantRow,
    by: &str,
    why: Option<&str>,
) -> Result<(), StoreError> {
    tx.audit(&Event {
        actor: by,
        event: "grant.revoked",
        conversation_id: g.grant.conversation_id.as_deref(),
        approval_uuid: Some(&g.grant.approval_uuid),
        details: serde_json::json!({
            "grant": g.grant.id,
            "tool": g.grant.tool,
            "server": g.grant.server,
            "uses": g.grant.uses,
            "reason": why,
        }),
    })
}
