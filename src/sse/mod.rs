//! Stream framing: server-sent events (an incremental byte parser and an encoder),
//! newline-delimited JSON (Ollama's streams: each line is one event's data) and AWS's
//! binary event stream (Bedrock's, [`eventstream`]), with no I/O.
//!
//! Parsing follows the WHATWG "event stream interpretation" rules, with two deliberate
//! differences that serve recording rather than a browser's `EventSource`:
//!
//! - `id` belongs to the event whose block carried it; it is not inherited by later events
//!   (a browser's "last event ID"), so replaying a recording re-emits exactly the ids the
//!   upstream sent.
//! - An event with an `event:` name but no `data:` line is kept (with empty data), because
//!   some providers send such events and replay must not lose them. A block with neither
//!   data nor a name (only comments, `id:` or `retry:`) still dispatches nothing.

mod event;
pub mod eventstream;

pub use event::SseEvent;

use bytes::{BufMut, Bytes, BytesMut};

/// Incremental parser: feed arbitrary byte chunks (split anywhere, even mid-UTF-8 or
/// mid-`"\r\n"`), get complete events.
///
/// Each input byte is scanned once: complete lines are parsed straight out of the chunk, and
/// only the unterminated tail of a chunk is copied into a carry-over buffer.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current line whose terminator has not arrived yet. Kept as bytes, not
    /// text, because a chunk may end in the middle of a UTF-8 sequence; line terminators are
    /// ASCII so they never occur inside one.
    partial: Vec<u8>,
    /// The last chunk ended with `\r`: a `\n` opening the next chunk completes that `\r\n`
    /// and must not count as a second (blank, dispatching) line.
    skip_lf: bool,
    /// The first line has been seen, so the stream's leading byte-order mark, if any, is gone.
    started: bool,
    event: Option<String>,
    id: Option<String>,
    data: String,
    /// Whether the current block had a `data` line: `data:` with an empty value still makes
    /// an event, which `data.is_empty()` alone could not tell.
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `chunk` and returns the events it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let mut next = end + 1;
            if rest[end] == b'\r' {
                match rest.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    // Dispatch now rather than wait to see the next byte: holding an event
                    // back would add latency to a live stream.
                    None => self.skip_lf = true,
                }
            }
            let event = if self.partial.is_empty() {
                self.line(&rest[..end])
            } else {
                self.partial.extend_from_slice(&rest[..end]);
                let line = std::mem::take(&mut self.partial);
                let event = self.line(&line);
                // Hand the allocation back for the next carried-over line.
                self.partial = line;
                self.partial.clear();
                event
            };
            events.extend(event);
            rest = &rest[next..];
        }
        self.partial.extend_from_slice(rest);
        events
    }

    /// Ends the stream: returns the trailing event if the stream stopped without the blank
    /// line that would have dispatched it (its last line may lack a terminator too), and
    /// resets the parser for a new stream.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let line = std::mem::take(&mut self.partial);
        let event = if line.is_empty() {
            None
        } else {
            self.line(&line)
        };
        let event = event.or_else(|| self.dispatch());
        *self = Self::default();
        event
    }

    /// Interprets one line (without its terminator); returns the event a blank line dispatches.
    fn line(&mut self, mut line: &[u8]) -> Option<SseEvent> {
        if !self.started {
            self.started = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch();
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            // A comment, e.g. a keep-alive `: ping`.
            Some(0) => return None,
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            // A line with no colon is a field name with an empty value.
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            // The spec ignores an id containing NUL (it could not be sent back in a header).
            b"id" if !value.contains(&0) => {
                self.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            // `retry` only steers a browser's reconnection; unknown fields are ignored by spec.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let has_data = std::mem::take(&mut self.has_data);
        let data = std::mem::take(&mut self.data);
        let event = self.event.take();
        let id = self.id.take();
        (has_data || event.is_some()).then_some(SseEvent { event, id, data })
    }
}

/// One event in wire form: `event: X\n` (if any), `id: Y\n` (if any), one `data: ` line per
/// line of data, then a blank line.
///
/// Data lines are split at `\n`, `\r\n` and `\r`, the terminators a parser recognises, so a
/// stray `\r` in hand-written data cannot smuggle in an unintended line. Line breaks inside
/// `event` or `id` cannot be represented at all and are dropped for the same reason.
pub fn encode(ev: &SseEvent) -> Bytes {
    // Each field adds its name, ": " and "\n"; 16 bytes covers a few of them.
    let size = ev.event.as_ref().map_or(0, |e| e.len() + 8)
        + ev.id.as_ref().map_or(0, |i| i.len() + 5)
        + ev.data.len()
        + 16;
    let mut buf = BytesMut::with_capacity(size);
    if let Some(event) = &ev.event {
        put_single_line_field(&mut buf, b"event", event);
    }
    if let Some(id) = &ev.id {
        put_single_line_field(&mut buf, b"id", id);
    }
    let data = ev.data.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            b'\n' => {
                put_field(&mut buf, b"data", &data[start..i]);
                i += 1;
                start = i;
            }
            b'\r' => {
                put_field(&mut buf, b"data", &data[start..i]);
                i += if data.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                start = i;
            }
            _ => i += 1,
        }
    }
    put_field(&mut buf, b"data", &data[start..]);
    buf.put_u8(b'\n');
    buf.freeze()
}

