//! The state of one unanswered tool call, computed once from its stored
//! rows (the message, its latest question round, its approval) before
//! anything acts on it. Each state says what the call may still do; the
//! promise that a tool never runs twice rests on two of them: a call whose
//! approval went `executing` (or beyond) is [`CallState::Claimed`] and is
//! never started again, and every state that may start the tool does so
//! only through the store's claim, which lets one writer through.

use crate::store::approvals::Approval;
use crate::store::questions::{Era, StoredQuestion};
use crate::store::{Store, StoreError, StoredMessage};
use app::models::{ApprovalStatus, PendingApproval, Question, QuestionStatus};

/// What the turn already knows about a call's rows, so they need no read.
#[derive(Debug)]
pub(crate) enum Known {
    /// Nothing: the rows are read.
    Nothing,
    /// This turn's own step recorded the call, under the turn's lease: no
    /// approval and no question can exist for it yet (one round trip less
    /// per call on PostgreSQL).
    RecordedHere,
    /// The call's approval as the decision that resumed this turn left it
    /// (under this turn's lease); a decided call has asked no question
    /// since, so its round is not read either.
    Decided(Box<Approval>),
}

/// What the stored rows say about one unanswered call.
#[derive(Debug)]
pub(crate) enum CallState {
    /// Nobody has ruled on it: no approval, no open question. It meets
    /// the gate (rules, annotations, pins, grants), which says whether it
    /// runs, asks or is denied.
    Unruled,
    /// Its approval waits for a decision: the turn pauses on it; the call
    /// does nothing.
    Pending(Box<PendingApproval>),
    /// Approved and not started: it may start once, through the store's
    /// claim (`approved` → `executing`), with the approver's edit if any.
    Approved(Box<Approval>),
    /// Its approval expired: never run; the model hears why (a sub-agent
    /// waiting on it hears a rejection).
    Expired(Box<Approval>),
    /// Rejected by an operator: never run; the model hears the reason (a
    /// sub-agent waiting on it hears the rejection).
    Rejected(Box<Approval>),
    /// Its approval was cancelled: never run, nothing is forwarded.
    Cancelled(Box<Approval>),
    /// Its approval went `executing` (or `in_doubt`, `executed`,
    /// `failed`): the tool was started once and is never started again.
    /// It is only unanswered if a result write was lost; it is answered
    /// as in doubt.
    Claimed,
    /// It asked the human (a question round, or a sub-agent's question)
    /// and this question is still open: the turn pauses on it.
    Asking(Box<Question>),
    /// Its question round (MCP 2026-07-28) is answered: the call is
    /// retried once with the answers, through the store's claim.
    RoundAnswered(Vec<StoredQuestion>),
    /// A sub-agent's question is answered (or expired) and not yet sent
    /// on: the answer is relayed once, through the store's relay claim.
    ProxyAnswered(Box<StoredQuestion>),
}

impl CallState {
    /// Reads what `known` does not say, and classifies. The round is read
    /// only for a call at rest (not started), where one can be open.
    pub(crate) async fn read(
        store: &Store,
        call: &StoredMessage,
        known: Known,
    ) -> Result<CallState, StoreError> {
        if let Ok(state) = CallState::without_reads(known) {
            return Ok(state);
        }
        if call.started_at.is_none()
            && let Some(state) = CallState::of_round(store.latest_round(&call.message.id).await?)
        {
            return Ok(state);
        }
        let approval = store.approval_for_message(&call.message.id).await?;
        Ok(CallState::of_approval(approval))
    }

    /// The state `known` gives without a read; `Err` (giving it back) when
    /// the rows must be read.
    pub(crate) fn without_reads(known: Known) -> Result<CallState, Known> {
        match known {
            Known::RecordedHere => Ok(CallState::Unruled),
            Known::Decided(a) => Ok(CallState::of_approval(Some(*a))),
            Known::Nothing => Err(Known::Nothing),
        }
    }

    /// The state a call's latest question round gives it, if it gives one:
    /// a sub-agent's question not yet relayed, or an MCP round. A relayed
    /// proxy question or a live session's question leaves the call to its
    /// approval.
    pub(crate) fn of_round(round: Vec<StoredQuestion>) -> Option<CallState> {
        let first = round.first()?;
        let open = |q: &StoredQuestion| q.question.status == QuestionStatus::Pending;
        match first.era {
            Era::Proxy if !first.relayed => Some(if open(first) {
                CallState::Asking(Box::new(first.question.clone()))
            } else {
                CallState::ProxyAnswered(Box::new(first.clone()))
            }),
            Era::Round => Some(match round.iter().find(|q| open(q)) {
                Some(q) => CallState::Asking(Box::new(q.question.clone())),
                None => CallState::RoundAnswered(round),
            }),
            Era::Proxy | Era::Session => None,
        }
    }

