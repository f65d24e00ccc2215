//! The store suite both backends pass: each test runs on SQLite (a temp
//! file) and on PostgreSQL (a fresh database in the cluster named by
//! `STOPGO_TEST_DATABASE_URL`, which `make test` starts with
//! `scripts/pg.sh`).

use super::approvals::{Decider, NewApproval};
use super::*;
use app::models::{ApprovalStatus, ConversationStatus, Role, ToolCall};

/// A fresh, empty store of each kind (the guard keeps it alive).
async fn stores() -> Vec<(&'static str, Box<dyn std::any::Any + Send>, Store)> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open(dir.path()).unwrap();
    let admin = std::env::var("STOPGO_TEST_DATABASE_URL").unwrap_or_else(|_| {
        panic!(
            "STOPGO_TEST_DATABASE_URL is not set: `make unit` starts a throwaway PostgreSQL \
             (scripts/pg.sh start DIR prints the URL to set)"
        )
    });
    let name = format!("t_{}", uuid::Uuid::new_v4().simple());
    let url = {
        let (admin, name) = (admin.clone(), name.clone());
        tokio::task::spawn_blocking(move || {
            let mut c = ::postgres::Client::connect(&admin, ::postgres::NoTls).unwrap();
            c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
            let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin);
            format!("{base}/{name}")
        })
        .await
        .unwrap()
    };
    let pg = tokio::task::spawn_blocking(move || Store::open_postgres(&url, 8, None))
        .await
        .unwrap()
        .unwrap();
    vec![
        ("sqlite", Box::new(dir), sqlite),
        ("postgres", Box::new(()), pg),
    ]
}

fn op() -> Decider {
    Decider {
        name: "op".into(),
        via: "rest".into(),
        session: "s".into(),
    }
}

/// A conversation waiting on one approval: `(conversation, call, uuid)`.
async fn waiting(s: &Store) -> (String, String, String) {
    let c = s
        .open_conversation(
            Requester {
                name: "alice".into(),
                session: "s".into(),
            },
            Some("add x 1".into()),
        )
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
        .request_approval(
            NewApproval {
                conversation_id: c.id.clone(),
                message_id: call.id.clone(),
                tool_name: "add".into(),
                server: None,
                tool_args: serde_json::json!({"x": 1}),
                description: "Run add".into(),
                remote: None,
                traceparent: None,
            },
            true,
            None,
        )
        .await
        .unwrap();
    (c.id, call.id, a.approval.uuid)
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
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_racing_decisions_have_one_winner() {
    for (kind, _guard, s) in stores().await {
        let (cid, mid, uuid) = waiting(&s).await;
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let (s, d) = (s.clone(), decision(&cid, &mid, &uuid, i % 2 == 0));
                tokio::spawn(async move { s.decide(d).await.unwrap().is_ok() })
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
                s.claim_call(&mid, Some(uuid.clone())).await.unwrap(),
                "{kind}"
            );
            assert!(
                !s.claim_call(&mid, Some(uuid.clone())).await.unwrap(),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crash_rules_settle_what_a_stopped_process_left() {
    for (kind, _guard, s) in stores().await {
        // Executing: in doubt, never re-run.
        let (c1, m1, u1) = waiting(&s).await;
        s.decide(decision(&c1, &m1, &u1, true))
            .await
            .unwrap()
            .unwrap();
        assert!(s.claim_call(&m1, Some(u1.clone())).await.unwrap());
        // Approved, not started: resumed.
        let (c2, m2, u2) = waiting(&s).await;
        s.decide(decision(&c2, &m2, &u2, true))
            .await
            .unwrap()
            .unwrap();
        // Running without an approval: interrupted.
        let c3 = s
            .open_conversation(
                Requester {
                    name: "bob".into(),
                    session: "s".into(),
                },
                Some("list".into()),
            )
            .await
            .unwrap();
        let done = s.recover().await.unwrap();
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
        assert_eq!(s.recover().await.unwrap().in_doubt, 0, "{kind}");
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
