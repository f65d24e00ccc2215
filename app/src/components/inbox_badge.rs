//! The "Approvals" navigation link with the number of things waiting on
//! its page, "Waiting for you": approvals and questions alike (a question
//! alone used to leave the badge at 0). Reloaded on every live event (no
//! polling). It asks for the counts alone (`GET /approvals?limit=0`,
//! `GET /questions?limit=0`): every page shows it, whatever the number
//! waiting.

use crate::api;
use crate::live::use_live;
use leptos::prelude::*;

#[component]
pub fn InboxLink() -> impl IntoView {
    let live = use_live();
    // Reference-counted: a render that outlives its page (the browser went
    // away) must not read a disposed value.
    let pending = ArcResource::new(move || live.tick.get(), |_| api::count_waiting());
    let count = move || pending.get().and_then(|r| r.ok());
    view! {
        <a href="/ui/approvals" id="nav-approvals">
            "Approvals"
            <Transition fallback=|| ()>
                {move || count().filter(|n| *n > 0).map(|n| view! {
                    <span class="count-badge" id="approvals-count"
                          aria-label=format!("{n} waiting")>{n}</span>
                })}
            </Transition>
        </a>
    }
}
