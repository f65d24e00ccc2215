//! Engine behaviour with the scripted model and an in-memory tool router:
//! turns, approvals exactly once, rejection, recovery after a crash.

use super::*;
use crate::config::Config;
use crate::domain::tools::{CallContext, ToolError, ToolInfo, ToolOutput, ToolRouter};
use crate::llm::scripted::{Rules, Scripted};
use crate::llm::{BoxFuture, ChatRequest, ChatResponse, LlmClient, LlmError};
use crate::store::Store;
use app::models::{ApprovalStatus, ConversationStatus, Role};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const RULES: &str = r#"
rules:
  - match: "(?i)^list"
    steps:
      - call: list
      - reply: "Listed: {result}"
  - match: "(?i)^add (\\w+) (\\d+)"
    steps:
      - call: add
        args: {name: "$1", value: "$2"}
      - reply: "Result: {result}"
  - match: "(?i)^both"
    steps:
      - calls: [{name: add, args: {name: a, value: 1}}, {name: list}]
      - reply: "Both: {result}"
  - match: "(?i)^twice"
    steps:
      - call: list
      - call: list
      - reply: "Twice: {result}"
  - match: "(?i)^pair"
    steps:
      - calls: [{name: list, args: {}}, {name: list, args: {fail: true}}]
      - reply: "Pair: {result}"
  - match: "(?i)^ghost"
    steps:
      - call: nonexistent
      - reply: "after ghost: {result}"
  - match: "(?i)^forever"
    steps:
      - call: list
      - call: list
      - call: list
      - call: list
      - reply: never
default: "hello {user}"
"#;

/// Tools: `list` (safe) and `add` (destructive); records every call.
/// Called with `{"fail": true}`, a tool answers with an error result.
#[derive(Default)]
struct FakeTools {
    calls: Mutex<Vec<(String, Value)>>,
    delay: Duration,
}

impl FakeTools {
    fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }
}

impl ToolRouter for FakeTools {
    fn tools(&self) -> Vec<ToolInfo> {
        ["list", "add"]
            .iter()
            .map(|n| ToolInfo {
                name: n.to_string(),
                description: format!("{n} things"),
                input_schema: json!({"type": "object"}),
                destructive: *n == "add",
                hinted: true,
                annotations: None,
                digest: String::new(),
                server: "fake".into(),
                available: true,
            })
            .collect()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            self.calls
                .lock()
                .unwrap()
                .push((name.to_string(), args.clone()));
            tokio::time::sleep(self.delay).await;
            // `{"fail": true}`: the tool answers with an error result.
            let is_error = args.get("fail") == Some(&json!(true));
            Ok(ToolOutput::text(format!("{name} ok {args}"), is_error))
        })
    }
}

struct FailingLlm;

impl LlmClient for FailingLlm {
    fn complete<'a>(
        &'a self,
        _req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async {
            Err(LlmError::Status {
                provider: "openai",
                status: 500,
                message: "upstream exploded".into(),
            })
        })
    }
    fn describe(&self) -> String {
        "failing".into()
    }
}

struct Setup {
    /// Keeps the data directory alive while the engine uses it.
    _dir: Option<tempfile::TempDir>,
    engine: Engine,
    tools: Arc<FakeTools>,
}

fn config(max_steps: u32) -> Arc<Config> {
    let mut c = crate::config::parse("", std::path::Path::new("agent.yaml"), &|_| None).unwrap();
    c.llm.max_steps = max_steps;
    Arc::new(c)
}

fn setup_with(
    dir: tempfile::TempDir,
    tools: Arc<FakeTools>,
    llm: Arc<dyn LlmClient>,
    max_steps: u32,
) -> Setup {
    let mut s = setup_at(dir.path(), tools, llm, max_steps);
    s._dir = Some(dir);
    s
}

