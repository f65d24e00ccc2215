//! Decisions, each one transaction with its audit row: an operator's
//! approve or reject (a conditional move out of `pending`: the loser of a
//! race learns the state it lost to), a cancelled conversation, and a
//! paused run abandoned because the config changed under it.

use super::approvals::{Approval, Decider};
use super::audit::Event;
use super::error::StoreError;
use super::facade::Store;
use super::messages::NewMessage;
use super::outbox::Routes;
use super::questions::RemoteTask;
use super::tx::Tx;
use crate::domain::digest::digest;
use crate::domain::ids::now;
use app::models::{ApprovalStatus, ConversationStatus, Role};
use app::pipeline::{PipelineState, RunStatus};
use serde_json::Value;
use std::ops::ControlFlow::{self, Break, Continue};

/// An operator's decision on one approval.
#[derive(Clone, Debug)]
pub(crate) struct DecisionRecord {
    pub(crate) uuid: String,
    pub(crate) conversation_id: String,
    /// The call the approval gates.
    pub(crate) message_id: String,
    pub(crate) approve: bool,
    pub(crate) reason: Option<String>,
    pub(crate) by: Decider,
    /// The call's result when it is answered now (a rejected local call);
    /// `None` leaves it to the turn (an approval, or a rejected proxy
    /// approval, which the turn forwards to the remote task).
    pub(crate) answer: Option<String>,
    /// The decider overrode separation of duties (admins only).
    pub(crate) overrides: bool,
    pub(crate) tool: String,
    pub(crate) arguments: serde_json::Value,
    /// Who votes, with a quorum above one: the principal's name, or
    /// `session:<id>` in auth mode `none`. `None`: one decision decides.
    pub(crate) voter: Option<String>,
    /// The approval has a deadline: it is read again under its lock, and a
    /// decision after it is refused (the sweeper expires it).
    pub(crate) expires: bool,
    /// An approval with edited arguments (POLICY.md §3): the arguments and
    /// what changed, one line per pointer.
    pub(crate) edited: Option<(serde_json::Value, Vec<String>)>,
    /// Decided through a signed link (POLICY.md §5): its id, recorded as
    /// used in the decision's transaction (a link works once).
    pub(crate) link: Option<String>,
    /// An approval that grants later calls (REACH.md §3): written with
    /// `grant.created` when the approval moves to approved.
    pub(crate) grant: Option<super::grants::GrantRow>,
    /// The upstream agent's receipt that came with an A2A continuation
    /// approving it (RECEIPTS.md §1), kept with the approval.
    pub(crate) upstream_receipt: Option<String>,
}

/// What a decision did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decided {
    /// The approval moved to approved or rejected.
    Done,
    /// A vote short of the quorum was recorded: `approvals` of `quorum`.
    Voted { approvals: usize, quorum: usize },
    /// This voter had voted already.
    AlreadyVoted,
    /// The approval had left `pending` (the state it is in).
    Lost(ApprovalStatus),
    /// The signed link had been used already.
    LinkUsed,
}

impl Store {
    /// Records a decision: `pending` → `approved`/`rejected`, audited as
    /// `approval.decided`, the conversation active and its turn running
    /// again. With a quorum (`voter` set) the vote is recorded first, under
    /// the approval's row lock, and audited as `approval.voted`; the first
    /// rejection rejects, and the approval moves on only with the quorum's
    /// last approving vote.
    pub(crate) async fn decide(&self, d: DecisionRecord) -> Result<Decided, StoreError> {
        let routes = self.notify_routes.clone();
        self.write(move |tx| decide_in(tx, &routes, &d)).await
    }

    /// Cancels a conversation: every pending or approved action is
    /// cancelled (audited, its call answered), any other call left without
    /// a result is answered, a running or paused pipeline
    /// run stops, `note(n)` (n: actions cancelled) is appended and the
    /// conversation is `cancelled`. Returns n and the remote tasks that
    /// waited with those actions.
    pub(crate) async fn cancel_conversation(
        &self,
        id: &str,
        by: Decider,
        note: impl FnOnce(usize) -> String + Send + 'static,
    ) -> Result<(usize, Vec<RemoteTask>), StoreError> {
        let id = id.to_string();
        self.write(move |tx| {
            const WHY: &str = "the task was cancelled";
            const NOT_RUN: &str =
                "Cancelled: the task was cancelled before this action ran; it was not run.";
            let cancelled = cancel_waiting(tx, &id, Some(&by), WHY, NOT_RUN)?;
            let asked_below = super::questions::cancel_pending(
                tx,
                &id,
                super::questions::Cancel::Task { by: &by.name },
            )?;
            // A turn stopped by the cancel may leave calls of its last step
            // unanswered: they are answered too, so the next turn's
            // transcript has a result for every call (one that had started
            // may have taken effect).
            for m in tx.messages(&id)? {
                if m.is_unanswered_call() {
                    let text = match m.started_at {
                        Some(_) => super::recovery::IN_DOUBT_TEXT,
                        None => NOT_RUN,
                    };
                    tx.set_result(&m.message.id, text, true)?;
                }
            }
            if let Some(mut ps) = tx.pipeline_state(&id)?
                && matches!(ps.status, RunStatus::Running | RunStatus::Paused)
            {
                ps.status = RunStatus::Stopped;
                ps.error = Some(WHY.into());
                ps.pending.clear();
                ps.updated_at = now();
                tx.set_pipeline_state(&id, &ps)?;
            }
            let n = cancelled.len();
            let remote = cancelled.into_iter().flatten().chain(asked_below).collect();
            tx.append(&id, NewMessage::text(Role::System, note(n)))?;
            tx.set_status(&id, ConversationStatus::Cancelled)?;
            tx.set_turn_running(&id, false)?;
            Ok((n, remote))
        })
        .await
    }

