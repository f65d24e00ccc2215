//! Live updates: one `EventSource` on `GET /events` for the whole app.
//!
//! Pages do not poll. They read [`Live`] from context: `tick` changes on
//! every event (a page that lists things reloads on it), `last` is the
//! latest event (a conversation page picks its own), and `connected` says
//! whether the stream is up (the header shows "reconnecting…" when not).
//! The browser reconnects by itself and sends `Last-Event-ID`; the server
//! replays what was missed or sends `resync`, which bumps `tick` too. On the
//! server (SSR) no stream is opened: the signals keep their initial values.

use crate::models::Event;
use leptos::prelude::*;

/// The app-wide live state.
#[derive(Clone, Copy)]
pub struct Live {
    pub tick: RwSignal<u64>,
    pub last: RwSignal<Option<Event>>,
    pub connected: RwSignal<bool>,
}

/// Creates the live state, provides it as context and (in the browser)
/// opens the stream once the app has hydrated.
pub fn provide_live() -> Live {
    let live = Live {
        tick: RwSignal::new(0),
        last: RwSignal::new(None),
        connected: RwSignal::new(true),
    };
    provide_context(live);
    #[cfg(feature = "hydrate")]
    Effect::new(move |prev: Option<()>| {
        if prev.is_none() {
            browser::open(live);
        }
    });
    live
}

/// The live state provided by [`provide_live`].
pub fn use_live() -> Live {
    use_context::<Live>().unwrap_or_else(|| Live {
        tick: RwSignal::new(0),
        last: RwSignal::new(None),
        connected: RwSignal::new(true),
    })
}

#[cfg(feature = "hydrate")]
mod browser {
    use super::*;
    use crate::models::EventKind;
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;

    pub fn open(live: Live) {
        let Ok(source) = web_sys::EventSource::new("/events") else {
            live.connected.set(false);
            return;
        };
        for kind in EventKind::ALL {
            let on_event = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(
                move |ev: web_sys::MessageEvent| {
                    let event = ev
                        .data()
                        .as_string()
                        .and_then(|d| serde_json::from_str::<Event>(&d).ok());
                    if let Some(e) = event {
                        live.last.set(Some(e));
                    }
                    live.tick.update(|t| *t += 1);
                },
            );
            let _ = source
                .add_event_listener_with_callback(kind.as_str(), on_event.as_ref().unchecked_ref());
            // The stream lives as long as the page: leak the closure on purpose.
            on_event.forget();
        }
        let on_open = Closure::<dyn FnMut()>::new(move || {
            // After a drop, reload what lists show (the replay covers events,
            // but a reload is cheap and certain).
            if !live.connected.get_untracked() {
                live.tick.update(|t| *t += 1);
            }
            live.connected.set(true);
        });
        source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        on_open.forget();
        let on_error = Closure::<dyn FnMut()>::new(move || live.connected.set(false));
        source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        // Kept alive by the browser while open; never closed by the app.
        std::mem::forget(source);
    }
}
