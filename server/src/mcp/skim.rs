//! The gist of a JSON-RPC message too large to hold: its `id`, whether it
//! is a response, and how much of it the agent would keep.
//!
//! A stdio line longer than the pipe holds ([`super::frames`]) used to
//! close the pipe, so a 40 MB result sent as text and as structured content
//! (an 80 MB line) failed as "the MCP server stopped during the call"
//! instead of naming its size and the limit. [`Skim`] reads such a line a
//! chunk at a time, keeping only a few bytes whatever its length, so that
//! the call it answers fails with its size like a smaller one.
//!
//! It follows the JSON structure without building it: it captures the
//! top-level `id` (when short), notes a top-level `method`, and measures
//! what [`super::frames::kept_size`] would: the decoded length of each
//! `result.content[].text` and the number of blocks, or, with no blocks,
//! the compact length of `result.structuredContent` (its strings as sent).
//! Malformed input gives a summary with no `id`, never an error.

use serde_json::Value;

/// The longest `id` kept (as its JSON text); a longer one is not used.
const MAX_ID_BYTES: usize = 256;

/// What a value in the message is to the skim, from its place in it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    /// The message object itself.
    Top,
    /// The top-level `id`.
    Id,
    /// The top-level `result` object.
    Result,
    /// `result.content`.
    Content,
    /// An element of `result.content`.
    Block,
    /// The `text` of a block.
    Text,
    /// `result.structuredContent`, at any depth.
    Structured,
    /// Anything else.
    Other,
}

/// An open object or array.
struct Open {
    role: Role,
    object: bool,
    /// In an object: the next string is a key.
    want_key: bool,
    /// In an object: the role of the value after the last key.
    next: Role,
}

/// Where the reader is inside a string.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escape {
    No,
    Backslash,
    /// Reading the hex digits of `\u`: how many are left, the value so far.
    Unicode(u8, u32),
}

/// A streaming reader of one message: [`Skim::feed`] its bytes, then
/// [`Skim::summary`].
pub(crate) struct Skim {
    stack: Vec<Open>,
    /// The role of the string or scalar being read.
    scalar: Option<Role>,
    in_string: bool,
    /// Reading a key: its first bytes (only short keys matter).
    key: Option<Vec<u8>>,
    /// The key's length as sent.
    key_len: usize,
    escape: Escape,
    /// A `\u` high surrogate waiting for its low half.
    high: bool,
    id: Vec<u8>,
    id_too_long: bool,
    method: bool,
    text_bytes: usize,
    blocks: usize,
    structured_bytes: usize,
    total: usize,
}

/// What [`Skim`] learnt of a message.
#[derive(Debug, PartialEq)]
pub(crate) struct Summary {
    /// The request it answers, when it is a response whose `id` was read.
    pub(crate) answers: Option<Value>,
    /// The size of what the agent would keep of its result.
    pub(crate) kept: usize,
    /// The whole message's size.
    pub(crate) total: usize,
}

impl Default for Skim {
    fn default() -> Self {
        Skim {
            stack: Vec::new(),
            scalar: None,
            in_string: false,
            key: None,
            key_len: 0,
            escape: Escape::No,
            high: false,
            id: Vec::new(),
            id_too_long: false,
            method: false,
            text_bytes: 0,
            blocks: 0,
            structured_bytes: 0,
            total: 0,
        }
    }
}