    /// A paused run that cannot resume under the current config: its
    /// waiting actions are cancelled and not run, the run (if given) is
    /// `failed` with `note`, and the conversation is open again.
    pub(crate) async fn abandon_run(
        &self,
        id: &str,
        run: Option<PipelineState>,
        note: String,
    ) -> Result<(), StoreError> {
        let id = id.to_string();
        self.write(move |tx| {
            cancel_waiting(
                tx,
                &id,
                None,
                "the config changed",
                "Not run: the config changed while this action waited.",
            )?;
            if let Some(mut ps) = run {
                ps.status = RunStatus::Failed;
                ps.error = Some(note.clone());
                ps.pending.clear();
                ps.updated_at = now();
                tx.set_pipeline_state(&id, &ps)?;
            }
            tx.append(&id, NewMessage::text(Role::System, note))?;
            tx.set_status(&id, ConversationStatus::Active)?;
            tx.set_turn_running(&id, false)?;
            Ok(())
        })
        .await
    }
}

/// [`Store::decide`]'s transaction, in its steps: the signed link spent,
/// the approval locked (deadline, quorum), the vote, then the decision
/// itself.
fn decide_in(tx: &dyn Tx, routes: &Routes, d: &DecisionRecord) -> Result<Decided, StoreError> {
    if let Some(link) = &d.link
        && !tx.use_link(link, &d.uuid, &d.by.name, &now())?
    {
        return Ok(Decided::LinkUsed);
    }
    let locked = match lock_for_decision(tx, d)? {
        Continue(locked) => locked,
        Break(lost) => return Ok(lost),
    };
    let mut voters = None;
    if let (Some(voter), Some(a)) = (&d.voter, &locked) {
        match vote(tx, d, voter, a)? {
            Continue(all) => voters = Some(all),
            Break(counted) => return Ok(counted),
        }
    }
    settle_decision(tx, routes, d, voters)
}

/// An approval with a deadline or a quorum is read once, under its row
/// lock: the deadline and the votes are checked as they stand when this
/// decision commits. Breaks with what the decision lost to.
fn lock_for_decision(
    tx: &dyn Tx,
    d: &DecisionRecord,
) -> Result<ControlFlow<Decided, Option<Approval>>, StoreError> {
    if !d.expires && d.voter.is_none() {
        return Ok(Continue(None));
    }
    let a = match tx.lock_approval(&d.uuid)? {
        None => return Ok(Break(Decided::Lost(ApprovalStatus::Cancelled))),
        Some(a) if a.status != ApprovalStatus::Pending => {
            return Ok(Break(Decided::Lost(a.status)));
        }
        Some(a) => a,
    };
    if a.approval
        .expires_at
        .as_deref()
        .is_some_and(|at| at <= now().as_str())
    {
        return Ok(Break(Decided::Lost(ApprovalStatus::Expired)));
    }
    Ok(Continue(Some(a)))
}

/// A quorum's vote, recorded and audited (`approval.voted`) under the
/// row lock. Continues with every voter when this vote decides (the first
/// rejection, or the quorum's last approval); breaks when it does not
/// (already voted, or approvals still short of the quorum).
fn vote(
    tx: &dyn Tx,
    d: &DecisionRecord,
    voter: &str,
    a: &Approval,
) -> Result<ControlFlow<Decided, Vec<String>>, StoreError> {
    let mut votes = a.approval.votes.clone();
    if votes.iter().any(|v| v.by == voter) {
        return Ok(Break(Decided::AlreadyVoted));
    }
    votes.push(app::models::Vote {
        by: voter.to_string(),
        approve: d.approve,
        at: now(),
        via: d.by.via.to_string(),
        reason: d.reason.clone(),
    });
    let json = serde_json::to_string(&votes).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    tx.set_votes(&d.uuid, &json)?;
    let (approvals, quorum) = (
        votes.iter().filter(|v| v.approve).count(),
        a.approval.needed(),
    );
    tx.audit(&Event {
        actor: &d.by.name,
        event: "approval.voted",
        conversation_id: Some(&d.conversation_id),
        approval_uuid: Some(&d.uuid),
        details: serde_json::json!({
            "vote": if d.approve { "approve" } else { "reject" },
            "voter": voter,
            "reason": d.reason,
            "via": d.by.via,
            "session_id": d.by.session,
            "approvals": approvals,
            "quorum": quorum,
        }),
    })?;
    if d.approve && approvals < quorum {
        return Ok(Break(Decided::Voted { approvals, quorum }));
    }
    Ok(Continue(votes.into_iter().map(|v| v.by).collect()))
}

