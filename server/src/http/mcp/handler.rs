//! The rmcp server handler behind `POST /mcp`: one per request at
//! 2026-07-28, one per session at 2025-11-25. It reads the caller from the
//! request our guard identified, asks the engine's MCP endpoint, and
//! writes the answer in the era the client speaks: an `input_required`
//! round (2026-07-28), an `elicitation/create` on the session while the
//! call waits (2025-11-25), or the plain waiting result.

use super::{tasks, wire};
use crate::domain::principal::Role;
use crate::domain::tools::CallContext;
use crate::engine::EngineError;
use crate::engine::mcp_endpoint::reply::{Abilities, McpReply, Response};
use crate::engine::mcp_endpoint::service::{McpCall, McpEndpoint, RoundError};
use crate::engine::mcp_endpoint::tool::AgentTool;
use crate::http::pages::UiPages;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    CreateTaskResult, ElicitRequestParams, GetTaskParams, GetTaskResult, Implementation,
    InputRequest, InputRequiredResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::time::Duration;

/// How long a 2025-11-25 session's elicitation may wait for the person.
const ELICIT_WAIT: Duration = Duration::from_secs(3600);

/// The agent's MCP server.
#[derive(Clone)]
pub(crate) struct AgentMcp {
    pub(crate) endpoint: McpEndpoint,
    pub(crate) tool: AgentTool,
    /// Where links point: `public_url`, else the request's `Host`.
    pub(crate) public_url: Option<String>,
    pub(crate) port: u16,
    /// `auth.mode` is not `none`: roles are checked.
    pub(crate) enforced: bool,
    pub(crate) version: &'static str,
}

impl AgentMcp {
    fn tool(&self) -> Result<Tool, ErrorData> {
        serde_json::from_value(json!({
            "name": self.tool.name,
            "description": self.tool.description,
            "inputSchema": AgentTool::input_schema(),
            "annotations": {
                "title": self.tool.name,
                "readOnlyHint": false,
                "destructiveHint": self.tool.destructive,
                "idempotentHint": false,
                "openWorldHint": true,
            }
        }))
        .map_err(|_| ErrorData::internal_error("the tool could not be described", None))
    }
}

impl ServerHandler for AgentMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new(self.tool.name.clone(), self.version))
        .with_instructions(self.tool.description.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool()?]))
    }

    async fn get_task(
        &self,
        p: GetTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let ctx = caller(&cx);
        let can = abilities(cx.client_capabilities());
        let view = self
            .endpoint
            .task(&p.task_id, &ctx, can)
            .await
            .map_err(task_error)?;
        Ok(GetTaskResult::new(tasks::detailed(&view, &self.pages(&cx))))
    }

    async fn update_task(
        &self,
        p: UpdateTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let ctx = caller(&cx);
        let can = abilities(cx.client_capabilities());
        self.endpoint
            .update_task(&p.task_id, &p.input_responses, ctx, can)
            .await
            .map_err(task_error)
    }

    async fn cancel_task(
        &self,
        p: CancelTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.endpoint
            .cancel_task(&p.task_id, caller(&cx))
            .await
            .map_err(task_error)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == self.tool.name).then(|| self.tool().ok()).flatten()
    }

    async fn call_tool(
        &self,
        p: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if p.name != self.tool.name {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}: this agent serves one tool, {:?}",
                    p.name, self.tool.name
                ),
                None,
            ));
        }
        let ctx = caller(&cx);
        if self.enforced && !ctx.principal.allow(Role::Requester) {
            return Ok(refused(&format!(
                "calling this agent needs the role `requester`, which {} does not have",
                ctx.principal.name
            ))
            .into());
        }
        let caps = cx.client_capabilities();
        let can = abilities(caps.clone());
        let pages = self.pages(&cx);
        if caps.is_some_and(|c| c.supports_tasks()) && p.request_state.is_none() {
            let call = call_of(p.arguments.as_ref())
                .map_err(|why| ErrorData::invalid_params(why, None))?;
            return match self.endpoint.start_task(call, ctx, can).await {
                Ok(view) => Ok(CallToolResponse::Task(CreateTaskResult::new(tasks::task(
                    &view, &pages,
                )))),
                Err(e) => self.failed(e),
            };
        }
        // A 2026-07-28 request names its version in `_meta`; a session's do not.
        let legacy = cx.meta.protocol_version().is_none();
        let first = match &p.request_state {
            Some(state) => {
                let responses = p.input_responses.clone().unwrap_or_default();
                match self
                    .endpoint
                    .resume(state, &responses, ctx.clone(), can)
                    .await
                {
                    Ok(r) => r,
                    Err(RoundError::Engine(e)) => return self.failed(e),
                    Err(e) => return Err(ErrorData::invalid_params(e.to_string(), None)),
                }
            }
            None => {
                let call = match call_of(p.arguments.as_ref()) {
                    Ok(c) => c,
                    Err(why) => return Err(ErrorData::invalid_params(why, None)),
                };
                match self.endpoint.call(call, ctx.clone(), can).await {
                    Ok(r) => r,
                    Err(e) => return self.failed(e),
                }
            }
        };
        if legacy {
            self.on_session(first, &cx, ctx, can, &pages).await
        } else {
            Ok(self.answer(first, &pages))
        }
    }
}

