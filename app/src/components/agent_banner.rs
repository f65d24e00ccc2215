//! Banners about the agent itself: no operator authentication on a
//! reachable address, a model that cannot be used, or the scripted demo
//! model.

use crate::api;
use crate::reloading::reloading;
use leptos::prelude::*;

/// Shown at the top of every page when something about the model matters.
#[component]
pub fn AgentBanner() -> impl IntoView {
    let info = ArcResource::new(|| (), |_| api::agent_info());
    view! {
        <Transition fallback=|| ()>
            {reloading(move || Suspend::new(async move {
                crate::components::viewer::current().await.warning.map(|w| view! {
                    <p class="banner banner-open" role="alert" id="open-banner">{w}</p>
                })
            }))}
        </Transition>
        <Transition fallback=|| ()>
            {reloading(move || { let info = info.clone(); Suspend::new(async move {
                match info.await {
                    Ok(i) if i.llm_problem.is_some() => leptos::either::EitherOf3::A(view! {
                        <p class="banner banner-error" role="alert" id="llm-banner">
                            "The model cannot be used: " {i.llm_problem.unwrap_or_default()}
                            ". Existing conversations and approvals still work; new messages fail until this is fixed."
                        </p>
                    }),
                    Ok(i) if i.is_scripted() => leptos::either::EitherOf3::B(view! {
                        <p class="banner banner-demo" id="demo-banner">
                            "Demo model: answers come from a rules file ("
                            <code>{i.model.unwrap_or_default()}</code>
                            "), not a real LLM. Set a provider API key to use one."
                        </p>
                    }),
                    _ => leptos::either::EitherOf3::C(()),
                }
            })})}
        </Transition>
    }
}
