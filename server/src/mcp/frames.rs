//! How big a tool's answer may be, the same over stdio and HTTP.
//!
//! A tool's result is what the agent keeps of it: the text of its content
//! blocks (or, with none, its structured content), which is stored in the
//! conversation and sent to the model. It may be at most
//! [`MAX_RESULT_BYTES`]; a larger one fails the call at once with "the
//! tool's result is N MB, over the M MB limit", whichever transport it
//! came over ([`check`]).
//!
//! The transports need room for a result at the limit sent twice (MCP
//! servers often send the same data as text and as structured content) and
//! escaped, so a single message may be up to [`MAX_FRAME_BYTES`]. `rmcp`'s
//! stdio reader drops a line over 16 MiB without answering the call it
//! belongs to, which left the call waiting for its timeout; so the stdio
//! pipe ([`read_line`], [`fit`]) reads every line itself, and a response
//! too large for the limit is turned into an error response for the same
//! request id before `rmcp` sees it. A line over [`MAX_FRAME_BYTES`] is
//! not held: it is skimmed for its id and its size ([`super::skim`]) and
//! answered the same way, so a 40 MB result sent twice (an 80 MB line)
//! names its size and the limit like a 12 MB one, and the server stays
//! connected. Only a line over [`MAX_SKIM_BYTES`] (or unreadable output)
//! closes the pipe: the call then fails at once as with a server that
//! stopped, and the server is started again.

use super::skim::{Skim, Summary};
use rmcp::model::ErrorData;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The most a tool's result may hold: 8 MB (decimal), far more than a
/// model's context takes.
pub(crate) const MAX_RESULT_BYTES: usize = 8_000_000;

/// The largest single message read from a server (a stdio line, an HTTP
/// body or SSE event).
pub(crate) const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// The longest stdio line skimmed for the call it answers; a longer one
/// closes the pipe.
pub(crate) const MAX_SKIM_BYTES: usize = 1 << 30;

/// `rmcp`'s own cap on a stdio line (its `DEFAULT_MAX_LINE_LENGTH`),
/// less room for the line break.
const RMCP_LINE_BYTES: usize = 16 * 1024 * 1024 - 16;

/// The marker in an error response that says the pipe replaced an
/// oversized result: `{"stopgoResultTooLarge": {"size": N, "limit": M}}`.
const MARKER: &str = "stopgoResultTooLarge";

/// A result over the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLarge {
    pub(crate) size: usize,
    pub(crate) limit: usize,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the tool's result is {} MB, over the {} MB limit",
            megabytes(self.size),
            megabytes(self.limit)
        )
    }
}

/// The message for a result whose size is only known to exceed `read`
/// bytes (the transport stopped reading there).
pub(crate) fn more_than(read: usize) -> String {
    format!(
        "the tool's result is more than {} MB, over the {} MB limit",
        megabytes(read),
        megabytes(MAX_RESULT_BYTES)
    )
}

/// Bytes as decimal megabytes with at most one decimal ("12", "12.6").
fn megabytes(n: usize) -> String {
    let tenths = (n as f64 / 100_000.0).round() as u64;
    if tenths.is_multiple_of(10) {
        format!("{}", tenths / 10)
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    }
}

/// The size of what the agent keeps of a result: its text blocks joined
/// by line breaks, or its structured content when it has no content.
pub(crate) fn kept_size(texts: &[&str], structured: Option<&Value>, blocks: usize) -> usize {
    if blocks == 0 {
        return structured.map_or(0, |s| s.to_string().len());
    }
    texts.iter().map(|t| t.len()).sum::<usize>() + blocks.saturating_sub(1)
}

/// `Err` when a kept result of `size` bytes is over the limit.
pub(crate) fn check(size: usize) -> Result<(), TooLarge> {
    if size > MAX_RESULT_BYTES {
        Err(TooLarge {
            size,
            limit: MAX_RESULT_BYTES,
        })
    } else {
        Ok(())
    }
}

/// The oversized result an error response from the pipe stands for.
pub(crate) fn replaced(e: &ErrorData) -> Option<TooLarge> {
    let m = e.data.as_ref()?.get(MARKER)?;
    Some(TooLarge {
        size: usize::try_from(m.get("size")?.as_u64()?).ok()?,
        limit: usize::try_from(m.get("limit")?.as_u64()?).ok()?,
    })
}