/// An engine on an existing data directory (a "restart" opens it again).
fn setup_at(
    path: &std::path::Path,
    tools: Arc<FakeTools>,
    llm: Arc<dyn LlmClient>,
    max_steps: u32,
) -> Setup {
    let store = Store::open(path).unwrap();
    let engine = Engine::new(store, config(max_steps), Ok(llm), tools.clone());
    Setup {
        _dir: None,
        engine,
        tools,
    }
}

fn scripted() -> Arc<dyn LlmClient> {
    Arc::new(Scripted::from_rules(
        Rules::parse(RULES).unwrap(),
        "scripted:test",
    ))
}

fn setup() -> Setup {
    setup_with(
        tempfile::tempdir().unwrap(),
        Arc::new(FakeTools::default()),
        scripted(),
        10,
    )
}

fn ctx() -> CallContext {
    CallContext {
        session_id: "test".into(),
        ..Default::default()
    }
}

/// A plain approval: no reason, the arguments as asked.
fn approve() -> DecisionRequest {
    DecisionRequest {
        approve: true,
        reason: None,
        arguments: None,
        grant: None,
        upstream_receipt: None,
    }
}

async fn new_conversation(e: &Engine) -> String {
    e.start_conversation(None, ctx()).await.unwrap().0.id
}

#[tokio::test]
async fn a_plain_message_gets_the_model_answer() {
    let s = setup();
    let (c, reply) = s
        .engine
        .start_conversation(Some("hi there".into()), ctx())
        .await
        .unwrap();
    let reply = reply.unwrap();
    assert_eq!(reply.result.response, "hello hi there");
    assert!(!reply.result.waiting_approval);
    assert_eq!(reply.conversation.messages.len(), 2);
    assert_eq!(reply.conversation.status, ConversationStatus::Active);
    assert_eq!(c.id, reply.conversation.id);
}

#[tokio::test]
async fn a_safe_tool_runs_at_once_and_its_result_reaches_the_model() {
    let s = setup();
    let id = new_conversation(&s.engine).await;
    let reply = s
        .engine
        .send_message(&id, "list please".into(), ctx())
        .await
        .unwrap();
    assert_eq!(reply.result.response, "Listed: list ok {}");
    assert_eq!(s.tools.calls().len(), 1);
    let tool_msg = reply
        .conversation
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    let tc = tool_msg.tool_call.as_ref().unwrap();
    assert_eq!(
        (tc.name.as_str(), tc.server.as_deref(), tc.is_error),
        ("list", Some("fake"), Some(false))
    );
}

#[tokio::test]
async fn a_destructive_call_waits_then_runs_once_with_the_original_arguments() {
    let s = setup();
    let id = new_conversation(&s.engine).await;
    let reply = s
        .engine
        .send_message(&id, "add apples 12".into(), ctx())
        .await
        .unwrap();
    assert!(reply.result.waiting_approval);
    let approval = reply.result.approval.clone().unwrap();
    assert_eq!(approval.tool_args, json!({"name": "apples", "value": 12}));
    assert!(
        approval
            .description
            .contains("add(name=\"apples\", value=12)"),
        "{}",
        approval.description
    );
    assert_eq!(
        reply.conversation.status,
        ConversationStatus::WaitingApproval
    );
    assert_eq!(
        reply.conversation.pending_approval.as_ref(),
        Some(&approval)
    );
    assert!(
        s.tools.calls().is_empty(),
        "nothing runs before the decision"
    );

    match s.engine.send_message(&id, "anything".into(), ctx()).await {
        Err(EngineError::WaitingApproval { approval: a, .. }) => assert_eq!(a.uuid, approval.uuid),
        other => panic!("expected WaitingApproval, got {other:?}"),
    }

    let done = s
        .engine
        .decide(&approval.uuid, approve(), ctx())
        .await
        .unwrap();
    assert_eq!(
        s.tools.calls(),
        vec![("add".to_string(), json!({"name": "apples", "value": 12}))]
    );
    assert!(
        done.result.response.starts_with("Result: add ok"),
        "{}",
        done.result.response
    );
    assert_eq!(done.conversation.status, ConversationStatus::Active);
    assert!(done.conversation.pending_approval.is_none());

    match s.engine.decide(&approval.uuid, approve(), ctx()).await {
        Err(EngineError::AlreadyDecided { status, .. }) => {
            assert_eq!(status, ApprovalStatus::Executed)
        }
        other => panic!("expected AlreadyDecided, got {other:?}"),
    }
    assert_eq!(s.tools.calls().len(), 1);
}

