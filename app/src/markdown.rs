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

/// The safe HTML of a one-line `text` (an approval's title: "Run
/// `tool(args)` on server"): inline code, emphasis and strong as the chat
/// renders them, everything else as escaped text, and no block elements,
/// so it fits inside a heading or a paragraph of its own.
pub fn to_safe_inline_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for ev in Parser::new(text) {
        match ev {
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => escape_into(&mut out, &t),
            Event::Code(c) => {
                out.push_str("<code>");
                escape_into(&mut out, &c);
                out.push_str("</code>");
            }
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::Start(Tag::Emphasis) => out.push_str("<em>"),
            Event::End(TagEnd::Emphasis) => out.push_str("</em>"),
            Event::Start(Tag::Strong) => out.push_str("<strong>"),
            Event::End(TagEnd::Strong) => out.push_str("</strong>"),
            _ => {}
        }
    }
    out
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
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

    /// Issue 40 (4): an approval's title shows its code as code, never
    /// the backticks, and nothing in it becomes markup.
    #[test]
    fn a_title_renders_inline_code_escaped() {
        let h = to_safe_inline_html("Run `resources_add(name=\"apples\", value=5)` on resources");
        assert_eq!(
            h,
            "Run <code>resources_add(name=&quot;apples&quot;, value=5)</code> on resources"
        );
        let evil = to_safe_inline_html("Run `x` <img src=x onerror=alert(1)> # not a heading");
        assert!(!evil.contains("<img"), "{evil}");
        assert!(evil.contains("&lt;img"), "{evil}");
        let block = to_safe_inline_html("# Title\n- item `<b>`");
        assert!(!block.contains("<h1") && !block.contains("<li"), "{block}");
        assert!(block.contains("<code>&lt;b&gt;</code>"), "{block}");
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