impl Skim {
    /// Reads the next bytes of the message.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let mut i = 0;
        while i < bytes.len() {
            if self.in_string && self.escape == Escape::No && self.key.is_none() {
                // The bulk of a large message: runs of plain string bytes.
                let run = bytes[i..]
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\')
                    .unwrap_or(bytes.len() - i);
                self.plain(&bytes[i..i + run]);
                i += run;
                if i == bytes.len() {
                    break;
                }
            }
            self.byte(bytes[i]);
            i += 1;
        }
    }

    /// The bytes read so far.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// What was learnt, once the whole message was fed.
    pub(crate) fn summary(self) -> Summary {
        let complete = self.stack.is_empty() && !self.in_string;
        let id = (!self.id.is_empty() && !self.id_too_long)
            .then(|| serde_json::from_slice::<Value>(&self.id).ok())
            .flatten();
        let kept = if self.blocks > 0 {
            self.text_bytes + self.blocks - 1
        } else {
            self.structured_bytes
        };
        Summary {
            answers: id.filter(|_| complete && !self.method),
            kept,
            total: self.total,
        }
    }

    /// Plain bytes inside a string (no quote, no backslash).
    fn plain(&mut self, run: &[u8]) {
        if run.is_empty() {
            return;
        }
        if self.high {
            // A lone high surrogate: counted as serde would not, but
            // counted.
            self.high = false;
            self.count_decoded(3);
        }
        match self.scalar {
            Some(Role::Text) => self.text_bytes += run.len(),
            Some(Role::Structured) => self.structured_bytes += run.len(),
            Some(Role::Id) => self.keep_id(run),
            _ => {}
        }
    }

    fn keep_id(&mut self, b: &[u8]) {
        if self.id.len() + b.len() > MAX_ID_BYTES {
            self.id_too_long = true;
        } else {
            self.id.extend_from_slice(b);
        }
    }

    /// Decoded bytes of a `text` (its escapes resolved).
    fn count_decoded(&mut self, n: usize) {
        if self.scalar == Some(Role::Text) {
            self.text_bytes += n;
        }
    }

    /// Adds a raw byte to what is counted or kept for the current value.
    fn raw(&mut self, b: u8) {
        match self.scalar {
            Some(Role::Structured) => self.structured_bytes += 1,
            Some(Role::Id) => self.keep_id(&[b]),
            _ => {}
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            self.string_byte(b);
            return;
        }
        if self.scalar.is_some() && !is_scalar_byte(b) {
            // A number or literal ended here.
            self.scalar = None;
        }
        match b {
            b'"' => {
                self.in_string = true;
                match self.stack.last() {
                    Some(o) if o.object && o.want_key => {
                        self.key = Some(Vec::new());
                        self.key_len = 0;
                    }
                    _ => {
                        self.scalar = Some(self.value_role());
                        self.raw(b);
                    }
                }
            }
            b'{' | b'[' => {
                let role = self.value_role();
                if role == Role::Block {
                    self.blocks += 1;
                }
                self.structured(role);
                self.stack.push(Open {
                    role,
                    object: b == b'{',
                    want_key: b == b'{',
                    next: Role::Other,
                });
            }
            b'}' | b']' => {
                if let Some(o) = self.stack.pop() {
                    self.structured(o.role);
                }
            }
            b':' => {
                if let Some(o) = self.stack.last_mut() {
                    o.want_key = false;
                }
                self.structured_inner();
            }
            b',' => {
                if let Some(o) = self.stack.last_mut() {
                    o.want_key = o.object;
                    o.next = Role::Other;
                }
                self.structured_inner();
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => {
                if self.scalar.is_none() {
                    self.scalar = Some(self.value_role());
                }
                self.raw(b);
            }
        }
    }

    /// Counts a bracket of (or inside) the structured content.
    fn structured(&mut self, role: Role) {
        if role == Role::Structured {
            self.structured_bytes += 1;
        }
    }

    /// Counts a `:` or `,` inside the structured content.
    fn structured_inner(&mut self) {
        if self
            .stack
            .last()
            .is_some_and(|o| o.role == Role::Structured)
        {
            self.structured_bytes += 1;
        }
    }

    fn string_byte(&mut self, b: u8) {
        if self.key.is_some() {
            self.key_byte(b);
            return;
        }
        self.raw(b);
        match self.escape {
            Escape::No => match b {
                b'\\' => self.escape = Escape::Backslash,
                b'"' => {
                    self.in_string = false;
                    self.scalar = None;
                    if self.high {
                        self.high = false;
                        self.count_decoded(3);
                    }
                }
                _ => self.plain_byte(),
            },
            Escape::Backslash => {
                if b == b'u' {
                    self.escape = Escape::Unicode(4, 0);
                } else {
                    self.escape = Escape::No;
                    self.plain_byte();
                }
            }
            Escape::Unicode(left, v) => {
                let digit = (b as char).to_digit(16).unwrap_or(0);
                let v = (v << 4) | digit;
                if left > 1 {
                    self.escape = Escape::Unicode(left - 1, v);
                } else {
                    self.escape = Escape::No;
                    self.code_point(v);
                }
            }
        }
    }

    /// A byte of a key. Keys are short in the places that matter; a key's
    /// escapes only make it match nothing.
    fn key_byte(&mut self, b: u8) {
        if self.escape == Escape::No && b == b'"' {
            self.end_key();
            return;
        }
        self.key_len += 1;
        let escaped = self.escape != Escape::No;
        self.escape = if !escaped && b == b'\\' {
            Escape::Backslash
        } else {
            Escape::No
        };
        if let Some(key) = &mut self.key
            && key.len() < 32
        {
            key.push(if escaped { 0 } else { b });
        }
    }

    /// One decoded byte that is no surrogate's half.
    fn plain_byte(&mut self) {
        if self.high {
            self.high = false;
            self.count_decoded(3);
        }
        self.count_decoded(1);
    }

    fn code_point(&mut self, v: u32) {
        let high = (0xD800..0xDC00).contains(&v);
        let low = (0xDC00..0xE000).contains(&v);
        if low && self.high {
            self.high = false;
            self.count_decoded(4);
            return;
        }
        if self.high {
            self.high = false;
            self.count_decoded(3);
        }
        if high {
            self.high = true;
        } else {
            let n = char::from_u32(v).map_or(3, char::len_utf8);
            self.count_decoded(n);
        }
    }

    fn end_key(&mut self) {
        self.in_string = false;
        let key = self.key.take().unwrap_or_default();
        let Some(o) = self.stack.last_mut() else {
            return;
        };
        o.next = match (o.role, key.as_slice()) {
            (Role::Top, b"id") => Role::Id,
            (Role::Top, b"result") => Role::Result,
            (Role::Top, b"method") => {
                self.method = true;
                Role::Other
            }
            (Role::Result, b"content") => Role::Content,
            (Role::Result, b"structuredContent") => Role::Structured,
            (Role::Block, b"text") => Role::Text,
            (Role::Structured, _) => Role::Structured,
            _ => Role::Other,
        };
        if o.role == Role::Structured {
            // The key, its quotes, as sent.
            self.structured_bytes += self.key_len + 2;
        }
    }

    /// The role of a value starting now, from where it stands.
    fn value_role(&self) -> Role {
        match self.stack.last() {
            None => Role::Top,
            Some(o) if o.object => o.next,
            Some(o) => match o.role {
                Role::Content => Role::Block,
                Role::Structured => Role::Structured,
                _ => Role::Other,
            },
        }
    }
}

