//! Who is looking: the signed-in principal in the header with a sign-out
//! button, and the reason an approval's buttons are not offered to them.
//!
//! The [`Viewer`] is loaded once per page (rendered on the server, where
//! the request's identity is known, and hydrated from that HTML), and shared
//! through context so every approval card can ask it without a request of
//! its own. The server refuses what the UI hides: hiding is a courtesy.

use crate::api::{self, ApiError};
use crate::models::Viewer;
use crate::reloading::reloading;
use leptos::prelude::*;

/// The page's viewer, shared through context. Reference-counted, not owned
/// by the page: a render that outlives its page (the browser went away)
/// must not read a disposed value.
#[derive(Clone)]
pub struct ViewerContext(pub ArcResource<Result<Viewer, ApiError>>);

/// Loads the viewer and provides it to the page (call once, in `App`).
pub fn provide_viewer() -> ViewerContext {
    let ctx = ViewerContext(ArcResource::new(|| (), |_| api::viewer()));
    provide_context(ctx.clone());
    ctx
}

/// The viewer, once loaded; `Viewer::default()` (mode unknown: nothing
/// hidden, the server still decides) when it cannot be.
pub async fn current() -> Viewer {
    match use_context::<ViewerContext>() {
        Some(ViewerContext(r)) => r.await.unwrap_or_default(),
        None => Viewer::default(),
    }
}

/// The header's right end: "Signed in as NAME (roles)" and "Sign out", or
/// a sign-in link when auth is on and nobody is signed in.
#[component]
pub fn UserMenu() -> impl IntoView {
    let ctx = use_context::<ViewerContext>();
    view! {
        <Transition fallback=|| ()>
            {reloading(move || { let ctx = ctx.clone(); Suspend::new(async move {
                let v = match ctx {
                    Some(ViewerContext(r)) => r.await.ok(),
                    None => None,
                };
                match v {
                    Some(v) if v.signed_in => leptos::either::EitherOf3::A(view! {
                        <div class="user-menu" id="user-menu">
                            <span class="user-name">
                                "Signed in as " <strong id="signed-in-as">{v.name.clone().unwrap_or_default()}</strong>
                                <span class="user-roles">" (" {v.roles.join(", ")} ")"</span>
                            </span>
                            // A plain form post with this browser's form
                            // token: works before hydration and without
                            // JavaScript (REACH.md §1).
                            <form method="post" action="/ui/sign-out" class="sign-out">
                                <input type="hidden" name="form_token" value=v.form_token.clone().unwrap_or_default()/>
                                <button type="submit" class="btn btn-small" id="sign-out">"Sign out"</button>
                            </form>
                        </div>
                    }),
                    Some(v) if v.mode != "none" && v.mode != "proxy" => leptos::either::EitherOf3::B(view! {
                        <div class="user-menu" id="user-menu">
                            <a href="/ui/sign-in" id="sign-in-link">"Sign in"</a>
                        </div>
                    }),
                    _ => leptos::either::EitherOf3::C(()),
                }
            })})}
        </Transition>
    }
}
