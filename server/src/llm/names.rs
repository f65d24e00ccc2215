//! Tool names the providers accept, and the way back.
//!
//! OpenAI, Anthropic and Gemini accept function names matching
//! `^[a-zA-Z0-9_-]{1,64}$`; MCP tool names may hold dots, slashes or be
//! longer. A name that fits is sent unchanged. One that does not gets its
//! other characters replaced by `_`, is cut, and gets a short hash of the
//! original appended, so distinct tools never collide. The map is built per
//! request from the same tool list, so a name the model sends back always
//! resolves to the tool it was shown.

use std::collections::HashMap;

/// Longest accepted name.
pub(crate) const MAX_LEN: usize = 64;

/// True if `name` is accepted by every provider as it is.
pub fn is_wire_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The wire name for `name`.
pub(crate) fn to_wire(name: &str) -> String {
    if is_wire_safe(name) {
        return name.to_string();
    }
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_LEN - 9)
        .collect();
    format!("{cleaned}_{:08x}", fnv1a(name))
}

/// FNV-1a, 32 bits: a stable, dependency-free hash for name suffixes.
fn fnv1a(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Both directions for one tool list.
#[derive(Clone, Debug, Default)]
pub(crate) struct NameMap {
    from_wire: HashMap<String, String>,
}

impl NameMap {
    /// Builds the map for `names`.
    pub(crate) fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        NameMap {
            from_wire: names
                .into_iter()
                .map(|n| (to_wire(n), n.to_string()))
                .collect(),
        }
    }

    /// The tool a wire name refers to; unknown names pass through unchanged
    /// (the engine then reports "unknown tool" to the model).
    pub(crate) fn resolve(&self, wire: &str) -> String {
        self.from_wire
            .get(wire)
            .cloned()
            .unwrap_or_else(|| wire.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names_pass_unchanged() {
        assert_eq!(to_wire("resources_add"), "resources_add");
        assert_eq!(to_wire("a2a_helper-1"), "a2a_helper-1");
    }

    #[test]
    fn unsafe_names_are_mapped_reversibly_and_distinctly() {
        let names = ["fs.read_file", "fs/read_file", &"x".repeat(80)];
        let wire: Vec<String> = names.iter().map(|n| to_wire(n)).collect();
        for w in &wire {
            assert!(is_wire_safe(w), "{w}");
        }
        assert_ne!(wire[0], wire[1], "different tools never share a wire name");
        let map = NameMap::new(names.iter().copied());
        for (n, w) in names.iter().zip(&wire) {
            assert_eq!(&map.resolve(w), n);
        }
        assert_eq!(map.resolve("not_a_tool"), "not_a_tool");
    }
}
