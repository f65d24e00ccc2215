//! The form on a call left `in_doubt` (RECEIPTS.md §3): a person who
//! checked says it ran, it did not, or (where its server honours
//! idempotency keys; the server refuses otherwise, naming why) that it is
//! to be sent again. A plain post to `/ui/approvals/:uuid/resolve`, so it
//! works before and without the WebAssembly; the page reloads with the
//! outcome.

use crate::models::Viewer;
use leptos::prelude::*;

/// The form, for a viewer who may decide (the server checks again).
#[component]
pub fn ResolveForm(uuid: String) -> impl IntoView {
    let action = format!("/ui/approvals/{uuid}/resolve");
    let note_id = format!("resolve-note-{uuid}");
    let here = crate::components::approval_card::here();
    view! {
        <Transition fallback=|| ()>
            {move || {
                let (action, note_id, here) = (action.clone(), note_id.clone(), here.clone());
                Suspend::new(async move {
                    let viewer: Viewer = crate::components::viewer::current().await;
                    let may = viewer.mode == "none" || viewer.mode.is_empty() || viewer.can_decide;
                    may.then(|| {
                        view! {
                            <form class="resolve-form" method="post" action=action>
                                <input type="hidden" name="form_token" value=viewer.form_token.unwrap_or_default()/>
                                <input type="hidden" name="back" value=here/>
                                {crate::components::approval_card::implicit_submit_guard()}
                                <label for=note_id.clone()>"What did you find? (optional note, kept in the audit trail)"</label>
                                <input type="text" id=note_id name="note" maxlength="1000"/>
                                <div class="approval-actions">
                                    <button type="submit" name="outcome" value="executed" class="btn">"It ran"</button>
                                    <button type="submit" name="outcome" value="failed" class="btn">"It did not run"</button>
                                    <button type="submit" name="outcome" value="retry" class="btn">"Send it again (same key)"</button>
                                </div>
                            </form>
                        }
                    })
                })
            }}
        </Transition>
    }
}
