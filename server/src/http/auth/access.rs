//! The route table: what each route needs (AUTH.md §2–§3).
//!
//! One table for every REST route, UI page and the A2A endpoint, read by
//! the `guard` middleware. A2A methods need different roles on one path,
//! so `/a2a` asks only for a known caller here and [`a2a_method`] says the
//! rest; deciding an approval (REST, UI or A2A) is checked by
//! `auth::may_decide` where the decision is made.

use crate::domain::principal::Role;
use axum::http::Method;

/// What a route needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Anyone, signed in or not.
    Open,
    /// An API route: 401 without credentials, 403 without the role.
    Api(Role),
    /// A page: 303 to sign-in without a session, 403 without the role.
    Page(Role),
}

use Need::{Api, Open, Page};
use Role::{Admin, Approver, Requester, Viewer};

/// `(method, path pattern, need)`: `*` as the method matches any method;
/// `{x}` matches one segment; a trailing `/*` matches any rest.
const TABLE: &[(&str, &str, Need)] = &[
    ("GET", "/health", Open),
    ("GET", "/.well-known/agent-card.json", Open),
    ("GET", "/.well-known/agent.json", Open),
    ("*", "/pkg/*", Open),
    ("GET", "/ui/sign-in", Open),
    ("POST", "/ui/sign-in", Open),
    ("POST", "/ui/sign-out", Open),
    ("GET", "/ui/auth/*", Open),
    ("GET", "/auth/me", Open),
    ("GET", "/", Page(Viewer)),
    ("GET", "/ui/audit", Page(Admin)),
    ("GET", "/ui/*", Page(Viewer)),
    // The pages' forms (REACH.md §1). Deciding is checked where it is
    // made (roles, separation of duties, approvers), as for REST.
    ("POST", "/ui/approvals/{uuid}/decide", Page(Viewer)),
    ("POST", "/ui/link/{token}", Page(Viewer)),
    ("POST", "/ui/notifications/{id}/retry", Page(Admin)),
    ("GET", "/docs", Page(Viewer)),
    ("GET", "/openapi.json", Api(Viewer)),
    ("GET", "/agent", Api(Viewer)),
    ("GET", "/conversations", Api(Viewer)),
    ("POST", "/conversations", Api(Requester)),
    ("GET", "/conversations/{id}", Api(Viewer)),
    ("POST", "/conversations/{id}/messages", Api(Requester)),
    ("GET", "/conversations/{id}/events", Api(Viewer)),
    ("GET", "/events", Api(Viewer)),
    ("GET", "/approvals", Api(Viewer)),
    ("POST", "/approvals/{uuid}", Api(Approver)),
    ("GET", "/tools", Api(Viewer)),
    ("POST", "/tools/{name}/accept", Api(Admin)),
    ("GET", "/pipeline", Api(Viewer)),
    ("GET", "/notifications", Api(Viewer)),
    ("POST", "/notifications/{id}/retry", Api(Admin)),
    ("GET", "/links/{token}", Api(Viewer)),
    ("POST", "/links/{token}", Api(Approver)),
    ("GET", "/audit", Api(Admin)),
    ("GET", "/metrics", Api(Viewer)),
    ("POST", "/a2a", Api(Viewer)),
    ("POST", "/a2a/", Api(Viewer)),
    // The HTTP+JSON binding: each operation's role is checked like
    // JSON-RPC's, by [`a2a_method`].
    ("*", "/a2a/*", Api(Viewer)),
];

fn matches(pattern: &str, path: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix("/*") {
        return path.starts_with(prefix) && path[prefix.len()..].starts_with('/');
    }
    let (mut p, mut q) = (pattern.split('/'), path.split('/'));
    loop {
        match (p.next(), q.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a.starts_with('{') && !b.is_empty() => {}
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
    }
}

/// What `method path` needs. `static_file` says whether the path is a file
/// of the site's assets (open, like `/pkg/`). Unknown routes need a viewer,
/// so the API's shape is not probed anonymously.
pub fn need(method: &Method, path: &str, static_file: impl Fn(&str) -> bool) -> Need {
    let m = if *method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    for (tm, tp, n) in TABLE {
        if (*tm == "*" || *tm == m) && matches(tp, path) {
            return *n;
        }
    }
    if m == "GET" && static_file(path) {
        return Open;
    }
    Api(Viewer)
}

/// The role an A2A method needs. Sending a message that decides an
/// approval needs `approver` instead (checked where it is decided).
pub fn a2a_method(method: &str) -> Role {
    match method {
        "SendMessage"
        | "message/send"
        | "SendStreamingMessage"
        | "message/stream"
        | "CancelTask"
        | "tasks/cancel"
        | "CreateTaskPushNotificationConfig"
        | "tasks/pushNotificationConfig/set"
        | "DeleteTaskPushNotificationConfig"
        | "tasks/pushNotificationConfig/delete" => Requester,
        _ => Viewer,
    }
}

/// Every route in the table, for tests and docs.
pub fn table() -> impl Iterator<Item = (&'static str, &'static str, Need)> {
    TABLE.iter().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_answers_each_route() {
        let no = |_: &str| false;
        assert_eq!(need(&Method::GET, "/health", no), Open);
        assert_eq!(need(&Method::POST, "/approvals/abc", no), Api(Approver));
        assert_eq!(need(&Method::POST, "/approvals/", no), Api(Viewer));
        assert_eq!(
            need(&Method::POST, "/conversations/x/messages", no),
            Api(Requester)
        );
        assert_eq!(need(&Method::GET, "/conversations/x", no), Api(Viewer));
        assert_eq!(need(&Method::GET, "/ui/audit", no), Page(Admin));
        assert_eq!(need(&Method::GET, "/ui/conversations/1", no), Page(Viewer));
        assert_eq!(need(&Method::GET, "/pkg/stopgo.wasm", no), Open);
        assert_eq!(need(&Method::GET, "/pkgx", no), Api(Viewer));
        assert_eq!(need(&Method::GET, "/audit", no), Api(Admin));
        assert_eq!(need(&Method::GET, "/robots.txt", |_| true), Open);
        assert_eq!(need(&Method::GET, "/nothing", no), Api(Viewer));
        assert_eq!(need(&Method::HEAD, "/", no), Page(Viewer));
        assert_eq!(a2a_method("GetTask"), Viewer);
        assert_eq!(a2a_method("message/send"), Requester);
    }
}