    /// The state a call's approval (or its absence) gives it.
    pub(crate) fn of_approval(approval: Option<Approval>) -> CallState {
        let Some(a) = approval else {
            return CallState::Unruled;
        };
        match a.status {
            ApprovalStatus::Pending => CallState::Pending(Box::new(a.approval)),
            ApprovalStatus::Approved => CallState::Approved(Box::new(a)),
            ApprovalStatus::Expired => CallState::Expired(Box::new(a)),
            ApprovalStatus::Rejected => CallState::Rejected(Box::new(a)),
            ApprovalStatus::Cancelled => CallState::Cancelled(Box::new(a)),
            ApprovalStatus::Executing
            | ApprovalStatus::InDoubt
            | ApprovalStatus::Executed
            | ApprovalStatus::Failed => CallState::Claimed,
        }
    }

    /// Whether a call in this state may start its tool (or send to its
    /// sub-agent). Even then it starts only through the store's claim, so
    /// of two writers that both see this state, one runs.
    pub(crate) fn may_start(&self) -> bool {
        match self {
            // An unruled call starts only if the gate says so.
            CallState::Unruled
            | CallState::Approved(_)
            | CallState::RoundAnswered(_)
            | CallState::ProxyAnswered(_) => true,
            CallState::Pending(_)
            | CallState::Expired(_)
            | CallState::Rejected(_)
            | CallState::Cancelled(_)
            | CallState::Claimed
            | CallState::Asking(_) => false,
        }
    }

    /// The state's name, for the logs.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            CallState::Unruled => "unruled",
            CallState::Pending(_) => "pending",
            CallState::Approved(_) => "approved",
            CallState::Expired(_) => "expired",
            CallState::Rejected(_) => "rejected",
            CallState::Cancelled(_) => "cancelled",
            CallState::Claimed => "claimed",
            CallState::Asking(_) => "asking",
            CallState::RoundAnswered(_) => "round_answered",
            CallState::ProxyAnswered(_) => "proxy_answered",
        }
    }

    /// Whether the turn pauses on a call in this state.
    pub(crate) fn pauses(&self) -> bool {
        matches!(self, CallState::Pending(_) | CallState::Asking(_))
    }
}

#[cfg(test)]
mod tests {
    use super::{CallState, Known};
    use crate::store::approvals::Approval;
    use crate::store::questions::{Era, StoredQuestion};
    use app::models::{
        ApprovalStatus, PendingApproval, Question, QuestionCall, QuestionKind, QuestionStatus,
    };

