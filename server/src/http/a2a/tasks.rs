//! A2A tasks over our conversations: the task id and context id are the
//! conversation id, so REST and A2A see one state (an approval given over
//! REST completes the A2A task, and the other way round).
//!
//! - A conversation maps to a task state: a running turn is `working`, a
//!   pending approval `input-required` (its status message carries a data
//!   part `{approval_uuid, tool, arguments, description, chain}`), a
//!   finished turn `completed` (the answer is an artifact), `failed`,
//!   `canceled`.
//! - `SendMessage` with a `taskId` continues that task: a waiting task
//!   takes a decision (approve/reject words or `{"approved": bool}`);
//!   anything else there is `-32602` with an explanation, never a silent
//!   rejection. A terminal task (1.0/0.3) is `-32004`; the seed's legacy
//!   clients continue the conversation instead, as the seed did. A message
//!   with only a known `contextId` is the next turn of that conversation.
//! - Turns run detached from the HTTP request (the engine spawns them), so
//!   a client that disconnects does not stop its task.

use super::executor::Ran;
use super::rpc::{RpcError, param_str, param_u64};
use crate::a2a::wire::{
    ArtifactView, Dialect, Incoming, MessageView, Part, Sender, TaskState, TaskView,
};
use crate::engine::{Ctx, DecisionRequest, EngineError};
use crate::http::state::AppState;
use crate::store::StoreError;
use app::models::{Conversation, ConversationStatus, ListQuery, Role};
use serde_json::{Value, json};

/// A task's state from its conversation's status, whether a turn is
/// running, and whether its last user/assistant message is an answer
/// (`None`: it has none).
pub(crate) fn task_state(
    status: ConversationStatus,
    busy: bool,
    answered: Option<bool>,
) -> TaskState {
    // A question on a live MCP session waits inside the running turn.
    if status == ConversationStatus::WaitingInput {
        return TaskState::InputRequired;
    }
    if busy {
        return TaskState::Working;
    }
    match (status, answered) {
        (ConversationStatus::WaitingApproval, _) => TaskState::InputRequired,
        (ConversationStatus::Failed, _) => TaskState::Failed,
        (ConversationStatus::Cancelled, _) => TaskState::Canceled,
        (_, None) => TaskState::Submitted,
        (_, Some(true)) => TaskState::Completed,
        // The turn ended without an answer (interrupted by a restart).
        (_, Some(false)) => TaskState::Failed,
    }
}

/// How the `task_state` column names a state (the stored rule above).
fn stored_state(s: TaskState) -> &'static str {
    match s {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::InputRequired => "input-required",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
    }
}

