//! Where a redirect may go: `next` and `back` targets kept on this site,
//! and the percent-encoding they travel in. The sign-in pages, the guard's
//! redirect and the forms' "Back" all use it.

/// Percent-encodes everything but unreserved characters and `/`.
pub(crate) fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A `next` or `back` target that stays on this site: a path of our own
/// origin, as the browser will read it, else `/`. Every redirect after
/// sign-in and every "Back" link goes through here.
///
/// Browsers drop TAB, CR and LF anywhere in a URL and trim leading control
/// characters and spaces (the WHATWG URL parser), so `/<TAB>/evil.example`
/// is `//evil.example` to them, another site. A target with any control
/// character is refused outright; what is left must start with one `/`,
/// hold no `\` (read as `/`), and resolve, by the same parser browsers
/// use, to the origin it was resolved against. The answer is the parser's
/// own serialization of the path, query and fragment, so what is sent is
/// exactly what was judged.
pub(crate) fn local_target(next: Option<&str>) -> String {
    const HOME: &str = "/";
    let Some(n) = next else {
        return HOME.into();
    };
    if !n.starts_with('/')
        || n.starts_with("//")
        || n.contains('\\')
        || n.chars().any(char::is_control)
    {
        return HOME.into();
    }
    let Ok(base) = url::Url::parse("http://stopgo.invalid/") else {
        return HOME.into();
    };
    match base.join(n) {
        Ok(u) if u.origin() == base.origin() => u[url::Position::BeforePath..].to_string(),
        _ => HOME.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_in_targets_stay_on_this_site() {
        assert_eq!(local_target(Some("/ui/approvals?x=1")), "/ui/approvals?x=1");
        assert_eq!(local_target(Some("//evil.example/")), "/");
        assert_eq!(local_target(Some("https://evil.example/")), "/");
        assert_eq!(local_target(Some("/\\evil.example")), "/");
        assert_eq!(local_target(None), "/");
        // Browsers drop TAB, CR and LF and trim leading controls: none of
        // these may lead off-site once they have.
        for bad in [
            "/\t/evil.example",
            "/\r/evil.example",
            "/\n/evil.example",
            "\t//evil.example",
            "/\t\t/evil.example/x",
            "/\u{0}/evil.example",
            "/\u{7f}/evil.example",
            "/\u{1b}/evil.example",
            " //evil.example",
            "/\t\\evil.example",
            "/ui/\r\nSet-Cookie: x=1",
        ] {
            assert_eq!(local_target(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(local_target(Some("/ui/a b#f")), "/ui/a%20b#f");
        assert_eq!(local_target(Some("/./ui/../ui/tools")), "/ui/tools");
        assert_eq!(encode("/ui/a?b=c&d"), "/ui/a%3Fb%3Dc%26d");
    }
}
