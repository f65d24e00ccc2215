//! An operator's approve/reject (by API, by a signed link, by Slack), and
//! the turn going on after it.
//!
//! A decision is a row of named steps, each a function a test can call
//! alone: [`who_may_decide`] (role, separation of duties, the rule's
//! approvers), [`Engine::what_may_change`] (an edit is checked like the
//! model's call), [`Engine::grant_for`] (what a grant would let run),
//! [`voter`] (who votes when a quorum counts), [`record`] and
//! [`Engine::commit`] (the conversation's lock and the one store write),
//! then the report: [`early_report`] (what Slack hears at once),
//! [`Engine::report_vote`] or [`Engine::report_decided`] (events,
//! metrics, the trace), and [`handed_over`] (the approval as the turn
//! that goes on sees it).

use super::decider;
use crate::config::{AuthConfig, AuthMode};
use crate::domain::channel::Channel;
use crate::domain::principal::Principal;
use crate::domain::tools::CallContext;
use crate::engine::calls::texts::declined_text;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::locks::LockGuard;
use crate::engine::reply::Reply;
use crate::store::approvals::Approval;
use crate::store::grants::GrantRow;
use crate::store::{Decided, DecisionRecord};
use app::models::{ApprovalStatus, ConversationStatus, EventKind, GrantRequest, PendingApproval};

/// An operator's decision as asked for (the request); the store writes it
/// as a [`DecisionRecord`] and answers what it did as a [`Decided`]; who
/// decided is a [`crate::store::approvals::Decider`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DecisionRequest {
    pub(crate) approve: bool,
    /// Why (for a rejection, told to the model).
    pub(crate) reason: Option<String>,
    /// Approve with these arguments instead of the model's (POLICY.md §3).
    pub(crate) arguments: Option<serde_json::Value>,
    /// Approve, and let later identical calls run for a while (REACH.md §3).
    pub(crate) grant: Option<app::models::GrantRequest>,
    /// The receipt an upstream agent sent with an A2A continuation that
    /// approves (RECEIPTS.md §1): this agent's receipt names it in `chain`.
    pub(crate) upstream_receipt: Option<String>,
}

impl Engine {
    /// Approves or rejects a pending approval, then lets the turn go on.
    pub(crate) async fn decide(
        &self,
        uuid: &str,
        decision: DecisionRequest,
        ctx: CallContext,
    ) -> Result<Reply, EngineError> {
        self.decide_with(uuid, decision, ctx, None, None).await
    }

    /// [`Engine::decide`], telling `committed` what was recorded the
    /// moment it commits (the turn then goes on as usual).
    pub(crate) async fn decide_reporting(
        &self,
        uuid: &str,
        decision: DecisionRequest,
        ctx: CallContext,
        committed: tokio::sync::oneshot::Sender<Decided>,
    ) -> Result<Reply, EngineError> {
        self.decide_with(uuid, decision, ctx, None, Some(committed))
            .await
    }

    /// [`Engine::decide`] through the signed link `link` (POLICY.md §5):
    /// checked like any other decision, and the link is used up in the
    /// decision's transaction.
    pub(crate) async fn decide_by_link(
        &self,
        uuid: &str,
        decision: DecisionRequest,
        mut ctx: CallContext,
        link: String,
    ) -> Result<Reply, EngineError> {
        ctx.via = Channel::Link;
        self.decide_once(uuid, decision, ctx, Some(link)).await
    }

    /// [`Engine::decide`] spending the single-use token `once` (a signed
    /// link's id, an MCP round's `mcp:<nonce>`) in the decision's
    /// transaction: a token used already decides nothing.
    pub(crate) async fn decide_once(
        &self,
        uuid: &str,
        decision: DecisionRequest,
        ctx: CallContext,
        once: Option<String>,
    ) -> Result<Reply, EngineError> {
        self.decide_with(uuid, decision, ctx, once, None).await
    }

    /// Whether `ctx`'s principal may settle `a` alone: they may decide it
    /// (role, separation of duties, the rule's approvers) and their vote
    /// is the last one its quorum needs (and not one they cast already).
    pub(crate) fn may_decide_alone(&self, a: &PendingApproval, ctx: &CallContext) -> bool {
        let auth = &self.inner.config.auth;
        if who_may_decide(auth, a, &ctx.principal).is_err() {
            return false;
        }
        match voter(auth.mode, a, ctx) {
            None => true,
            Some(v) => a.approvals() + 1 >= a.needed() && !a.votes.iter().any(|x| x.by == v),
        }
    }