/// The task view of a conversation. `history`: keep the last N messages.
pub(crate) fn view(c: &Conversation, busy: bool, history: Option<usize>) -> TaskView {
    let talk: Vec<&app::models::Message> = c
        .messages
        .iter()
        .filter(|m| matches!(m.role, Role::User | Role::Assistant) && !m.content.is_empty())
        .collect();
    let last_answer = talk
        .last()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| (*m).clone());
    let answered = talk.last().map(|m| m.role == Role::Assistant);
    let state = task_state(c.status, busy, answered);
    let agent = |parts: Vec<Part>, id: String| MessageView {
        id,
        role: Sender::Agent,
        parts,
        task_id: Some(c.id.clone()),
        context_id: Some(context_of(c)),
    };
    let last_note = || {
        c.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::System)
            .map(|m| m.content.clone())
    };
    let status_message = match state {
        TaskState::InputRequired => c
            .pending_approval
            .as_ref()
            .map(|a| {
                agent(
                    vec![
                        Part::Text(format!("Approval needed: {}", a.description)),
                        Part::Data(json!({
                            "approval_uuid": a.uuid,
                            "tool": a.tool_name,
                            "arguments": a.tool_args,
                            "description": a.description,
                            "chain": a.chain.clone().unwrap_or_default(),
                        })),
                    ],
                    format!("{}-approval", a.uuid),
                )
            })
            .or_else(|| {
                // A tool's question (QUESTIONS.md §4): answered with a data
                // part `{"question_answer": {uuid, action, content}}`.
                c.pending_question.as_ref().map(|q| {
                    let mut facts = json!({
                        "uuid": q.uuid,
                        "kind": q.kind,
                        "message": q.message,
                        "tool": q.tool_call.tool,
                        "chain": q.chain,
                    });
                    if let Some(s) = &q.schema {
                        facts["schema"] = s.clone();
                    }
                    if let Some(u) = &q.url {
                        facts["url"] = u.clone().into();
                    }
                    agent(
                        vec![
                            Part::Text(format!("`{}` asks: {}", q.tool_call.tool, q.message)),
                            Part::Data(json!({ "question": facts })),
                        ],
                        format!("{}-question", q.uuid),
                    )
                })
            }),
        TaskState::Completed => last_answer.as_ref().map(|m| {
            agent(
                vec![Part::Text(m.content.clone())],
                format!("{}-status", m.id),
            )
        }),
        TaskState::Failed | TaskState::Canceled => {
            last_note().map(|t| agent(vec![Part::Text(t)], format!("{}-note", c.id)))
        }
        _ => None,
    };
    let artifacts = match (&state, &last_answer) {
        (TaskState::Completed, Some(m)) => vec![ArtifactView {
            id: format!("answer-{}", m.id),
            name: "answer".into(),
            parts: vec![Part::Text(m.content.clone())],
        }],
        _ => Vec::new(),
    };
    let mut history_view: Vec<MessageView> = talk
        .iter()
        .map(|m| MessageView {
            id: m.client_id.clone().unwrap_or_else(|| m.id.clone()),
            role: if m.role == Role::User {
                Sender::User
            } else {
                Sender::Agent
            },
            parts: vec![Part::Text(m.content.clone())],
            task_id: Some(c.id.clone()),
            context_id: Some(context_of(c)),
        })
        .collect();
    if let Some(n) = history {
        let skip = history_view.len().saturating_sub(n);
        history_view.drain(..skip);
    }
    TaskView {
        id: c.id.clone(),
        context_id: context_of(c),
        state,
        status_message,
        timestamp: c.updated_at.clone(),
        history: history_view,
        artifacts,
    }
}

/// The task's context id: the one its client chose, else the task id.
pub(crate) fn context_of(c: &Conversation) -> String {
    c.context_id.clone().unwrap_or_else(|| c.id.clone())
}

/// The task a plan works on, made now (empty) when the plan starts one:
/// for callers that must know it before the turn runs.
pub(crate) async fn task_for(
    state: &AppState,
    plan: &Plan,
    m: &Incoming,
    ctx: &Ctx,
) -> Result<String, RpcError> {
    match plan.conversation() {
        Some(id) => Ok(id.to_string()),
        None => create(state, m, ctx).await,
    }
}

/// Creates an empty conversation for a new task (in the client's context,
/// if it named one) and returns its id.
pub(crate) async fn create(state: &AppState, m: &Incoming, ctx: &Ctx) -> Result<String, RpcError> {
    let (c, _) = state
        .engine
        .start_conversation(None, ctx.clone())
        .await
        .map_err(engine_error)?;
    if let Some(context) = &m.context_id {
        remember_context(state, &c.id, context).await?;
    }
    Ok(c.id)
}

async fn remember_context(state: &AppState, id: &str, context: &str) -> Result<(), RpcError> {
    state
        .store
        .set_context(id, context)
        .await
        .map_err(|e| RpcError::internal(e.to_string()))
}

/// The task view of a conversation as the executor sees it (busy state,
/// extra artifacts).
pub(crate) fn view_of(state: &AppState, c: &Conversation, history: Option<usize>) -> TaskView {
    let mut v = view(c, state.engine.runs(c), history);
    if v.state == TaskState::Failed
        && c.status == ConversationStatus::Active
        && state.a2a.open(&c.id)
    {
        v.state = TaskState::Working;
    }
    if let Some(extra) = state.a2a.artifacts(&c.id)
        && v.state == TaskState::Completed
    {
        v.artifacts = extra;
    }
    v
}

/// What a `SendMessage` does.
#[derive(Clone, Debug)]
pub(crate) enum Plan {
    /// A new conversation with this first message.
    New(Incoming),
    /// The next turn of a conversation.
    Turn { id: String, m: Incoming },
    /// A decision on a waiting conversation's pending approval.
    Decide {
        id: String,
        uuid: String,
        decision: DecisionRequest,
    },
    /// An answer to the question a waiting conversation's tool asked
    /// (QUESTIONS.md §4: a data part `{"question_answer": {...}}`).
    Answer {
        id: String,
        uuid: String,
        answer: crate::engine::Answer,
    },
}

