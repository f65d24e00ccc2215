//! Markdown for the model's answers, rendered safely.
//!
//! Models write Markdown, and tool results can carry anything, so the text
//! is untrusted. We render with `pulldown-cmark` and then:
//! - raw HTML (block or inline) is shown as text, never interpreted;
//! - links keep only `http`, `https`, `mailto` and relative targets
//!   (`javascript:` and `data:` become inert `#`);
//! - images become plain links, so a message cannot load remote content.
//!
//! The same function runs on the server and in the browser, so the HTML
//! hydrates without a mismatch.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

/// The safe HTML of `text`.
pub fn to_safe_html(text: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, options).map(|ev| match ev {
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
        // An image becomes a plain link too (no remote loads from a message).
        Event::Start(
            Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }
            | Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            },
        ) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let scheme = lower
        .split_once(':')
        .map(|(s, _)| s)
        .filter(|s| !s.contains('/') && !s.contains('?') && !s.contains('#'));
    match scheme {
        None | Some("http") | Some("https") | Some("mailto") => url,
        Some(_) => CowStr::Borrowed("#"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders() {
        let h = to_safe_html("**bold** and `code`\n\n- a\n- b");
        assert!(h.contains("<strong>bold</strong>"), "{h}");
        assert!(h.contains("<code>code</code>"), "{h}");
        assert!(h.contains("<li>a</li>"), "{h}");
    }

    #[test]
    fn raw_html_is_text() {
        let h = to_safe_html("hi <script>alert(1)</script> <img src=x onerror=alert(1)>");
        assert!(!h.contains("<script"), "{h}");
        assert!(!h.contains("<img"), "{h}");
        assert!(h.contains("&lt;script&gt;"), "{h}");
        let block = to_safe_html("<div onclick=\"x()\">\nhello\n</div>");
        assert!(!block.contains("<div"), "{block}");
    }

    #[test]
    fn dangerous_links_are_neutralised_and_images_become_links() {
        let h = to_safe_html(
            "[x](javascript:alert(1)) [y](JavaScript:alert(1)) [z](data:text/html,hi)",
        );
        assert!(!h.to_lowercase().contains("javascript:"), "{h}");
        assert!(!h.contains("data:"), "{h}");
        let ok = to_safe_html("[ok](https://example.com/a?b=c) [rel](/ui/tools)");
        assert!(ok.contains("href=\"https://example.com/a?b=c\""), "{ok}");
        assert!(ok.contains("href=\"/ui/tools\""), "{ok}");
        let img = to_safe_html("![pic](https://example.com/p.png)");
        assert!(!img.contains("<img"), "{img}");
        assert!(img.contains("href=\"https://example.com/p.png\""), "{img}");
    }
}