    fn approval(status: ApprovalStatus) -> Approval {
        Approval {
            approval: PendingApproval {
                uuid: "a1".into(),
                ..PendingApproval::default()
            },
            message_id: "m1".into(),
            server: None,
            status,
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

    fn question(uuid: &str, era: Era, status: QuestionStatus, relayed: bool) -> StoredQuestion {
        StoredQuestion {
            question: Question {
                uuid: uuid.into(),
                conversation_id: "c1".into(),
                tool_call: QuestionCall {
                    tool: "t".into(),
                    server: None,
                    arguments: serde_json::json!({}),
                },
                kind: QuestionKind::Form,
                message: "?".into(),
                schema: None,
                url: None,
                status,
                asked_at: String::new(),
                answered_by: None,
                answered_via: None,
                answered_at: None,
                expires_at: None,
                chain: Vec::new(),
                requested_by: None,
            },
            message_id: "m1".into(),
            round: "r1".into(),
            era,
            key: Some(uuid.into()),
            elicitation_id: None,
            state: None,
            answered: Default::default(),
            action: None,
            content: None,
            remote: None,
            relayed,
        }
    }

    #[test]
    fn no_approval_is_unruled_and_may_start_through_the_gate() {
        let s = CallState::of_approval(None);
        assert!(matches!(s, CallState::Unruled));
        assert!(s.may_start());
        assert!(!s.pauses());
    }

    #[test]
    fn a_pending_approval_pauses_and_never_starts() {
        let s = CallState::of_approval(Some(approval(ApprovalStatus::Pending)));
        assert!(matches!(&s, CallState::Pending(a) if a.uuid == "a1"));
        assert!(!s.may_start());
        assert!(s.pauses());
    }

    #[test]
    fn an_approved_call_may_start_once() {
        let s = CallState::of_approval(Some(approval(ApprovalStatus::Approved)));
        assert!(matches!(s, CallState::Approved(_)));
        assert!(s.may_start());
        assert!(!s.pauses());
    }

    #[test]
    fn an_expired_approval_never_starts() {
        let s = CallState::of_approval(Some(approval(ApprovalStatus::Expired)));
        assert!(matches!(s, CallState::Expired(_)));
        assert!(!s.may_start());
    }

    #[test]
    fn a_rejected_call_never_starts() {
        let s = CallState::of_approval(Some(approval(ApprovalStatus::Rejected)));
        assert!(matches!(s, CallState::Rejected(_)));
        assert!(!s.may_start());
    }

    #[test]
    fn a_cancelled_call_never_starts() {
        let s = CallState::of_approval(Some(approval(ApprovalStatus::Cancelled)));
        assert!(matches!(s, CallState::Cancelled(_)));
        assert!(!s.may_start());
    }

    #[test]
    fn a_call_started_once_is_claimed_and_never_starts_again() {
        for status in [
            ApprovalStatus::Executing,
            ApprovalStatus::InDoubt,
            ApprovalStatus::Executed,
            ApprovalStatus::Failed,
        ] {
            let s = CallState::of_approval(Some(approval(status)));
            assert!(matches!(s, CallState::Claimed), "{status:?}");
            assert!(!s.may_start(), "{status:?}");
            assert!(!s.pauses(), "{status:?}");
        }
    }

    #[test]
    fn an_open_round_question_pauses() {
        let round = vec![
            question("q1", Era::Round, QuestionStatus::Answered, false),
            question("q2", Era::Round, QuestionStatus::Pending, false),
        ];
        let s = CallState::of_round(round);
        assert!(matches!(&s, Some(CallState::Asking(q)) if q.uuid == "q2"));
        assert!(s.as_ref().is_some_and(CallState::pauses));
        assert!(!s.is_some_and(|s| s.may_start()));
    }

    #[test]
    fn an_answered_round_is_retried_once() {
        let round = vec![
            question("q1", Era::Round, QuestionStatus::Answered, false),
            question("q2", Era::Round, QuestionStatus::Expired, false),
        ];
        let s = CallState::of_round(round);
        assert!(matches!(&s, Some(CallState::RoundAnswered(r)) if r.len() == 2));
        assert!(s.is_some_and(|s| s.may_start()));
    }

    #[test]
    fn an_open_proxy_question_pauses() {
        let s = CallState::of_round(vec![question(
            "q1",
            Era::Proxy,
            QuestionStatus::Pending,
            false,
        )]);
        assert!(matches!(&s, Some(CallState::Asking(q)) if q.uuid == "q1"));
    }

    #[test]
    fn an_answered_proxy_question_is_relayed_once() {
        let s = CallState::of_round(vec![question(
            "q1",
            Era::Proxy,
            QuestionStatus::Declined,
            false,
        )]);
        assert!(matches!(&s, Some(CallState::ProxyAnswered(q)) if q.question.uuid == "q1"));
        assert!(s.is_some_and(|s| s.may_start()));
    }

    #[test]
    fn a_relayed_proxy_question_or_a_session_question_leaves_the_call_to_its_approval() {
        let relayed = vec![question("q1", Era::Proxy, QuestionStatus::Answered, true)];
        assert!(CallState::of_round(relayed).is_none());
        let session = vec![question("q1", Era::Session, QuestionStatus::Pending, false)];
        assert!(CallState::of_round(session).is_none());
        assert!(CallState::of_round(Vec::new()).is_none());
    }

    #[test]
    fn a_call_recorded_here_is_unruled_without_a_read() {
        let s = CallState::without_reads(Known::RecordedHere);
        assert!(matches!(s, Ok(CallState::Unruled)));
    }

    #[test]
    fn a_decided_call_takes_the_decision_without_a_read() {
        let s =
            CallState::without_reads(Known::Decided(Box::new(approval(ApprovalStatus::Approved))));
        assert!(matches!(s, Ok(CallState::Approved(_))));
        let s =
            CallState::without_reads(Known::Decided(Box::new(approval(ApprovalStatus::Rejected))));
        assert!(matches!(s, Ok(CallState::Rejected(_))));
    }

    #[test]
    fn a_call_the_turn_knows_nothing_of_is_read() {
        assert!(matches!(
            CallState::without_reads(Known::Nothing),
            Err(Known::Nothing)
        ));
    }
}
