//! A small HTML page in the site's style, for what the server writes
//! itself rather than Leptos (sign-in, the refused-form page, the audit
//! page), with the escaping its text goes through.

use axum::response::{Html, IntoResponse, Response};

pub(crate) use crate::domain::text::escape;

/// A small HTML page in the site's style (its stylesheet by its hashed
/// name when the site has them).
pub(crate) fn html_page(site: &leptos::config::LeptosOptions, title: &str, body: &str) -> Response {
    Html(format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="manifest" href="/manifest.webmanifest"><link rel="icon" type="image/png" sizes="192x192" href="/icons/icon-192.png"><link rel="stylesheet" href="{css}"><title>{t} · Stop &amp; Go</title></head>
<body><div class="app"><header class="topbar"><a href="/" class="brand"><span class="brand-mark" aria-hidden="true">■▶</span> Stop &amp; Go</a></header>
<main id="main" class="sign-in"><h1>{t}</h1>{body}</main></div></body></html>"#,
        t = escape(title),
        css = escape(&crate::http::assets::css_href(site)),
    ))
    .into_response()
}
