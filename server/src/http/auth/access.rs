//! The authorization table: what each route needs (AUTH.md §2–§3).
//!
//! Read from the one route list (`http::routes`), where each route is
//! declared with the role it needs, plus a few rules for what no route
//! serves; the `guard` middleware asks it. A2A methods need different roles on one path,
//! so `/a2a` asks only for a known caller here and [`a2a_method`] says the
//! rest; deciding an approval (REST, UI or A2A) is checked where the
//! decision is made (`domain::principal::may_decide` for the role and
//! separation of duties, `policy::admitted` for a rule's approvers).

use crate::domain::principal::Role;
use axum::http::Method;

/// What a route needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Anyone, signed in or not.
    Open,
    /// An API route: 401 without credentials, 403 without the role.
    Api(Role),
    /// A page: 303 to sign-in without a session, 403 without the role.
    Page(Role),
    /// An API route for any caller who proved who they are, whatever
    /// their roles now (401 without credentials); the handler decides.
    /// Revoking one's own grant: a demoted granter may still end it.
    Known,
}

use Need::{Api, Open, Page};
use Role::{Requester, Viewer};

/// What no declared route serves, tried in order after the routes:
/// `(method, path prefix, need)`, `*` matching any method. Assets are
/// open; other `/ui/` pages (the 404 page) need a viewer's session; the
/// rest of the A2A bindings and unknown API paths need a known caller.
const FALLBACK: &[(&str, &str, Need)] = &[
    ("*", "/pkg/", Open),
    ("GET", "/ui/auth/", Open),
    ("GET", "/ui/", Page(Viewer)),
    ("*", "/a2a/", Api(Viewer)),
    // A2A's gRPC binding: a known caller; each method's role is checked by
    // the service (`a2a_method`).
    ("POST", crate::http::paths::A2A_GRPC_PREFIX, Api(Viewer)),
];

fn matches(pattern: &str, path: &str) -> bool {
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

/// What `method path` needs: the need of the `declared` route it matches
/// (`(method, path, need)`, from `http::routes`, which the guard passes:
/// the table does not import the routes it guards), else the
/// [`FALLBACK`] rules. `static_file`
/// says whether the path is a file of the site's assets (open, like
/// `/pkg/`). Unknown routes need a viewer, so the API's shape is not
/// probed anonymously.
pub(crate) fn need(
    method: &Method,
    path: &str,
    declared: impl IntoIterator<Item = (&'static str, &'static str, Need)>,
    static_file: impl Fn(&str) -> bool,
) -> Need {
    let m = if *method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    if let Some((_, _, n)) = declared
        .into_iter()
        .find(|(rm, rp, _)| *rm == m && matches(rp, path))
    {
        return n;
    }
    for (fm, prefix, n) in FALLBACK {
        if (*fm == "*" || *fm == m) && path.starts_with(prefix) {
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
pub(crate) fn a2a_method(method: &str) -> Role {
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

#[cfg(test)]
mod tests {
    use super::*;
    use Role::{Admin, Approver};

    /// What the guard asks: the declared routes' needs, then the rules.
    fn need(method: &Method, path: &str, static_file: impl Fn(&str) -> bool) -> Need {
        super::need(method, path, crate::http::routes::table(), static_file)
    }

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