#[tokio::test]
async fn a_rejection_never_runs_the_tool_and_tells_the_model_why() {
    let s = setup();
    let id = new_conversation(&s.engine).await;
    let reply = s
        .engine
        .send_message(&id, "add pears 3".into(), ctx())
        .await
        .unwrap();
    let uuid = reply.result.approval.unwrap().uuid;
    let done = s
        .engine
        .decide(
            &uuid,
            DecisionRequest {
                approve: false,
                reason: Some("not today".into()),
                arguments: None,
                grant: None,
                upstream_receipt: None,
            },
            ctx(),
        )
        .await
        .unwrap();
    assert!(s.tools.calls().is_empty());
    assert!(
        done.result.response.contains("rejected") && done.result.response.contains("not today"),
        "{}",
        done.result.response
    );
    let tc = done
        .conversation
        .messages
        .iter()
        .find_map(|m| m.tool_call.clone())
        .unwrap();
    assert_eq!(tc.is_error, Some(true));
}

#[tokio::test]
async fn sixteen_concurrent_approvals_of_one_uuid_execute_once() {
    let tools = Arc::new(FakeTools {
        delay: Duration::from_millis(50),
        ..Default::default()
    });
    let s = setup_with(tempfile::tempdir().unwrap(), tools, scripted(), 10);
    let id = new_conversation(&s.engine).await;
    let uuid = s
        .engine
        .send_message(&id, "add x 1".into(), ctx())
        .await
        .unwrap()
        .result
        .approval
        .unwrap()
        .uuid;
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let e = s.engine.clone();
        let u = uuid.clone();
        tasks.push(tokio::spawn(
            async move { e.decide(&u, approve(), ctx()).await },
        ));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(EngineError::Busy(_) | EngineError::AlreadyDecided { .. }) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(ok, 1, "exactly one decision wins");
    assert_eq!(s.tools.calls().len(), 1, "the tool ran exactly once");
}

#[tokio::test]
async fn all_calls_of_one_step_are_handled_in_order() {
    let s = setup();
    let id = new_conversation(&s.engine).await;
    let r = s
        .engine
        .send_message(&id, "both".into(), ctx())
        .await
        .unwrap();
    assert!(
        r.result.waiting_approval,
        "the destructive first call pauses the step"
    );
    assert!(
        s.tools.calls().is_empty(),
        "the later safe call waits behind it"
    );
    let uuid = r.result.approval.unwrap().uuid;
    let done = s.engine.decide(&uuid, approve(), ctx()).await.unwrap();
    let names: Vec<String> = s.tools.calls().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["add", "list"]);
    assert!(done.result.response.starts_with("Both:"));
}

