//! How the web UI's files travel (OPERATIONS.md §4).
//!
//! `make build` runs `cargo leptos build --release --precompress` with
//! `hash-files` on: the wasm, JS and CSS get content-hashed names
//! (`/pkg/stopgo.<hash>.wasm`) and `.br`/`.gz` siblings, and the hashes go
//! to `hash.txt` in the site root, from which the page shell names them.
//! The files are served by tower-http's `ServeDir` (through leptos_axum),
//! which picks the precompressed sibling the browser accepts.
//!
//! [`cache_control`] then says how long a response may be kept: a hashed
//! file never changes under its name, so a year and `immutable`; pages and
//! unhashed files (`robots.txt`, a development build's `/pkg/stopgo.js`)
//! are `no-cache`, i.e. revalidated each time. [`compression`] compresses
//! what is not precompressed (pages, JSON) for clients that ask, never an
//! event stream.

use axum::extract::Request;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, VARY};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use std::path::Path;
use tower_http::compression::predicate::DefaultPredicate;
use tower_http::compression::{CompressionLayer, CompressionLevel};

/// The file in the site root that names the hashed assets (cargo-leptos
/// `hash-file-name`, relative to the binary's folder: `../site/hash.txt`).
pub(crate) const HASH_FILE: &str = "hash.txt";

/// For a hashed asset: kept a year, never revalidated.
const IMMUTABLE: HeaderValue = HeaderValue::from_static("public, max-age=31536000, immutable");
/// For pages and unhashed files: revalidated on every use.
const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache");

/// The hash file of `site_root`, when the site was built with hashed names.
pub(crate) fn hash_file(site_root: &str) -> Option<String> {
    let path = Path::new(site_root).join(HASH_FILE);
    if !path.is_file() {
        return None;
    }
    // Leptos joins it to the binary's folder; an absolute path stays as is.
    let absolute = std::path::absolute(&path).unwrap_or(path);
    Some(absolute.to_string_lossy().into_owned())
}

/// The stylesheet's URL: `/pkg/stopgo.<hash>.css` when the site has
/// hashed names, else `/pkg/stopgo.css` (for pages written by hand, like
/// sign-in; Leptos pages name it themselves).
pub(crate) fn css_href(site: &leptos::config::LeptosOptions) -> String {
    let hash = site
        .hash_files
        .then(|| std::fs::read_to_string(&*site.hash_file).ok())
        .flatten()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("css:").map(|h| h.trim().to_string()))
        })
        .filter(|h| !h.is_empty());
    match hash {
        Some(h) => format!("/{}/{}.{h}.css", site.site_pkg_dir, site.output_name),
        None => format!("/{}/{}.css", site.site_pkg_dir, site.output_name),
    }
}

/// Sets `Cache-Control` on UI responses that have none.
pub(crate) async fn cache_control(req: Request, next: Next) -> Response {
    // Decided from the path before the request is handed on (no copy of it).
    let pkg = req.uri().path().starts_with("/pkg/");
    let hashed = pkg && is_hashed(req.uri().path());
    let mut res = next.run(req).await;
    if res.headers().contains_key(CACHE_CONTROL) {
        return res;
    }
    let ok = matches!(res.status(), StatusCode::OK | StatusCode::NOT_MODIFIED);
    let value = if ok && hashed {
        Some(IMMUTABLE)
    } else if ok && (pkg || is_page_or_file(&res)) {
        Some(NO_CACHE)
    } else {
        None
    };
    if let Some(v) = value {
        res.headers_mut().insert(CACHE_CONTROL, v);
        // A precompressed file is picked by Accept-Encoding, so a shared
        // cache must key on it (ServeDir does not say so for a variant).
        if !res.headers().contains_key(VARY) {
            res.headers_mut()
                .insert(VARY, HeaderValue::from_static("accept-encoding"));
        }
    }
    res
}

/// HTML, or a static file (anything served with a `Last-Modified`).
fn is_page_or_file(res: &Response) -> bool {
    res.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/html"))
        || res
            .headers()
            .contains_key(axum::http::header::LAST_MODIFIED)
}

/// Whether the last segment of `path` carries a content hash as cargo-leptos
/// writes it: `name.<hash>.ext` with a hash of at least 16 URL-safe base64
/// characters (an MD5: 22).
pub(crate) fn is_hashed(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    let mut pieces = name.rsplit('.');
    let (Some(_ext), Some(hash), Some(stem)) = (pieces.next(), pieces.next(), pieces.next()) else {
        return false;
    };
    !stem.is_empty()
        && hash.len() >= 16
        && hash
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// On-the-fly compression (brotli or gzip, as the client accepts) of what
/// is not precompressed: pages and JSON. Never an event stream (it must
/// flush each event), never something tiny.
/// (tower-http's default predicate: not `text/event-stream`, not images,
/// not under 32 bytes, not what already has a `Content-Encoding`).
pub(crate) fn compression() -> CompressionLayer<DefaultPredicate> {
    CompressionLayer::new().quality(CompressionLevel::Fastest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stylesheet_is_named_by_the_hash_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        assert_eq!(css_href(&crate::leptos_options(root)), "/pkg/stopgo.css");
        std::fs::write(
            dir.path().join(HASH_FILE),
            "js: aaaaaaaaaaaaaaaaaaaaaa\nwasm: bbbbbbbbbbbbbbbbbbbbbb\ncss: DSW4grLt5nqtccAVtEvmfw\n",
        )
        .unwrap();
        assert_eq!(
            css_href(&crate::leptos_options(root)),
            "/pkg/stopgo.DSW4grLt5nqtccAVtEvmfw.css"
        );
    }

    #[test]
    fn only_content_hashed_names_are_immutable() {
        assert!(is_hashed("/pkg/stopgo.rZLqlHjTC2LfcJoXmwB6eA.wasm"));
        assert!(is_hashed("/pkg/stopgo.a-b_cdefghijklmnopq.js"));
        assert!(!is_hashed("/pkg/stopgo.wasm"));
        assert!(!is_hashed("/pkg/stopgo_bg.wasm.d.ts"));
        assert!(!is_hashed("/pkg/stopgo.short.js"));
        assert!(!is_hashed("/pkg/.rZLqlHjTC2LfcJoXmwB6eA.js"));
        assert!(!is_hashed("/pkg/stopgo.rZLqlHjTC2Lf/cJoXmwB6eA.js"));
        assert!(!is_hashed("/pkg/stopgo.rZLqlHjTC2Lf%2ecJoXmwB6eA.js"));
    }
}
