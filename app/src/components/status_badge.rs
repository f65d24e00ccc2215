//! A conversation's status as a badge: text plus colour, never colour alone.

use crate::models::ConversationStatus;
use leptos::prelude::*;

/// Renders `status` as a labelled badge.
#[component]
pub fn StatusBadge(status: ConversationStatus) -> impl IntoView {
    view! {
        <span class=format!("badge badge-{}", status.as_str()) data-status=status.as_str()>
            {status.label()}
        </span>
    }
}