impl Plan {
    /// The same plan on conversation `id` (a new one becomes its first turn).
    pub(crate) fn on(self, id: &str) -> Plan {
        match self {
            Plan::New(m) => Plan::Turn {
                id: id.to_string(),
                m,
            },
            p => p,
        }
    }

    pub(crate) fn conversation(&self) -> Option<&str> {
        match self {
            Plan::New(_) => None,
            Plan::Turn { id, .. } | Plan::Decide { id, .. } | Plan::Answer { id, .. } => Some(id),
        }
    }
}

/// Reads a conversation or says the task does not exist.
pub(crate) async fn load(state: &AppState, id: &str) -> Result<Conversation, RpcError> {
    state
        .store
        .get_conversation(id.to_string())
        .await
        .map_err(|e| RpcError::internal(e.to_string()))?
        .ok_or_else(|| RpcError::task_not_found(id))
}

/// Decides what a message means for the task it names.
pub(crate) async fn plan(state: &AppState, m: &Incoming, d: Dialect) -> Result<Plan, RpcError> {
    let target = match (&m.task_id, &m.context_id) {
        (Some(t), ctx_id) => {
            let c = load(state, t).await?;
            if let Some(cid) = ctx_id
                && *cid != context_of(&c)
            {
                return Err(RpcError::params(format!(
                    "contextId {cid:?} does not match task {t:?} (its contextId is {:?})",
                    context_of(&c)
                )));
            }
            let st = view(&c, state.engine.runs(&c), Some(0)).state;
            if st.is_terminal() && d != Dialect::Legacy {
                return Err(RpcError::unsupported(format!(
                    "task {t:?} is {}: it takes no more messages; send a message with contextId {t:?} and no taskId to go on in the same conversation",
                    st.wire(Dialect::V03)
                )));
            }
            Some(c)
        }
        (None, Some(cid)) => {
            let found = state
                .store
                .by_context(cid)
                .await
                .map_err(|e| RpcError::internal(e.to_string()))?;
            match found {
                Some(id) => Some(load(state, &id).await?),
                None => None,
            }
        }
        (None, None) => None,
    };
    let Some(c) = target else {
        nonempty(m)?;
        return Ok(Plan::New(m.clone()));
    };
    if let Some(a) = &c.pending_approval {
        return match crate::a2a::wire::decision_in_full(m) {
            // The caller decided another approval than the one waiting now
            // (ours expired and the model asked again): never applied here.
            Some(d) if d.approval_uuid.as_ref().is_some_and(|u| *u != a.uuid) => {
                Err(RpcError::params(format!(
                    "task {:?} now waits on approval {} (`{}`), not on {}: that one ended here; decide the new one",
                    c.id,
                    a.uuid,
                    a.tool_name,
                    d.approval_uuid.unwrap_or_default()
                )))
            }
            Some(d) => Ok(Plan::Decide {
                id: c.id.clone(),
                uuid: a.uuid.clone(),
                decision: DecisionRequest {
                    approve: d.approved,
                    reason: d.reason,
                    arguments: d.arguments,
                    grant: None,
                },
            }),
            None => Err(RpcError::params(format!(
                "task {:?} is waiting for approval of `{}` ({}): answer \"approve\" or \"reject\" (or a data part {{\"approved\": true|false}})",
                c.id, a.tool_name, a.description
            ))),
        };
    }
    if let Some(q) = &c.pending_question {
        return match crate::a2a::wire::question_answer(m) {
            Some(a) if a.uuid != q.uuid => Err(RpcError::params(format!(
                "task {:?} now waits on question {}, not on {}: that one ended here; answer the new one",
                c.id, q.uuid, a.uuid
            ))),
            Some(a) => Ok(Plan::Answer {
                id: c.id.clone(),
                uuid: a.uuid,
                answer: crate::engine::Answer {
                    action: a.action,
                    content: a.content,
                },
            }),
            None => Err(RpcError::params(format!(
                "task {:?} waits for the answer to a question from `{}` ({}): send a data part {{\"question_answer\": {{\"uuid\": \"{}\", \"action\": \"accept\"|\"decline\"|\"cancel\", \"content\": {{...}}}}}}",
                c.id, q.tool_call.tool, q.message, q.uuid
            ))),
        };
    }
    nonempty(m)?;
    Ok(Plan::Turn {
        id: c.id.clone(),
        m: m.clone(),
    })
}

