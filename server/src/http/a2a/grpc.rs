//! The gRPC binding of A2A 1.0 (the specification's §10 and the normative
//! `a2a.proto`), served on the agent's own port beside HTTP/1.1: the
//! router sends `POST /lf.a2a.v1.A2AService/*` (HTTP/2, `application/grpc`)
//! here, inside the same middleware as every route, so a call is
//! identified by its `authorization` metadata exactly as a JSON call is by
//! its header (AUTH.md), and `a2a-version`, `x-a2a-hop-count` and
//! `x-session-id` are read from the metadata under the same names.
//!
//! Each method is its JSON binding's operation: the request message is
//! turned into its ProtoJSON (A2A 1.0's JSON form, through pbjson), handed
//! to the code JSON-RPC and HTTP+JSON run (`tasks`, `stream`, `push`,
//! `card`), and the JSON answer parsed back into the response message. So
//! the three bindings cannot drift apart in what they do, only in framing.
//! Errors become the status codes of the spec's §5.4 table with the
//! `google.rpc.ErrorInfo` detail (reason, domain `a2a-protocol.org`) in
//! `grpc-status-details-bin`; as the A2A TCK expects, an unsupported
//! version or operation is `UNIMPLEMENTED`.

use super::rpc::{self, RpcError};
use super::stream::{self, Frame};
use super::{push, tasks};
use crate::a2a::proto;
use crate::a2a::proto::a2a_service_server::{A2aService, A2aServiceServer};
use crate::a2a::wire::Dialect;
use crate::domain::tools::CallContext;
use crate::http::state::AppState;
use axum::http::HeaderMap;
use futures_util::Stream;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::pin::Pin;
use tokio::sync::mpsc;
use tonic::{Code, Request, Response, Status};

const D: Dialect = Dialect::V1;

/// The service, routed by `http::router`.
pub(crate) fn service(state: AppState) -> A2aServiceServer<Grpc> {
    let limit = state.config.max_body_bytes;
    A2aServiceServer::new(Grpc { state })
        .max_decoding_message_size(limit)
        .accept_compressed(tonic::codec::CompressionEncoding::Gzip)
}

/// An A2A error as a gRPC status: the spec's code, the message, and the
/// `ErrorInfo` detail.
pub(crate) fn status(e: &RpcError) -> Status {
    use tonic_types::{ErrorDetails, StatusExt};
    if e.code == -32603 {
        tracing::warn!(error = %e.message, "a2a request failed");
    }
    let code = match e.grpc_status() {
        "UNAUTHENTICATED" => Code::Unauthenticated,
        "PERMISSION_DENIED" => Code::PermissionDenied,
        "NOT_FOUND" => Code::NotFound,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "UNIMPLEMENTED" => Code::Unimplemented,
        "INTERNAL" => Code::Internal,
        _ => Code::InvalidArgument,
    };
    let details = ErrorDetails::with_error_info(
        e.reason(),
        "a2a-protocol.org",
        std::collections::HashMap::new(),
    );
    Status::with_error_details(code, e.message.clone(), details)
}

/// A gRPC refusal as an HTTP response (for the auth middleware, which
/// answers before the service is reached).
pub(crate) fn refusal(e: &RpcError) -> axum::response::Response {
    refusal_of(status(e))
}

/// A status as an HTTP response (gRPC's "trailers-only" answer).
pub(crate) fn refusal_of(s: Status) -> axum::response::Response {
    let (parts, body) = s.into_http::<tonic::body::Body>().into_parts();
    axum::response::Response::from_parts(parts, axum::body::Body::new(body))
}

/// The service over the agent's state.
pub(crate) struct Grpc {
    state: AppState,
}

type Frames = Pin<Box<dyn Stream<Item = Result<proto::StreamResponse, Status>> + Send>>;

/// A message as ProtoJSON.
fn to_json<M: Serialize>(m: &M) -> Result<Value, Status> {
    serde_json::to_value(m).map_err(|e| status(&RpcError::internal(e.to_string())))
}

/// The JSON binding's answer as the response message.
fn from_json<M: DeserializeOwned>(v: Value) -> Result<M, Status> {
    serde_json::from_value(v).map_err(|e| {
        status(&RpcError::internal(format!(
            "an answer does not fit a2a.proto: {e}"
        )))
    })
}

impl Grpc {
    /// What every call checks first (as the JSON bindings do): the
    /// version, the hop count, the role; the caller context.
    fn arrive<T>(&self, req: &Request<T>, method: &'static str) -> Result<CallContext, Status> {
        self.arrive_reading(req, method).map(|(ctx, _)| ctx)
    }

