//! Live updates: one `EventSource` on `GET /events` for the whole app.
//!
//! Pages do not poll. They read [`Live`] from context: `tick` changes after
//! events (debounced; a page that lists things reloads on it), `seq` counts
//! events and [`Live::since`] returns the recent ones (a conversation page
//! reads all of its own, even when several arrive before its effect runs),
//! and `connected` says whether the stream is up (the header shows
//! "reconnecting…" when not).
//! The browser reconnects by itself and sends `Last-Event-ID`; the server
//! replays what was missed or sends `resync`, which bumps `tick` too. On the
//! server (SSR) no stream is opened: the signals keep their initial values.

use crate::models::Event;
use leptos::prelude::*;

/// The longest a list waits to reload after an event.
pub const DEBOUNCE: std::time::Duration = std::time::Duration::from_millis(100);

/// The app-wide live state.
#[derive(Clone, Copy)]
pub struct Live {
    pub tick: RwSignal<u64>,
    /// Events received so far (the last one's number).
    pub seq: RwSignal<u64>,
    /// The most recent events with their numbers, oldest first.
    recent: StoredValue<std::collections::VecDeque<(u64, Event)>>,
    pub connected: RwSignal<bool>,
}

/// Events kept for pages that catch up with [`Live::since`].
const KEPT: usize = 256;

impl Live {
    fn new() -> Live {
        Live {
            tick: RwSignal::new(0),
            seq: RwSignal::new(0),
            recent: StoredValue::new(Default::default()),
            connected: RwSignal::new(true),
        }
    }

    /// Events numbered after `after`, oldest first (at most the last 256).
    pub fn since(&self, after: u64) -> Vec<(u64, Event)> {
        self.recent
            .with_value(|r| r.iter().filter(|(n, _)| *n > after).cloned().collect())
    }

    /// Records one received event.
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    fn push(&self, e: Event) {
        let n = self.seq.get_untracked() + 1;
        self.recent.update_value(|r| {
            if r.len() == KEPT {
                r.pop_front();
            }
            r.push_back((n, e));
        });
        self.seq.set(n);
    }
}

/// Creates the live state, provides it as context and (in the browser)
/// opens the stream once the app has hydrated.
pub fn provide_live() -> Live {
    let live = Live::new();
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
    use_context::<Live>().unwrap_or_else(Live::new)
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
        // A burst of events (a busy agent) bumps `tick` once per
        // DEBOUNCE, so lists reload at most that often, not per event.
        let pending = std::rc::Rc::new(std::cell::Cell::new(false));
        for kind in EventKind::ALL {
            let pending = pending.clone();
            let on_event = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(
                move |ev: web_sys::MessageEvent| {
                    let event = ev
                        .data()
                        .as_string()
                        .and_then(|d| serde_json::from_str::<Event>(&d).ok())
                        .or_else(|| {
                            // `resync` carries no conversation: everyone reloads.
                            (kind == EventKind::Resync).then(|| Event {
                                kind,
                                conversation_id: String::new(),
                                status: None,
                                running: None,
                                tool: None,
                                approval: None,
                                question: None,
                                detail: None,
                                node: None,
                                at: String::new(),
                            })
                        });
                    if let Some(e) = event {
                        live.push(e);
                    }
                    if !pending.replace(true) {
                        let pending = pending.clone();
                        set_timeout(
                            move || {
                                pending.set(false);
                                live.tick.update(|t| *t += 1);
                            },
                            DEBOUNCE,
                        );
                    }
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
