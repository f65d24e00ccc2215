//! Stop & Go's web UI and the API models it shares with the server.
//!
//! - [`models`]: the REST contract's types, used by both sides.
//! - [`pipeline`]: the orchestration tree and a conversation's run of it.
//! - [`api`]: one function per REST call; HTTP in the browser, in-process
//!   during server rendering.
//! - [`routes`]: one page per file. The UI owns `/` and `/ui/...`; every other
//!   path belongs to the JSON API (DESIGN.md), so no page shadows an API route.
//! - [`components`]: small pieces shared by pages.
//! - [`edit_args`]: the fields of "Edit arguments", read the same way by
//!   the browser and by the server (for a form posted without JavaScript).
//! - [`reloading`]: a data block, reactive in the browser, built once on
//!   the server.
//!
//! The crate builds twice: with `ssr` inside the server, with `hydrate` as
//! WebAssembly. Pages render useful HTML on the server first and become
//! interactive when the WebAssembly hydrates them; the `<body>` then carries
//! `data-hydrated="true"`, which end-to-end tests wait for before clicking.

pub mod api;
pub mod components;
pub mod edit_args;
pub mod live;
pub mod markdown;
pub mod models;
pub mod pipeline;
pub mod reloading;
pub mod routes;

use leptos::prelude::*;
use leptos_meta::{HashedStylesheet, MetaTags, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{SsrMode, path};

/// The HTML document around the app, rendered on the server only.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                // An installable web app (REACH.md §1): the inbox on a
                // phone's home screen.
                <link rel="manifest" href="/manifest.webmanifest"/>
                <meta name="theme-color" content="#1f5fbf"/>
                <link rel="icon" type="image/png" sizes="192x192" href="/icons/icon-192.png"/>
                <link rel="apple-touch-icon" href="/icons/icon-192.png"/>
                // `/pkg/stopgo.<hash>.css` when the site was built with
                // hashed names (server/src/assets.rs), else `/pkg/stopgo.css`.
                <HashedStylesheet options=options.clone() id="leptos"/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The application: navigation and the routed pages.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Effects run only in the browser, after hydration: this marks the page
    // as interactive for users of assistive tech and for tests.
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));
    let live = live::provide_live();
    components::viewer::provide_viewer();

    view! {
        <Title text="Stop & Go"/>
        <Router>
            <div class="app" data-hydrated=move || if hydrated.get() { "true" } else { "false" }>
                <header class="topbar">
                    <a href="/" class="brand">
                        <span class="brand-mark" aria-hidden="true">"■▶"</span>
                        " Stop & Go"
                    </a>
                    <nav aria-label="Main">
                        <a href="/">"Conversations"</a>
                        <components::inbox_badge::InboxLink/>
                        <a href="/ui/pipeline">"Pipeline"</a>
                        <a href="/ui/tools">"Tools"</a>
                        <a href="/ui/notifications">"Notifications"</a>
                        <a href="/docs" rel="external">"API"</a>
                    </nav>
                    <span class="live-state" role="status" id="live-state">
                        {move || (!live.connected.get()).then_some("Reconnecting…")}
                    </span>
                    <components::viewer::UserMenu/>
                </header>
                <components::agent_banner::AgentBanner/>
                <main id="main">
                    // Every page renders whole (`SsrMode::Async`): its data is
                    // read in-process in well under a millisecond, so streaming
                    // a shell with fallbacks and then each boundary's fragment
                    // and swap script cost more than it saved (the home page:
                    // about a fifth more pages per core rendered whole).
                    <Routes fallback=routes::not_found::NotFound>
                        <Route path=path!("/") view=routes::home::HomePage ssr=SsrMode::Async/>
                        <Route path=path!("/ui/conversations/:id") view=routes::conversation::ConversationPage ssr=SsrMode::Async/>
                        <Route path=path!("/ui/approvals") view=routes::approvals::ApprovalsPage ssr=SsrMode::Async/>
                        <Route path=path!("/ui/tools") view=routes::tools::ToolsPage ssr=SsrMode::Async/>
                        <Route path=path!("/ui/pipeline") view=routes::pipeline::PipelinePage ssr=SsrMode::Async/>
                        <Route path=path!("/ui/notifications") view=routes::notifications::NotificationsPage ssr=SsrMode::Async/>
                        <Route path=path!("/ui/link/:token") view=routes::link::LinkPage ssr=SsrMode::Async/>
                    </Routes>
                </main>
            </div>
        </Router>
    }
}
