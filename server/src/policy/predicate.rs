//! The predicates of a rule's `when:` (POLICY.md §1), compiled once.
//!
//! A pointer that is absent fails every predicate except `exists: false`,
//! so a rule never matches by accident because the model left an argument
//! out. Numbers compare as numbers whether the model sent `12` or `"12"`
//! (models often quote numbers, and a `deny` with `min: 1000` must not be
//! sidestepped by a quoted amount); a string that is not a number fails
//! `min`/`max`.

use super::config::PredicateConfig;
use regex::Regex;
use serde_json::Value;
use std::fmt;

/// One compiled predicate.
#[derive(Clone, Debug)]
pub(crate) enum Predicate {
    Equals(Value),
    In(Vec<Value>),
    /// The pattern as written, and its whole-string form.
    Regex(String, Regex),
    Min(f64),
    Max(f64),
    HostIn(Vec<String>),
    Exists(bool),
}

impl Predicate {
    /// The predicates of one pointer's config, or what is wrong with them.
    pub(crate) fn compile(c: &PredicateConfig) -> Result<Vec<Predicate>, String> {
        let mut out = Vec::new();
        if let Some(v) = &c.equals {
            out.push(Predicate::Equals(v.clone()));
        }
        if let Some(v) = &c.one_of {
            if v.is_empty() {
                return Err("`in` is an empty list, so it can never hold".into());
            }
            out.push(Predicate::In(v.clone()));
        }
        if let Some(r) = &c.regex {
            let re = Regex::new(&format!("^(?:{r})$"))
                .map_err(|e| format!("`regex` {r:?} is not a valid regular expression: {e}"))?;
            out.push(Predicate::Regex(r.clone(), re));
        }
        for (name, bound) in [("min", c.min), ("max", c.max)] {
            if let Some(b) = bound
                && !b.is_finite()
            {
                return Err(format!("`{name}` must be a finite number"));
            }
        }
        if let (Some(lo), Some(hi)) = (c.min, c.max)
            && lo > hi
        {
            return Err(format!(
                "`min` {lo} is above `max` {hi}, so it can never hold"
            ));
        }
        if let Some(b) = c.min {
            out.push(Predicate::Min(b));
        }
        if let Some(b) = c.max {
            out.push(Predicate::Max(b));
        }
        if let Some(hosts) = &c.host_in {
            if hosts.is_empty() {
                return Err("`host_in` is an empty list, so it can never hold".into());
            }
            let mut kept = Vec::new();
            for h in hosts {
                let h = h.trim().to_ascii_lowercase();
                let bare = h.strip_prefix("*.").unwrap_or(&h);
                if bare.is_empty()
                    || bare.contains(['*', '/', ':', ' ', '@'])
                    || bare.starts_with('.')
                    || bare.ends_with('.')
                {
                    return Err(format!(
                        "`host_in` entry {h:?} is not a host name: write `example.com` or `*.example.com`"
                    ));
                }
                kept.push(h);
            }
            out.push(Predicate::HostIn(kept));
        }
        if let Some(e) = c.exists {
            if !e && !out.is_empty() {
                return Err(
                    "`exists: false` with other predicates on the same pointer can never hold"
                        .into(),
                );
            }
            out.push(Predicate::Exists(e));
        }
        if out.is_empty() {
            return Err(
                "names no predicate: use equals, in, regex, min, max, host_in or exists".into(),
            );
        }
        Ok(out)
    }

    /// Whether the value at the pointer (`None`: absent) satisfies it.
    pub(crate) fn holds(&self, at: Option<&Value>) -> bool {
        let Some(v) = at else {
            return matches!(self, Predicate::Exists(false));
        };
        match self {
            Predicate::Exists(e) => *e,
            Predicate::Equals(want) => same(v, want),
            Predicate::In(list) => list.iter().any(|w| same(v, w)),
            Predicate::Regex(_, re) => v.as_str().is_some_and(|s| re.is_match(s)),
            Predicate::Min(b) => number(v).is_some_and(|n| n >= *b),
            Predicate::Max(b) => number(v).is_some_and(|n| n <= *b),
            Predicate::HostIn(hosts) => v
                .as_str()
                .and_then(host_of)
                .is_some_and(|h| hosts.iter().any(|p| host_matches(p, &h))),
        }
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Predicate::Equals(v) => write!(f, "equals {v}"),
            Predicate::In(l) => write!(f, "in {}", Value::Array(l.clone())),
            Predicate::Regex(r, _) => write!(f, "regex {r:?}"),
            Predicate::Min(b) => write!(f, "min {b}"),
            Predicate::Max(b) => write!(f, "max {b}"),
            Predicate::HostIn(h) => write!(f, "host_in [{}]", h.join(", ")),
            Predicate::Exists(e) => write!(f, "exists {e}"),
        }
    }
}

/// JSON equality where `12` equals `12.0`.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// A number, or a string holding one.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
        _ => None,
    }
}

/// The lower-cased host of an absolute URL.
fn host_of(s: &str) -> Option<String> {
    let url = reqwest::Url::parse(s.trim()).ok()?;
    Some(url.host_str()?.trim_end_matches('.').to_ascii_lowercase())
}

/// `example.com` matches itself; `*.example.com` matches its subdomains.
fn host_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(suffix) => host
            .strip_suffix(suffix)
            .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        None => pattern == host,
    }
}