    /// The steps of a decision, in order; every refusal comes before the
    /// lock is taken, except what only the write can tell (a race lost, a
    /// vote already cast, a used link, a deadline passed).
    async fn decide_with(
        &self,
        uuid: &str,
        decision: DecisionRequest,
        ctx: CallContext,
        link: Option<String>,
        committed: Option<tokio::sync::oneshot::Sender<Decided>>,
    ) -> Result<Reply, EngineError> {
        let found = self.pending_approval(uuid).await?;
        let auth = &self.inner.config.auth;
        let overrides = who_may_decide(auth, &found.approval, &ctx.principal)?;
        self.what_may_change(&found, &decision)?;
        let grant = self.grant_for(&found, &decision, &ctx)?;
        let voter = voter(auth.mode, &found.approval, &ctx);
        let rec = record(
            &found,
            &decision,
            &ctx,
            overrides,
            voter,
            link,
            grant.clone(),
        );
        let (outcome, guard) = self.commit(rec).await?;
        if let (Some(tx), Some(told)) = (committed, early_report(&outcome)) {
            let _ = tx.send(told);
        }
        if let Decided::Voted { approvals, quorum } = outcome {
            guard.release().await;
            return self.report_vote(found, approvals, quorum).await;
        }
        if let Some(g) = &grant {
            self.granted(g);
        }
        self.report_decided(&found, decision.approve, &ctx);
        let conversation_id = found.approval.conversation_id.clone();
        let traceparent = found.traceparent.clone();
        let decided = handed_over(found, &decision, &ctx);
        // The work after the decision belongs to the trace that asked.
        self.run_turn(conversation_id, ctx, guard, None, decided, traceparent)
            .await
    }

    /// The approval `uuid`, while it is still pending.
    async fn pending_approval(&self, uuid: &str) -> Result<Approval, EngineError> {
        let found = self
            .inner
            .store
            .approval(uuid)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("approval {uuid:?} not found")))?;
        if found.status != ApprovalStatus::Pending {
            return Err(EngineError::AlreadyDecided {
                uuid: uuid.to_string(),
                status: found.status,
            });
        }
        Ok(found)
    }

    /// What may change: edited arguments are checked like the model's call
    /// would be (its schema, the rules again; POLICY.md §3).
    fn what_may_change(
        &self,
        found: &Approval,
        decision: &DecisionRequest,
    ) -> Result<(), EngineError> {
        match &decision.arguments {
            Some(edited) => self.check_edit(found, edited),
            None => Ok(()),
        }
    }

    /// The grant an approval asks for, checked (REACH.md §3); `None`
    /// without one.
    fn grant_for(
        &self,
        found: &Approval,
        decision: &DecisionRequest,
        ctx: &CallContext,
    ) -> Result<Option<GrantRow>, EngineError> {
        let Some(req) = grant_request(decision)? else {
            return Ok(None);
        };
        let ran_with = decision
            .arguments
            .as_ref()
            .unwrap_or(&found.approval.tool_args);
        self.grant_of(req, found, ran_with, ctx).map(Some)
    }

    /// The commit: takes the conversation's lock and writes the decision
    /// in one transaction. Every way out that does not hand the lock to a
    /// turn releases it here, awaiting the lease's write: dropped, the
    /// lease would be released by a spawned task, after the answer, and
    /// the caller's next request (another vote, say) could find it still
    /// held.
    async fn commit(&self, rec: DecisionRecord) -> Result<(Decided, LockGuard), EngineError> {
        let guard = self.lock(&rec.conversation_id).await?;
        let (uuid, voter) = (rec.uuid.clone(), rec.voter.clone());
        let outcome = self
            .inner
            .store
            .decide(rec)
            .await
            .map_err(EngineError::from)
            .and_then(|o| refusal(&o, &uuid, &voter).map_or(Ok(o), Err));
        match outcome {
            Ok(o) => Ok((o, guard)),
            Err(e) => {
                guard.release().await;
                Err(e)
            }
        }
    }

    /// The report of a vote short of the quorum: logged, an event, and the
    /// approval as it now stands (with the vote) as the reply.
    async fn report_vote(
        &self,
        found: Approval,
        approvals: usize,
        quorum: usize,
    ) -> Result<Reply, EngineError> {
        let uuid = found.approval.uuid.clone();
        let conversation_id = found.approval.conversation_id.clone();
        tracing::info!(approval = %uuid, conversation = %conversation_id, approvals, quorum, "approval vote recorded");
        self.inner
            .events
            .emit(EventKind::ApprovalVoted, &conversation_id, |e| {
                e.approval = Some(uuid.clone());
                e.tool = Some(found.approval.tool_name.clone());
                e.status = Some(ConversationStatus::WaitingApproval);
                e.detail = Some(format!("{approvals} of {quorum}"));
            });
        let now = self
            .inner
            .store
            .approval(&uuid)
            .await?
            .map(|a| a.approval)
            .unwrap_or(found.approval);
        self.reply(
            &conversation_id,
            crate::engine::outcome::TurnOutcome::Waiting(Box::new(now)),
        )
        .await
    }

    /// The report of a decision that decided: logged, the metrics and the
    /// trace's span of the wait, and an event.
    fn report_decided(&self, found: &Approval, approve: bool, ctx: &CallContext) {
        let a = &found.approval;
        tracing::info!(approval = %a.uuid, conversation = %a.conversation_id, approved = approve, "approval decided");
        let waited = crate::telemetry::metrics::since(&a.created_at);
        let outcome = outcome_label(approve);
        crate::telemetry::metrics::get().approval(outcome, waited);
        crate::telemetry::approval_wait(
            &ctx.session_id,
            found.traceparent.as_deref(),
            waited.unwrap_or_default(),
            &a.tool_name,
            outcome,
            &ctx.principal.name,
        );
        self.inner
            .events
            .emit(EventKind::ApprovalDecided, &a.conversation_id, |e| {
                e.approval = Some(a.uuid.clone());
                e.tool = Some(a.tool_name.clone());
                e.status = Some(ConversationStatus::Active);
                e.running = Some(true);
                e.detail = Some(outcome.into());
            });
    }
}