/// The byte limit `rmcp`'s HTTP client stopped reading a response at,
/// when that is why a call failed (a JSON body over its fixed 16 MiB; an
/// SSE event over [`MAX_FRAME_BYTES`]). The result is then larger than
/// that, and its exact size is unknown.
pub(crate) fn http_limit_hit(e: &rmcp::ServiceError) -> Option<usize> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    use rmcp::transport::worker::WorkerQuitReason;
    type HttpError = StreamableHttpError<reqwest::Error>;
    let of = |h: &HttpError| match h {
        StreamableHttpError::ResponseBodyTooLarge { max_size } => Some(*max_size),
        _ => None,
    };
    // `ServiceError` names no source: start from what it wraps.
    let mut cur: Option<&(dyn std::error::Error + 'static)> = match e {
        rmcp::ServiceError::TransportSend(d) => Some(d.error.as_ref()),
        other => Some(other),
    };
    while let Some(x) = cur {
        if let Some(h) = x.downcast_ref::<HttpError>() {
            return of(h);
        }
        if let Some(WorkerQuitReason::Fatal { error, .. }) =
            x.downcast_ref::<WorkerQuitReason<HttpError>>()
        {
            return of(error);
        }
        if let Some(d) = x.downcast_ref::<rmcp::transport::DynamicTransportError>() {
            cur = Some(d.error.as_ref());
            continue;
        }
        cur = x.source();
    }
    None
}

/// A line read from a server's stdout.
#[derive(Debug, PartialEq)]
pub(crate) enum Line {
    /// The line, without its line break.
    Whole(Vec<u8>),
    /// A line over [`MAX_FRAME_BYTES`], read but not held.
    Skimmed(Summary),
}

/// One line of a server's stdout, read with at most [`MAX_FRAME_BYTES`]
/// held (a longer one is skimmed). `Ok(None)` at the end of the stream;
/// an error for a line over [`MAX_SKIM_BYTES`] (or a read failure): the
/// pipe then closes.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut skim: Option<Skim> = None;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match skim {
                Some(s) => Some(Line::Skimmed(s.summary())),
                None => (!line.is_empty()).then_some(Line::Whole(line)),
            });
        }
        let (chunk, done) = match memchr(buf) {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        match &mut skim {
            Some(s) => s.feed(chunk),
            None if line.len() + chunk.len() > MAX_FRAME_BYTES => {
                let mut s = Skim::default();
                s.feed(&line);
                s.feed(chunk);
                line = Vec::new();
                skim = Some(s);
            }
            None => line.extend_from_slice(chunk),
        }
        if skim.as_ref().is_some_and(|s| s.total() > MAX_SKIM_BYTES) {
            return Err(std::io::Error::other(format!(
                "the server sent a message over {} MB",
                MAX_SKIM_BYTES / 1_000_000
            )));
        }
        let used = done.unwrap_or(buf.len());
        r.consume(used);
        if done.is_some() {
            if let Some(s) = skim {
                return Ok(Some(Line::Skimmed(s.summary())));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(Line::Whole(line)));
        }
    }
}