/// The decision itself: `pending` → `approved`/`rejected` (or what it
/// lost to), the edited arguments, `approval.decided` audited and
/// announced, the call's answer, the grant, and the conversation active
/// with its turn running again.
fn settle_decision(
    tx: &dyn Tx,
    routes: &Routes,
    d: &DecisionRecord,
    voters: Option<Vec<String>>,
) -> Result<Decided, StoreError> {
    let to = if d.approve {
        ApprovalStatus::Approved
    } else {
        ApprovalStatus::Rejected
    };
    if !tx.transition(
        &d.uuid,
        &[ApprovalStatus::Pending],
        to,
        Some(&d.by),
        d.reason.as_deref(),
    )? {
        let now = tx
            .approval(&d.uuid)?
            .map(|a| a.status)
            .unwrap_or(ApprovalStatus::Cancelled);
        return Ok(Decided::Lost(now));
    }
    let details = decided_details(d, voters);
    if let Some((args, _)) = &d.edited {
        let json = serde_json::to_string(args).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        tx.set_edited(&d.uuid, &json, &d.by.name)?;
    }
    if let (true, Some(r)) = (d.approve, &d.upstream_receipt) {
        tx.set_upstream_receipt(&d.uuid, r)?;
    }
    tx.audit(&Event {
        actor: &d.by.name,
        event: "approval.decided",
        conversation_id: Some(&d.conversation_id),
        approval_uuid: Some(&d.uuid),
        details,
    })?;
    if routes.wants("approval.decided")
        && let Some(a) = tx.approval(&d.uuid)?
    {
        super::outbox::announce(
            tx,
            routes,
            "approval.decided",
            &a,
            serde_json::json!({
                "decision": if d.approve { "approved" } else { "rejected" },
                "decided_by": d.by.name,
                "decided_via": d.by.via,
                "reason": d.reason,
            }),
        )?;
    }
    if let Some(text) = &d.answer {
        tx.set_result(&d.message_id, text, true)?;
    }
    if let Some(g) = d.grant.as_ref().filter(|_| d.approve) {
        tx.insert_grant(g)?;
        super::grants::audit_created(tx, g)?;
    }
    tx.set_status(&d.conversation_id, ConversationStatus::Active)?;
    tx.set_turn_running(&d.conversation_id, true)?;
    Ok(Decided::Done)
}

/// What `approval.decided` records: the decision, its channel and session,
/// the tool and its arguments' digest, an override, the quorum's voters and
/// an edit.
fn decided_details(d: &DecisionRecord, voters: Option<Vec<String>>) -> Value {
    let mut details = serde_json::json!({
        "decision": if d.approve { "approved" } else { "rejected" },
        "reason": d.reason,
        "via": d.by.via,
        "session_id": d.by.session,
        "tool": d.tool,
        "arguments_digest": digest(&d.arguments),
    });
    if d.overrides {
        details["override"] = "separation_of_duties".into();
    }
    if let Some(v) = voters {
        details["voters"] = v.into();
    }
    if let Some((args, changes)) = &d.edited {
        details["edited"] = true.into();
        details["edited_arguments_digest"] = digest(args).into();
        details["changes"] = changes.clone().into();
    }
    details
}

/// Cancels every pending or approved action of a conversation (audited as
/// `approval.cancelled`, each call answered with `answer`); one entry per
/// action: the remote task it waited on, if any.
fn cancel_waiting(
    tx: &dyn Tx,
    id: &str,
    by: Option<&Decider>,
    why: &str,
    answer: &str,
) -> Result<Vec<Option<RemoteTask>>, StoreError> {
    let mut out = Vec::new();
    for status in [ApprovalStatus::Pending, ApprovalStatus::Approved] {
        for a in tx.approvals_of(id, status)? {
            tx.transition(
                &a.approval.uuid,
                &[status],
                ApprovalStatus::Cancelled,
                by,
                Some(why),
            )?;
            let details = match by {
                Some(d) => {
                    serde_json::json!({"reason": why, "via": d.via, "session_id": d.session})
                }
                None => serde_json::json!({"reason": why}),
            };
            tx.audit(&Event {
                actor: by.map(|d| d.name.as_str()).unwrap_or("agent"),
                event: "approval.cancelled",
                conversation_id: Some(id),
                approval_uuid: Some(&a.approval.uuid),
                details,
            })?;
            tx.set_result(&a.message_id, answer, true)?;
            out.push(
                a.approval
                    .remote_task_id
                    .clone()
                    .zip(a.approval.remote_agent_name.clone())
                    .map(|(task, agent)| (agent, task)),
            );
        }
    }
    Ok(out)
}
