//! A block of a page that waits for data: re-run in the browser whenever
//! the resources it reads reload, built once on the server.
//!
//! Pages write `move || Suspend::new(async move { … })` inside a
//! `<Transition>` so that, once hydrated, the block re-renders when its
//! resource reloads (a live event, a refetch). On the server the closure
//! was called twice per page: once by the render's `dry_resolve` pass,
//! which looks for resources, and again to write the HTML. So every list
//! page and every conversation view was built twice and the first build
//! thrown away (about a tenth of the home page's CPU, measured with perf).
//! A server render happens once and nothing reloads during it, so there
//! [`reloading`] calls the closure once and hands over the `Suspend`
//! itself: a `Suspend` that `dry_resolve` finds ready keeps its view for
//! the HTML pass. The markup is the same either way, so hydration is
//! unaffected.

/// In the browser: `f` itself, a reactive block.
#[cfg(not(feature = "ssr"))]
pub fn reloading<F>(f: F) -> F {
    f
}

/// On the server: what `f` returns, built once.
#[cfg(feature = "ssr")]
pub fn reloading<V>(f: impl FnOnce() -> V) -> V {
    f()
}
