//! Standing grants' intents: create one from an approval (with the
//! approval it settles), list, revoke, and use a live one for a call.
//! The rows and their audit are in `store/grants.rs`.

use crate::domain::digest::digest;
use crate::domain::ids::now;
use crate::store::approvals::{Decider, NewApproval};
use crate::store::audit::Event;
use crate::store::error::StoreError;
use crate::store::facade::Store;
use crate::store::grants::{GrantRow, GrantUse, Revoked, Used, audit_revoked};
use app::models::ApprovalStatus;

impl Store {
    /// The live grants, newest first; of one (tool, server) when given.
    pub(crate) async fn live_grants(
        &self,
        tool: Option<(String, Option<String>)>,
    ) -> Result<Vec<GrantRow>, StoreError> {
        self.read(move |tx| {
            tx.live_grants(
                &now(),
                tool.as_ref().map(|(t, s)| (t.as_str(), s.as_deref())),
            )
        })
        .await
    }

    /// One grant (live or not).
    pub(crate) async fn grant(&self, id: &str) -> Result<Option<GrantRow>, StoreError> {
        let id = id.to_string();
        self.read(move |tx| tx.grant(&id)).await
    }

    /// Revokes a live grant, audited `grant.revoked` by `by` (`why`: said
    /// in the audit row, e.g. "signed out").
    pub(crate) async fn revoke_grant(
        &self,
        id: &str,
        by: &str,
        why: Option<&str>,
    ) -> Result<Revoked, StoreError> {
        let (id, by, why) = (id.to_string(), by.to_string(), why.map(str::to_string));
        self.write(move |tx| {
            let Some(g) = tx.grant(&id)? else {
                return Ok(Revoked::NotLive);
            };
            if !tx.revoke_grant(&id, &by, &now())? {
                return Ok(Revoked::NotLive);
            }
            audit_revoked(tx, &g, &by, why.as_deref())?;
            Ok(Revoked::Done(Box::new(g)))
        })
        .await
    }

    /// Lets a call run under grant `u.grant`: if the grant is still live,
    /// its use is counted and the call gets an approval row approved by
    /// `grant:<id>` (audited `grant.used`), all in one transaction. A call
    /// the granter asked for themselves is spared only for an admin (and
    /// recorded as overriding separation of duties), as their decision
    /// would be.
    pub(crate) async fn use_grant(
        &self,
        u: GrantUse,
        new: NewApproval,
        session: &str,
    ) -> Result<Used, StoreError> {
        let session = session.to_string();
        self.write(move |tx| {
            tx.fence(&new.conversation_id)?;
            let own = u.separation_of_duties
                && tx.requester_of(&new.conversation_id)?.as_deref() == Some(u.granter.as_str());
            if own && !u.granter_admin {
                return Ok(Used::OwnRequest);
            }
            let grant_id = u.grant;
            if !tx.use_grant(&grant_id, &now())? {
                return Ok(Used::Ended);
            }
            let by = Decider {
                name: format!("grant:{grant_id}"),
                via: crate::domain::channel::Channel::Grant,
                session,
            };
            let a = tx.insert_approval(new)?;
            let uuid = a.approval.uuid.clone();
            tx.transition(
                &uuid,
                &[ApprovalStatus::Pending],
                ApprovalStatus::Approved,
                Some(&by),
                None,
            )?;
            let mut details = serde_json::json!({
                "grant": grant_id,
                "tool": a.approval.tool_name,
                "server": a.approval.server,
                "arguments_digest": digest(&a.approval.tool_args),
                "rule": a.approval.rule,
            });
            if own {
                details["override"] = "separation_of_duties".into();
            }
            tx.audit(&Event {
                actor: &by.name,
                event: "grant.used",
                conversation_id: Some(&a.approval.conversation_id),
                approval_uuid: Some(&uuid),
                details,
            })?;
            Ok(match tx.approval(&uuid)? {
                Some(a) => Used::Ran(Box::new(a)),
                None => Used::Ended,
            })
        })
        .await
    }
}
