//! Durations as agent.yaml writes them: a whole number and one unit,
//! `s`, `m`, `h` or `d` (`90s`, `15m`, `24h`, `7d`).

use std::time::Duration;

/// Parses `text`, or says what is accepted.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().map_err(|_| {
        format!("{text:?} is not a duration: write a number and a unit, e.g. 90s, 15m, 24h, 7d")
    })?;
    let secs = match unit.trim() {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86_400),
        _ => {
            return Err(format!(
                "{text:?} has no known unit: use s, m, h or d, e.g. 90s, 15m, 24h, 7d"
            ));
        }
    }
    .filter(|s| (1..=365 * 86_400).contains(s))
    .ok_or_else(|| format!("{text:?} is out of range: use 1s to 365d"))?;
    Ok(Duration::from_secs(secs))
}

/// The shortest way to write `d` back (`3600s` → `1h`).
pub(crate) fn show(d: Duration) -> String {
    let s = d.as_secs();
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if s >= size && s.is_multiple_of(size) {
            return format!("{}{unit}", s / size);
        }
    }
    format!("{s}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_errors() {
        assert_eq!(parse("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse("15m").unwrap(), Duration::from_secs(900));
        assert_eq!(parse(" 24h ").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse("7d").unwrap(), Duration::from_secs(7 * 86_400));
        for bad in ["", "h", "10", "10w", "-1h", "1.5h", "0s", "999999d"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(show(Duration::from_secs(3600)), "1h");
        assert_eq!(show(Duration::from_secs(90)), "90s");
        assert_eq!(show(Duration::from_secs(2 * 86_400)), "2d");
    }
}
