//! `GET /pipeline`: the configured orchestration tree, for the UI's
//! pipeline view and for API users who want to know which nodes exist
//! (a conversation's run of the tree is its `pipeline_state`).

use crate::http::state::AppState;
use app::pipeline::PipelineView;
use axum::Json;
use axum::extract::State;

/// `{"pipeline": PipelineNode}`, or `{}` in simple mode.
pub(crate) async fn get(State(state): State<AppState>) -> Json<PipelineView> {
    Json(view(&state))
}

/// The view both the API and the UI serve.
pub(crate) fn view(state: &AppState) -> PipelineView {
    PipelineView {
        pipeline: state.engine.pipeline_view(),
    }
}