fn put_field(buf: &mut BytesMut, name: &[u8], value: &[u8]) {
    buf.put_slice(name);
    buf.put_slice(b": ");
    buf.put_slice(value);
    buf.put_u8(b'\n');
}

fn put_single_line_field(buf: &mut BytesMut, name: &[u8], value: &str) {
    buf.put_slice(name);
    buf.put_slice(b": ");
    for part in value.as_bytes().split(|&b| b == b'\r' || b == b'\n') {
        buf.put_slice(part);
    }
    buf.put_u8(b'\n');
}

/// How a stream is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Server-sent events (`text/event-stream`).
    Sse,
    /// Newline-delimited JSON (`application/x-ndjson`): one JSON value per line, each kept
    /// as an event's `data`.
    Ndjson,
    /// AWS's binary event stream (`application/vnd.amazon.eventstream`): one frame per
    /// event (see [`eventstream`]).
    EventStream,
}

impl Framing {
    /// The framing a response's content type announces; `None` for a body that is not a
    /// stream.
    pub fn of(content_type: &str) -> Option<Framing> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        if media.eq_ignore_ascii_case("text/event-stream") {
            Some(Framing::Sse)
        } else if media.eq_ignore_ascii_case("application/x-ndjson") {
            Some(Framing::Ndjson)
        } else if media.eq_ignore_ascii_case(eventstream::CONTENT_TYPE) {
            Some(Framing::EventStream)
        } else {
            None
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Framing::Sse => "text/event-stream; charset=utf-8",
            Framing::Ndjson => "application/x-ndjson",
            Framing::EventStream => eventstream::CONTENT_TYPE,
        }
    }

    /// One event in wire form.
    pub fn encode(self, ev: &SseEvent) -> Bytes {
        match self {
            Framing::Sse => encode(ev),
            Framing::Ndjson => encode_line(&ev.data),
            Framing::EventStream => eventstream::encode(ev),
        }
    }

    /// A parser for a stream of this framing.
    pub fn parser(self) -> StreamParser {
        match self {
            Framing::Sse => StreamParser::Sse(SseParser::new()),
            Framing::Ndjson => StreamParser::Ndjson(Vec::new()),
            Framing::EventStream => StreamParser::EventStream(eventstream::Parser::default()),
        }
    }
}

/// An incremental parser of any framing.
#[derive(Debug)]
pub enum StreamParser {
    Sse(SseParser),
    /// The bytes of the line whose `\n` has not arrived yet.
    Ndjson(Vec<u8>),
    EventStream(eventstream::Parser),
}

impl StreamParser {
    /// Parses `chunk` and returns the events it completed, in order. A blank NDJSON line
    /// carries nothing and is skipped.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        match self {
            StreamParser::Sse(p) => p.push(chunk),
            StreamParser::EventStream(p) => p.push(chunk),
            StreamParser::Ndjson(partial) => {
                let mut events = Vec::new();
                let mut rest = chunk;
                while let Some(end) = rest.iter().position(|&b| b == b'\n') {
                    partial.extend_from_slice(&rest[..end]);
                    events.extend(line_event(partial));
                    partial.clear();
                    rest = &rest[end + 1..];
                }
                partial.extend_from_slice(rest);
                events
            }
        }
    }

    /// Ends the stream: the last event, if its terminator never came.
    pub fn finish(&mut self) -> Option<SseEvent> {
        match self {
            StreamParser::Sse(p) => p.finish(),
            StreamParser::Ndjson(partial) => {
                let event = line_event(partial);
                partial.clear();
                event
            }
            StreamParser::EventStream(p) => {
                p.finish();
                None
            }
        }
    }

    /// Why the stream cannot be read on, if it cannot: a binary frame that is broken (a
    /// CRC that does not match) or cut short. Text framings read whatever comes.
    pub fn broken(&self) -> Option<&str> {
        match self {
            StreamParser::EventStream(p) => p.broken(),
            _ => None,
        }
    }
}

/// An NDJSON line (its `\r` dropped) as an event; `None` when blank.
fn line_event(line: &[u8]) -> Option<SseEvent> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = String::from_utf8_lossy(line);
    (!text.trim().is_empty()).then(|| SseEvent {
        event: None,
        id: None,
        data: text.into_owned(),
    })
}