/// Records every request the engine sends, then answers as the wrapped
/// model does.
struct Recording {
    inner: Arc<dyn LlmClient>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl LlmClient for Recording {
    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        self.seen.lock().unwrap().push(req.clone());
        self.inner.complete(req)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// A simple-mode turn goes on from what it wrote itself under its lease (a
/// new conversation's message, each step, each call's result) instead of
/// reading the conversation back: every request the model gets must be
/// exactly the transcript a read of the conversation gives at that point.
#[tokio::test]
async fn the_model_sees_what_a_read_of_the_conversation_gives() {
    let llm = Arc::new(Recording {
        inner: scripted(),
        seen: Mutex::new(Vec::new()),
    });
    let s = setup_with(
        tempfile::tempdir().unwrap(),
        Arc::new(FakeTools::default()),
        llm.clone(),
        10,
    );
    // A new conversation: two steps of one call each.
    let (c, reply) = s
        .engine
        .start_conversation(Some("twice".into()), ctx())
        .await
        .unwrap();
    assert_eq!(reply.unwrap().result.response, "Twice: list ok {}");
    // An existing one: one step of two calls, the second failing.
    let r = s
        .engine
        .send_message(&c.id, "pair".into(), ctx())
        .await
        .unwrap();
    assert_eq!(
        r.result.response,
        "Pair: list ok {}\nlist ok {\"fail\":true}"
    );
    assert_eq!(s.tools.calls().len(), 4, "each call ran once");
    let stored = s.engine.inner.store.messages(&c.id).await.unwrap();
    let seen = llm.seen.lock().unwrap().clone();
    // Model calls: [hi], [hi, call], [hi, call, call] (answer), then
    // [.., pair], [.., pair, call, call] (answer).
    assert_eq!(seen.len(), 5);
    let prefixes: Vec<usize> = seen
        .iter()
        .map(|req| {
            (1..=stored.len())
                .find(|n| super::history::transcript(&stored[..*n]) == req.messages)
                .unwrap_or_else(|| panic!("no read of the conversation gives {req:#?}"))
        })
        .collect();
    // user, tool, tool, assistant, user, tool, tool, assistant
    assert_eq!(prefixes, [1, 2, 3, 5, 7]);
}

#[tokio::test]
async fn an_unknown_tool_is_reported_to_the_model_not_run() {
    let s = setup();
    let id = new_conversation(&s.engine).await;
    let r = s
        .engine
        .send_message(&id, "ghost".into(), ctx())
        .await
        .unwrap();
    assert!(
        r.result.response.contains("unknown tool `nonexistent`"),
        "{}",
        r.result.response
    );
    assert!(s.tools.calls().is_empty());
}

#[tokio::test]
async fn a_turn_stops_at_max_steps() {
    let s = setup_with(
        tempfile::tempdir().unwrap(),
        Arc::new(FakeTools::default()),
        scripted(),
        2,
    );
    let id = new_conversation(&s.engine).await;
    let r = s
        .engine
        .send_message(&id, "forever".into(), ctx())
        .await
        .unwrap();
    assert!(
        r.result.response.contains("llm.max_steps is 2"),
        "{}",
        r.result.response
    );
    assert_eq!(s.tools.calls().len(), 2);
}

#[tokio::test]
async fn a_failing_model_is_recorded_and_reported() {
    let s = setup_with(
        tempfile::tempdir().unwrap(),
        Arc::new(FakeTools::default()),
        Arc::new(FailingLlm),
        10,
    );
    let id = new_conversation(&s.engine).await;
    match s.engine.send_message(&id, "hi".into(), ctx()).await {
        Err(EngineError::Llm {
            error,
            conversation,
        }) => {
            assert_eq!(error.http_status(), 502);
            assert_eq!(conversation.status, ConversationStatus::Failed);
            let last = conversation.messages.last().unwrap();
            assert_eq!(last.role, Role::System);
            assert!(last.content.contains("upstream exploded"));
        }
        other => panic!("expected an LLM error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_key_fails_new_messages_but_not_reads() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let engine = Engine::new(
        store,
        config(10),
        Err(LlmError::MissingKey("GEMINI_API_KEY")),
        Arc::new(FakeTools::default()),
    );
    assert_eq!(
        engine.llm_problem().as_deref(),
        Some("GEMINI_API_KEY is not set")
    );
    let id = new_conversation(&engine).await;
    match engine.send_message(&id, "hi".into(), ctx()).await {
        Err(EngineError::LlmUnavailable(m)) => assert!(m.contains("GEMINI_API_KEY")),
        other => panic!("{other:?}"),
    }
    let c = super::decide::load(engine.store(), &id).await.unwrap();
    assert!(c.messages.is_empty(), "a refused message is not stored");
}

#[tokio::test]
async fn after_a_crash_an_executing_approval_is_in_doubt_and_never_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let uuid = {
        let s = setup_at(&path, Arc::new(FakeTools::default()), scripted(), 10);
        let id = new_conversation(&s.engine).await;
        let uuid = s
            .engine
            .send_message(&id, "add y 2".into(), ctx())
            .await
            .unwrap()
            .result
            .approval
            .unwrap()
            .uuid;
        // Simulate a crash after `executing` was committed, before the result.
        let u = uuid.clone();
        s.engine
            .store()
            .write_raw(move |tx| {
                tx.transition(
                    &u,
                    &[ApprovalStatus::Pending],
                    ApprovalStatus::Executing,
                    None,
                    None,
                )?;
                Ok(())
            })
            .await
            .unwrap();
        uuid
    };
    let tools = Arc::new(FakeTools::default());
    let store = Store::open(&path).unwrap();
    let engine = Engine::new(store, config(10), Ok(scripted()), tools.clone());
    let resume = engine.recover().await.unwrap();
    assert!(resume.is_empty());
    let a = engine
        .store()
        .read_raw({
            let u = uuid.clone();
            move |tx| tx.approval(&u)
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a.status, ApprovalStatus::InDoubt);
    let c = super::decide::load(engine.store(), &a.approval.conversation_id)
        .await
        .unwrap();
    assert_eq!(c.status, ConversationStatus::Active);
    let tc = c.messages.iter().find_map(|m| m.tool_call.clone()).unwrap();
    assert!(tc.result.unwrap().starts_with("Outcome unknown"));
    assert!(tools.calls().is_empty(), "never re-run");
}

#[tokio::test]
async fn after_a_crash_an_approved_action_is_resumed_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let (id, uuid) = {
        let s = setup_at(&path, Arc::new(FakeTools::default()), scripted(), 10);
        let id = new_conversation(&s.engine).await;
        let uuid = s
            .engine
            .send_message(&id, "add z 3".into(), ctx())
            .await
            .unwrap()
            .result
            .approval
            .unwrap()
            .uuid;
        let u = uuid.clone();
        let cid = id.clone();
        s.engine
            .store()
            .write_raw(move |tx| {
                tx.transition(
                    &u,
                    &[ApprovalStatus::Pending],
                    ApprovalStatus::Approved,
                    Some(&crate::store::approvals::Decider {
                        name: "op".into(),
                        via: crate::domain::channel::Channel::Rest,
                        session: "test".into(),
                    }),
                    None,
                )?;
                tx.set_turn_running(&cid, true)?;
                Ok(())
            })
            .await
            .unwrap();
        (id, uuid)
    };
    let tools = Arc::new(FakeTools::default());
    let engine = Engine::new(
        Store::open(&path).unwrap(),
        config(10),
        Ok(scripted()),
        tools.clone(),
    );
    let resume = engine.recover().await.unwrap();
    assert_eq!(resume, vec![id.clone()]);
    engine.resume_in_background(resume);
    for _ in 0..100 {
        let c = super::decide::load(engine.store(), &id).await.unwrap();
        if c.messages.last().is_some_and(|m| m.role == Role::Assistant) {
            assert_eq!(tools.calls().len(), 1);
            assert!(
                c.messages
                    .last()
                    .unwrap()
                    .content
                    .starts_with("Result: add ok")
            );
            let a = engine
                .store()
                .read_raw({
                    let u = uuid.clone();
                    move |tx| tx.approval(&u)
                })
                .await
                .unwrap()
                .unwrap();
            assert_eq!(a.status, ApprovalStatus::Executed);
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the approved action was not resumed");
}

#[tokio::test]
async fn after_a_crash_a_running_turn_is_marked_interrupted() {
    let s = setup();
    let id = new_conversation(&s.engine).await;
    let cid = id.clone();
    s.engine
        .store()
        .write_raw(move |tx| {
            tx.append(&cid, crate::store::NewMessage::text(Role::User, "list"))?;
            tx.set_turn_running(&cid, true)?;
            Ok(())
        })
        .await
        .unwrap();
    assert!(s.engine.recover().await.unwrap().is_empty());
    let c = super::decide::load(s.engine.store(), &id).await.unwrap();
    assert_eq!(c.messages.last().unwrap().content, TURN_INTERRUPTED_NOTE);
    let again = s
        .engine
        .send_message(&id, "list".into(), ctx())
        .await
        .unwrap();
    assert_eq!(again.result.response, "Listed: list ok {}");
}

#[tokio::test]
async fn no_turn_is_left_marked_running_after_it_answers_pauses_or_fails() {
    let s = setup();
    let id = new_conversation(&s.engine).await;
    let running = |e: &Engine| {
        let e = e.clone();
        async move { e.store().read_raw(|tx| tx.running()).await.unwrap() }
    };
    s.engine
        .send_message(&id, "list".into(), ctx())
        .await
        .unwrap();
    assert!(running(&s.engine).await.is_empty(), "after an answer");
    let uuid = s
        .engine
        .send_message(&id, "add a 1".into(), ctx())
        .await
        .unwrap()
        .result
        .approval
        .unwrap()
        .uuid;
    assert!(running(&s.engine).await.is_empty(), "while paused");
    s.engine.decide(&uuid, approve(), ctx()).await.unwrap();
    assert!(
        running(&s.engine).await.is_empty(),
        "after the approval's turn"
    );
    let f = setup_with(
        tempfile::tempdir().unwrap(),
        Arc::new(FakeTools::default()),
        Arc::new(FailingLlm),
        10,
    );
    let fid = new_conversation(&f.engine).await;
    assert!(
        f.engine
            .send_message(&fid, "hi".into(), ctx())
            .await
            .is_err()
    );
    assert!(running(&f.engine).await.is_empty(), "after a failure");
    let m = setup_with(
        tempfile::tempdir().unwrap(),
        Arc::new(FakeTools::default()),
        scripted(),
        1,
    );
    let mid = new_conversation(&m.engine).await;
    m.engine
        .send_message(&mid, "forever".into(), ctx())
        .await
        .unwrap();
    assert!(running(&m.engine).await.is_empty(), "after max_steps");
}

/// The store round trips of `decide → tool runs → turn settles`, on
/// `store`: a conversation paused on an approval of `add`, approved
/// (`Store::round_trips`: SQLite's transactions and reads, PostgreSQL's
/// requests sent and awaited).
async fn decide_round_trips(store: Store) -> usize {
    let tools = Arc::new(FakeTools::default());
    let engine = Engine::new(store.clone(), config(10), Ok(scripted()), tools.clone());
    let id = new_conversation(&engine).await;
    let reply = engine
        .send_message(&id, "add apples 12".into(), ctx())
        .await
        .unwrap();
    let approval = reply.result.approval.clone().unwrap();
    let before = store.round_trips();
    let done = engine
        .decide(&approval.uuid, approve(), ctx())
        .await
        .unwrap();
    let trips = store.round_trips() - before;
    assert_eq!(tools.calls().len(), 1);
    assert!(done.result.response.starts_with("Result: add ok"));
    assert_eq!(done.conversation.status, ConversationStatus::Active);
    trips
}

#[tokio::test]
async fn a_decision_costs_a_known_number_of_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = decide_round_trips(Store::open(dir.path()).unwrap()).await;
    // Both backends always, as the store suite: without
    // `STOPGO_TEST_DATABASE_URL` this fails saying how to get a cluster.
    use crate::store::suite::{pg_database, replica};
    let postgres = decide_round_trips(replica(&pg_database().await, 30).await).await;
    // Before the decided approval was handed to the turn: 9 and 16 (the
    // turn read it again).
    assert_eq!(sqlite, 8, "SQLite round trips of a decision");
    assert_eq!(postgres, 15, "PostgreSQL round trips of a decision");
}
