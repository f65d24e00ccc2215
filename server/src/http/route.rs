//! What a route is: its method, path, the role it needs, who serves it
//! and what the documentation says of it. The one list of them is
//! [`super::routes::ROUTES`]; the types live here, below the handlers, so
//! `/openapi.json` and `/docs` can read the list they are served from.

use super::auth::access::Need;
use super::state::AppState;
use axum::routing::MethodRouter;

/// One route.
pub(crate) struct Route {
    /// `GET`, `POST` or `DELETE`.
    pub(crate) method: &'static str,
    /// In axum's syntax, `{name}` for a segment (also OpenAPI's).
    pub(crate) path: &'static str,
    /// What the caller must be (AUTH.md §2-§3).
    pub(crate) need: Need,
    pub(crate) serve: Serve,
    pub(crate) doc: Doc,
}

/// Who answers a route.
pub(crate) enum Serve {
    /// A handler for the route's method (a function, so the list can be
    /// a static).
    Handler(fn() -> MethodRouter<AppState>),
    /// A page of the app, rendered by Leptos.
    Page,
}

/// What `/openapi.json` and `/docs` say of a route.
pub(crate) struct Doc {
    pub(crate) summary: &'static str,
    /// Component name of the JSON request body, if any.
    pub(crate) request: Option<&'static str>,
    /// Component name of the JSON answer (None: not one of the models).
    pub(crate) response: Option<&'static str>,
    pub(crate) status: u16,
    /// Error statuses it can answer.
    pub(crate) errors: &'static [u16],
    /// An example request body.
    pub(crate) example: Option<&'static str>,
    /// The answer's media type when it is not a model (a page, a script,
    /// a stream).
    pub(crate) media: Option<&'static str>,
}

impl Doc {
    /// A route answering 200 with nothing more said.
    pub(crate) const fn new(summary: &'static str) -> Doc {
        Doc {
            summary,
            request: None,
            response: None,
            status: 200,
            errors: &[],
            example: None,
            media: None,
        }
    }
    pub(crate) const fn request(self, schema: &'static str) -> Doc {
        Doc {
            request: Some(schema),
            ..self
        }
    }
    pub(crate) const fn response(self, schema: &'static str) -> Doc {
        Doc {
            response: Some(schema),
            ..self
        }
    }
    pub(crate) const fn status(self, status: u16) -> Doc {
        Doc { status, ..self }
    }
    pub(crate) const fn errors(self, errors: &'static [u16]) -> Doc {
        Doc { errors, ..self }
    }
    pub(crate) const fn example(self, body: &'static str) -> Doc {
        Doc {
            example: Some(body),
            ..self
        }
    }
    pub(crate) const fn media(self, media: &'static str) -> Doc {
        Doc {
            media: Some(media),
            ..self
        }
    }
}