fn memchr(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// What the pipe hands to `rmcp` for a line it read: the line itself when
/// it is small, else (a response) the result cut to what is kept, or an
/// error response for the same id when that is over the limit. `None`:
/// a message too large to pass on that is no response (it is dropped).
pub(crate) fn fit(line: Line) -> Option<Vec<u8>> {
    let line = match line {
        Line::Whole(line) => line,
        Line::Skimmed(s) => {
            let id = s.answers?;
            // Only a result too large to hold got this far: when what is
            // kept of it is small, the bulk was elsewhere in the message.
            let too = check(s.kept).err().unwrap_or(TooLarge {
                size: s.total,
                limit: MAX_FRAME_BYTES,
            });
            return refusal(id, too);
        }
    };
    if line.len() <= MAX_RESULT_BYTES {
        return Some(line);
    }
    let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(&line) else {
        return (line.len() <= RMCP_LINE_BYTES).then_some(line);
    };
    let (Some(id), Some(Value::Object(result))) = (msg.get("id").cloned(), msg.get_mut("result"))
    else {
        return (line.len() <= RMCP_LINE_BYTES).then_some(line);
    };
    let blocks: Vec<&Value> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let size = kept_size(&texts, result.get("structuredContent"), blocks.len());
    if let Err(too) = check(size) {
        return refusal(id, too);
    }
    // Within the limit: the structured copy is not kept when there is
    // content, so it need not cross the pipe.
    if !blocks.is_empty() {
        result.remove("structuredContent");
    }
    let out = serde_json::to_vec(&Value::Object(msg)).ok()?;
    (out.len() <= RMCP_LINE_BYTES).then_some(out)
}

/// The error response for request `id` that stands for a result over
/// the limit.
fn refusal(id: Value, too: TooLarge) -> Option<Vec<u8>> {
    refusal_saying(id, &too.to_string(), too)
}

/// The error response for request `id` whose result was cut off past
/// [`MAX_FRAME_BYTES`] (an SSE event over it: see `sse_limit`).
pub(crate) fn refusal_more_than(id: Value) -> Option<Vec<u8>> {
    let too = TooLarge {
        size: MAX_FRAME_BYTES,
        limit: MAX_RESULT_BYTES,
    };
    refusal_saying(id, &more_than(MAX_FRAME_BYTES), too)
}

fn refusal_saying(id: Value, message: &str, too: TooLarge) -> Option<Vec<u8>> {
    let err = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32603,
        "message": message,
        "data": {MARKER: {"size": too.size, "limit": too.limit}},
    }});
    serde_json::to_vec(&err).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(text: &str, structured: bool) -> Vec<u8> {
        let mut r = json!({"content": [{"type": "text", "text": text}]});
        if structured {
            r["structuredContent"] = json!({"result": text});
        }
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 7, "result": r})).unwrap()
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        let t = TooLarge {
            size: 12_000_000,
            limit: MAX_RESULT_BYTES,
        };
        assert_eq!(
            t.to_string(),
            "the tool's result is 12 MB, over the 8 MB limit"
        );
        assert_eq!(megabytes(12 * 1024 * 1024), "12.6");
    }

    #[test]
    fn a_result_over_the_limit_becomes_an_error_for_its_request() {
        let big = "x".repeat(12_000_000);
        let out = fit(Line::Whole(response(&big, true))).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["id"], 7);
        assert!(v.get("result").is_none());
        let e: ErrorData = serde_json::from_value(v["error"].clone()).unwrap();
        assert_eq!(
            replaced(&e),
            Some(TooLarge {
                size: 12_000_000,
                limit: MAX_RESULT_BYTES
            })
        );
        // Within the limit but sent twice: passed on once.
        let mid = "y".repeat(5_000_000);
        let out = fit(Line::Whole(response(&mid, true))).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert!(v["result"].get("structuredContent").is_none());
        assert_eq!(
            v["result"]["content"][0]["text"].as_str().unwrap().len(),
            5_000_000
        );
        // Small lines pass untouched.
        let small = response("hi", true);
        assert_eq!(fit(Line::Whole(small.clone())).unwrap(), small);
    }

    #[tokio::test]
    async fn lines_are_read_whole_up_to_the_frame_cap() {
        let mut data = b"one\r\ntwo\n".to_vec();
        data.extend(std::iter::repeat_n(b'z', MAX_FRAME_BYTES + 1));
        data.push(b'\n');
        let mut r = tokio::io::BufReader::new(&data[..]);
        let whole = |l: Option<Line>| match l {
            Some(Line::Whole(l)) => l,
            other => panic!("{other:?}"),
        };
        assert_eq!(whole(read_line(&mut r).await.unwrap()), b"one");
        assert_eq!(whole(read_line(&mut r).await.unwrap()), b"two");
        // Longer than is held: skimmed, and it answers nothing.
        let Some(Line::Skimmed(s)) = read_line(&mut r).await.unwrap() else {
            panic!("not skimmed");
        };
        assert_eq!((s.answers, s.total), (None, MAX_FRAME_BYTES + 1));
        assert_eq!(read_line(&mut r).await.unwrap(), None);
    }

    /// A 40 MB result sent twice is an 80 MB line: too long to hold, it
    /// is answered with its size all the same (issue 53 item 10; it
    /// closed the pipe before), and the next line reads as usual.
    #[tokio::test]
    async fn a_line_too_long_to_hold_still_answers_its_call() {
        let mut data = response(&"x".repeat(40_000_000), true);
        assert!(data.len() > MAX_FRAME_BYTES);
        data.push(b'\n');
        data.extend_from_slice(&response("next", false));
        data.push(b'\n');
        let mut r = tokio::io::BufReader::with_capacity(256 * 1024, &data[..]);
        let line = read_line(&mut r).await.unwrap().unwrap();
        let out = fit(line).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["id"], 7);
        let e: ErrorData = serde_json::from_value(v["error"].clone()).unwrap();
        assert_eq!(e.message, "the tool's result is 40 MB, over the 8 MB limit");
        assert!(replaced(&e).is_some());
        let next = read_line(&mut r).await.unwrap().unwrap();
        assert_eq!(fit(next).unwrap(), response("next", false));
    }
}
