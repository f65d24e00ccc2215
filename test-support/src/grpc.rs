//! A bare client of A2A's gRPC binding (`lf.a2a.v1.A2AService` over HTTP/2)
//! for the tests and the bench: tonic's generic client and the messages it
//! sends and reads, declared here with only the fields used (protobuf
//! skips the others), so a test states on the wire what it checks rather
//! than going through the agent's own generated code.

use tonic::metadata::MetadataValue;
use tonic::transport::Channel;

#[derive(Clone, PartialEq, prost::Message)]
pub struct Part {
    #[prost(string, optional, tag = "1")]
    pub text: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Message {
    #[prost(string, tag = "1")]
    pub message_id: String,
    #[prost(string, tag = "3")]
    pub task_id: String,
    #[prost(int32, tag = "4")]
    pub role: i32,
    #[prost(message, repeated, tag = "5")]
    pub parts: Vec<Part>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SendMessageRequest {
    #[prost(message, optional, tag = "2")]
    pub message: Option<Message>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskStatus {
    #[prost(int32, tag = "1")]
    pub state: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Task {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(message, optional, tag = "3")]
    pub status: Option<TaskStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SendMessageResponse {
    #[prost(message, optional, tag = "1")]
    pub task: Option<Task>,
    #[prost(message, optional, tag = "2")]
    pub message: Option<Message>,
}

/// `GetTaskRequest` and `CancelTaskRequest` (both: `id` is field 2).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskIdRequest {
    #[prost(string, tag = "2")]
    pub id: String,
}

/// `TaskState` values.
pub const COMPLETED: i32 = 3;
pub const CANCELED: i32 = 5;
pub const INPUT_REQUIRED: i32 = 6;

/// A user message with `text` (continuing `task` when given).
pub fn say(text: &str, task: Option<&str>) -> SendMessageRequest {
    SendMessageRequest {
        message: Some(Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            task_id: task.unwrap_or_default().to_string(),
            role: 1,
            parts: vec![Part {
                text: Some(text.into()),
            }],
        }),
    }
}

/// A channel to an agent's base URL (`http://127.0.0.1:PORT`).
pub async fn channel(base: &str) -> Channel {
    Channel::from_shared(base.to_string())
        .expect("a URL")
        .tcp_nodelay(true)
        .connect()
        .await
        .expect("the agent's port takes HTTP/2")
}

/// One unary call of `A2AService/method` as `token` (a bearer), with
/// extra metadata.
pub async fn unary<Q, R>(
    ch: &Channel,
    method: &str,
    token: Option<&str>,
    meta: &[(&'static str, &str)],
    msg: Q,
) -> Result<R, tonic::Status>
where
    Q: prost::Message + Send + Sync + 'static,
    R: prost::Message + Default + Send + Sync + 'static,
{
    let mut g = tonic::client::Grpc::new(ch.clone());
    g.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let mut req = tonic::Request::new(msg);
    if let Some(t) = token {
        let v = MetadataValue::try_from(format!("Bearer {t}")).expect("an ASCII token");
        req.metadata_mut().insert("authorization", v);
    }
    for (k, v) in meta {
        req.metadata_mut()
            .insert(*k, MetadataValue::try_from(*v).expect("ASCII metadata"));
    }
    let path = format!("/lf.a2a.v1.A2AService/{method}")
        .parse()
        .expect("a method path");
    g.unary(req, path, tonic_prost::ProstCodec::<Q, R>::default())
        .await
        .map(tonic::Response::into_inner)
}