impl AgentMcp {
    /// A 2026-07-28 answer: a round when this caller is asked, else the
    /// tool result.
    fn answer(&self, reply: McpReply, pages: &UiPages) -> CallToolResponse {
        if let McpReply::Ask {
            conversation_id,
            on,
            form,
            state,
        } = &reply
        {
            let params = wire::elicitation(conversation_id, on, *form, false, pages);
            let request = json!({"method": "elicitation/create", "params": params});
            if let Ok(req) = serde_json::from_value::<InputRequest>(request) {
                let requests = [(on.waits_on().key(), req)].into_iter().collect();
                return CallToolResponse::InputRequired(InputRequiredResult::new(
                    Some(requests),
                    Some(state.clone()),
                ));
            }
        }
        result(&reply, pages).into()
    }

    /// A 2025-11-25 session: ask on the session while the call waits, as
    /// often as the turn pauses on this caller, then the tool result.
    async fn on_session(
        &self,
        mut reply: McpReply,
        cx: &RequestContext<RoleServer>,
        ctx: CallContext,
        can: Abilities,
        pages: &UiPages,
    ) -> Result<CallToolResponse, ErrorData> {
        while let McpReply::Ask {
            conversation_id,
            on,
            form,
            ..
        } = &reply
        {
            let params = wire::elicitation(conversation_id, on, *form, true, pages);
            let Ok(params) = serde_json::from_value::<ElicitRequestParams>(params) else {
                break;
            };
            let response = match cx
                .peer
                .create_elicitation_with_timeout(params, Some(ELICIT_WAIT))
                .await
            {
                Ok(r) => Response {
                    action: serde_json::to_value(&r.action)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_else(|| "cancel".into()),
                    content: r.content.and_then(|c| c.as_object().cloned()),
                },
                // The client went away or timed out: the pause stays, and
                // the plain call with the conversation_id finds it.
                Err(_) => break,
            };
            let round = self.endpoint.round_of(conversation_id, on, &ctx);
            reply = match self
                .endpoint
                .respond(&round, response, None, ctx.clone(), can)
                .await
            {
                Ok(r) => r,
                Err(e) => return self.failed(e),
            };
        }
        Ok(result(&reply, pages).into())
    }

    /// Page links under the base the caller reached us by.
    fn pages(&self, cx: &RequestContext<RoleServer>) -> UiPages {
        let empty = axum::http::HeaderMap::new();
        let headers = cx
            .extensions
            .get::<axum::http::request::Parts>()
            .map_or(&empty, |p| &p.headers);
        UiPages::new(&crate::http::paths::base_url(
            self.public_url.as_deref(),
            headers,
            self.port,
        ))
    }

    /// An engine refusal as the caller reads it: a tool error naming the
    /// problem (a missing conversation, a bad answer, a busy turn);
    /// internal errors keep their text to the log.
    fn failed(&self, e: EngineError) -> Result<CallToolResponse, ErrorData> {
        match e {
            EngineError::Store(_) | EngineError::Task(_) => {
                tracing::error!(error = %e, "an MCP call failed");
                Ok(refused("the agent could not finish this call; try again shortly").into())
            }
            EngineError::Llm {
                error,
                conversation,
            } => {
                tracing::warn!(error = %error, conversation = %conversation.id, "the model failed during an MCP call");
                Ok(refused(&format!(
                    "the model could not answer (conversation {}): {}",
                    conversation.id, error
                ))
                .into())
            }
            e => Ok(refused(&e.to_string()).into()),
        }
    }
}

