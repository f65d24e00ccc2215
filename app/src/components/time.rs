//! Times as the pages show them: the same text on the server and in the
//! browser (no clock, no locale), so hydration never sees a difference.

/// `2026-11-22T03:10:05.123Z` → `2026-11-22 03:10 UTC`. Pure string work, so
/// the server and the browser render the same text (no hydration mismatch).
pub fn short_time(rfc3339: &str) -> String {
    match (rfc3339.get(0..10), rfc3339.get(11..16)) {
        (Some(d), Some(t)) => format!("{d} {t} UTC"),
        _ => rfc3339.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_time_is_deterministic() {
        assert_eq!(
            short_time("2026-11-22T03:10:05.123Z"),
            "2026-11-22 03:10 UTC"
        );
        assert_eq!(short_time("bad"), "bad");
    }
}
