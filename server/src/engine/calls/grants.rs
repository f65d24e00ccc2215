//! Grants (REACH.md §3) on the engine's side: what a decision may grant,
//! the in-memory index the gate asks, a call run under a grant, and
//! revocation.
//!
//! A grant never widens what the rules allow: the gate consults it only
//! where it would otherwise ask (a `deny` still wins, a changed tool is
//! still held), only for the rule that asked when it was granted, never
//! for a quorum, and only while the rule's named approvers still admit
//! the granter. It lasts at most 24 h and never past the credential it
//! was made with: the granter's sign-in session (signing out ends it), an
//! OpenID bearer's `exp`, an hour when a proxy vouched for the granter.
//! Its granter may always revoke it, whatever their roles now.

use crate::domain::principal::{Principal, Role, Roles, Source};
use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::policy::grants::{LiveGrant, values_of};
use crate::store::approvals::Approval;
use crate::store::grants::{GrantRow, GrantUse, Revoked, Used};
use app::models::{Grant, GrantRequest};
use std::time::Duration;

/// The longest a grant may last.
pub(crate) const MAX_FOR: Duration = Duration::from_secs(24 * 3600);
/// How long a grant lasts when the decision does not say.
pub(crate) const DEFAULT_FOR: Duration = Duration::from_secs(3600);

/// The longest a grant made through an authenticating proxy (mode
/// `proxy`) lasts. The proxy vouches for each request and says nothing
/// about how long its word holds, so the grant cannot end with the
/// granter's access as a bearer's or a session's does: an hour bounds how
/// long it can outlive a demotion (and its granter can revoke it at once).
pub(crate) const PROXY_FOR: Duration = Duration::from_secs(3600);

/// When a grant made `now` for `lasts` ends: never after the credential it
/// was made with (an OpenID bearer's `exp`, a browser session's end), nor
/// after [`PROXY_FOR`] when a proxy vouched for the granter.
fn ends_at(
    now: chrono::DateTime<chrono::Utc>,
    lasts: Duration,
    ctx: &CallContext,
) -> chrono::DateTime<chrono::Utc> {
    let after =
        |d: Duration| now + chrono::Duration::from_std(d).unwrap_or(chrono::Duration::hours(1));
    let mut until = after(lasts);
    // The principal carries its credential's end (the session's, for a
    // principal read from a sign-in session).
    if let Some(end) = ctx.principal.expires_at {
        until = until.min(end);
    }
    if ctx.principal.source == Source::Proxy {
        until = until.min(after(PROXY_FOR));
    }
    until
}

/// `grant.for` (400 naming the problem): [`DEFAULT_FOR`] when absent, at
/// most [`MAX_FOR`].
fn lasts_of(duration: Option<&str>) -> Result<Duration, EngineError> {
    let lasts = match duration {
        None => DEFAULT_FOR,
        Some(s) => crate::policy::parse_duration(s)
            .map_err(|e| EngineError::Invalid(format!("grant.for: {e}")))?,
    };
    if lasts.is_zero() || lasts > MAX_FOR {
        return Err(EngineError::Invalid(format!(
            "grant.for must be more than 0 and at most 24h, not {}",
            duration.unwrap_or("")
        )));
    }
    Ok(lasts)
}

/// `grant.match` (400 naming the problem): JSON pointers to arguments the
/// approved call has.
fn check_pointers(
    pointers: Option<&[String]>,
    ran_with: &serde_json::Value,
) -> Result<(), EngineError> {
    let Some(ps) = pointers else {
        return Ok(());
    };
    if ps.is_empty() {
        return Err(EngineError::Invalid(
            "grant.match is empty: leave it out to match every argument, or name the pointers (\"/name\")"
                .into(),
        ));
    }
    for p in ps {
        if !p.starts_with('/') {
            return Err(EngineError::Invalid(format!(
                "grant.match: {p:?} is not a JSON pointer (write \"/name\")"
            )));
        }
        if ran_with.pointer(p).is_none() {
            return Err(EngineError::Invalid(format!(
                "grant.match: the approved call has no argument at {p}"
            )));
        }
    }
    Ok(())
}

/// The gate's view of a stored grant.
pub(crate) fn live(g: &GrantRow) -> LiveGrant {
    LiveGrant {
        id: g.grant.id.clone(),
        tool: g.grant.tool.clone(),
        server: g.grant.server.clone(),
        conversation_id: g.grant.conversation_id.clone(),
        rule: g.grant.rule.clone(),
        granter: g.grant.created_by.clone(),
        roles: g.roles.clone(),
        pointers: g.grant.match_pointers.clone(),
        values: g.grant.values.clone(),
        expires_at: g.grant.expires_at.clone(),
    }
}

/// Whether a rule's named `approvers` admit the granter (name, roles):
/// empty admits anyone with the approver role.
pub(crate) fn admits(approvers: &[String], name: &str, roles: &[String]) -> bool {
    let p = Principal {
        name: name.to_string(),
        roles: Roles::from_names(roles.iter().map(String::as_str)),
        source: Default::default(),
        expires_at: None,
    };
    p.allow(Role::Approver) && crate::policy::admitted(approvers, &p)
}

