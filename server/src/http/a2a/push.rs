//! A2A push notifications: the config operations (1.0
//! `*TaskPushNotificationConfig`, 0.3 `tasks/pushNotificationConfig/*`,
//! `configuration.taskPushNotificationConfig` on a send). The watcher that
//! queues each task state change for its configs is the task service's
//! (`engine::a2a_tasks::push_watch`).
//!
//! Setting or deleting a config is the task's own requester's (or an
//! admin's: `authorize::push_config`); reading them is any viewer's, and
//! shows no token or credentials. Configs are stored (`store::push`) with
//! their secrets sealed; the URL is checked when a config is made
//! (http/https, no internal address unless `a2a_push_allow_private`).
//! A config gets the task's current state when it is made.

use super::rpc::{RpcError, param_str, param_u64};
use crate::a2a::wire::Dialect;
use crate::domain::tools::CallContext;
use crate::http::state::AppState;
use crate::store::push::PushConfig;
use serde_json::{Value, json};

fn store_error(e: crate::store::StoreError) -> RpcError {
    RpcError::internal(e.to_string())
}

/// The config a request describes: 1.0 puts it flat beside `taskId`
/// (or under `pushNotificationConfig` / `config`), 0.3 under
/// `pushNotificationConfig` with `authentication.schemes`.
struct Described {
    id: Option<String>,
    url: String,
    token: Option<String>,
    scheme: Option<String>,
    credentials: Option<String>,
}