/// Who may decide: in an auth mode other than `none`, the approver role,
/// separation of duties (an admin may override it: `Ok(true)`, audited)
/// and the rule's `approvers` (recorded on the approval when it was
/// asked). In mode `none` anyone may, overriding nothing.
fn who_may_decide(
    auth: &AuthConfig,
    a: &PendingApproval,
    p: &Principal,
) -> Result<bool, EngineError> {
    let enforced = auth.mode != AuthMode::None;
    let overrides = crate::domain::principal::may_decide(
        enforced,
        auth.separation_of_duties(),
        p,
        a.requested_by.as_deref(),
    )
    .map_err(|r| EngineError::Forbidden(r.message(&p.name)))?;
    if enforced && !crate::policy::admitted(&a.approvers, p) {
        return Err(EngineError::Forbidden(format!(
            "{} may not decide this approval: the rule `{}` lets {} decide it",
            p.name,
            a.rule.as_deref().unwrap_or("?"),
            a.approvers.join(", ")
        )));
    }
    Ok(overrides)
}

/// The grant a decision asks for: only an approval may carry one.
fn grant_request(decision: &DecisionRequest) -> Result<Option<&GrantRequest>, EngineError> {
    match &decision.grant {
        Some(_) if !decision.approve => Err(EngineError::Invalid(
            "a grant goes with an approval: a rejection grants nothing".into(),
        )),
        req => Ok(req.as_ref()),
    }
}

/// Who votes: with a quorum each principal votes once; in auth mode none
/// there are no principals, so browser sessions are counted instead.
/// `None`: one decision decides.
fn voter(mode: AuthMode, a: &PendingApproval, ctx: &CallContext) -> Option<String> {
    (a.needed() > 1).then(|| {
        if mode == AuthMode::None {
            format!("session:{}", ctx.session_id)
        } else {
            ctx.principal.name.clone()
        }
    })
}