/// One NDJSON line: `data` and a `\n`. The line separators U+2028 and U+2029 are escaped,
/// as Go's encoder (Ollama's server) does: some clients split lines at them.
fn encode_line(data: &str) -> Bytes {
    let mut buf = BytesMut::with_capacity(data.len() + 1);
    if data.contains(['\u{2028}', '\u{2029}']) {
        let escaped = data
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029");
        buf.put_slice(escaped.as_bytes());
    } else {
        buf.put_slice(data.as_bytes());
    }
    buf.put_u8(b'\n');
    buf.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, id: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            id: id.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    /// Parses `chunks` in order and finishes the stream.
    fn parse_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for chunk in chunks {
            events.extend(parser.push(chunk));
        }
        events.extend(parser.finish());
        events
    }

    fn parse(bytes: &[u8]) -> Vec<SseEvent> {
        parse_chunks([bytes])
    }

    /// A stream mixing what OpenAI, Anthropic and generic servers send: JSON data with
    /// multi-byte characters, named events, ids, comments, `retry`, multi-line data, `[DONE]`.
    const PAYLOAD: &str = concat!(
        ": keep-alive\n",
        "retry: 3000\n",
        "\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"It is 18 °C in Paris 🌤\"}}]}\n",
        "\n",
        "event: content_block_delta\n",
        "id: 7\n",
        "data: {\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"unit\\\": \\\"°\"}\n",
        "\n",
        "data: first line\n",
        ":a comment between data lines\n",
        "data:second line without space\n",
        "data:  third line keeps one space\n",
        "data\n",
        "\n",
        "event: ping\n",
        "\n",
        "id: 8\n",
        "\n",
        "data: [DONE]\n",
        "\n",
    );

    fn payload_events() -> Vec<SseEvent> {
        vec![
            ev(
                None,
                None,
                "{\"choices\":[{\"delta\":{\"content\":\"It is 18 °C in Paris 🌤\"}}]}",
            ),
            ev(
                Some("content_block_delta"),
                Some("7"),
                "{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"unit\\\": \\\"°\"}",
            ),
            ev(
                None,
                None,
                "first line\nsecond line without space\n third line keeps one space\n",
            ),
            ev(Some("ping"), None, ""),
            ev(None, None, "[DONE]"),
        ]
    }

    #[test]
    fn parses_a_realistic_payload() {
        assert_eq!(parse(PAYLOAD.as_bytes()), payload_events());
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let lf = PAYLOAD.to_owned();
        let crlf = PAYLOAD.replace('\n', "\r\n");
        let cr = PAYLOAD.replace('\n', "\r");
        for payload in [lf, crlf, cr] {
            let bytes = payload.as_bytes();
            for at in 0..=bytes.len() {
                let (a, b) = bytes.split_at(at);
                assert_eq!(
                    parse_chunks([a, b]),
                    payload_events(),
                    "split at byte {at} of {payload:?}"
                );
            }
            assert_eq!(
                parse_chunks(bytes.chunks(1)),
                payload_events(),
                "byte at a time: {payload:?}"
            );
        }
    }

    #[test]
    fn events_are_returned_as_soon_as_their_blank_line_arrives() {
        let mut parser = SseParser::new();
        assert_eq!(parser.push(b"data: a\n"), vec![]);
        assert_eq!(parser.push(b"\n"), vec![ev(None, None, "a")]);
        // A CR at the very end of a chunk dispatches without waiting for a possible LF...
        assert_eq!(parser.push(b"data: b\r\r"), vec![ev(None, None, "b")]);
        // ...and the LF that completes it is not taken for a second blank line.
        assert_eq!(parser.push(b"\ndata: c\r\n"), vec![]);
        assert_eq!(parser.push(b"\r\n"), vec![ev(None, None, "c")]);
        assert_eq!(parser.finish(), None);
    }

    #[test]
    fn mixed_line_endings_in_one_stream() {
        assert_eq!(
            parse(b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r"),
            vec![ev(None, None, "a\nb\nc"), ev(None, None, "d")]
        );
    }

    #[test]
    fn comment_only_and_id_only_blocks_dispatch_nothing() {
        assert_eq!(parse(b": hello\n:\n\nid: 3\nretry: 10\n\n\n\n"), vec![]);
    }

    #[test]
    fn empty_data_line_makes_an_event() {
        assert_eq!(parse(b"data:\n\n"), vec![ev(None, None, "")]);
        assert_eq!(parse(b"data\ndata\n\n"), vec![ev(None, None, "\n")]);
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert_eq!(
            parse(b"foo: bar\nDATA: no\ndata: yes\n\n"),
            vec![ev(None, None, "yes")]
        );
    }

    #[test]
    fn id_is_per_event_and_an_id_with_nul_is_ignored() {
        assert_eq!(
            parse(b"id: 1\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\n"),
            vec![
                ev(None, Some("1"), "a"),
                ev(None, None, "b"),
                ev(None, None, "c")
            ]
        );
    }

    #[test]
    fn leading_byte_order_mark_is_stripped_even_when_split() {
        let stream = b"\xEF\xBB\xBFdata: a\n\n";
        assert_eq!(parse(stream), vec![ev(None, None, "a")]);
        assert_eq!(parse_chunks(stream.chunks(1)), vec![ev(None, None, "a")]);
        // Only at the start of the stream: later it is part of the field name.
        assert_eq!(
            parse(b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"),
            vec![ev(None, None, "a")]
        );
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        assert_eq!(
            parse(b"data: a\xFFb\n\n"),
            vec![ev(None, None, "a\u{FFFD}b")]
        );
    }

    #[test]
    fn finish_returns_an_unterminated_trailing_event() {
        let mut parser = SseParser::new();
        assert_eq!(
            parser.push(b"data: a\n\nevent: end\ndata: [DONE]"),
            vec![ev(None, None, "a")]
        );
        assert_eq!(parser.finish(), Some(ev(Some("end"), None, "[DONE]")));
        // The parser is reset and usable for a new stream.
        assert_eq!(
            parser.push(b"data: again\n\n"),
            vec![ev(None, None, "again")]
        );
        assert_eq!(parser.finish(), None);
    }

    #[test]
    fn encode_writes_the_documented_wire_form() {
        assert_eq!(
            encode(&ev(Some("delta"), Some("42"), "line one\nline two")),
            Bytes::from_static(b"event: delta\nid: 42\ndata: line one\ndata: line two\n\n")
        );
        assert_eq!(
            encode(&ev(None, None, "[DONE]")),
            Bytes::from_static(b"data: [DONE]\n\n")
        );
    }

    #[test]
    fn encode_cannot_be_tricked_into_extra_lines() {
        let tricky = ev(Some("a\nid: 9"), Some("1\r\n"), "x\ry\r\nz");
        assert_eq!(
            encode(&tricky),
            Bytes::from_static(b"event: aid: 9\nid: 1\ndata: x\ndata: y\ndata: z\n\n")
        );
    }

    #[test]
    fn encode_then_parse_round_trips() {
        let events = vec![
            ev(None, None, ""),
            ev(None, None, "{\"a\": \"°C\"}"),
            ev(Some("message_start"), Some("1"), "multi\nline\n\ndata\n"),
            ev(Some("ping"), None, ""),
            ev(None, Some(""), " leading space and : colon"),
        ];
        let wire: Vec<u8> = events.iter().flat_map(|e| encode(e).to_vec()).collect();
        assert_eq!(parse(&wire), events);
        // And parse then encode reproduces a canonical stream byte for byte.
        let reencoded: Vec<u8> = parse(&wire)
            .iter()
            .flat_map(|e| encode(e).to_vec())
            .collect();
        assert_eq!(reencoded, wire);
    }

    #[test]
    fn serializes_without_absent_fields() {
        let json = serde_json::to_string(&ev(None, None, "x")).expect("serializable");
        assert_eq!(json, r#"{"data":"x"}"#);
        let back: SseEvent = serde_json::from_str(r#"{"event":"e","data":"x"}"#).expect("valid");
        assert_eq!(back, ev(Some("e"), None, "x"));
    }

    #[test]
    fn framing_is_read_from_the_content_type() {
        assert_eq!(
            Framing::of("text/event-stream; charset=utf-8"),
            Some(Framing::Sse)
        );
        assert_eq!(Framing::of("application/x-ndjson"), Some(Framing::Ndjson));
        assert_eq!(Framing::of("application/json; charset=utf-8"), None);
    }

    #[test]
    fn ndjson_lines_split_anywhere_become_events_and_encode_back() {
        let wire = b"{\"a\":1}\r\n\n{\"b\":\"\xc3\xa9\"}\n{\"c\":3}";
        for split in 0..wire.len() {
            let mut p = Framing::Ndjson.parser();
            let mut events = p.push(&wire[..split]);
            events.extend(p.push(&wire[split..]));
            events.extend(p.finish());
            let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
            assert_eq!(
                data,
                [r#"{"a":1}"#, r#"{"b":"é"}"#, r#"{"c":3}"#],
                "split at {split}"
            );
        }
        let line = Framing::Ndjson.encode(&ev(None, None, "{\"t\":\"a\u{2028}b\"}"));
        assert_eq!(&line[..], b"{\"t\":\"a\\u2028b\"}\n");
    }
}