/// A refusal of a `tasks/*` request: an unknown (or someone else's) task
/// is invalid params naming it; internal failures keep their text.
fn task_error(e: EngineError) -> ErrorData {
    match e {
        EngineError::Store(_) | EngineError::Task(_) => {
            tracing::error!(error = %e, "an MCP task request failed");
            ErrorData::internal_error("the agent could not answer; try again shortly", None)
        }
        e => ErrorData::invalid_params(e.to_string(), None),
    }
}

/// The tool result of a reply.
fn result(reply: &McpReply, pages: &UiPages) -> CallToolResult {
    let v = wire::result_of(reply, pages);
    serde_json::from_value(v).unwrap_or_else(|_| refused("the result could not be written"))
}

/// A tool error with this text.
fn refused(text: &str) -> CallToolResult {
    {
        let mut r = CallToolResult::error(vec![rmcp::model::ContentBlock::text(text.to_string())]);
        r.result_type = Some(rmcp::model::ResultType::COMPLETE);
        r
    }
}

/// The caller, as our guard identified the HTTP request.
fn caller(cx: &RequestContext<RoleServer>) -> CallContext {
    let mut ctx = match cx.extensions.get::<axum::http::request::Parts>() {
        Some(parts) => crate::http::caller::context(&parts.headers, &parts.extensions),
        None => CallContext::default(),
    };
    ctx.via = crate::domain::channel::Channel::Mcp;
    ctx
}

/// What the client can show: a bare `elicitation: {}` means form.
fn abilities(caps: Option<ClientCapabilities>) -> Abilities {
    match caps.and_then(|c| c.elicitation) {
        None => Abilities::default(),
        Some(e) if e.form.is_none() && e.url.is_none() => Abilities {
            form: true,
            url: false,
        },
        Some(e) => Abilities {
            form: e.form.is_some(),
            url: e.url.is_some(),
        },
    }
}

/// The tool's arguments: `message` (a string), `conversation_id`
/// (optional string), nothing else.
fn call_of(args: Option<&serde_json::Map<String, Value>>) -> Result<McpCall, String> {
    let empty = serde_json::Map::new();
    let args = args.unwrap_or(&empty);
    if let Some(k) = args
        .keys()
        .find(|k| *k != "message" && *k != "conversation_id")
    {
        return Err(format!(
            "unknown argument {k:?}: the tool takes message and conversation_id"
        ));
    }
    let message = match args.get("message") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("`message` must be a string".into()),
        None => return Err(
            "`message` is required (a string; empty with a conversation_id to read the outcome)"
                .into(),
        ),
    };
    let conversation_id = match args.get("conversation_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("`conversation_id` must be a string".into()),
    };
    Ok(McpCall {
        message,
        conversation_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_and_named() {
        let args = |v: Value| v.as_object().cloned();
        let c = call_of(args(json!({"message": "hi", "conversation_id": "c1"})).as_ref()).unwrap();
        assert_eq!(
            (c.message.as_str(), c.conversation_id.as_deref()),
            ("hi", Some("c1"))
        );
        assert!(call_of(None).unwrap_err().contains("`message` is required"));
        assert!(
            call_of(args(json!({"message": 3})).as_ref())
                .unwrap_err()
                .contains("string")
        );
        assert!(
            call_of(args(json!({"message": "x", "extra": 1})).as_ref())
                .unwrap_err()
                .contains("\"extra\"")
        );
    }

    #[test]
    fn a_bare_elicitation_capability_means_form() {
        let caps = |v: Value| serde_json::from_value::<ClientCapabilities>(v).ok();
        assert_eq!(abilities(caps(json!({}))), Abilities::default());
        assert_eq!(
            abilities(caps(json!({"elicitation": {}}))),
            Abilities {
                form: true,
                url: false
            }
        );
        assert_eq!(
            abilities(caps(json!({"elicitation": {"url": {}}}))),
            Abilities {
                form: false,
                url: true
            }
        );
        assert_eq!(
            abilities(caps(json!({"elicitation": {"form": {}, "url": {}}}))),
            Abilities {
                form: true,
                url: true
            }
        );
    }
}