/// The record the commit writes.
fn record(
    found: &Approval,
    decision: &DecisionRequest,
    ctx: &CallContext,
    overrides: bool,
    voter: Option<String>,
    link: Option<String>,
    grant: Option<GrantRow>,
) -> DecisionRecord {
    let a = &found.approval;
    let proxy = a.remote_task_id.is_some();
    DecisionRecord {
        uuid: a.uuid.clone(),
        conversation_id: a.conversation_id.clone(),
        message_id: found.message_id.clone(),
        approve: decision.approve,
        reason: decision.reason.clone(),
        by: decider(ctx),
        // A rejected local call is answered now; a rejected proxy
        // approval is forwarded to the remote task by the turn.
        answer: (!decision.approve && !proxy).then(|| declined_text(decision.reason.as_deref())),
        overrides,
        tool: a.tool_name.clone(),
        arguments: a.tool_args.clone(),
        voter,
        expires: a.expires_at.is_some(),
        edited: decision.arguments.clone().map(|after| {
            let changes = crate::engine::calls::edit::diff(&a.tool_args, &after);
            (after, changes)
        }),
        link,
        grant,
        upstream_receipt: decision.upstream_receipt.clone(),
    }
}

/// The refusal a decision's write answered, as the caller's error (`None`
/// when it was recorded: decided, or a vote counted).
fn refusal(outcome: &Decided, uuid: &str, voter: &Option<String>) -> Option<EngineError> {
    match outcome {
        Decided::Done | Decided::Voted { .. } => None,
        Decided::Lost(status) => Some(EngineError::AlreadyDecided {
            uuid: uuid.to_string(),
            status: *status,
        }),
        Decided::LinkUsed => Some(EngineError::LinkUsed),
        Decided::AlreadyVoted => Some(EngineError::AlreadyVoted {
            uuid: uuid.to_string(),
            voter: voter.clone().unwrap_or_default(),
        }),
    }
}

/// What a surface that must answer at once (Slack) hears the moment the
/// decision commits: what was recorded (decided, or a vote counted);
/// `None` for a refusal, which the caller hears as an error instead.
fn early_report(outcome: &Decided) -> Option<Decided> {
    matches!(outcome, Decided::Done | Decided::Voted { .. }).then(|| outcome.clone())
}

/// `approved` or `rejected`: the metric's label and the event's detail.
fn outcome_label(approve: bool) -> &'static str {
    if approve { "approved" } else { "rejected" }
}