fn nonempty(m: &Incoming) -> Result<&str, RpcError> {
    if m.text.trim().is_empty() {
        Err(RpcError::params(
            "the message has no text: send at least one non-empty text part",
        ))
    } else {
        Ok(&m.text)
    }
}

/// Runs a plan to its end (the turn finished or paused) and returns the
/// conversation. A failed model call is a failed task, not an RPC error.
pub(crate) async fn run(state: &AppState, plan: Plan, ctx: Ctx) -> Result<Conversation, RpcError> {
    let e = &state.engine;
    let out = match plan {
        Plan::New(m) => {
            let context = m.context_id.clone();
            let out = e
                .start_conversation(Some(m.text), ctx)
                .await
                .map(|(c, _)| c);
            match (out, context) {
                (Ok(c), Some(context)) => {
                    remember_context(state, &c.id, &context).await?;
                    Ok(load(state, &c.id).await?)
                }
                (out, _) => out,
            }
        }
        Plan::Turn { id, m } => e
            .send_message(&id, m.text, ctx)
            .await
            .map(|r| r.conversation),
        Plan::Decide { uuid, decision, .. } => {
            e.decide(&uuid, decision, ctx).await.map(|r| r.conversation)
        }
        Plan::Answer { uuid, answer, .. } => {
            e.answer(&uuid, answer, ctx).await.map(|r| r.conversation)
        }
    };
    match out {
        Ok(c) => Ok(c),
        Err(EngineError::Llm { conversation, .. }) => Ok(*conversation),
        // Cancelled while it ran: the task as the cancel left it.
        Err(EngineError::Cancelled(id)) => load(state, &id).await,
        Err(e) => Err(engine_error(e)),
    }
}

/// An engine error as an A2A error.
pub(crate) fn engine_error(e: EngineError) -> RpcError {
    match e {
        EngineError::NotFound(m) => RpcError::new(-32001, m),
        EngineError::Forbidden(m) => RpcError::forbidden(m),
        EngineError::Invalid(m) | EngineError::Store(StoreError::Unstorable(m)) => {
            RpcError::params(m)
        }
        e @ (EngineError::Busy(_)
        | EngineError::WaitingApproval { .. }
        | EngineError::WaitingInput { .. }
        | EngineError::AlreadyDecided { .. }
        | EngineError::AlreadyAnswered { .. }
        | EngineError::AlreadyVoted { .. }
        | EngineError::ConfigChanged(_)) => RpcError::unsupported(e.to_string()),
        e => RpcError::internal(e.to_string()),
    }
}

/// `SendMessage` / `message/send`, blocking unless asked not to.
pub(crate) async fn send(
    state: &AppState,
    params: &Value,
    d: Dialect,
    mut ctx: Ctx,
) -> Result<Value, RpcError> {
    let mut m = crate::a2a::wire::incoming(params, d).map_err(RpcError::params)?;
    m.dialect = Some(d);
    ctx.message_id = m.message_id.clone();
    let config = params.get("configuration");
    let immediate = match d {
        Dialect::V1 => config
            .and_then(|c| {
                c.get("returnImmediately")
                    .or_else(|| c.get("return_immediately"))
            })
            .and_then(Value::as_bool)
            .unwrap_or(false),
        _ => config
            .and_then(|c| c.get("blocking"))
            .and_then(Value::as_bool)
            .map(|b| !b)
            .unwrap_or(false),
    };
    let history = config
        .map(|c| param_u64(c, "historyLength", "history_length"))
        .transpose()?
        .flatten()
        .map(|n| n as usize);
    let push = super::push::on_send(state, params)?;
    let plan = state.a2a.plan(state, &m, d).await?;
    super::authorize::plan(state, &plan, &ctx).await?;
    // A push config needs its task before the task changes state.
    let plan = match &push {
        Some(p) => {
            let id = task_for(state, &plan, &m, &ctx).await?;
            super::push::register(state, &id, p, d, &ctx).await?;
            plan.on(&id)
        }
        None => plan,
    };
    if immediate {
        let id = task_for(state, &plan, &m, &ctx).await?;
        let plan = plan.on(&id);
        let (st, ctx2) = (state.clone(), ctx.clone());
        state.tasks.spawn_background("a2a task", async move {
            if let Err(e) = st.a2a.run(&st, plan, ctx2).await {
                tracing::warn!(error = %e.message, "a task sent with returnImmediately failed");
            }
        });
        let c = load(state, &id).await?;
        // Reported as working: the turn has been handed over.
        let mut v = view_of(state, &c, history);
        v.state = TaskState::Working;
        return Ok(wrap(&v, d));
    }
    match state.a2a.run(state, plan, ctx).await? {
        Ran::Task(c) => Ok(wrap(&view_of(state, &c, history), d)),
        Ran::Message(m) => {
            let msg = crate::a2a::wire::message(&m, d);
            Ok(match d {
                Dialect::V1 => json!({ "message": msg }),
                _ => msg,
            })
        }
    }
}

