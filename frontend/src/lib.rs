#![recursion_limit = "256"]
//! The WebAssembly entry point: hydrates the HTML the server rendered.
//! Everything else lives in the `app` crate.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
}