impl Engine {
    /// The roles a granter has now: in mode `tokens` their token's (a
    /// token removed or demoted in the config takes its grants' power with
    /// it); otherwise those they had when they granted (`recorded`).
    pub(super) fn roles_now(&self, name: &str, recorded: &[String]) -> Vec<String> {
        let auth = &self.inner.config.auth;
        if auth.mode != crate::config::AuthMode::Tokens {
            return recorded.to_vec();
        }
        auth.tokens
            .iter()
            .filter(|t| t.name == name)
            .flat_map(|t| t.roles.iter().cloned())
            .collect()
    }

    /// Loads the live grants into the gate's index (at startup).
    pub(crate) async fn load_grants(&self) -> Result<(), crate::store::StoreError> {
        let rows = self.inner.store.live_grants(None).await?;
        let n = rows.len();
        self.inner
            .grants
            .replace_all(rows.iter().map(live).collect());
        if n > 0 {
            tracing::info!(grants = n, "live grants loaded");
        }
        Ok(())
    }

    /// Reads the live grants of one tool again (a shared store, before a
    /// call asks: a replica may have granted it meanwhile).
    pub(super) async fn refresh_grants(
        &self,
        tool: &str,
        server: Option<&str>,
    ) -> Result<(), EngineError> {
        let rows = self
            .inner
            .store
            .live_grants(Some((tool.to_string(), server.map(str::to_string))))
            .await?;
        self.inner
            .grants
            .replace_tool(tool, server, rows.iter().map(live).collect());
        Ok(())
    }

    /// The grant a decision asks for, checked against the approval and the
    /// decider (400/403 naming the problem), as its row.
    pub(crate) fn grant_of(
        &self,
        req: &GrantRequest,
        found: &Approval,
        ran_with: &serde_json::Value,
        ctx: &CallContext,
    ) -> Result<GrantRow, EngineError> {
        let a = &found.approval;
        let rule = a.rule.clone().unwrap_or_else(|| "annotation".into());
        if a.remote_task_id.is_some() {
            return Err(EngineError::Invalid(
                "a sub-agent's approval cannot carry a grant: the sub-agent asks for its own calls"
                    .into(),
            ));
        }
        if rule == "tool-changed" {
            return Err(EngineError::Invalid(
                "the approval of a changed tool cannot carry a grant: an admin accepts the change instead"
                    .into(),
            ));
        }
        if a.needed() > 1 {
            return Err(EngineError::Invalid(format!(
                "the rule `{rule}` needs {} approvers (a quorum): its approvals cannot be granted",
                a.needed()
            )));
        }
        let roles: Vec<String> = ctx
            .principal
            .roles
            .names()
            .into_iter()
            .map(str::to_string)
            .collect();
        let auth_on = self.inner.config.auth.mode != crate::config::AuthMode::None;
        if auth_on && !admits(&a.approvers, &ctx.principal.name, &roles) {
            return Err(EngineError::Invalid(format!(
                "the rule `{rule}` names its approvers ({}): {} is not one of them, so it cannot be granted",
                a.approvers.join(", "),
                ctx.principal.name
            )));
        }
        let scope = req.scope.as_deref().unwrap_or("conversation");
        match scope {
            "conversation" => {}
            "agent" if !auth_on || ctx.principal.allow(Role::Admin) => {}
            "agent" => {
                return Err(EngineError::Forbidden(format!(
                    "a grant for every conversation (scope `agent`) needs the admin role, which {} does not have",
                    ctx.principal.name
                )));
            }
            other => {
                return Err(EngineError::Invalid(format!(
                    "grant.scope must be \"conversation\" or \"agent\", not {other:?}"
                )));
            }
        }
        let lasts = lasts_of(req.duration.as_deref())?;
        check_pointers(req.match_pointers.as_deref(), ran_with)?;
        let values = values_of(req.match_pointers.as_deref(), ran_with).ok_or_else(|| {
            EngineError::Invalid("grant.match names an argument the call does not have".into())
        })?;
        let now = chrono::Utc::now();
        let until = ends_at(now, lasts, ctx);
        let stamp = |t: chrono::DateTime<chrono::Utc>| {
            t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        };
        Ok(GrantRow {
            roles,
            signin: ctx.signin.as_ref().map(|s| s.id_hash.clone()),
            grant: Grant {
                id: crate::domain::ids::new_id(),
                tool: a.tool_name.clone(),
                server: found.server.clone(),
                scope: scope.to_string(),
                conversation_id: (scope == "conversation").then(|| a.conversation_id.clone()),
                rule,
                match_pointers: req.match_pointers.clone(),
                values,
                created_by: ctx.principal.name.clone(),
                created_via: ctx.via.to_string(),
                created_at: stamp(now),
                expires_at: stamp(until),
                approval_uuid: a.uuid.clone(),
                uses: 0,
                last_used_at: None,
                revoked_at: None,
                revoked_by: None,
            },
        })
    }

