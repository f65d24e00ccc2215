//! `/ui/notifications`: the notification outbox (POLICY.md §5): how many
//! are pending, delivered, dead or skipped, the newest deliveries with
//! their attempts and last error, and a Retry button on each dead letter
//! (admins; the server checks).

use crate::api;
use crate::components::time::short_time;
use crate::models::Delivery;
use crate::reloading::reloading;
use leptos::prelude::*;

#[component]
pub fn NotificationsPage() -> impl IntoView {
    let list = ArcResource::new(|| (), |_| api::list_notifications());
    let reload = {
        let list = list.clone();
        Callback::new(move |_: ()| list.refetch())
    };
    view! {
        <section class="page-head"><h1>"Notifications"</h1></section>
        <Transition fallback=|| view! { <p class="muted">"Loading notifications…"</p> }>
            {reloading(move || { let list = list.clone(); Suspend::new(async move {
                match list.await {
                    Ok(l) if l.deliveries.is_empty() => leptos::either::EitherOf3::A(view! {
                        <p class="panel empty" id="no-notifications">
                            "Nothing was sent yet. Targets are set under " <code>"notifications"</code> " in agent.yaml."
                        </p>
                    }),
                    Ok(l) => {
                        let token = crate::components::viewer::current().await.form_token.unwrap_or_default();
                        let count = |s: &str| l.counts.get(s).copied().unwrap_or(0);
                        let summary = format!(
                            "{} pending, {} delivered, {} dead, {} skipped",
                            count("pending"), count("delivered"), count("dead"), count("skipped")
                        );
                        leptos::either::EitherOf3::B(view! {
                            <p class="muted" id="notification-counts">{summary}</p>
                            <table class="notifications" id="notifications">
                                <thead><tr>
                                    <th>"Event"</th><th>"Target"</th><th>"Status"</th>
                                    <th>"Attempts"</th><th>"When"</th><th>"Last error"</th><th></th>
                                </tr></thead>
                                <tbody>
                                    {l.deliveries.into_iter().map(|d| view! { <Row d=d reload=reload token=token.clone()/> }).collect_view()}
                                </tbody>
                            </table>
                        })
                    }
                    Err(e) => leptos::either::EitherOf3::C(view! {
                        <div class="alert alert-error" role="alert">
                            <p>"Could not load the notifications: " {e.to_string()}</p>
                            <a href="/ui/notifications" class="btn">"Retry"</a>
                        </div>
                    }),
                }
            })})}
        </Transition>
    }
}

#[component]
fn Row(d: Delivery, reload: Callback<()>, token: String) -> impl IntoView {
    let error = ArcRwSignal::new(None::<String>);
    let retry = (d.status == "dead").then(|| {
        let (id, error) = (d.id.clone(), error.clone());
        let action = format!("/ui/notifications/{}/retry", d.id);
        let click = move |ev: leptos::ev::MouseEvent| {
            ev.prevent_default();
            let (id, error) = (id.clone(), error.clone());
            leptos::task::spawn_local(async move {
                match api::retry_notification(id).await {
                    Ok(_) => reload.run(()),
                    Err(e) => error.set(Some(e.to_string())),
                }
            });
        };
        // A plain form post before hydration or without JavaScript.
        view! {
            <form method="post" action=action class="retry-form">
                <input type="hidden" name="form_token" value=token/>
                <button type="submit" class="btn" data-retry=d.id.clone() on:click=click>"Retry"</button>
            </form>
        }
    });
    let when = match (&d.delivered_at, d.status.as_str()) {
        (Some(at), _) => format!("delivered {}", short_time(at)),
        (None, "pending") => format!("next {}", short_time(&d.next_at)),
        _ => short_time(&d.updated_at),
    };
    let shown = error.clone();
    view! {
        <tr data-delivery=d.id.clone() data-status=d.status.clone()>
            <td><code>{d.event.clone()}</code></td>
            <td>{d.target.clone()}</td>
            <td><span class=format!("pill pill-{}", d.status)>{d.status.clone()}</span></td>
            <td>{d.attempts}</td>
            <td title=d.created_at.clone()>{when}</td>
            <td>{d.last_error.clone().unwrap_or_default()}</td>
            <td>{retry}<span class="form-error" role="alert">{move || shown.get()}</span></td>
        </tr>
    }
}
