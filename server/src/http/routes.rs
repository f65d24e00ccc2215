//! Every route, declared once: its method, path, the role it needs and its
//! documentation. The router (`super::router`), the authorization table
//! (`super::auth::access`) and `/openapi.json` and `/docs`
//! (`super::rest::docs`) are all made from [`ROUTES`], so a route cannot
//! be served without a rule, or documented and missing; a test checks the
//! three agree.
//!
//! Pages are declared here too ([`Serve::Page`]): Leptos renders them
//! (`super::ui`), and a test checks the pages here are the app's routes.
//! What no route serves (assets, the site's files, unknown paths) is the
//! fallback's, with the rules of [`super::auth::access::need`].

use super::auth::access::Need::{Api, Known, Open, Page};
use super::route::{Doc, Route, Serve};
use super::state::AppState;
use super::{a2a, metrics, rest, ui};
use crate::domain::principal::Role::{Admin, Approver, Requester, Viewer};
use axum::extract::State;
use axum::routing::{delete, get, post};

/// Every route the agent serves.
pub(crate) static ROUTES: &[Route] = &[
    Route {
        method: "GET",
        path: "/health",
        need: Open,
        serve: Serve::Handler(|| get(rest::health::health)),
        doc: Doc::new("Liveness; `llm` says why the model cannot be used, if it cannot.").response("Health"),
    },
    Route {
        method: "GET",
        path: "/agent",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::health::agent)),
        doc: Doc::new("The agent's name, description and model (for the UI).").response("AgentInfo"),
    },
    Route {
        method: "GET",
        path: "/tools",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::tools::list)),
        doc: Doc::new("Every tool (MCP and A2A) with `destructiveHint`, its effective rule list (the `approvals:` rules that can decide its calls, in order, then `annotation` or `unannotated`) and its server's health.").response("ToolList"),
    },
    Route {
        method: "GET",
        path: "/notifications",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::notifications::list)),
        doc: Doc::new("The notification outbox (POLICY.md §5): the newest deliveries (?status=pending|delivered|dead|skipped, ?limit=1..500, default 100) with target, event, attempts, next attempt and last error, and the count per status.").response("DeliveryList").errors(&[400]),
    },
    Route {
        method: "POST",
        path: "/notifications/{id}/retry",
        need: Api(Admin),
        serve: Serve::Handler(|| post(rest::notifications::retry)),
        doc: Doc::new("Admins: sends a dead letter again with a fresh retry window (audited as notification.retried). 409 when the row is not a dead letter.").example("{}").errors(&[403, 409]),
    },
    Route {
        method: "GET",
        path: "/links/{token}",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::links::get)),
        doc: Doc::new("What a notification's signed link opens: the approval, the link's action (approve, reject, open) and its state (valid, used, expired, decided). Changes nothing. 400 when the link was changed or is not one.").response("LinkView").errors(&[400, 404]),
    },
    Route {
        method: "POST",
        path: "/links/{token}",
        need: Api(Approver),
        serve: Serve::Handler(|| post(rest::links::decide)),
        doc: Doc::new("Decides through a signed link, as the caller (checked like POST /approvals/{uuid}: role, separation of duties, approvers, quorum, expiry); decided_via is link and the link is used up in the same transaction. Body {} for an approve or reject link, {\"approved\": bool} for an open link; optional \"reason\". 409 when used, decided or expired; 400 when changed.").response("ConversationResponse").example("{}").errors(&[400, 403, 409]),
    },
    Route {
        method: "GET",
        path: "/grants",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::grants::list)),
        doc: Doc::new("The live grants (REACH.md §3), newest first: who granted, the tool and server, the `match` pointers and their values, the scope (`conversation` with its id, or `agent`), when it expires and how many calls it let run.").response("GrantList"),
    },
    Route {
        method: "DELETE",
        path: "/grants/{id}",
        need: Known,
        serve: Serve::Handler(|| delete(rest::grants::revoke)),
        doc: Doc::new("Revokes a live grant (its creator, whatever their roles now, or an admin), audited as grant.revoked; the next identical call asks again. Answers {\"grant\": …} as revoked. 404 when no live grant has this id.").errors(&[403, 404]),
    },
    Route {
        method: "POST",
        path: "/integrations/slack/interactions",
        need: Open,
        serve: Serve::Handler(|| post(rest::slack::interactions)),
        doc: Doc::new("Slack's interactivity request URL (REACH.md §2): a click on a Stop & Go button in a Slack message (`application/x-www-form-urlencoded`, one field `payload`, `type: block_actions`). Authenticated by Slack's signature (`X-Slack-Signature` over `v0:<X-Slack-Request-Timestamp>:<raw body>`, HMAC-SHA256 with `interactive.signing_secret`, timestamp within 5 minutes); no cookie or form token. The clicker is mapped through `interactive.users` and decides with every check (`decided_via: slack`); 200 at once, the outcome is posted to the payload's `response_url`. 401 when the signature does not verify or is stale.").errors(&[400, 401]).media("text/plain"),
    },
    Route {
        method: "POST",
        path: "/tools/{name}/accept",
        need: Api(Admin),
        serve: Serve::Handler(|| post(rest::tools::accept)),
        doc: Doc::new("Admins: accepts the changed definition of a held tool (POLICY.md §4: its description, input schema or annotations differ from the pinned ones), audited as tool.accepted; for a sub-agent's tool `a2a_<name>`, its agent card as held because it cannot be trusted (a2a[].trust), audited as a2a.card_accepted. Optional body {\"digest\": …}: the pin's digest from GET /tools, so only what was looked at is accepted (409 when what waits is another). Answers {\"tool\": …} as GET /tools lists it. 409 when nothing changed or is held.").example(r#"{"digest": "9f2c…"}"#).errors(&[403, 404, 409]),
    },
    Route {
        method: "GET",
        path: "/pipeline",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::pipeline::get)),
        doc: Doc::new("The orchestration tree from the config's `agent:` key (absent in simple mode); a conversation's run of it is its `pipeline_state`.").response("PipelineView"),
    },
    Route {
        method: "POST",
        path: "/conversations",
        need: Api(Requester),
        serve: Serve::Handler(|| post(rest::conversations::create)),
        doc: Doc::new("Creates a conversation; with `message`, runs its first turn and returns the result.").request("CreateConversation").response("ConversationResponse").example(r#"{"message": "list all resources"}"#).status(201).errors(&[400, 413, 502, 503, 504]),
    },
    Route {
        method: "GET",
        path: "/conversations",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::conversations::list)),
        doc: Doc::new("Conversations, newest first, with counts. Each is a list item (id, session_id, status, created_at, updated_at, message_count, last_message with its role and first 200 characters, title, pending_approval), never its history, so a page costs the same however long its conversations are. Query: `limit` (1–200), `cursor` (the previous page's `next_cursor`), `status` (active, waiting_approval, completed, failed, cancelled, all), `q` (text in a message), `view` (`summary`, the default, or `full` for whole conversations as a FullConversationList, same paging).").response("ConversationList").errors(&[400]),
    },
    Route {
        method: "GET",
        path: "/conversations/{id}",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::conversations::get)),
        doc: Doc::new("One conversation with its whole timeline and pending approval.").response("ConversationResponse").errors(&[404]),
    },
    Route {
        method: "POST",
        path: "/conversations/{id}/messages",
        need: Api(Requester),
        serve: Serve::Handler(|| post(rest::conversations::send_message)),
        doc: Doc::new("Sends a message and runs the turn. 409 while an approval is pending (the body names it) or another request runs.").request("SendMessage").response("ConversationResponse").example(r#"{"message": "add a resource named apples with value 3"}"#).errors(&[400, 404, 409, 413, 502, 503, 504]),
    },
    Route {
        method: "POST",
        path: "/approvals/{uuid}",
        need: Api(Approver),
        serve: Serve::Handler(|| post(rest::approvals::decide)),
        doc: Doc::new("Approves or rejects. Also accepted: {\"action\":\"approve\"|\"reject\"}, {\"answer\":\"yes\"|\"no\"}; optional \"reason\". 409 if already decided; 403 when the approval's rule names other approvers.").request("ApprovalDecision").response("ConversationResponse").example(r#"{"approved": true}"#).errors(&[400, 403, 404, 409]),
    },
    Route {
        method: "GET",
        path: "/approvals",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::approvals::list)),
        doc: Doc::new("The approvals waiting for a decision, oldest first, a page at a time: `?limit=` (default 100, at most 500; 0 for the total alone) and `?cursor=` (the `next_cursor` of the page before); `total` counts every one waiting.").response("ApprovalList").errors(&[400]),
    },
    Route {
        method: "GET",
        path: "/questions",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::questions::list)),
        doc: Doc::new("The questions tools asked that wait for an answer (MCP elicitation, QUESTIONS.md), oldest first, a page at a time: `?limit=` (default 100, at most 500; 0 for the total alone) and `?cursor=`; `total` counts every one waiting.").response("QuestionPage").errors(&[400]),
    },
    Route {
        method: "GET",
        path: "/questions/{uuid}",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::questions::get)),
        doc: Doc::new("One question, whatever its status (`pending`, `answered`, `declined`, `cancelled`, `expired`).").response("Question").errors(&[404]),
    },
    Route {
        method: "POST",
        path: "/questions/{uuid}",
        need: Api(Viewer),
        serve: Serve::Handler(|| post(rest::questions::answer)),
        doc: Doc::new("Answers a question: `{\"action\": \"accept\", \"content\": {...}}` (a form's fields, checked against its schema: 400 naming the field, the question stays pending), `{\"action\": \"decline\"}` or `{\"action\": \"cancel\"}`. Whoever sent the conversation's latest message, or an approver, may answer. The call then goes on; 409 when already answered.").request("AnswerQuestion").response("ConversationResponse").example(r#"{"action": "accept", "content": {"env": "staging"}}"#).errors(&[400, 403, 404, 409]),
    },
    Route {
        method: "GET",
        path: "/.well-known/agent-card.json",
        need: Open,
        serve: Serve::Handler(|| get(a2a::card::get)),
        doc: Doc::new("The A2A agent card (also at `/.well-known/agent.json`): 1.0 `supportedInterfaces` plus the 0.3 top-level fields unless `a2a_card: v1`. See README, \"A2A\"."),
    },
    Route {
        method: "GET",
        path: "/.well-known/jwks.json",
        need: Open,
        serve: Serve::Handler(|| get(a2a::card::jwks)),
        doc: Doc::new("The public key the agent card is signed with (`a2a_card_signing`), as a JWKS; 404 when the card is not signed.").media("application/json").errors(&[404]),
    },
    Route {
        method: "POST",
        path: "/a2a",
        need: Api(Viewer),
        serve: Serve::Handler(|| post(a2a::jsonrpc::handle)),
        doc: Doc::new("A2A JSON-RPC 2.0 (1.0 `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`; 0.3 `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`). Errors are JSON-RPC errors with HTTP 200.").example(r#"{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "list all resources"}]}}}"#),
    },
    Route {
        method: "GET",
        path: "/events",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::events::all)),
        doc: Doc::new("Server-sent events for every conversation (`text/event-stream`; the data is an `Event`). Send `Last-Event-ID` to catch up after a drop; `resync` means reload."),
    },
    Route {
        method: "GET",
        path: "/conversations/{id}/events",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::events::one)),
        doc: Doc::new("Server-sent events of one conversation.").errors(&[404]),
    },
    Route {
        method: "GET",
        path: "/auth/me",
        need: Open,
        serve: Serve::Handler(|| get(ui::signin::whoami)),
        doc: Doc::new("Who the caller is: auth mode, name, roles, whether they may decide approvals (open: it answers `signed_in: false` for nobody).").response("Viewer").errors(&[401]),
    },
    Route {
        method: "GET",
        path: "/audit",
        need: Api(Admin),
        serve: Serve::Handler(|| get(rest::audit::export)),
        doc: Doc::new("The hash-chained audit trail (admin; open in auth mode none), oldest first, streamed: `?after=SEQ&limit=N&format=jsonl|csv`. Rows: seq, at, actor, event, conversation_id, approval_uuid, details, prev_hash, hash. Check it with `agent audit verify`.").errors(&[400, 401, 403]),
    },
    Route {
        method: "POST",
        path: "/ui/sign-in",
        need: Open,
        serve: Serve::Handler(|| post(ui::signin::with_token)),
        doc: Doc::new("Auth mode tokens: `{\"token\", \"next\"?}` becomes the `stopgo_session` cookie (HttpOnly, SameSite=Lax); answers `{\"next\"}`. 401 for a wrong token, 429 after ten failures a minute from one address. The sign-in page posts the same as a form (urlencoded `token`, `next`, `form_token`): 303 to `next`, or back to the page saying why.").errors(&[400, 401, 403, 429]),
    },
    Route {
        method: "POST",
        path: "/ui/sign-out",
        need: Open,
        serve: Serve::Handler(|| post(ui::signin::sign_out)),
        doc: Doc::new("Ends the browser session at once (the server-side row is deleted) and clears the cookie. Needs this browser's `form_token` (from `GET /auth/me`), as a form field or `{\"form_token\"}`: 403 without it.").errors(&[403]),
    },
    Route {
        method: "POST",
        path: "/ui/approvals/{uuid}/decide",
        need: Page(Viewer),
        serve: Serve::Handler(|| post(ui::forms::decide)),
        doc: Doc::new("The approval card's form (urlencoded, for pages without JavaScript): `decision` approve|reject, `reason`, `back`, `form_token`, and with `edit=1` the edited arguments as `arg.<name>`. Decides like `POST /approvals/{uuid}` (`decided_via: ui`), then 303 to `back`, or to `/ui/refused` saying why it was refused. 403 without this browser's form token or from a foreign Origin.").status(303).errors(&[403, 415]),
    },
    Route {
        method: "POST",
        path: "/ui/questions/{uuid}/answer",
        need: Page(Viewer),
        serve: Serve::Handler(|| post(ui::forms::answer)),
        doc: Doc::new("The question card's form (urlencoded, with or without JavaScript): `action` accept|decline|cancel, `back`, `form_token`, and for a form question its fields as `field.<name>` (`bool.<name>` marks a checkbox, so an unchecked one is false). Answers like `POST /questions/{uuid}` (`answered_via: ui`), then 303 to `back`, or to `/ui/refused` saying why (a field that does not fit, already answered, not allowed). 403 without this browser's form token or from a foreign Origin.").status(303).errors(&[403, 415]),
    },
    Route {
        method: "POST",
        path: "/ui/link/{token}",
        need: Page(Viewer),
        serve: Serve::Handler(|| post(ui::forms::link)),
        doc: Doc::new("A notification link page's form (urlencoded): `decision` approve|reject (an Open link), `reason`, `form_token`. Decides like `POST /links/{token}`, then 303 to the link page with `?done=`, or to `/ui/refused`.").status(303).errors(&[403, 415]),
    },
    Route {
        method: "POST",
        path: "/ui/grants/{id}/revoke",
        need: Page(Viewer),
        serve: Serve::Handler(|| post(ui::forms::revoke_grant)),
        doc: Doc::new("The tools page's Revoke form (urlencoded `form_token`; the grant's creator or an admin): like `DELETE /grants/{id}`, then 303 back to `/ui/tools`, or to `/ui/refused` saying why.").status(303).errors(&[403, 415]),
    },
    Route {
        method: "POST",
        path: "/ui/notifications/{id}/retry",
        need: Page(Admin),
        serve: Serve::Handler(|| post(ui::forms::retry)),
        doc: Doc::new("The outbox page's Retry form (admin; urlencoded `form_token`): like `POST /notifications/{id}/retry`, then 303 back to `/ui/notifications`.").status(303).errors(&[403, 415]),
    },
    Route {
        method: "GET",
        path: "/openapi.json",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(|s: State<AppState>| rest::docs::openapi_json(s, ROUTES))),
        doc: Doc::new("This document."),
    },
    Route {
        method: "GET",
        path: "/.well-known/agent.json",
        need: Open,
        serve: Serve::Handler(|| get(a2a::card::get)),
        doc: Doc::new("The agent card at its A2A 0.3 well-known path (the same card).").media("application/json"),
    },
    Route {
        method: "POST",
        path: "/a2a/",
        need: Api(Viewer),
        serve: Serve::Handler(|| post(a2a::jsonrpc::handle)),
        doc: Doc::new("A2A JSON-RPC, as `POST /a2a` (some clients add the slash).").media("application/json").errors(&[401, 403, 415]),
    },
    Route {
        method: "POST",
        path: "/a2a/message:send",
        need: Api(Viewer),
        serve: Serve::Handler(|| post(a2a::rest::send)),
        doc: Doc::new("A2A 1.0 HTTP+JSON `SendMessage` (requester; a continuation that decides needs approver).").media("application/json").errors(&[400, 401, 403, 415]),
    },
    Route {
        method: "POST",
        path: "/a2a/message:stream",
        need: Api(Viewer),
        serve: Serve::Handler(|| post(a2a::rest::stream)),
        doc: Doc::new("A2A 1.0 HTTP+JSON `SendStreamingMessage`: the task as an SSE stream.").media("text/event-stream").errors(&[400, 401, 403, 415]),
    },
    Route {
        method: "GET",
        path: "/a2a/tasks",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(a2a::rest::list_tasks)),
        doc: Doc::new("A2A 1.0 HTTP+JSON `ListTasks`: newest first, `?pageSize=&pageToken=&status=&contextId=`.").media("application/json").errors(&[400, 401, 403]),
    },
    Route {
        method: "GET",
        path: "/a2a/tasks/{id}",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(a2a::rest::get_task)),
        doc: Doc::new("A2A 1.0 HTTP+JSON `GetTask` (`?historyLength=`).").media("application/json").errors(&[401, 403, 404]),
    },
    Route {
        method: "POST",
        path: "/a2a/tasks/{id}",
        need: Api(Viewer),
        serve: Serve::Handler(|| post(a2a::rest::task_action)),
        doc: Doc::new("A2A 1.0 HTTP+JSON `CancelTask` (`/a2a/tasks/{id}:cancel`, requester) and `SubscribeToTask` (`:subscribe`, an SSE stream).").media("application/json").errors(&[400, 401, 403, 404, 409]),
    },
    Route {
        method: "POST",
        path: "/a2a/tasks/{id}/pushNotificationConfigs",
        need: Api(Viewer),
        serve: Serve::Handler(|| post(a2a::rest::create_push)),
        doc: Doc::new("A2A 1.0 HTTP+JSON `CreateTaskPushNotificationConfig` (requester): its secrets are never shown again.").media("application/json").errors(&[400, 401, 403, 404]),
    },
    Route {
        method: "GET",
        path: "/a2a/tasks/{id}/pushNotificationConfigs",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(a2a::rest::list_push)),
        doc: Doc::new("A2A 1.0 HTTP+JSON `ListTaskPushNotificationConfigs`.").media("application/json").errors(&[401, 403, 404]),
    },
    Route {
        method: "GET",
        path: "/a2a/tasks/{id}/pushNotificationConfigs/{config}",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(a2a::rest::get_push)),
        doc: Doc::new("A2A 1.0 HTTP+JSON `GetTaskPushNotificationConfig`.").media("application/json").errors(&[401, 403, 404]),
    },
    Route {
        method: "DELETE",
        path: "/a2a/tasks/{id}/pushNotificationConfigs/{config}",
        need: Api(Viewer),
        serve: Serve::Handler(|| delete(a2a::rest::delete_push)),
        doc: Doc::new("A2A 1.0 HTTP+JSON `DeleteTaskPushNotificationConfig` (requester; deleting one that is gone succeeds).").media("application/json").errors(&[401, 403, 404]),
    },
    Route {
        method: "GET",
        path: "/a2a/extendedAgentCard",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(a2a::rest::extended_card)),
        doc: Doc::new("A2A 1.0 HTTP+JSON `GetExtendedAgentCard`: every skill and which stop for approval (signed-in callers; -32007 without auth).").media("application/json").errors(&[401, 403, 404]),
    },
    Route {
        method: "GET",
        path: "/docs",
        need: Page(Viewer),
        serve: Serve::Handler(|| get(|s: State<AppState>| rest::docs::page(s, ROUTES))),
        doc: Doc::new("This reference as a page, with a Try it form per route.").media("text/html"),
    },
    Route {
        method: "GET",
        path: "/docs.js",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(rest::docs::script)),
        doc: Doc::new("The script of the Try it forms on /docs.").media("text/javascript"),
    },
    Route {
        method: "GET",
        path: "/metrics",
        need: Api(Viewer),
        serve: Serve::Handler(|| get(metrics::scrape)),
        doc: Doc::new("Prometheus text exposition: turns, model calls and tokens, tool calls, approvals (pending, outcomes, wait), A2A, HTTP, notifications, MCP servers up.").media("text/plain").errors(&[401, 403, 503]),
    },
    Route {
        method: "GET",
        path: "/ui/sign-in",
        need: Open,
        serve: Serve::Handler(|| get(ui::signin::page)),
        doc: Doc::new("The sign-in page (`?next=` where to go after): a token form (mode tokens) or the OpenID provider link (mode oidc).").media("text/html"),
    },
    Route {
        method: "GET",
        path: "/ui/auth/oidc",
        need: Open,
        serve: Serve::Handler(|| get(ui::signin::oidc_start)),
        doc: Doc::new("Mode oidc: to the provider, with authorization code + PKCE + state + nonce.").media("text/html").status(303),
    },
    Route {
        method: "GET",
        path: "/ui/auth/callback",
        need: Open,
        serve: Serve::Handler(|| get(ui::signin::oidc_callback)),
        doc: Doc::new("Mode oidc: the provider comes back here; the code becomes a session.").media("text/html").status(303).errors(&[400, 401, 503]),
    },
    Route {
        method: "GET",
        path: "/ui/audit",
        need: Page(Admin),
        serve: Serve::Handler(|| get(rest::audit::page)),
        doc: Doc::new("The audit trail as a page: filters and downloads (admin).").media("text/html"),
    },
    Route {
        method: "GET",
        path: "/ui/refused",
        need: Page(Viewer),
        serve: Serve::Handler(|| get(ui::forms::refused_page)),
        doc: Doc::new("Why the last form post was refused (`?back=` the page to go back to).").media("text/html"),
    },
    Route {
        method: "GET",
        path: "/",
        need: Page(Viewer),
        serve: Serve::Page,
        doc: Doc::new("The conversations: newest first, counts, status filter, search; live.").media("text/html"),
    },
    Route {
        method: "GET",
        path: "/ui/conversations/{id}",
        need: Page(Viewer),
        serve: Serve::Page,
        doc: Doc::new("A conversation: the chat, tool calls, the approval card (`?edit={uuid}` opens its Edit arguments form).").media("text/html"),
    },
    Route {
        method: "GET",
        path: "/ui/approvals",
        need: Page(Viewer),
        serve: Serve::Page,
        doc: Doc::new("The inbox: the approvals waiting, oldest first, a page at a time (`?cursor=`).").media("text/html"),
    },
    Route {
        method: "GET",
        path: "/ui/tools",
        need: Page(Viewer),
        serve: Serve::Page,
        doc: Doc::new("The tools: which need approval, which rules apply, pinned definitions that changed.").media("text/html"),
    },
    Route {
        method: "GET",
        path: "/ui/pipeline",
        need: Page(Viewer),
        serve: Serve::Page,
        doc: Doc::new("The orchestration tree and where the latest run stands.").media("text/html"),
    },
    Route {
        method: "GET",
        path: "/ui/notifications",
        need: Page(Viewer),
        serve: Serve::Page,
        doc: Doc::new("The notification outbox: deliveries, attempts, dead letters (Retry for admins).").media("text/html"),
    },
    Route {
        method: "GET",
        path: "/ui/link/{token}",
        need: Page(Viewer),
        serve: Serve::Page,
        doc: Doc::new("Where a notification's signed link lands: the approval alone, with its button (`?done=` after a post).").media("text/html"),
    },
];

/// Every declared route's `(method, path, need)`: the authorization
/// table, for tests.
#[cfg(test)]
pub(crate) fn table()
-> impl Iterator<Item = (&'static str, &'static str, super::auth::access::Need)> {
    ROUTES.iter().map(|r| (r.method, r.path, r.need))
}
