//! Store behaviour on a real database file.

use super::*;
use app::models::{ConversationStatus, Role, Summary, ToolCall};

fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

fn text(role: Role, content: &str) -> NewMessage {
    NewMessage::text(role, content)
}

#[tokio::test]
async fn a_created_conversation_reads_back_with_its_messages_in_order() {
    let (_d, s) = temp_store();
    let c = s.create_conversation("abcd1234".into()).await.unwrap();
    assert_eq!(c.status, ConversationStatus::Active);
    s.append_message(c.id.clone(), text(Role::User, "list resources"))
        .await
        .unwrap()
        .unwrap();
    let call = ToolCall {
        name: "resources_list".into(),
        arguments: serde_json::json!({"pattern": ".*"}),
        server: Some("resources".into()),
        result: Some("[]".into()),
        is_error: Some(false),
        ..Default::default()
    };
    s.append_message(
        c.id.clone(),
        NewMessage {
            tool_call: Some(call.clone()),
            ..NewMessage::text(Role::Tool, "")
        },
    )
    .await
    .unwrap()
    .unwrap();
    let got = s.get_conversation(c.id.clone()).await.unwrap().unwrap();
    assert_eq!(got.session_id, "abcd1234");
    assert_eq!(got.messages.len(), 2);
    assert_eq!(got.messages[0].content, "list resources");
    assert_eq!(got.messages[1].tool_call.as_ref(), Some(&call));
    assert!(got.updated_at >= got.created_at);
}