fn describe(params: &Value) -> Result<Described, RpcError> {
    let c = params
        .get("pushNotificationConfig")
        .or_else(|| params.get("push_notification_config"))
        .or_else(|| params.get("config"))
        .filter(|c| c.is_object())
        .unwrap_or(params);
    let url = param_str(c, "url", "url")
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| RpcError::params("the push config's `url` is required"))?;
    let auth = c.get("authentication").filter(|a| !a.is_null());
    let scheme = auth.and_then(|a| {
        a.get("scheme").and_then(Value::as_str).or_else(|| {
            a.get("schemes")
                .and_then(Value::as_array)
                .and_then(|s| s.first())
                .and_then(Value::as_str)
        })
    });
    if auth.is_some() && scheme.is_none() {
        return Err(RpcError::params(
            "the push config's `authentication.scheme` is required when `authentication` is given (e.g. \"Bearer\")",
        ));
    }
    if let Some(s) = scheme
        && (s.is_empty() || s.contains(char::is_whitespace))
    {
        return Err(RpcError::params(
            "the push config's `authentication.scheme` must be one word (e.g. \"Bearer\")",
        ));
    }
    let credentials = auth
        .and_then(|a| a.get("credentials"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if credentials
        .as_deref()
        .is_some_and(|c| c.contains(['\r', '\n']))
    {
        return Err(RpcError::params(
            "the push config's credentials may not contain line breaks",
        ));
    }
    let token = param_str(c, "token", "token").filter(|t| !t.is_empty());
    if token.as_deref().is_some_and(|t| t.contains(['\r', '\n'])) {
        return Err(RpcError::params(
            "the push config's `token` may not contain line breaks",
        ));
    }
    Ok(Described {
        id: param_str(c, "id", "id").filter(|i| !i.is_empty()),
        url,
        token,
        scheme: scheme.map(str::to_string),
        credentials,
    })
}

/// The task a request names (`taskId`; 0.3 get/list/delete: `id`), which
/// must exist.
async fn task_of(state: &AppState, params: &Value, d: Dialect) -> Result<String, RpcError> {
    let t = param_str(params, "taskId", "task_id");
    let t = match d {
        Dialect::V1 => t,
        _ => t.or_else(|| param_str(params, "id", "id")),
    };
    let t = t
        .filter(|t| !t.is_empty())
        .ok_or_else(|| RpcError::params("`taskId` is required"))?;
    state.a2a.load(&t).await?;
    Ok(t)
}

/// The push config a send carries in its `configuration`, checked (so a
/// bad one refuses the send before any task is made).
pub(crate) fn on_send(state: &AppState, params: &Value) -> Result<Option<Value>, RpcError> {
    let Some(c) = params.get("configuration").and_then(|c| {
        [
            "taskPushNotificationConfig",
            "task_push_notification_config",
            "pushNotificationConfig",
            "push_notification_config",
        ]
        .iter()
        .find_map(|k| c.get(*k))
        .filter(|v| !v.is_null())
    }) else {
        return Ok(None);
    };
    if !c.is_object() {
        return Err(RpcError::params(
            "configuration.taskPushNotificationConfig must be an object",
        ));
    }
    let d = describe(c)?;
    crate::notify::push::check_url(&d.url, state.notify.allow_private())
        .map_err(RpcError::params)?;
    Ok(Some(c.clone()))
}

/// Stores the config `params` describes for `task_id` (which exists) and
/// queues the task's current state for it. Used by the create methods and
/// by a send that carries a config.
pub(crate) async fn register(
    state: &AppState,
    task_id: &str,
    params: &Value,
    d: Dialect,
    ctx: &CallContext,
) -> Result<PushConfig, RpcError> {
    super::authorize::push_config(state, task_id, ctx, "setting a push notification config")
        .await?;
    let desc = describe(params)?;
    crate::notify::push::check_url(&desc.url, state.notify.allow_private())
        .map_err(RpcError::params)?;
    let seal = |s: Option<String>| {
        s.map(|s| state.notify.sealer().seal(&s))
            .transpose()
            .map_err(RpcError::internal)
    };
    let p = PushConfig {
        uid: crate::domain::ids::new_id(),
        task_id: task_id.to_string(),
        config_id: desc.id.unwrap_or_else(crate::domain::ids::new_id),
        url: desc.url,
        token: seal(desc.token)?,
        auth_scheme: desc.scheme,
        credentials: seal(desc.credentials)?,
        dialect: if d == Dialect::V1 { "1.0" } else { "0.3" }.into(),
        created_by: ctx.principal.name.clone(),
        created_at: crate::domain::ids::now(),
        last_state: None,
    };
    state
        .store
        .put_push_config(p.clone())
        .await
        .map_err(store_error)?;
    tracing::info!(task = %task_id, config = %p.config_id, "push notification config stored");
    state.a2a.push_config_added(task_id).await;
    Ok(p)
}

/// A config as the API shows it: never its token or credentials.
fn show(p: &PushConfig, d: Dialect) -> Value {
    match d {
        Dialect::V1 => {
            let mut v = json!({"taskId": p.task_id, "id": p.config_id, "url": p.url});
            if let Some(s) = &p.auth_scheme {
                v["authentication"] = json!({ "scheme": s });
            }
            v
        }
        _ => {
            let mut c = json!({"id": p.config_id, "url": p.url});
            if let Some(s) = &p.auth_scheme {
                c["authentication"] = json!({ "schemes": [s] });
            }
            json!({"taskId": p.task_id, "pushNotificationConfig": c})
        }
    }
}

/// Create (1.0) / set (0.3).
pub(crate) async fn create(
    state: &AppState,
    params: &Value,
    d: Dialect,
    ctx: &CallContext,
) -> Result<Value, RpcError> {
    let task_id = task_of(state, params, d).await?;
    let p = register(state, &task_id, params, d, ctx).await?;
    Ok(show(&p, d))
}

/// The config id a get or delete names (0.3 may leave it out: the task's
/// first config).
fn config_of(params: &Value, d: Dialect) -> Option<String> {
    match d {
        Dialect::V1 => param_str(params, "id", "id"),
        _ => param_str(
            params,
            "pushNotificationConfigId",
            "push_notification_config_id",
        ),
    }
    .filter(|c| !c.is_empty())
}

pub(crate) async fn get(state: &AppState, params: &Value, d: Dialect) -> Result<Value, RpcError> {
    let task_id = task_of(state, params, d).await?;
    let wanted = config_of(params, d);
    if d == Dialect::V1 && wanted.is_none() {
        return Err(RpcError::params("`id` (the config's id) is required"));
    }
    let all = state
        .store
        .push_configs(&task_id)
        .await
        .map_err(store_error)?;
    let exact = all
        .iter()
        .find(|p| wanted.as_ref().is_none_or(|w| *w == p.config_id));
    // 0.3 began with one config per task and its SDK answers a get with
    // the task's config whatever id is named; so do we, in 0.3 only.
    let found = match d {
        Dialect::V1 => exact,
        _ => exact.or(all.first()),
    };
    match found {
        Some(p) => Ok(show(p, d)),
        None => Err(RpcError::task_not_found(&task_id).with_message(format!(
            "push notification config {:?} not found for task {task_id:?}",
            wanted.unwrap_or_default()
        ))),
    }
}

pub(crate) async fn list(state: &AppState, params: &Value, d: Dialect) -> Result<Value, RpcError> {
    let task_id = task_of(state, params, d).await?;
    let all = state
        .store
        .push_configs(&task_id)
        .await
        .map_err(store_error)?;
    if d != Dialect::V1 {
        return Ok(Value::Array(all.iter().map(|p| show(p, d)).collect()));
    }
    let size = param_u64(params, "pageSize", "page_size")?
        .unwrap_or(50)
        .clamp(1, 100) as usize;
    let start = match param_str(params, "pageToken", "page_token").filter(|t| !t.is_empty()) {
        None => 0,
        Some(t) => t.parse::<usize>().map_err(|_| {
            RpcError::params(format!("pageToken {t:?} is not one this server issued"))
        })?,
    };
    let page: Vec<Value> = all
        .iter()
        .skip(start)
        .take(size)
        .map(|p| show(p, d))
        .collect();
    let next = if start + size < all.len() {
        (start + size).to_string()
    } else {
        String::new()
    };
    Ok(json!({"configs": page, "nextPageToken": next}))
}

/// Delete: idempotent (deleting a config that is gone succeeds).
pub(crate) async fn delete(
    state: &AppState,
    params: &Value,
    d: Dialect,
    ctx: &CallContext,
) -> Result<Value, RpcError> {
    let task_id = task_of(state, params, d).await?;
    let Some(config) = config_of(params, d) else {
        return Err(RpcError::params(match d {
            Dialect::V1 => "`id` (the config's id) is required",
            _ => "`pushNotificationConfigId` is required",
        }));
    };
    super::authorize::push_config(state, &task_id, ctx, "deleting a push notification config")
        .await?;
    if state
        .store
        .delete_push_config(&task_id, &config)
        .await
        .map_err(store_error)?
    {
        tracing::info!(task = %task_id, config = %config, "push notification config deleted");
    }
    Ok(match d {
        Dialect::V1 => json!({}),
        _ => Value::Null,
    })
}
