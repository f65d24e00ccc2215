//! The store suite both backends pass: each test runs on SQLite (a temp
//! file) and on PostgreSQL (a fresh database in the cluster named by
//! `STOPGO_TEST_DATABASE_URL`, which `make test` starts with
//! `scripts/pg.sh`).

use super::approvals::{Decider, NewApproval};
use super::conversations::Page;
use super::*;
use app::models::{ApprovalStatus, ConversationStatus, Role, ToolCall};

/// A fresh, empty store of each kind (the guard keeps it alive).
async fn stores() -> Vec<(&'static str, Box<dyn std::any::Any + Send>, Store)> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open(dir.path()).unwrap();
    let pg = replica(&pg_database().await, 30).await;
    vec![
        ("sqlite", Box::new(dir), sqlite),
        ("postgres", Box::new(()), pg),
    ]
}

/// A fresh database in the test cluster: its URL.
pub(crate) async fn pg_database() -> String {
    tokio::task::spawn_blocking(|| test_support::postgres::fresh_database("t"))
        .await
        .unwrap()
}

/// One replica's store on the database at `url`.
pub(crate) async fn replica(url: &str, lease_seconds: u32) -> Store {
    let url = url.to_string();
    tokio::task::spawn_blocking(move || Store::open_postgres(&url, Some(8), lease_seconds, None))
        .await
        .unwrap()
        .unwrap()
}

/// `name` asking in session "s".
fn requester(name: &str) -> Requester {
    Requester {
        name: name.into(),
        session: "s".into(),
        message_id: None,
        context_id: None,
    }
}

fn op() -> Decider {
    Decider {
        name: "op".into(),
        via: crate::domain::channel::Channel::Rest,
        session: "s".into(),
    }
}

/// A conversation waiting on one approval: `(conversation, call, uuid)`.
async fn waiting(s: &Store) -> (String, String, String) {
    waiting_for(s, 1).await
}

/// [`waiting`] on an approval that needs `quorum` approvers.
async fn waiting_for(s: &Store, quorum: u32) -> (String, String, String) {
    waiting_with(s, |a| NewApproval { quorum, ..a }).await
}

/// [`waiting`] on the approval `shape` makes of the usual one.
async fn waiting_with(
    s: &Store,
    shape: impl FnOnce(NewApproval) -> NewApproval,
) -> (String, String, String) {
    let c = s
        .open_conversation(requester("alice"), Some("add x 1".into()))
        .await
        .unwrap();
    let call = s
        .append_message(
            c.id.clone(),
            NewMessage {
                tool_call: Some(ToolCall {
                    name: "add".into(),
                    arguments: serde_json::json!({"x": 1}),
                    ..Default::default()
                }),
                ..NewMessage::text(Role::Tool, "")
            },
        )
        .await
        .unwrap()
        .unwrap();
    let a = s
        .request_approval(shape(add_approval(&c.id, &call.id, "Run add")), true, None)
        .await
        .unwrap();
    (c.id, call.id, a.approval.uuid)
}

/// An approval of one `add` for the call `mid` of `cid`.
fn add_approval(cid: &str, mid: &str, description: &str) -> NewApproval {
    NewApproval {
        conversation_id: cid.into(),
        message_id: mid.into(),
        tool_name: "add".into(),
        server: None,
        tool_args: serde_json::json!({"x": 1}),
        description: description.into(),
        remote: None,
        traceparent: None,
        rule: None,
        approvers: Vec::new(),
        quorum: 1,
        expires_in: None,
    }
}

fn decision(cid: &str, mid: &str, uuid: &str, approve: bool) -> DecisionRecord {
    DecisionRecord {
        uuid: uuid.into(),
        conversation_id: cid.into(),
        message_id: mid.into(),
        approve,
        reason: None,
        by: op(),
        answer: (!approve).then(|| "declined".into()),
        overrides: false,
        tool: "add".into(),
        arguments: serde_json::json!({"x": 1}),
        voter: None,
        expires: false,
        edited: None,
        link: None,
        grant: None,
        upstream_receipt: None,
    }
}