    /// Records a call as allowed by grant `grant` (its use counted, an
    /// approval approved by `grant:<id>`, `grant.used`), if the grant is
    /// still live; `None` (and the grant leaves the index) otherwise.
    /// `(rule, approvers, quorum)`: the question the grant spares.
    pub(super) async fn run_granted(
        &self,
        site: super::site::CallSite<'_>,
        grant: &LiveGrant,
        (rule, approvers, quorum): (&str, &[String], u32),
    ) -> Result<Option<Approval>, EngineError> {
        let tc = site.tc;
        let new = crate::store::approvals::NewApproval {
            conversation_id: site.conversation_id.to_string(),
            message_id: site.message_id.to_string(),
            tool_name: tc.name.clone(),
            server: tc.server.clone(),
            tool_args: tc.arguments.clone(),
            description: super::texts::describe_call(&tc.name, tc.server.as_deref(), &tc.arguments),
            remote: None,
            traceparent: crate::telemetry::current_traceparent(),
            rule: Some(rule.to_string()),
            approvers: approvers.to_vec(),
            quorum,
            expires_in: None,
        };
        let roles = self.roles_now(&grant.granter, &grant.roles);
        let auth = &self.inner.config.auth;
        let u = GrantUse {
            grant: grant.id.clone(),
            granter: grant.granter.clone(),
            granter_admin: auth.mode == crate::config::AuthMode::None
                || roles.iter().any(|r| r == "admin"),
            separation_of_duties: auth.separation_of_duties(),
        };
        let id = &grant.id;
        match self
            .inner
            .store
            .use_grant(u, new, &site.ctx.session_id)
            .await?
        {
            Used::Ran(a) => {
                tracing::info!(grant = %id, tool = %tc.name, approval = %a.approval.uuid, "call allowed by a grant");
                Ok(Some(*a))
            }
            Used::Ended => {
                tracing::info!(grant = %id, tool = %tc.name, "the grant ended before its use: the call asks");
                self.inner.grants.remove(id);
                Ok(None)
            }
            Used::OwnRequest => {
                tracing::info!(grant = %id, tool = %tc.name, "the granter asked for this call themselves: it asks");
                Ok(None)
            }
        }
    }

    /// A grant this decision created, now in force here (other replicas
    /// read it before their next call that would ask).
    pub(crate) fn granted(&self, g: &GrantRow) {
        tracing::info!(grant = %g.grant.id, tool = %g.grant.tool, scope = %g.grant.scope, expires_at = %g.grant.expires_at, "grant created");
        // Expired grants leave the index as new ones come.
        self.inner.grants.prune(&crate::domain::ids::now());
        self.inner.grants.insert(live(g));
    }

    /// The live grants (`GET /grants`).
    pub(crate) async fn grants(&self) -> Result<Vec<Grant>, EngineError> {
        Ok(self
            .inner
            .store
            .live_grants(None)
            .await?
            .into_iter()
            .map(|g| g.grant)
            .collect())
    }

    /// Revokes a grant: its creator, whatever their roles now (a demoted
    /// granter can still end what they granted), or an admin (in auth
    /// mode `none`, anyone). Audited `grant.revoked`.
    pub(crate) async fn revoke_grant(
        &self,
        id: &str,
        ctx: &CallContext,
    ) -> Result<Grant, EngineError> {
        let store = &self.inner.store;
        let found = store
            .grant(id)
            .await?
            .filter(|g| {
                g.grant.revoked_at.is_none()
                    && g.grant.expires_at.as_str() > crate::domain::ids::now().as_str()
            })
            .ok_or_else(|| EngineError::NotFound(format!("no live grant {id:?}")))?;
        let auth_on = self.inner.config.auth.mode != crate::config::AuthMode::None;
        if auth_on
            && found.grant.created_by != ctx.principal.name
            && !ctx.principal.allow(Role::Admin)
        {
            return Err(EngineError::Forbidden(format!(
                "only {} (who granted it) or an admin may revoke this grant",
                found.grant.created_by
            )));
        }
        match store.revoke_grant(id, &ctx.principal.name, None).await? {
            Revoked::Done(g) => {
                self.inner.grants.remove(id);
                tracing::info!(grant = %id, by = %ctx.principal.name, "grant revoked");
                let mut g = g.grant;
                g.revoked_by = Some(ctx.principal.name.clone());
                g.revoked_at = Some(crate::domain::ids::now());
                Ok(g)
            }
            Revoked::NotLive => Err(EngineError::NotFound(format!("no live grant {id:?}"))),
        }
    }

    /// Grants that ended with their sign-in (its sign-out revoked them in
    /// its transaction) leave the index.
    pub(crate) fn forget_grants(&self, ids: &[String]) {
        for id in ids {
            self.inner.grants.remove(id);
            tracing::info!(grant = %id, "grant ended: its granter signed out");
        }
    }
}