    /// [`Self::arrive`], also giving the metadata as headers (for the
    /// calls that read more of them), read once.
    fn arrive_reading<T>(
        &self,
        req: &Request<T>,
        method: &'static str,
    ) -> Result<(CallContext, HeaderMap), Status> {
        // tonic keeps the HTTP request's extensions: the guard's identity,
        // the session id.
        let headers = req.metadata().clone().into_headers();
        let mut ctx = crate::http::caller::context(&headers, req.extensions());
        let checked = rpc::check_v1(&headers)
            .and_then(|()| super::arrival::arrived(&self.state, &headers, &mut ctx));
        checked.map_err(|e| status(&e))?;
        let span = tracing::Span::current();
        span.record("rpc", method);
        span.record("hops", ctx.hops);
        crate::telemetry::metrics::get().a2a(method, "grpc");
        super::authorize::method(&self.state, method, &ctx).map_err(|e| status(&e))?;
        Ok((ctx, headers))
    }
}

impl Grpc {
    /// The required extensions a message must activate
    /// (`rpc::check_extensions`), from the `a2a-extensions` metadata.
    fn extensions(&self, headers: &HeaderMap, params: &Value) -> Result<(), Status> {
        rpc::check_extensions(&self.state.config, headers, params).map_err(|e| status(&e))
    }
}

/// Frames as the service's stream of responses (an error ends it with
/// that status).
fn frames(rx: mpsc::Receiver<Frame>) -> Frames {
    Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
        let item = match rx.recv().await? {
            Frame::Result(v) => from_json::<proto::StreamResponse>(v),
            Frame::Error(e) => Err(status(&e)),
        };
        Some((item, rx))
    }))
}

fn answer<M: DeserializeOwned>(r: Result<Value, RpcError>) -> Result<Response<M>, Status> {
    match r {
        Ok(v) => from_json(v).map(Response::new),
        Err(e) => Err(status(&e)),
    }
}

#[tonic::async_trait]
impl A2aService for Grpc {
    async fn send_message(
        &self,
        req: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        let (ctx, headers) = self.arrive_reading(&req, "SendMessage")?;
        let params = to_json(req.get_ref())?;
        self.extensions(&headers, &params)?;
        answer(tasks::send(&self.state, &params, D, ctx).await)
    }

    type SendStreamingMessageStream = Frames;

    async fn send_streaming_message(
        &self,
        req: Request<proto::SendMessageRequest>,
    ) -> Result<Response<Frames>, Status> {
        let (ctx, headers) = self.arrive_reading(&req, "SendStreamingMessage")?;
        let params = to_json(req.get_ref())?;
        self.extensions(&headers, &params)?;
        match stream::open_send(self.state.clone(), params, D, ctx).await {
            Ok(rx) => Ok(Response::new(frames(rx))),
            Err(e) => Err(status(&e)),
        }
    }

    async fn get_task(
        &self,
        req: Request<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        self.arrive(&req, "GetTask")?;
        let params = to_json(req.get_ref())?;
        answer(tasks::get(&self.state, &params, D).await)
    }

    async fn list_tasks(
        &self,
        req: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        self.arrive(&req, "ListTasks")?;
        let params = to_json(req.get_ref())?;
        answer(tasks::list(&self.state, &params, D).await)
    }

    async fn cancel_task(
        &self,
        req: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        let ctx = self.arrive(&req, "CancelTask")?;
        let params = to_json(req.get_ref())?;
        answer(tasks::cancel(&self.state, &params, D, ctx).await)
    }

    type SubscribeToTaskStream = Frames;

    async fn subscribe_to_task(
        &self,
        req: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<Frames>, Status> {
        self.arrive(&req, "SubscribeToTask")?;
        let params = to_json(req.get_ref())?;
        match stream::open_subscribe(self.state.clone(), params, D).await {
            Ok(rx) => Ok(Response::new(frames(rx))),
            Err(e) => Err(status(&e)),
        }
    }

    async fn create_task_push_notification_config(
        &self,
        req: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        let ctx = self.arrive(&req, "CreateTaskPushNotificationConfig")?;
        let params = to_json(req.get_ref())?;
        answer(push::create(&self.state, &params, D, &ctx).await)
    }

    async fn get_task_push_notification_config(
        &self,
        req: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.arrive(&req, "GetTaskPushNotificationConfig")?;
        let params = to_json(req.get_ref())?;
        answer(push::get(&self.state, &params, D).await)
    }

    async fn list_task_push_notification_configs(
        &self,
        req: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        self.arrive(&req, "ListTaskPushNotificationConfigs")?;
        let params = to_json(req.get_ref())?;
        answer(push::list(&self.state, &params, D).await)
    }

    async fn get_extended_agent_card(
        &self,
        req: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        let (_, headers) = self.arrive_reading(&req, "GetExtendedAgentCard")?;
        answer(super::card::extended(&self.state, &headers, D))
    }

    async fn delete_task_push_notification_config(
        &self,
        req: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pbjson_types::Empty>, Status> {
        let ctx = self.arrive(&req, "DeleteTaskPushNotificationConfig")?;
        let params = to_json(req.get_ref())?;
        push::delete(&self.state, &params, D, &ctx)
            .await
            .map(|_| Response::new(pbjson_types::Empty {}))
            .map_err(|e| status(&e))
    }
}