/// [`decision`] as one vote of `voter`.
fn vote(cid: &str, mid: &str, uuid: &str, approve: bool, voter: &str) -> DecisionRecord {
    DecisionRecord {
        voter: Some(voter.into()),
        ..decision(cid, mid, uuid, approve)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_counts_distinct_voters_and_one_rejection_rejects() {
    for (kind, _guard, s) in stores().await {
        let (cid, mid, uuid) = waiting_for(&s, 2).await;
        let first = s
            .decide(vote(&cid, &mid, &uuid, true, "alice"))
            .await
            .unwrap();
        assert_eq!(
            first,
            Decided::Voted {
                approvals: 1,
                quorum: 2
            },
            "{kind}"
        );
        let again = s
            .decide(vote(&cid, &mid, &uuid, true, "alice"))
            .await
            .unwrap();
        assert_eq!(again, Decided::AlreadyVoted, "{kind}");
        let a = s.approval(&uuid).await.unwrap().unwrap();
        assert_eq!(a.status, ApprovalStatus::Pending, "{kind}");
        assert_eq!(
            (a.approval.quorum, a.approval.votes.len()),
            (2, 1),
            "{kind}"
        );
        let second = s
            .decide(vote(&cid, &mid, &uuid, true, "bob"))
            .await
            .unwrap();
        assert_eq!(second, Decided::Done, "{kind}");
        let a = s.approval(&uuid).await.unwrap().unwrap();
        assert_eq!(a.status, ApprovalStatus::Approved, "{kind}");
        let by: Vec<&str> = a.approval.votes.iter().map(|v| v.by.as_str()).collect();
        assert_eq!(by, ["alice", "bob"], "{kind}");
        let late = s
            .decide(vote(&cid, &mid, &uuid, true, "carol"))
            .await
            .unwrap();
        assert_eq!(late, Decided::Lost(ApprovalStatus::Approved), "{kind}");

        let (cid, mid, uuid) = waiting_for(&s, 3).await;
        s.decide(vote(&cid, &mid, &uuid, true, "alice"))
            .await
            .unwrap();
        let no = s
            .decide(vote(&cid, &mid, &uuid, false, "bob"))
            .await
            .unwrap();
        assert_eq!(no, Decided::Done, "{kind}");
        let a = s.approval(&uuid).await.unwrap().unwrap();
        assert_eq!(a.status, ApprovalStatus::Rejected, "{kind}");
        let events: Vec<String> = s
            .read(|tx| tx.audit_page(0, 1000))
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.event)
            .collect();
        assert_eq!(
            events.iter().filter(|e| *e == "approval.voted").count(),
            4,
            "{kind}: {events:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_votes_reach_a_quorum_once() {
    for (kind, _guard, s) in stores().await {
        let (cid, mid, uuid) = waiting_for(&s, 3).await;
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let (s, d) = (s.clone(), vote(&cid, &mid, &uuid, true, &format!("p{i}")));
                tokio::spawn(async move { s.decide(d).await.unwrap() })
            })
            .collect();
        let mut outcomes = Vec::new();
        for t in tasks {
            outcomes.push(t.await.unwrap());
        }
        let done = outcomes.iter().filter(|o| **o == Decided::Done).count();
        let voted = outcomes
            .iter()
            .filter(|o| matches!(o, Decided::Voted { .. }))
            .count();
        assert_eq!((done, voted), (1, 2), "{kind}: {outcomes:?}");
        let a = s.approval(&uuid).await.unwrap().unwrap();
        assert_eq!(a.status, ApprovalStatus::Approved, "{kind}");
        assert_eq!(a.approval.votes.len(), 3, "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_racing_decisions_have_one_winner() {
    for (kind, _guard, s) in stores().await {
        let (cid, mid, uuid) = waiting(&s).await;
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let (s, d) = (s.clone(), decision(&cid, &mid, &uuid, i % 2 == 0));
                tokio::spawn(async move { s.decide(d).await.unwrap() == Decided::Done })
            })
            .collect();
        let mut won = 0;
        for t in tasks {
            won += usize::from(t.await.unwrap());
        }
        assert_eq!(won, 1, "{kind}");
        let a = s.approval(&uuid).await.unwrap().unwrap();
        assert!(
            matches!(
                a.status,
                ApprovalStatus::Approved | ApprovalStatus::Rejected
            ),
            "{kind}"
        );
        // Claimed once: a second claim of the same gate is refused.
        if a.status == ApprovalStatus::Approved {
            assert!(
                s.claim_call(&cid, &mid, Some(uuid.clone()), None)
                    .await
                    .unwrap()
                    .is_some(),
                "{kind}"
            );
            assert!(
                s.claim_call(&cid, &mid, Some(uuid.clone()), None)
                    .await
                    .unwrap()
                    .is_none(),
                "{kind}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_counts_equal_a_recount_and_items_summarise() {
    for (kind, _guard, s) in stores().await {
        let mut ids = Vec::new();
        for _ in 0..6 {
            ids.push(s.create_conversation("s".into()).await.unwrap().id);
        }
        for (i, status) in [
            (0, ConversationStatus::Completed),
            (1, ConversationStatus::Failed),
            (1, ConversationStatus::Cancelled),
            (2, ConversationStatus::WaitingApproval),
        ] {
            s.set_status(ids[i].clone(), status).await.unwrap();
        }
        for n in 0..3 {
            s.append_message(
                ids[5].clone(),
                NewMessage::text(Role::User, format!("m{n}")),
            )
            .await
            .unwrap();
        }
        let (page, kept) = s
            .list_items(PageRequest {
                limit: 200,
                ..Default::default()
            })
            .await
            .unwrap();
        let mut recount = app::models::Summary::default();
        for c in &page.conversations {
            recount.total += 1;
            match c.status {
                ConversationStatus::Active => recount.active += 1,
                ConversationStatus::WaitingApproval => recount.waiting_approval += 1,
                ConversationStatus::WaitingInput => recount.waiting_input += 1,
                ConversationStatus::Completed => recount.completed += 1,
                ConversationStatus::Failed => recount.failed += 1,
                ConversationStatus::Cancelled => recount.cancelled += 1,
            }
        }
        assert_eq!(kept, recount, "{kind}");
        assert_eq!(
            (kept.total, kept.cancelled, kept.active),
            (6, 1, 3),
            "{kind}"
        );
        let item = page.conversations.iter().find(|c| c.id == ids[5]).unwrap();
        assert_eq!(item.message_count, 3, "{kind}");
        assert_eq!(item.title.as_deref(), Some("m0"), "{kind}");
        // Paging: newest first, the cursor continues where a page ended.
        let (first, _) = s
            .list_items(PageRequest {
                limit: 4,
                ..Default::default()
            })
            .await
            .unwrap();
        let (rest, _) = s
            .list_items(PageRequest {
                limit: 4,
                before: first.next,
                ..Default::default()
            })
            .await
            .unwrap();
        let seen: Vec<_> = first
            .conversations
            .iter()
            .chain(&rest.conversations)
            .map(|c| c.id.clone())
            .collect();
        let mut newest_first = ids.clone();
        newest_first.reverse();
        assert_eq!(seen, newest_first, "{kind}");
    }
}

/// Every list page a store can be asked for, as `(page, counts)` JSON, read
/// once by `list_items` and once by its parts.
async fn both_reads(s: &Store, req: PageRequest) -> (serde_json::Value, serde_json::Value) {
    let summarise = |(p, c): (Page<app::models::ConversationItem>, app::models::Summary)| {
        serde_json::json!([p.conversations, p.next, c])
    };
    let whole = summarise(s.list_items(req.clone()).await.unwrap());
    let parts = s
        .read(move |tx| Ok((tx.list_items(&req)?, tx.summary()?)))
        .await
        .unwrap();
    (whole, summarise(parts))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_page_comes_with_its_counts_and_oldest_pending_approvals() {
    for (kind, _guard, s) in stores().await {
        // Empty: no item, zero counts, no cursor.
        let (whole, parts) = both_reads(
            &s,
            PageRequest {
                limit: 5,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(whole, parts, "{kind}");
        assert_eq!(
            whole,
            serde_json::json!([[], null, app::models::Summary::default()]),
            "{kind}"
        );
        // Two waiting on approvals (one of them on two), some plain ones.
        let (first, _, _) = waiting(&s).await;
        let (second, call, _) = waiting(&s).await;
        s.request_approval(add_approval(&second, &call, "Run add again"), true, None)
            .await
            .unwrap();
        for n in 0..4 {
            let c = s.create_conversation("s".into()).await.unwrap();
            s.append_message(c.id, NewMessage::text(Role::User, format!("plain {n}")))
                .await
                .unwrap();
        }
        let mut cursor = None;
        let mut seen = Vec::new();
        loop {
            let req = PageRequest {
                limit: 2,
                before: cursor,
                ..Default::default()
            };
            let (whole, parts) = both_reads(&s, req.clone()).await;
            assert_eq!(whole, parts, "{kind}");
            let (page, counts) = s.list_items(req).await.unwrap();
            assert_eq!((counts.total, counts.waiting_approval), (6, 2), "{kind}");
            seen.extend(page.conversations);
            match page.next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        assert_eq!(seen.len(), 6, "{kind}");
        let pending = |id: &str| {
            seen.iter()
                .find(|c| c.id == id)
                .and_then(|c| c.pending_approval.as_ref())
                .map(|a| a.description.clone())
        };
        assert_eq!(
            pending(&second).as_deref(),
            Some("Run add"),
            "{kind}: the oldest"
        );
        assert!(pending(&first).is_some(), "{kind}");
        assert_eq!(
            seen.iter().filter(|c| c.pending_approval.is_some()).count(),
            2,
            "{kind}"
        );
        // Filters: by status, by text (an empty match keeps the counts).
        for req in [
            PageRequest {
                limit: 10,
                status: Some(ConversationStatus::WaitingApproval),
                ..Default::default()
            },
            PageRequest {
                limit: 10,
                text: Some("plain 2".into()),
                ..Default::default()
            },
            PageRequest {
                limit: 10,
                text: Some("nowhere".into()),
                ..Default::default()
            },
        ] {
            let (whole, parts) = both_reads(&s, req).await;
            assert_eq!(whole, parts, "{kind}");
            assert_eq!(whole[2]["total"], 6, "{kind}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_pages_pending_approvals_oldest_first() {
    for (kind, _guard, s) in stores().await {
        let empty = s.pending_page(None, 10).await.unwrap().unwrap();
        assert_eq!(
            (empty.approvals.len(), empty.total, empty.more),
            (0, 0, false),
            "{kind}"
        );
        let mut waiting_ones = Vec::new();
        for _ in 0..7 {
            waiting_ones.push(waiting(&s).await);
        }
        // A decided one leaves the inbox, and its uuid still works as a
        // cursor (it was the last of a page when the page was read).
        let (cid, mid, decided) = waiting_ones.remove(2);
        assert_eq!(
            s.decide(decision(&cid, &mid, &decided, false))
                .await
                .unwrap(),
            Decided::Done,
            "{kind}"
        );
        let mut expected = Vec::new();
        for (_, _, uuid) in &waiting_ones {
            let a = s.approval(uuid).await.unwrap().unwrap();
            expected.push((a.approval.created_at.clone(), uuid.clone()));
        }
        expected.sort();
        let expected: Vec<String> = expected.into_iter().map(|(_, u)| u).collect();

        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = s.pending_page(after.clone(), 2).await.unwrap().unwrap();
            assert_eq!(page.total, 6, "{kind}");
            assert!(page.approvals.len() <= 2, "{kind}");
            seen.extend(page.approvals.iter().map(|a| a.approval.uuid.clone()));
            if !page.more {
                break;
            }
            after = seen.last().cloned();
        }
        assert_eq!(
            seen, expected,
            "{kind}: every pending one, once, oldest first"
        );
        let from_decided = s.pending_page(Some(decided), 10).await.unwrap().unwrap();
        assert!(
            from_decided
                .approvals
                .iter()
                .all(|a| a.status == ApprovalStatus::Pending),
            "{kind}"
        );
        // The count alone, and an unknown cursor.
        let count = s.pending_page(None, 0).await.unwrap().unwrap();
        assert_eq!(
            (count.approvals.len(), count.total, count.more),
            (0, 6, true),
            "{kind}"
        );
        assert!(
            s.pending_page(Some("no-such-approval".into()), 5)
                .await
                .unwrap()
                .is_none(),
            "{kind}"
        );
        // The expiry's check reads the proxy approvals only.
        assert!(s.pending_proxies().await.unwrap().is_empty(), "{kind}");
        let (cid, mid, _) = &waiting_ones[0];
        let proxy = s
            .request_approval(
                NewApproval {
                    remote: Some(approvals::RemoteRef {
                        task_id: "task-1".into(),
                        agent: "sub".into(),
                        chain: vec!["sub".into()],
                        approval: None,
                    }),
                    ..add_approval(cid, mid, "Run add over there")
                },
                true,
                None,
            )
            .await
            .unwrap();
        let proxies: Vec<String> = s
            .pending_proxies()
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.approval.uuid)
            .collect();
        assert_eq!(proxies, [proxy.approval.uuid], "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_keeps_recent_rows_and_dead_letters_and_prunes_the_rest() {
    let days_ago = |d: u64| approvals::earlier(&now(), std::time::Duration::from_secs(d * 86_400));
    let row = |id: String, status: &str, created: String| {
        outbox::decode(
            id,
            "oncall".into(),
            "approval.requested".into(),
            None,
            status.into(),
            1,
            created.clone(),
            created.clone(),
            created.clone(),
            None,
            None,
            "{}".into(),
            created,
        )
    };
    for (kind, _guard, s) in stores().await {
        let mut rows = vec![
            row("kept-delivered".into(), "delivered", days_ago(6)),
            row("kept-dead".into(), "dead", days_ago(8)),
            row("kept-pending".into(), "pending", days_ago(8)),
            row("old-skipped".into(), "skipped", days_ago(8)),
            row("old-dead".into(), "dead", days_ago(31)),
        ];
        // More than one batch of old deliveries.
        rows.extend((0..2_100).map(|i| row(format!("old-{i}"), "delivered", days_ago(9))));
        s.write(move |tx| rows.iter().try_for_each(|r| tx.insert_notification(r)))
            .await
            .unwrap();
        assert_eq!(s.prune_notifications().await.unwrap(), 2_102, "{kind}");
        let left = s.notifications(None, 100).await.unwrap();
        let mut ids: Vec<&str> = left.deliveries.iter().map(|d| d.id.as_str()).collect();
        ids.sort();
        assert_eq!(
            ids,
            ["kept-dead", "kept-delivered", "kept-pending"],
            "{kind}"
        );
        assert_eq!(s.prune_notifications().await.unwrap(), 0, "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crash_rules_settle_what_a_stopped_process_left() {
    for (kind, _guard, s) in stores().await {
        // Executing: in doubt, never re-run.
        let (c1, m1, u1) = waiting(&s).await;
        assert_eq!(
            s.decide(decision(&c1, &m1, &u1, true)).await.unwrap(),
            Decided::Done
        );
        assert!(
            s.claim_call(&c1, &m1, Some(u1.clone()), None)
                .await
                .unwrap()
                .is_some()
        );
        // Approved, not started: resumed.
        let (c2, m2, u2) = waiting(&s).await;
        assert_eq!(
            s.decide(decision(&c2, &m2, &u2, true)).await.unwrap(),
            Decided::Done
        );
        // Running without an approval: interrupted.
        let c3 = s
            .open_conversation(requester("bob"), Some("list".into()))
            .await
            .unwrap();
        let done = s.recover(Vec::new()).await.unwrap();
        assert_eq!(done.in_doubt, 1, "{kind}");
        assert!(done.resume.contains(&c2), "{kind}");
        assert!(!done.resume.contains(&c3.id), "{kind}");
        let a1 = s.approval(&u1).await.unwrap().unwrap();
        assert_eq!(a1.status, ApprovalStatus::InDoubt, "{kind}");
        let c3 = s.get_conversation(c3.id).await.unwrap().unwrap();
        assert_eq!(
            c3.messages.last().map(|m| m.content.as_str()),
            Some(recovery::TURN_INTERRUPTED_NOTE),
            "{kind}"
        );
        // Nothing left to settle the second time.
        assert_eq!(s.recover(Vec::new()).await.unwrap().in_doubt, 0, "{kind}");
    }
}

/// RECEIPTS.md §3: a call cut on a server that honours idempotency keys
/// goes back to `approved` once (to be sent again with its key); cut a
/// second time, it is in doubt like any other. On a server not named, it
/// is in doubt at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_call_on_a_keyed_server_is_retried_once() {
    for (kind, _guard, s) in stores().await {
        let on = |server: &str| {
            let server = server.to_string();
            move |a: NewApproval| NewApproval {
                server: Some(server),
                ..a
            }
        };
        let (c1, m1, u1) = waiting_with(&s, on("resources")).await;
        let (c2, m2, u2) = waiting_with(&s, on("seed")).await;
        for (c, m, u) in [(&c1, &m1, &u1), (&c2, &m2, &u2)] {
            assert_eq!(
                s.decide(decision(c, m, u, true)).await.unwrap(),
                Decided::Done
            );
            assert!(
                s.claim_call(c, m, Some(u.clone()), None)
                    .await
                    .unwrap()
                    .is_some()
            );
        }
        let keyed = vec!["resources".to_string()];
        let done = s.recover(keyed.clone()).await.unwrap();
        assert_eq!(done.in_doubt, 1, "{kind}: only the keyless one");
        assert!(done.resume.contains(&c1), "{kind}");
        assert_eq!(
            s.approval(&u1).await.unwrap().unwrap().status,
            ApprovalStatus::Approved,
            "{kind}"
        );
        assert_eq!(
            s.approval(&u2).await.unwrap().unwrap().status,
            ApprovalStatus::InDoubt,
            "{kind}"
        );
        // Sent again, cut again: no second retry.
        assert!(
            s.claim_call(&c1, &m1, Some(u1.clone()), None)
                .await
                .unwrap()
                .is_some(),
            "{kind}"
        );
        assert_eq!(s.recover(keyed).await.unwrap().in_doubt, 1, "{kind}");
        assert_eq!(
            s.approval(&u1).await.unwrap().unwrap().status,
            ApprovalStatus::InDoubt,
            "{kind}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_chain_verifies_after_concurrent_writers() {
    for (kind, _guard, s) in stores().await {
        let tasks: Vec<_> = (0..12)
            .map(|_| {
                let s = s.clone();
                tokio::spawn(async move { waiting(&s).await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let verdict = s.read(|tx| audit::verify(tx, None)).await.unwrap();
        match verdict {
            // 12 × (created, message sent, approval requested).
            audit::Verdict::Intact { rows, .. } => assert_eq!(rows, 36, "{kind}"),
            broken => panic!("{kind}: {broken:?}"),
        }
        let (seq, _) = s.audit_head().await.unwrap();
        assert_eq!(seq, 36, "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_has_one_owner_and_a_takeover_fences_the_old_one() {
    let url = pg_database().await;
    let (a, b) = (replica(&url, 1).await, replica(&url, 1).await);
    // Running on a: b cannot claim it.
    let c = a
        .open_conversation(requester("alice"), Some("hello".into()))
        .await
        .unwrap();
    let held = a.claim_lease(&c.id).await.unwrap().expect("a claims");
    assert!(b.claim_lease(&c.id).await.unwrap().is_none(), "one owner");
    assert!(a.claim_lease(&c.id).await.unwrap().is_none(), "one turn");
    assert!(
        b.sweep_one(Vec::new()).await.unwrap().is_none(),
        "not expired yet"
    );
    // Renewed by a's heartbeat, it does not expire.
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    assert_eq!(a.heartbeat().await.unwrap(), Beat::default());
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    assert!(b.sweep_one(Vec::new()).await.unwrap().is_none(), "renewed");
    // a stalls past its lease: b takes over and applies the crash rules.
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let swept = b
        .sweep_one(Vec::new())
        .await
        .unwrap()
        .expect("expired: taken over");
    assert_eq!(swept.lease.conversation_id(), c.id);
    assert!(!swept.resume, "nothing approved: the turn is interrupted");
    let msgs = b.messages(&c.id).await.unwrap();
    assert_eq!(
        msgs.last().unwrap().message.content,
        recovery::TURN_INTERRUPTED_NOTE
    );
    // Every write of a's turn now fails its fence, and a hears it lost.
    let err = a
        .add_note(&c.id, NewMessage::text(Role::Assistant, "late"), true)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost(_)), "{err}");
    assert_eq!(a.heartbeat().await.unwrap().lost, vec![c.id.clone()]);
    held.release().await; // a stale release changes nothing
    assert!(a.claim_lease(&c.id).await.unwrap().is_none(), "b holds it");
    // Cancel from a is seen by b's heartbeat.
    assert!(a.request_cancel(&c.id).await.unwrap());
    assert_eq!(b.heartbeat().await.unwrap().cancel, vec![c.id.clone()]);
    swept.lease.release().await;
    assert!(!a.request_cancel(&c.id).await.unwrap(), "nobody runs it");
    let again = a.claim_lease(&c.id).await.unwrap().expect("free again");
    a.add_note(&c.id, NewMessage::text(Role::Assistant, "mine"), true)
        .await
        .unwrap();
    again.release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_opened_with_a_message_is_born_summarised_and_running() {
    // PostgreSQL writes it as one row insert (`insert_with_message`), not
    // an insert and three updates: the columns must come out the same.
    for (kind, _guard, s) in stores().await {
        let text = "x".repeat(250);
        let c = s
            .open_conversation(requester("alice"), Some(text.clone()))
            .await
            .unwrap();
        let read = s.get_conversation(c.id.clone()).await.unwrap().unwrap();
        assert!(read.running, "{kind}");
        assert_eq!(read.status, ConversationStatus::Active, "{kind}");
        assert_eq!(read.session_id, "s", "{kind}");
        assert_eq!(read.messages.len(), 1, "{kind}");
        assert_eq!(read.messages[0].content, text, "{kind}");
        assert_eq!(read.messages[0].role, Role::User, "{kind}");
        assert_eq!(
            s.created_by(&c.id).await.unwrap().as_deref(),
            Some("alice"),
            "{kind}"
        );
        let (page, kept) = s
            .list_items(PageRequest {
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap();
        let item = &page.conversations[0];
        assert_eq!(item.id, c.id, "{kind}");
        assert_eq!(item.message_count, 1, "{kind}");
        let preview: String = text.chars().take(app::models::PREVIEW_CHARS).collect();
        assert_eq!(item.title.as_deref(), Some(preview.as_str()), "{kind}");
        let last = item.last_message.as_ref().expect("a last message");
        assert_eq!(
            (last.role, last.content.as_str()),
            (Role::User, preview.as_str()),
            "{kind}"
        );
        assert_eq!((kept.total, kept.active), (1, 1), "{kind}");
        let working = s.tasks_in_state("working", i64::MAX, 10).await.unwrap();
        assert_eq!(working.total, 1, "{kind}");
        assert_eq!(working.page.len(), 1, "{kind}");
        for state in ["submitted", "failed", "completed"] {
            let other = s.tasks_in_state(state, i64::MAX, 10).await.unwrap();
            assert_eq!(other.total, 0, "{kind}: {state}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_step_returns_its_messages_as_a_read_finds_them() {
    // The turn loop goes on from what `record_step` returns instead of
    // reading the messages again: it must be exactly what a read returns.
    for (kind, _guard, s) in stores().await {
        let (c, lease) = s
            .open_turn(requester("alice"), "hello".into())
            .await
            .unwrap();
        let call = |name: &str, call_id: &str| NewMessage {
            tool_call: Some(ToolCall {
                name: name.into(),
                arguments: serde_json::json!({"name": "apples", "n": [1, 2.5, "x"]}),
                server: Some("resources".into()),
                ..Default::default()
            }),
            call_id: Some(call_id.into()),
            step: Some("step-1".into()),
            signature: Some("sig".into()),
            ..NewMessage::text(Role::Tool, "")
        };
        let tag = NodeTag {
            name: "node".into(),
            run: "root/node#0".into(),
        };
        let step = vec![
            StepMessage {
                message: NewMessage {
                    step: Some("step-1".into()),
                    ..NewMessage::text(Role::Assistant, "let me look \u{0} here")
                },
                immediate: None,
            },
            StepMessage {
                message: call("resources_add", "call-1").in_node(Some(&tag)),
                immediate: None,
            },
            StepMessage {
                message: call("no_such_tool", "call-2"),
                immediate: Some(("unknown tool".into(), true)),
            },
        ];
        let written = s.record_step(&c.id, step, false).await.unwrap().messages;
        let read = s.messages(&c.id).await.unwrap();
        assert_eq!(read.len(), 4, "{kind}");
        let tail = &read[1..];
        assert_eq!(written.len(), tail.len(), "{kind}");
        for (w, r) in written.iter().zip(tail) {
            assert_eq!(w.message, r.message, "{kind}");
            assert_eq!(
                (
                    &w.call_id,
                    &w.step,
                    &w.signature,
                    &w.node_run,
                    &w.started_at
                ),
                (
                    &r.call_id,
                    &r.step,
                    &r.signature,
                    &r.node_run,
                    &r.started_at
                ),
                "{kind}"
            );
            assert_eq!(w.finished_at.is_some(), r.finished_at.is_some(), "{kind}");
        }
        assert!(written[1].is_unanswered_call(), "{kind}");
        assert!(!written[2].is_unanswered_call(), "{kind}");
        lease.release().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_opened_with_its_lease_gives_it_back_with_its_last_write() {
    let url = pg_database().await;
    let (a, b) = (replica(&url, 30).await, replica(&url, 30).await);
    // The conversation commits with its lease: nobody can claim it, and
    // the turn's writes are fenced by it.
    let (c, lease) = a
        .open_turn(requester("alice"), "hello".into())
        .await
        .unwrap();
    assert!(
        b.claim_lease(&c.id).await.unwrap().is_none(),
        "b: a owns it"
    );
    assert!(a.claim_lease(&c.id).await.unwrap().is_none(), "a: one turn");
    // A step that does not end the turn keeps the lease.
    let step = |text: &str| super::turns::StepMessage {
        message: NewMessage::text(Role::Assistant, text),
        immediate: None,
    };
    assert!(
        a.record_step(&c.id, vec![step("thinking")], false)
            .await
            .unwrap()
            .conversation
            .is_none()
    );
    assert!(b.claim_lease(&c.id).await.unwrap().is_none(), "still a's");
    // The last write gives it back in its own transaction.
    let done = a
        .record_step(&c.id, vec![step("done")], true)
        .await
        .unwrap()
        .conversation
        .expect("the conversation as the turn left it");
    assert!(!done.running);
    assert_eq!(
        a.heartbeat().await.unwrap(),
        Beat::default(),
        "nothing held"
    );
    lease.release().await; // already given back: no effect
    let next = b
        .claim_lease(&c.id)
        .await
        .unwrap()
        .expect("free for anyone");
    b.add_note(&c.id, NewMessage::text(Role::Assistant, "b's turn"), true)
        .await
        .unwrap();
    next.release().await;
    assert!(a.claim_lease(&c.id).await.unwrap().is_some(), "released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_resumes_an_approved_call_and_never_reruns_a_started_one() {
    let url = pg_database().await;
    let (a, b) = (replica(&url, 1).await, replica(&url, 1).await);
    // Approved, not started, when a stopped: resumed by b.
    let (c1, m1, u1) = waiting(&a).await;
    let l1 = a.claim_lease(&c1).await.unwrap().unwrap();
    assert_eq!(
        a.decide(decision(&c1, &m1, &u1, true)).await.unwrap(),
        Decided::Done
    );
    // Started when a stopped: in doubt, not resumed.
    let (c2, m2, u2) = waiting(&a).await;
    let l2 = a.claim_lease(&c2).await.unwrap().unwrap();
    assert_eq!(
        a.decide(decision(&c2, &m2, &u2, true)).await.unwrap(),
        Decided::Done
    );
    assert!(
        a.claim_call(&c2, &m2, Some(u2.clone()), None)
            .await
            .unwrap()
            .is_some()
    );
    // a dies (its leases are neither renewed nor released).
    std::mem::forget(l1);
    std::mem::forget(l2);
    drop(a);
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let mut swept = Vec::new();
    while let Some(s) = b.sweep_one(Vec::new()).await.unwrap() {
        swept.push((s.lease.conversation_id().to_string(), s.resume, s.in_doubt));
        s.lease.release().await;
    }
    swept.sort();
    let mut want = vec![(c1.clone(), true, 0), (c2.clone(), false, 1)];
    want.sort();
    assert_eq!(swept, want);
    assert_eq!(
        b.approval(&u2).await.unwrap().unwrap().status,
        ApprovalStatus::InDoubt
    );
    assert_eq!(
        b.approval(&u1).await.unwrap().unwrap().status,
        ApprovalStatus::Approved
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_answers_every_call_it_leaves_behind() {
    for (kind, _guard, s) in stores().await {
        // A pending approval, and a call of the stopped turn's last step.
        let (c, approved_call, _uuid) = waiting(&s).await;
        let call = |name: &str| NewMessage {
            tool_call: Some(ToolCall {
                name: name.into(),
                arguments: serde_json::json!({}),
                ..Default::default()
            }),
            ..NewMessage::text(Role::Tool, "")
        };
        let other = s
            .append_message(c.clone(), call("list"))
            .await
            .unwrap()
            .unwrap();
        let (n, _) = s
            .cancel_conversation(&c, op(), |n| format!("cancelled {n}"))
            .await
            .unwrap();
        assert_eq!(n, 1, "{kind}");
        let msgs = s.messages(&c).await.unwrap();
        for id in [&approved_call, &other.id] {
            let m = msgs.iter().find(|m| &m.message.id == id).unwrap();
            assert!(!m.is_unanswered_call(), "{kind}: {id} left unanswered");
            let result = m.message.tool_call.as_ref().and_then(|t| t.result.clone());
            assert!(
                result.as_deref().is_some_and(|r| r.contains("not run")),
                "{kind}: {result:?}"
            );
        }
    }
}

#[tokio::test]
async fn audit_rows_keep_any_text_and_verify() {
    // Quotes, backslashes, SQL-looking text, dollar quotes and non-ASCII:
    // stored as given (PostgreSQL writes audit rows as literals).
    let awkward = "it's \\'; DROP TABLE audit; -- $$ $x$ \"q\" \u{e9}\u{1f600}\n\t";
    // Without a key PostgreSQL chains the rows itself; with one, the
    // process does: both must verify.
    const KEY: &[u8] = b"audit-key";
    let dir = tempfile::tempdir().unwrap();
    let keyed_pg = {
        let url = pg_database().await;
        tokio::task::spawn_blocking(move || Store::open_postgres(&url, Some(4), 30, Some(KEY)))
            .await
            .unwrap()
            .unwrap()
    };
    let mut all: Vec<(&str, Option<&[u8]>, Store)> = vec![
        (
            "sqlite+key",
            Some(KEY),
            Store::open_keyed(dir.path(), Some(KEY)).unwrap(),
        ),
        ("postgres+key", Some(KEY), keyed_pg),
    ];
    let plain = stores().await;
    all.extend(plain.iter().map(|(k, _, s)| (*k, None, s.clone())));
    for (kind, key, s) in all {
        let details = serde_json::json!({ "note": awkward, "n": 1 });
        let d = details.clone();
        s.write(move |tx| {
            tx.audit(&audit::Event {
                actor: awkward,
                event: "test.awkward",
                conversation_id: Some("c'1"),
                approval_uuid: None,
                details: d,
            })
        })
        .await
        .unwrap();
        let rows = s.audit_page(0, 10).await.unwrap();
        let row = rows.last().unwrap();
        assert_eq!(row.actor, awkward, "{kind}");
        assert_eq!(row.conversation_id.as_deref(), Some("c'1"), "{kind}");
        assert_eq!(row.approval_uuid, None, "{kind}");
        assert_eq!(row.details, details, "{kind}");
        match s.read(move |tx| audit::verify(tx, key)).await.unwrap() {
            audit::Verdict::Intact { rows, .. } => assert_eq!(rows, 1, "{kind}"),
            broken => panic!("{kind}: {broken:?}"),
        }
        // PostgreSQL's text cannot hold NUL: refused there, nothing
        // written, the store goes on (SQLite keeps it).
        if !kind.starts_with("postgres") {
            continue;
        }
        let refused = s
            .write(|tx| {
                tx.audit(&audit::Event {
                    actor: "a\0b",
                    event: "test.nul",
                    conversation_id: None,
                    approval_uuid: None,
                    details: serde_json::json!({}),
                })
            })
            .await;
        assert!(refused.is_err(), "{kind}");
        assert_eq!(s.audit_page(0, 10).await.unwrap().len(), 1, "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_from_a_model_or_tool_is_stored_as_a_replacement_character() {
    for (kind, _guard, s) in stores().await {
        let c = s
            .open_conversation(requester("alice"), Some("read the file".into()))
            .await
            .unwrap();
        // A tool's output and a model's text with NUL: kept, never a failed
        // turn after the tool ran (PostgreSQL's text cannot hold U+0000).
        for role in [Role::Tool, Role::Assistant] {
            let m = s
                .append_message(c.id.clone(), NewMessage::text(role, "bin\0ary"))
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("{kind}: appended"));
            assert_eq!(m.content, "bin\u{FFFD}ary", "{kind}");
        }
        let stored = s.get_conversation(c.id.clone()).await.unwrap().unwrap();
        let texts: Vec<&str> = stored.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(
            texts,
            ["read the file", "bin\u{FFFD}ary", "bin\u{FFFD}ary"],
            "{kind}"
        );
        // Input the database cannot hold is the sender's problem, named as
        // such; nothing is written and the store goes on.
        let id = c.id.clone();
        let refused = s.write(move |tx| tx.set_context(&id, "ctx\0x")).await;
        match (kind, refused) {
            ("postgres", Err(StoreError::Unstorable(m))) => assert!(m.contains("NUL"), "{m}"),
            ("postgres", other) => panic!("postgres: {other:?}"),
            (_, r) => assert!(r.is_ok(), "{kind}: {r:?}"),
        }
        assert!(
            s.get_conversation(c.id.clone()).await.unwrap().is_some(),
            "{kind}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_by_state_come_from_an_index_and_a_kept_count() {
    let answer = |text: &str| {
        vec![super::turns::StepMessage {
            message: NewMessage::text(Role::Assistant, text),
            immediate: None,
        }]
    };
    for (kind, _guard, s) in stores().await {
        let mut expected: Vec<(&str, Vec<String>)> = Vec::new();
        // No message yet: submitted.
        let submitted = s
            .open_conversation(requester("alice"), None)
            .await
            .unwrap()
            .id;
        // A turn running: working.
        let working = s
            .open_conversation(requester("alice"), Some("hi".into()))
            .await
            .unwrap()
            .id;
        // Three answered: completed (a later tool message does not count).
        let mut completed = Vec::new();
        for _ in 0..3 {
            let id = s
                .open_conversation(requester("alice"), Some("hi".into()))
                .await
                .unwrap()
                .id;
            s.record_step(&id, answer("hello"), true).await.unwrap();
            s.append_message(id.clone(), NewMessage::text(Role::Tool, "log"))
                .await
                .unwrap();
            completed.push(id);
        }
        // An approval waits: input-required.
        let (waiting_id, _, _) = waiting(&s).await;
        // A turn that stopped after the user spoke: failed; a failed turn.
        let unanswered = s
            .open_conversation(requester("alice"), Some("hi".into()))
            .await
            .unwrap()
            .id;
        s.end_turn(&unanswered).await.unwrap();
        let failed = s
            .open_conversation(requester("alice"), Some("hi".into()))
            .await
            .unwrap()
            .id;
        s.fail_turn(&failed, NewMessage::text(Role::System, "boom"))
            .await
            .unwrap();
        s.end_turn(&failed).await.unwrap();
        // Cancelled.
        let cancelled = s
            .open_conversation(requester("alice"), None)
            .await
            .unwrap()
            .id;
        s.set_status(cancelled.clone(), ConversationStatus::Cancelled)
            .await
            .unwrap();
        completed.reverse();
        expected.push(("submitted", vec![submitted]));
        expected.push(("working", vec![working.clone()]));
        expected.push(("completed", completed.clone()));
        expected.push(("input-required", vec![waiting_id]));
        expected.push(("failed", vec![failed, unanswered]));
        expected.push(("canceled", vec![cancelled]));
        for round in ["kept", "folded"] {
            for (state, ids) in &expected {
                let got = s.tasks_in_state(state, i64::MAX, 10).await.unwrap();
                let page: Vec<String> = got.page.iter().map(|(_, id)| id.clone()).collect();
                assert_eq!(&page, ids, "{kind} {round} {state}");
                assert_eq!(got.total, ids.len() as u64, "{kind} {round} {state}");
            }
            s.fold_task_counts().await.unwrap();
        }
        // Paging: two, then the rest from before the second.
        let first = s.tasks_in_state("completed", i64::MAX, 2).await.unwrap();
        assert_eq!(first.page.len(), 2, "{kind}");
        let rest = s
            .tasks_in_state("completed", first.page[1].0, 2)
            .await
            .unwrap();
        let ids: Vec<&String> = rest.page.iter().map(|(_, id)| id).collect();
        assert_eq!(ids, vec![&completed[2]], "{kind}");
        // The working one finishes: the counts move with it.
        s.record_step(&working, answer("done"), true).await.unwrap();
        assert_eq!(
            s.tasks_in_state("working", i64::MAX, 10)
                .await
                .unwrap()
                .total,
            0,
            "{kind}"
        );
        assert_eq!(
            s.tasks_in_state("completed", i64::MAX, 10)
                .await
                .unwrap()
                .total,
            4,
            "{kind}"
        );
        s.fold_task_counts().await.unwrap();
        assert_eq!(
            s.tasks_in_state("completed", i64::MAX, 10)
                .await
                .unwrap()
                .total,
            4,
            "{kind}"
        );
    }
}

/// A grant row written with its decision; each use is counted while it is
/// live and gives the call an approval approved by `grant:<id>`; a revoked
/// or expired grant spares nothing (REACH.md §3).
#[tokio::test]
async fn a_grant_is_used_only_while_live() {
    for (kind, _guard, s) in stores().await {
        let (cid, mid, uuid) = waiting(&s).await;
        let grant = |id: &str, expires_at: &str| grants::GrantRow {
            roles: vec!["approver".into()],
            signin: Some("signin-hash".into()),
            grant: app::models::Grant {
                id: id.into(),
                tool: "add".into(),
                server: None,
                scope: "conversation".into(),
                conversation_id: Some(cid.clone()),
                rule: "annotation".into(),
                match_pointers: Some(vec!["/x".into()]),
                values: serde_json::json!({"/x": 1}),
                created_by: "op".into(),
                created_via: "rest".into(),
                created_at: now(),
                expires_at: expires_at.into(),
                approval_uuid: uuid.clone(),
                uses: 0,
                last_used_at: None,
                revoked_at: None,
                revoked_by: None,
            },
        };
        let d = DecisionRecord {
            grant: Some(grant("g1", "2999-01-01T00:00:00.000Z")),
            ..decision(&cid, &mid, &uuid, true)
        };
        assert_eq!(s.decide(d).await.unwrap(), Decided::Done, "{kind}");
        let live = s.live_grants(None).await.unwrap();
        assert_eq!(live.len(), 1, "{kind}");
        let mut want = grant("g1", "2999-01-01T00:00:00.000Z");
        want.grant.created_at = live[0].grant.created_at.clone();
        assert_eq!(live[0], want, "{kind}: read back as written");
        let of_tool = s.live_grants(Some(("add".into(), None))).await.unwrap();
        assert_eq!(of_tool.len(), 1, "{kind}: server NULL matches NULL");
        assert!(
            s.live_grants(Some(("add".into(), Some("x".into()))))
                .await
                .unwrap()
                .is_empty(),
            "{kind}"
        );

        // A use: counted, and an approval approved by the grant.
        let by = |id: &str, admin: bool| grants::GrantUse {
            grant: id.into(),
            granter: "alice".into(),
            granter_admin: admin,
            separation_of_duties: true,
        };
        // Alice asked in this conversation: her own grant spares her call
        // only as an admin, recorded as an override.
        assert_eq!(
            s.use_grant(by("g1", false), add_approval(&cid, &mid, "Run add"), "s2")
                .await
                .unwrap(),
            grants::Used::OwnRequest,
            "{kind}"
        );
        let grants::Used::Ran(used) = s
            .use_grant(by("g1", true), add_approval(&cid, &mid, "Run add"), "s2")
            .await
            .unwrap()
        else {
            panic!("{kind}: the live grant was not used")
        };
        assert_eq!(used.status, ApprovalStatus::Approved, "{kind}");
        assert_eq!(used.decided_by.as_deref(), Some("grant:g1"), "{kind}");
        assert_eq!(
            used.approval.decided_via.as_deref(),
            Some("grant"),
            "{kind}"
        );
        assert_eq!(
            s.grant("g1").await.unwrap().unwrap().grant.uses,
            1,
            "{kind}"
        );

        // Its sign-in ends: the sign-out revokes it; no more uses; a
        // second revoke is a no.
        s.sign_in(
            "signin-hash".into(),
            sessions::Session {
                name: "op".into(),
                roles: vec!["approver".into()],
                expires_at: "2999-01-01T00:00:00.000Z".into(),
            },
            "token",
        )
        .await
        .unwrap();
        assert_eq!(
            s.sign_out("signin-hash".into()).await.unwrap(),
            Some(vec!["g1".to_string()]),
            "{kind}"
        );
        assert_eq!(
            s.use_grant(by("g1", true), add_approval(&cid, &mid, "Run add"), "s3")
                .await
                .unwrap(),
            grants::Used::Ended,
            "{kind}"
        );
        assert_eq!(
            s.revoke_grant("g1", "op", None).await.unwrap(),
            grants::Revoked::NotLive,
            "{kind}"
        );
        assert!(s.live_grants(None).await.unwrap().is_empty(), "{kind}");

        // An expired grant is neither listed nor used.
        let expired = grant("g2", "2000-01-01T00:00:00.000Z");
        s.write(move |tx| tx.insert_grant(&expired)).await.unwrap();
        assert!(s.live_grants(None).await.unwrap().is_empty(), "{kind}");
        assert_eq!(
            s.use_grant(by("g2", true), add_approval(&cid, &mid, "Run add"), "s4")
                .await
                .unwrap(),
            grants::Used::Ended,
            "{kind}"
        );
        let rows = s.audit_page(0, 100).await.unwrap();
        let events: Vec<&str> = rows.iter().map(|r| r.event.as_str()).collect();
        for e in ["grant.created", "grant.used", "grant.revoked"] {
            assert!(events.contains(&e), "{kind}: no {e} in {events:?}");
        }
        let used_row = rows.iter().find(|r| r.event == "grant.used").unwrap();
        assert_eq!(used_row.actor, "grant:g1", "{kind}");
        assert_eq!(
            used_row.details["override"], "separation_of_duties",
            "{kind}: the admin's own request"
        );
    }
}

#[tokio::test]
async fn a_held_card_is_audited_once_and_trusted_once_accepted() {
    for (kind, _guard, s) in stores().await {
        a_card_that_does_not_verify_is_held(kind, &s).await;
        only_the_card_looked_at_is_accepted(kind, &s).await;
    }
}

/// A card agent `b` showed: `untrusted` says why it cannot be trusted.
fn seen(digest: &'static str, untrusted: Option<&'static str>) -> card_pins::SeenCard<'static> {
    card_pins::SeenCard {
        agent: "b",
        url: "http://b",
        digest,
        card: "{\"name\":\"b\"}",
        untrusted,
    }
}

/// The `a2a.*` events audited so far.
async fn card_events(s: Store) -> Vec<String> {
    let rows = s.audit_page(0, 100).await.unwrap();
    rows.into_iter()
        .map(|r| r.event)
        .filter(|e| e.starts_with("a2a."))
        .collect::<Vec<_>>()
}

/// A verified card is pinned silently; one that does not verify is held,
/// audited once, and so is the pinned card when it no longer verifies.
async fn a_card_that_does_not_verify_is_held(kind: &str, s: &Store) {
    use card_pins::CardSeen;
    let events = card_events;
    // Verified: pinned silently.
    assert_eq!(
        s.observe_card(seen("d1", None)).await.unwrap(),
        CardSeen::Trusted
    );
    let pin = s.card_pins().await.unwrap().remove(0);
    assert_eq!(
        (pin.digest.as_deref(), pin.pinned_by.as_deref()),
        (Some("d1"), None),
        "{kind}"
    );
    // Another card that does not verify: held, audited once.
    for first in [true, false] {
        let held = s
            .observe_card(seen("d2", Some("signed by x")))
            .await
            .unwrap();
        assert_eq!(held, CardSeen::Held { first }, "{kind}");
    }
    assert_eq!(events(s.clone()).await, ["a2a.card_untrusted"], "{kind}");
    // The pinned card, unverifiable, is not trusted either (only an
    // admin's acceptance trusts a card without a verifying signature).
    assert_eq!(
        s.observe_card(seen("d1", Some("unsigned"))).await.unwrap(),
        CardSeen::Held { first: true },
        "{kind}"
    );
}

/// Only the card the admin looked at is accepted; it is then trusted
/// unverified, another is held again, and a verifying card ends the hold.
async fn only_the_card_looked_at_is_accepted(kind: &str, s: &Store) {
    use card_pins::CardSeen;
    use pins::Acceptance;
    let events = card_events;
    assert_eq!(
        s.accept_card("b", "root", Some("d2")).await.unwrap(),
        Acceptance::Moved("d1".into()),
        "{kind}"
    );
    assert_eq!(
        s.accept_card("b", "root", Some("d1")).await.unwrap(),
        Acceptance::Accepted,
        "{kind}"
    );
    let accepted = s.card_pins().await.unwrap().remove(0);
    assert_eq!(
        (
            accepted.digest.as_deref(),
            accepted.pinned_by.as_deref(),
            accepted.held
        ),
        (Some("d1"), Some("root"), None),
        "{kind}"
    );
    let nothing = Acceptance::Nothing;
    assert_eq!(
        s.accept_card("b", "root", None).await.unwrap(),
        nothing,
        "{kind}"
    );
    assert_eq!(
        s.accept_card("nobody", "root", None).await.unwrap(),
        nothing
    );
    // The accepted card is trusted unverified; another is held again.
    assert_eq!(
        s.observe_card(seen("d1", Some("unsigned"))).await.unwrap(),
        CardSeen::Trusted,
        "{kind}"
    );
    assert_eq!(
        s.observe_card(seen("d3", Some("unsigned"))).await.unwrap(),
        CardSeen::Held { first: true },
        "{kind}"
    );
    // A verifying card ends the hold and becomes the pin.
    assert_eq!(
        s.observe_card(seen("d4", None)).await.unwrap(),
        CardSeen::Trusted
    );
    let pin = s.card_pins().await.unwrap().remove(0);
    assert_eq!(
        (pin.digest.as_deref(), pin.pinned_by, pin.held),
        (Some("d4"), None, None),
        "{kind}"
    );
    assert_eq!(
        events(s.clone()).await,
        [
            "a2a.card_untrusted",
            "a2a.card_untrusted",
            "a2a.card_accepted",
            "a2a.card_untrusted"
        ],
        "{kind}"
    );
}

/// A new A2A task opens in the client's context in one transaction: the
/// conversation is found by that context as soon as it exists, with or
/// without a first message, and a context the store refuses opens nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_opens_in_its_context_in_one_transaction() {
    for (kind, _guard, s) in stores().await {
        let in_context = |c: &str| Requester {
            context_id: Some(c.into()),
            ..requester("alice")
        };
        let empty = s
            .open_conversation(in_context("ctx-a"), None)
            .await
            .unwrap();
        assert_eq!(
            s.by_context("ctx-a").await.unwrap(),
            Some(empty.id),
            "{kind}"
        );
        let (with_turn, _lease) = s.open_turn(in_context("ctx-b"), "hi".into()).await.unwrap();
        assert_eq!(
            s.by_context("ctx-b").await.unwrap(),
            Some(with_turn.id),
            "{kind}"
        );
        let count = || async {
            s.list_conversations(PageRequest::default())
                .await
                .unwrap()
                .1
                .total
        };
        let before = count().await;
        // PostgreSQL cannot hold a NUL (SQLite can): there the context
        // fails the open, and the whole open is undone with it.
        let refused = s.open_conversation(in_context("ctx\0x"), None).await;
        if kind == "postgres" {
            assert!(refused.is_err(), "{kind}: a NUL in a context is refused");
            let after = count().await;
            assert_eq!(
                after, before,
                "{kind}: the refused open left no conversation"
            );
        } else {
            assert!(refused.is_ok(), "{kind}: {refused:?}");
        }
    }
}