#[tokio::test]
async fn unknown_ids_are_none_not_errors() {
    let (_d, s) = temp_store();
    assert!(s.get_conversation("nope".into()).await.unwrap().is_none());
    assert!(
        s.append_message("nope".into(), text(Role::User, "x"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        !s.set_status("nope".into(), ConversationStatus::Completed)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn paging_walks_every_conversation_newest_first_exactly_once() {
    let (_d, s) = temp_store();
    let mut ids = Vec::new();
    for _ in 0..7 {
        ids.push(s.create_conversation("s".into()).await.unwrap().id);
    }
    ids.reverse();
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let (page, summary) = s
            .list_conversations(PageRequest {
                limit: 3,
                before,
                status: None,
                text: None,
            })
            .await
            .unwrap();
        assert_eq!(summary.total, 7);
        assert!(page.conversations.len() <= 3);
        seen.extend(page.conversations.into_iter().map(|c| c.id));
        match page.next {
            Some(n) => before = Some(n),
            None => break,
        }
    }
    assert_eq!(seen, ids);
}

#[tokio::test]
async fn status_filter_and_summary_agree() {
    let (_d, s) = temp_store();
    let a = s.create_conversation("s".into()).await.unwrap();
    let b = s.create_conversation("s".into()).await.unwrap();
    s.create_conversation("s".into()).await.unwrap();
    s.set_status(a.id.clone(), ConversationStatus::WaitingApproval)
        .await
        .unwrap();
    s.set_status(b.id.clone(), ConversationStatus::Completed)
        .await
        .unwrap();
    let (page, summary) = s
        .list_conversations(PageRequest {
            limit: 10,
            before: None,
            status: Some(ConversationStatus::WaitingApproval),
            text: None,
        })
        .await
        .unwrap();
    assert_eq!(page.conversations.len(), 1);
    assert_eq!(page.conversations[0].id, a.id);
    assert_eq!(summary.total, 3);
    assert_eq!(
        (summary.active, summary.waiting_approval, summary.completed),
        (1, 1, 1)
    );
}

/// The kept counts equal a recount after every kind of change: inserts,
/// status changes back and forth, a change to the same status, messages.
#[tokio::test]
async fn kept_counts_equal_a_recount() {
    let (_d, s) = temp_store();
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(s.create_conversation("s".into()).await.unwrap().id);
    }
    let moves = [
        (0, ConversationStatus::WaitingApproval),
        (0, ConversationStatus::Active),
        (1, ConversationStatus::Completed),
        (1, ConversationStatus::Completed),
        (2, ConversationStatus::Failed),
        (3, ConversationStatus::Cancelled),
        (0, ConversationStatus::WaitingApproval),
    ];
    for (i, status) in moves {
        s.set_status(ids[i].clone(), status).await.unwrap();
    }
    for n in 0..3 {
        s.append_message(ids[4].clone(), text(Role::User, &format!("m{n}")))
            .await
            .unwrap();
    }
    s.append_message(ids[4].clone(), text(Role::Assistant, ""))
        .await
        .unwrap();
    let kept = s.read(|tx| tx.summary()).await.unwrap();
    let recount = {
        let conn = rusqlite::Connection::open(s.path().unwrap()).unwrap();
        let mut recount = Summary::default();
        let mut stmt = conn.prepare("SELECT status FROM conversations").unwrap();
        for status in stmt.query_map([], |r| r.get::<_, String>(0)).unwrap() {
            recount.total += 1;
            match ConversationStatus::parse(&status.unwrap()) {
                Some(ConversationStatus::Active) => recount.active += 1,
                Some(ConversationStatus::WaitingApproval) => recount.waiting_approval += 1,
                Some(ConversationStatus::WaitingInput) => recount.waiting_input += 1,
                Some(ConversationStatus::Completed) => recount.completed += 1,
                Some(ConversationStatus::Failed) => recount.failed += 1,
                Some(ConversationStatus::Cancelled) => recount.cancelled += 1,
                None => unreachable!(),
            }
        }
        recount
    };
    assert_eq!(kept, recount);
    assert_eq!((kept.waiting_approval, kept.active), (1, 1));
    let (page, _) = s
        .list_items(PageRequest {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    let item = page.conversations.iter().find(|c| c.id == ids[4]).unwrap();
    assert_eq!(item.message_count, 4);
    assert_eq!(item.title.as_deref(), Some("m0"));
    let last = item.last_message.as_ref().unwrap();
    assert_eq!((last.role, last.content.as_str()), (Role::User, "m2"));
}

#[tokio::test]
async fn data_survives_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let s = Store::open(dir.path()).unwrap();
        let c = s
            .create_conversation_with("sid".into(), text(Role::User, "hello"))
            .await
            .unwrap();
        assert_eq!(c.messages.len(), 1);
        c.id
    };
    let s = Store::open(dir.path()).unwrap();
    let c = s.get_conversation(id).await.unwrap().unwrap();
    assert_eq!(c.messages[0].content, "hello");
}

#[tokio::test]
async fn concurrent_writers_lose_nothing() {
    let (_d, s) = temp_store();
    let c = s.create_conversation("s".into()).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let s = s.clone();
        let id = c.id.clone();
        tasks.push(tokio::spawn(async move {
            s.append_message(id, text(Role::User, &format!("m{i}")))
                .await
                .unwrap()
                .unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let got = s.get_conversation(c.id).await.unwrap().unwrap();
    assert_eq!(got.messages.len(), 50);
}

#[tokio::test]
async fn corrupt_rows_are_reported_not_panicked_on() {
    let (_d, s) = temp_store();
    let c = s.create_conversation("s".into()).await.unwrap();
    rusqlite::Connection::open(s.path().unwrap())
        .unwrap()
        .execute(
            "UPDATE conversations SET status = 'weird' WHERE id = ?1",
            [&c.id],
        )
        .unwrap();
    let e = s.get_conversation(c.id).await.unwrap_err();
    assert!(e.to_string().contains("unknown status"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_write_in_a_group_commit_undoes_only_itself() {
    let (_d, s) = temp_store();
    let c = s.create_conversation("s".into()).await.unwrap();
    // Hold the write connection so that every write below queues for the
    // writer thread and they commit together.
    let inner = s.sqlite_inner();
    let held = inner.writer.lock().unwrap();
    let mut tasks = Vec::new();
    for i in 0..60 {
        let s = s.clone();
        let id = c.id.clone();
        tasks.push(tokio::spawn(async move {
            s.write(move |tx| {
                tx.append(&id, NewMessage::text(Role::User, format!("m{i}")))?;
                if i % 2 == 1 {
                    return Err(StoreError::Corrupt("refused".into()));
                }
                Ok(())
            })
            .await
            .is_ok()
        }));
    }
    while inner.queued.load(std::sync::atomic::Ordering::Acquire) < 60 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    drop(held);
    let mut ok = 0;
    for t in tasks {
        ok += usize::from(t.await.unwrap());
    }
    assert_eq!(ok, 30);
    let got = s.get_conversation(c.id).await.unwrap().unwrap();
    assert_eq!(
        got.messages.len(),
        30,
        "exactly the successful writes persisted"
    );
    assert!(
        got.messages
            .iter()
            .all(|m| m.content[1..].parse::<u32>().unwrap() % 2 == 0)
    );
}

#[tokio::test]
async fn a_panicking_read_is_an_error_and_leaves_the_store_usable() {
    let (_d, s) = temp_store();
    let c = s.create_conversation("s".into()).await.unwrap();
    let e = s
        .read(|_tx| -> Result<(), StoreError> { panic!("boom") })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("panicked"), "{e}");
    // The connection the read ran on is out of its transaction: writes and
    // reads go on.
    s.append_message(c.id.clone(), text(Role::User, "after"))
        .await
        .unwrap()
        .unwrap();
    let got = s.get_conversation(c.id).await.unwrap().unwrap();
    assert_eq!(got.messages.len(), 1);
}

#[tokio::test]
async fn the_wal_is_checkpointed_so_it_stays_bounded() {
    let (d, s) = temp_store();
    let c = s.create_conversation("s".into()).await.unwrap();
    let wal = d.path().join("agent.db-wal");
    let frames = || (std::fs::metadata(&wal).unwrap().len().saturating_sub(32)) / (4096 + 24);
    let writes = 6 * super::CHECKPOINT_EVERY;
    let (mut most, mut per_write) = (0, 0.0);
    for i in 0..writes {
        s.append_message(c.id.clone(), text(Role::User, &format!("m{i}")))
            .await
            .unwrap()
            .unwrap();
        if i % 50 == 0 {
            // Let the writer thread take its turn.
            tokio::task::yield_now().await;
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if i == super::CHECKPOINT_EVERY / 2 {
            per_write = frames() as f64 / i as f64;
        }
        // The file's size is its high-water mark: after a checkpoint, new
        // frames go to its start again.
        most = most.max(frames());
    }
    let unbounded = per_write * writes as f64;
    assert!(
        (most as f64) < unbounded / 2.0,
        "the WAL grew to {most} frames over {writes} writes ({per_write:.1} frames each)"
    );
    let got = s.get_conversation(c.id).await.unwrap().unwrap();
    assert_eq!(got.messages.len(), writes);
}
