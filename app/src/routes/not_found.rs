//! The page for an unknown UI path (served with HTTP 404).

use leptos::prelude::*;

/// Unknown UI path.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
            resp.set_status(http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <section class="panel empty">
            <h1>"Page not found"</h1>
            <p>"There is no page at this address. " <a href="/">"Back to the conversations"</a></p>
        </section>
    }
}