/// A byte that may continue a number or a literal.
fn is_scalar_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn skim(text: &str, chunk: usize) -> Summary {
        let mut s = Skim::default();
        for c in text.as_bytes().chunks(chunk) {
            s.feed(c);
        }
        s.summary()
    }

    /// What `frames::kept_size` says of the same message.
    fn kept(v: &Value) -> usize {
        let r = &v["result"];
        let blocks: Vec<&Value> = r["content"]
            .as_array()
            .map(|c| c.iter().collect())
            .unwrap_or_default();
        let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
        super::super::frames::kept_size(&texts, r.get("structuredContent"), blocks.len())
    }

    #[test]
    fn it_measures_what_a_full_parse_would_keep() {
        let cases = [
            json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [
                {"type": "text", "text": "héllo \"q\" \\ \n 😀 end"},
                {"type": "image", "data": "xx", "mimeType": "image/png"},
                {"type": "text", "text": "two"}],
                "structuredContent": {"result": "héllo", "n": [1, 2.5e3, null, true]}}}),
            json!({"result": {"structuredContent": {"a": {"b": ["x", "y\"z"], "c": -1.5}}},
                   "jsonrpc": "2.0", "id": "abc"}),
            json!({"id": 1, "result": {"content": []}, "jsonrpc": "2.0"}),
        ];
        for v in cases {
            // As Python sends it: spaced, and non-ASCII escaped.
            let spaced = serde_json::to_string_pretty(&v).unwrap();
            let escaped: String = spaced
                .chars()
                .flat_map(|c| {
                    if c.is_ascii() {
                        vec![c.to_string()]
                    } else {
                        let mut b = [0u16; 2];
                        c.encode_utf16(&mut b)
                            .iter()
                            .map(|u| format!("\\u{u:04x}"))
                            .collect()
                    }
                })
                .collect();
            for text in [v.to_string(), spaced, escaped] {
                for chunk in [1, 3, 1000] {
                    let s = skim(&text, chunk);
                    assert_eq!(s.answers.as_ref(), Some(&v["id"]), "{text}");
                    assert_eq!(s.total, text.len());
                    assert_eq!(s.kept, kept(&v), "{text} in {chunk}");
                }
            }
        }
    }

    #[test]
    fn requests_and_broken_messages_answer_nothing() {
        let request = json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create",
                             "params": {"message": "x"}});
        assert_eq!(skim(&request.to_string(), 5).answers, None);
        assert_eq!(
            skim(r#"{"id": 3, "result": {"content": [{"text": "abc"#, 4).answers,
            None
        );
        let long_id = json!({"id": "i".repeat(MAX_ID_BYTES), "result": {}});
        assert_eq!(skim(&long_id.to_string(), 64).answers, None);
        assert_eq!(skim("garbage", 2).answers, None);
    }
}