/// The `SendMessage` result: `{"task": …}` in 1.0, the task itself in 0.3.
fn wrap(v: &TaskView, d: Dialect) -> Value {
    let t = crate::a2a::wire::task(v, d, true);
    match d {
        Dialect::V1 => json!({ "task": t }),
        _ => t,
    }
}

/// `GetTask` / `tasks/get`.
pub(crate) async fn get(state: &AppState, params: &Value, d: Dialect) -> Result<Value, RpcError> {
    let id = param_str(params, "id", "id").ok_or_else(|| RpcError::params("`id` is required"))?;
    let history = param_u64(params, "historyLength", "history_length")?.map(|n| n as usize);
    let c = load(state, &id).await?;
    Ok(crate::a2a::wire::task(
        &view_of(state, &c, history),
        d,
        true,
    ))
}

/// `CancelTask` / `tasks/cancel`: pending approvals are cancelled, never run.
pub(crate) async fn cancel(
    state: &AppState,
    params: &Value,
    d: Dialect,
    ctx: Ctx,
) -> Result<Value, RpcError> {
    let id = param_str(params, "id", "id").ok_or_else(|| RpcError::params("`id` is required"))?;
    let c = load(state, &id).await?;
    super::authorize::cancel(state, &id, &ctx).await?;
    let st = view_of(state, &c, Some(0)).state;
    if st.is_terminal() {
        return Err(RpcError::not_cancelable(format!(
            "task {id:?} is {} and cannot be canceled",
            st.wire(Dialect::V03)
        )));
    }
    let c = state.engine.cancel(&id, ctx).await.map_err(|e| match e {
        EngineError::Busy(_) => RpcError::not_cancelable(format!(
            "task {id:?} is running a step that did not stop in time; try again"
        )),
        e => engine_error(e),
    })?;
    Ok(crate::a2a::wire::task(&view(&c, false, None), d, true))
}