/// The approval as the decision left it, handed to the turn (which runs
/// under this lease, so nobody else moved it) instead of read again. A
/// rejected local call was answered by the decision; a proxy approval goes
/// through the delegation, which reads its own: both `None`.
fn handed_over(found: Approval, decision: &DecisionRequest, ctx: &CallContext) -> Option<Approval> {
    let proxy = found.approval.remote_task_id.is_some();
    (decision.approve && !proxy).then(|| {
        let mut a = found;
        a.status = ApprovalStatus::Approved;
        a.reason = decision.reason.clone();
        a.decided_by = Some(decider(ctx).name);
        if let Some(args) = decision.arguments.clone() {
            a.approval.edited_args = Some(args);
            a.approval.edited_by = a.decided_by.clone();
        }
        a
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::principal::Roles;
    use crate::domain::tools::CallContext;

    fn principal(name: &str, roles: &[&str]) -> Principal {
        Principal {
            name: name.into(),
            roles: Roles::from_names(roles.iter().copied()),
            ..Principal::default()
        }
    }

    fn ctx(name: &str, roles: &[&str], via: Channel) -> CallContext {
        CallContext {
            session_id: "s1".into(),
            principal: principal(name, roles),
            via,
            ..CallContext::default()
        }
    }

    fn auth(mode: AuthMode) -> AuthConfig {
        AuthConfig {
            mode,
            ..AuthConfig::default()
        }
    }

    fn found(quorum: u32) -> Approval {
        Approval {
            approval: PendingApproval {
                uuid: "a1".into(),
                conversation_id: "c1".into(),
                tool_name: "delete".into(),
                tool_args: serde_json::json!({"path": "/tmp/x"}),
                requested_by: Some("alice".into()),
                quorum,
                ..PendingApproval::default()
            },
            message_id: "m1".into(),
            server: None,
            status: ApprovalStatus::Pending,
            reason: None,
            decided_by: None,
            decided_at: None,
            traceparent: None,
            expires_in: None,
            remote_approval: None,
            receipt: None,
            upstream_receipt: None,
        }
    }

    fn proxy() -> Approval {
        let mut a = found(1);
        a.approval.remote_task_id = Some("t1".into());
        a
    }

    fn decision(approve: bool) -> DecisionRequest {
        DecisionRequest {
            approve,
            reason: (!approve).then(|| "no".to_string()),
            arguments: None,
            grant: None,
            upstream_receipt: None,
        }
    }

    fn forbidden(r: Result<bool, EngineError>) -> String {
        match r {
            Err(EngineError::Forbidden(m)) => m,
            other => panic!("expected Forbidden, got {other:?}"),
        }
    }

    #[test]
    fn anyone_decides_in_auth_mode_none() {
        let a = found(1).approval;
        let who = principal("alice", &[]);
        assert!(!who_may_decide(&auth(AuthMode::None), &a, &who).expect("may"));
    }

    #[test]
    fn deciding_needs_the_approver_role() {
        let a = found(1).approval;
        let m = forbidden(who_may_decide(
            &auth(AuthMode::Tokens),
            &a,
            &principal("bob", &["requester"]),
        ));
        assert!(m.contains("bob may not decide approvals"), "{m}");
        assert!(
            !who_may_decide(
                &auth(AuthMode::Tokens),
                &a,
                &principal("bob", &["approver"])
            )
            .expect("may")
        );
    }

    #[test]
    fn separation_of_duties_refuses_the_requester_unless_an_admin_overrides() {
        let a = found(1).approval;
        let m = forbidden(who_may_decide(
            &auth(AuthMode::Tokens),
            &a,
            &principal("alice", &["approver"]),
        ));
        assert!(m.contains("separation of duties"), "{m}");
        assert!(
            who_may_decide(&auth(AuthMode::Tokens), &a, &principal("alice", &["admin"]))
                .expect("overrides")
        );
        let off = AuthConfig {
            separation_of_duties: Some(false),
            ..auth(AuthMode::Tokens)
        };
        assert!(!who_may_decide(&off, &a, &principal("alice", &["approver"])).expect("may"));
    }

    #[test]
    fn the_rules_approvers_must_admit_the_decider() {
        let mut a = found(1).approval;
        a.rule = Some("prod".into());
        a.approvers = vec!["carol".into()];
        let m = forbidden(who_may_decide(
            &auth(AuthMode::Tokens),
            &a,
            &principal("bob", &["approver"]),
        ));
        assert_eq!(
            m,
            "bob may not decide this approval: the rule `prod` lets carol decide it"
        );
        assert!(
            !who_may_decide(
                &auth(AuthMode::Tokens),
                &a,
                &principal("carol", &["approver"])
            )
            .expect("may")
        );
        // In mode none the approvers are not checked.
        assert!(!who_may_decide(&auth(AuthMode::None), &a, &principal("bob", &[])).expect("may"));
    }

    #[test]
    fn only_an_approval_carries_a_grant() {
        assert!(grant_request(&decision(true)).expect("none").is_none());
        let req = GrantRequest {
            duration: Some("1h".into()),
            ..GrantRequest::default()
        };
        let mut yes = decision(true);
        yes.grant = Some(req.clone());
        assert_eq!(grant_request(&yes).expect("granted"), Some(&req));
        let mut no = decision(false);
        no.grant = Some(req);
        match grant_request(&no) {
            Err(EngineError::Invalid(m)) => {
                assert!(m.contains("a rejection grants nothing"), "{m}")
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn a_quorum_counts_principals_or_sessions() {
        let c = ctx("bob", &["approver"], Channel::Rest);
        assert_eq!(voter(AuthMode::Tokens, &found(1).approval, &c), None);
        assert_eq!(
            voter(AuthMode::Tokens, &found(2).approval, &c),
            Some("bob".into())
        );
        assert_eq!(
            voter(AuthMode::None, &found(2).approval, &c),
            Some("session:s1".into())
        );
    }

    #[test]
    fn the_record_answers_a_rejected_local_call_now() {
        let c = ctx("bob", &["approver"], Channel::Slack);
        let r = record(&found(1), &decision(false), &c, false, None, None, None);
        assert_eq!(
            (
                r.uuid.as_str(),
                r.conversation_id.as_str(),
                r.message_id.as_str()
            ),
            ("a1", "c1", "m1")
        );
        assert_eq!(r.answer, Some(declined_text(Some("no"))));
        assert_eq!(r.by.via, Channel::Slack);
        assert_eq!(r.by.name, "bob");
        assert!(!r.expires && r.edited.is_none() && r.link.is_none());
        // A rejected proxy approval is forwarded by the turn; an approval runs.
        assert_eq!(
            record(&proxy(), &decision(false), &c, false, None, None, None).answer,
            None
        );
        assert_eq!(
            record(&found(1), &decision(true), &c, false, None, None, None).answer,
            None
        );
    }

    #[test]
    fn the_record_carries_an_edit_and_what_it_changed() {
        let c = ctx("bob", &["approver"], Channel::Rest);
        let mut d = decision(true);
        d.arguments = Some(serde_json::json!({"path": "/tmp/y"}));
        let mut a = found(2);
        a.approval.expires_at = Some("2099-01-01T00:00:00Z".into());
        let r = record(
            &a,
            &d,
            &c,
            true,
            Some("bob".into()),
            Some("l1".into()),
            None,
        );
        let (after, changes) = r.edited.expect("edited");
        assert_eq!(after, serde_json::json!({"path": "/tmp/y"}));
        assert_eq!(
            changes,
            crate::engine::calls::edit::diff(&a.approval.tool_args, &after)
        );
        assert!(r.overrides && r.expires);
        assert_eq!(
            (r.voter.as_deref(), r.link.as_deref()),
            (Some("bob"), Some("l1"))
        );
    }

    #[test]
    fn the_write_refuses_as_the_caller_hears_it() {
        let v = Some("bob".to_string());
        assert!(refusal(&Decided::Done, "a1", &v).is_none());
        assert!(
            refusal(
                &Decided::Voted {
                    approvals: 1,
                    quorum: 2
                },
                "a1",
                &v
            )
            .is_none()
        );
        assert!(matches!(
            refusal(&Decided::Lost(ApprovalStatus::Expired), "a1", &v),
            Some(EngineError::AlreadyDecided {
                status: ApprovalStatus::Expired,
                ..
            })
        ));
        assert!(matches!(
            refusal(&Decided::LinkUsed, "a1", &v),
            Some(EngineError::LinkUsed)
        ));
        match refusal(&Decided::AlreadyVoted, "a1", &v) {
            Some(EngineError::AlreadyVoted { uuid, voter }) => {
                assert_eq!((uuid.as_str(), voter.as_str()), ("a1", "bob"))
            }
            other => panic!("expected AlreadyVoted, got {other:?}"),
        }
    }

    #[test]
    fn slack_hears_what_was_recorded_and_nothing_of_a_refusal() {
        let voted = Decided::Voted {
            approvals: 1,
            quorum: 3,
        };
        assert_eq!(early_report(&Decided::Done), Some(Decided::Done));
        assert_eq!(early_report(&voted), Some(voted));
        assert_eq!(early_report(&Decided::AlreadyVoted), None);
        assert_eq!(early_report(&Decided::LinkUsed), None);
        let lost = Decided::Lost(ApprovalStatus::Approved);
        assert_eq!(early_report(&lost), None);
        assert_eq!(
            (outcome_label(true), outcome_label(false)),
            ("approved", "rejected")
        );
    }

    #[test]
    fn the_turn_gets_an_approved_local_call_as_decided() {
        let c = ctx("bob", &["approver"], Channel::Ui);
        let mut d = decision(true);
        d.reason = Some("fine".into());
        d.arguments = Some(serde_json::json!({"path": "/tmp/y"}));
        let a = handed_over(found(1), &d, &c).expect("handed over");
        assert_eq!(a.status, ApprovalStatus::Approved);
        assert_eq!(a.reason.as_deref(), Some("fine"));
        assert_eq!(a.decided_by.as_deref(), Some("bob"));
        assert_eq!(a.approval.edited_args, d.arguments);
        assert_eq!(a.approval.edited_by.as_deref(), Some("bob"));
        assert!(handed_over(found(1), &decision(false), &c).is_none());
        assert!(handed_over(proxy(), &decision(true), &c).is_none());
    }
}
