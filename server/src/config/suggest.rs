//! "Did you mean …?" for unknown keys and values.
//!
//! serde reports an unknown key as ``unknown field `promt`, expected one of
//! `name`, `prompt`, …`` (and an unknown enum value the same way with
//! "variant"). We pick the closest expected name by edit distance and say it
//! plainly, because a typo in a key is the most common config mistake and the
//! full list of valid keys buries the one the user meant.

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `word`, if it is close enough to be a typo.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= (c.chars().count() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Names that look like a secret; those never belong in agent.yaml.
fn looks_like_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "api_key", "apikey", "api-key", "secret", "password", "token",
    ]
    .iter()
    .any(|s| k.contains(s))
}

/// Rewrites a serde error message into one that says what to do.
pub fn explain(message: &str) -> String {
    let kind = if message.starts_with("unknown field") {
        "key"
    } else if message.starts_with("unknown variant") {
        "value"
    } else {
        return message.to_string();
    };
    let names = backticked(message);
    let Some((unknown, expected)) = names.split_first() else {
        return message.to_string();
    };
    if kind == "key" && looks_like_secret(unknown) {
        return format!(
            "unknown key `{unknown}`: secrets never go in agent.yaml; set them in the environment \
             (GEMINI_API_KEY, ANTHROPIC_API_KEY, OPENAI_API_KEY, MISTRAL_API_KEY, OPENROUTER_API_KEY) \
             or reference one with ${{VAR}} in a header"
        );
    }
    let list = expected
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    match closest(unknown, expected.iter().map(String::as_str)) {
        Some(best) => {
            format!("unknown {kind} `{unknown}`: did you mean `{best}`? (expected one of {list})")
        }
        None if expected.is_empty() => {
            format!("unknown {kind} `{unknown}`: nothing is allowed here")
        }
        None => format!("unknown {kind} `{unknown}`: expected one of {list}"),
    }
}

/// The words between backticks, in order.
fn backticked(message: &str) -> Vec<String> {
    message
        .split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("promt", "prompt"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn a_typo_in_a_key_gets_a_suggestion() {
        let m = explain("unknown field `promt`, expected one of `name`, `prompt`, `port`");
        assert!(m.contains("did you mean `prompt`?"), "{m}");
        assert!(m.starts_with("unknown key `promt`"), "{m}");
    }

    #[test]
    fn an_unknown_enum_value_gets_a_suggestion() {
        let m =
            explain("unknown variant `sequental`, expected one of `llm`, `sequential`, `parallel`");
        assert!(
            m.contains("unknown value `sequental`: did you mean `sequential`?"),
            "{m}"
        );
    }

    #[test]
    fn a_far_off_key_lists_the_choices_without_guessing() {
        let m = explain("unknown field `zzzzzz`, expected `name` or `url`");
        assert_eq!(m, "unknown key `zzzzzz`: expected one of `name`, `url`");
    }

    #[test]
    fn a_secret_key_is_pointed_at_the_environment() {
        let m = explain("unknown field `api_key`, expected one of `model`");
        assert!(m.contains("GEMINI_API_KEY"), "{m}");
    }

    #[test]
    fn other_messages_pass_through() {
        assert_eq!(
            explain("invalid type: string \"x\", expected u16"),
            "invalid type: string \"x\", expected u16"
        );
    }
}