/// `ListTasks` (1.0): newest first, cursor paging, optional filters.
pub(crate) async fn list(state: &AppState, params: &Value, d: Dialect) -> Result<Value, RpcError> {
    let page_size = param_u64(params, "pageSize", "page_size")?.unwrap_or(50);
    if !(1..=100).contains(&page_size) {
        return Err(RpcError::params(format!(
            "pageSize {page_size} is out of range: use 1 to 100"
        )));
    }
    let history = param_u64(params, "historyLength", "history_length")?.map(|n| n as usize);
    let include_artifacts = params
        .get("includeArtifacts")
        .or_else(|| params.get("include_artifacts"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let wanted = match param_str(params, "status", "status") {
        None => None,
        Some(s) => Some(TaskState::parse(&s).ok_or_else(|| {
            RpcError::params(format!("unknown status {s:?}: use a TASK_STATE_* name"))
        })?),
    };
    let render = |c: &Conversation| {
        let v = view_of(state, c, history);
        (v.state, crate::a2a::wire::task(&v, d, include_artifacts))
    };
    if let Some(cid) = param_str(params, "contextId", "context_id") {
        let id = state
            .store
            .by_context(&cid)
            .await
            .map_err(|e| RpcError::internal(e.to_string()))?;
        let found = match id {
            Some(id) => state
                .store
                .get_conversation(id)
                .await
                .map_err(|e| RpcError::internal(e.to_string()))?,
            None => None,
        };
        let tasks: Vec<Value> = found
            .iter()
            .map(render)
            .filter(|(st, _)| wanted.is_none_or(|w| w == *st))
            .map(|(_, t)| t)
            .collect();
        let n = tasks.len();
        return Ok(
            json!({"tasks": tasks, "nextPageToken": "", "pageSize": page_size, "totalSize": n}),
        );
    }
    let token = param_str(params, "pageToken", "page_token").filter(|t| !t.is_empty());
    if let Some(w) = wanted {
        return list_in_state(state, w, token, page_size as usize, render).await;
    }
    let token_given = token.clone();
    let page = crate::http::rest::conversations::full_page(
        &state.store,
        ListQuery {
            limit: Some(page_size as u32),
            cursor: token,
            ..Default::default()
        },
    )
    .await
    .map_err(|e| list_error(e, token_given))?;
    let tasks: Vec<Value> = page.conversations.iter().map(|c| render(c).1).collect();
    Ok(json!({
        "tasks": tasks,
        "nextPageToken": page.next_cursor.unwrap_or_default(),
        "pageSize": page_size,
        "totalSize": page.summary.total,
    }))
}

/// Why a page of tasks could not be listed: a `pageToken` this server did
/// not issue is the client's mistake (`-32602`, said in A2A's words); any
/// other failure is internal (`-32603` with a correlation id, the detail
/// only in the log).
fn list_error(e: crate::http::ApiError, token: Option<String>) -> RpcError {
    match (e, token) {
        (crate::http::ApiError::BadRequest(_), Some(t)) => RpcError::params(format!(
            "pageToken {t:?} is not one this server issued: pass the nextPageToken of the previous page"
        )),
        (e, _) => RpcError::internal(e.to_string()),
    }
}

/// `ListTasks` with a status filter. A task's state is derived from its
/// conversation's status, whether a turn runs and who spoke last; the row
/// keeps it as a generated column (same rule as [`task_state`]) with an
/// index and a kept count, so a page costs the same however many tasks
/// are stored. `totalSize` counts the matching tasks; the token is the
/// position after the last one, as without a filter.
async fn list_in_state(
    state: &AppState,
    wanted: TaskState,
    token: Option<String>,
    page_size: usize,
    render: impl Fn(&Conversation) -> (TaskState, Value),
) -> Result<Value, RpcError> {
    let before = match token {
        None => i64::MAX,
        Some(t) => t.parse::<i64>().map_err(|_| {
            RpcError::params(format!(
                "pageToken {t:?} is not one this server issued: pass the nextPageToken of the previous page"
            ))
        })?,
    };
    let limit = u32::try_from(page_size)
        .unwrap_or(u32::MAX)
        .saturating_add(1);
    let found = state
        .store
        .tasks_in_state(stored_state(wanted), before, limit)
        .await
        .map_err(|e| RpcError::internal(e.to_string()))?;
    let more = found.page.len() > page_size;
    let mut tasks = Vec::new();
    let mut last = None;
    for (seq, id) in found.page.into_iter().take(page_size) {
        // A conversation deleted since the page was read is skipped.
        if let Some(c) = state
            .store
            .get_conversation(id)
            .await
            .map_err(|e| RpcError::internal(e.to_string()))?
        {
            tasks.push(render(&c).1);
        }
        last = Some(seq);
    }
    let next = match last {
        Some(seq) if more => seq.to_string(),
        _ => String::new(),
    };
    let total = found.total;
    Ok(json!({"tasks": tasks, "nextPageToken": next, "pageSize": page_size, "totalSize": total}))
}

#[cfg(test)]
mod tests {
    use super::list_error;
    use crate::http::ApiError;
    use crate::store::StoreError;

    /// Issue 40 (8): a bad `pageToken` is the client's mistake, said in
    /// A2A's words; a store failure is -32603 with a correlation id and
    /// none of the store's own text.
    #[test]
    fn list_errors_blame_the_client_only_for_its_token() {
        let bad = list_error(
            ApiError::BadRequest("cursor \"x\" is not one this server issued".into()),
            Some("x".into()),
        );
        assert_eq!(bad.code, -32602);
        assert!(bad.message.contains("pageToken \"x\""), "{}", bad.message);
        let sql = "database error: no such table: conversations (at /srv/data/agent.db)";
        let store = list_error(
            ApiError::Store(StoreError::Database("Query is not read-only".into())),
            Some("5".into()),
        );
        assert_eq!(store.code, -32603);
        assert!(
            store.message.contains("internal error (id "),
            "{}",
            store.message
        );
        assert!(!store.message.contains("database"), "{}", store.message);
        let other = list_error(ApiError::Internal(sql.into()), None);
        assert_eq!(other.code, -32603);
        assert!(!other.message.contains("/srv/data"), "{}", other.message);
    }
}
