//! A request body's canonical JSON written straight from its bytes, without building a
//! `serde_json::Value`: what [`super::request_key`] hashes for a body with no match rules,
//! at a fraction of the cost (replay keys every request that is not byte-identical to its
//! recording).
//!
//! The output is exactly what `serde_json::to_writer` writes for the parsed body with its
//! secrets redacted and its top-level transport fields left out: objects' keys sorted by
//! their bytes, no whitespace, strings escaped by serde_json itself, numbers other than
//! plain integers written by serde_json from its own parse. The text is read strictly
//! (anything serde_json would refuse, or that this reader does not handle, is `None`, and
//! the caller takes the `Value` path), except that string contents copied as they are
//! are not checked for UTF-8 or control characters: such bytes never appear in a
//! canonical output, so a body holding them can only miss, which the `Value` path then
//! reports. (Plain HTTP, which keys a body that is not JSON by its bytes, is never keyed
//! here: see [`super::key_of_bytes`].)
//! A differential test against the `Value` path keeps the two the same.

use memchr::{memchr, memchr2};
use serde_json::Value;

use super::normalize::TRANSPORT_FIELDS;
use crate::redact::Secrets;

/// Deeper than this is left to serde_json (whose own limit is 128).
const MAX_DEPTH: usize = 100;

/// A body's canonical JSON and the transport fields it left out (`stream`, …: the ones
/// that say how the answer is delivered), as an object.
pub struct Canonical {
    pub text: Vec<u8>,
    pub transport: Value,
}

/// The canonical JSON of `raw` with `secrets` redacted; `None` when the `Value` path must
/// decide (not JSON, a secret in an object key, a key given twice, deeper than
/// [`MAX_DEPTH`]).
///
/// Strings are first written without looking for secrets: escapes are rewritten as
/// serde_json writes them, without decoding the string. Only if a secret may then be in
/// the text (see [`Secrets::may_be_in_json`]) is the body read again, every string decoded
/// and redacted.
pub fn canonical(raw: &[u8], secrets: &Secrets) -> Option<Canonical> {
    let first = read(raw, None)?;
    if secrets.is_empty() || !secrets.may_be_in_json(&first.text) {
        return Some(first);
    }
    read(raw, Some(secrets))
}

fn read(raw: &[u8], redact: Option<&Secrets>) -> Option<Canonical> {
    let mut p = Parser {
        src: raw,
        pos: 0,
        redact,
        nodes: Vec::with_capacity(256),
        keys: Vec::new(),
        written: Vec::new(),
        children: Vec::new(),
        members: Vec::new(),
        pending: Vec::new(),
        pending_members: Vec::new(),
        transport: Vec::new(),
    };
    let root = p.value(0, true)?;
    p.skip_ws();
    if p.pos != raw.len() {
        return None;
    }
    let mut text = Vec::with_capacity(raw.len());
    p.emit(root, &mut text);
    let mut transport = serde_json::Map::new();
    for (name, (start, end)) in p.transport {
        transport.insert(name, serde_json::from_slice(&raw[start..end]).ok()?);
    }
    Some(Canonical {
        text,
        transport: Value::Object(transport),
    })
}

/// The escapes of a string, by what its canonical text needs.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Escapes {
    None,
    /// Only escapes serde_json writes the same way (`\"`, `\\`, `\n`, …): the string's
    /// text is canonical as it is.
    Kept,
    /// Some escape serde_json writes otherwise (`\/`, `\u00e9`).
    Rewritten,
}

#[derive(Clone, Copy)]
enum Node {
    /// Bytes of the body written as they are: a literal, a plain integer, a string (quotes
    /// included) free of escapes and secrets.
    Verbatim(usize, usize),
    /// Bytes of `written`: a number as serde_json writes it, a string with its escapes
    /// rewritten or its secrets redacted.
    Written(usize, usize),
    /// Elements `children[first..first + len]`.
    Array(usize, usize),
    /// Members `members[first..first + len]`, sorted by key.
    Object(usize, usize),
}

enum Key {
    /// The text between the quotes, free of escapes.
    Span(usize, usize),
    /// Decoded from its escapes (`keys`).
    Decoded(usize),
}

struct Member {
    key: Key,
    node: usize,
}

struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    /// Decode every string and redact these secrets.
    redact: Option<&'a Secrets>,
    nodes: Vec<Node>,
    /// Object keys that had escapes, decoded: keys sort by their decoded bytes.
    keys: Vec<String>,
    written: Vec<u8>,
    children: Vec<usize>,
    members: Vec<Member>,
    /// The elements and members of the containers being read, innermost last.
    pending: Vec<usize>,
    pending_members: Vec<Member>,
    /// The top level's transport fields: name and the span of the value.
    transport: Vec<(String, (usize, usize))>,
}

fn key_bytes<'k>(src: &'k [u8], keys: &'k [String], key: &Key) -> &'k [u8] {
    match *key {
        Key::Span(a, b) => &src[a..b],
        Key::Decoded(i) => keys[i].as_bytes(),
    }
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.src.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_ws();
        (self.src.get(self.pos) == Some(&byte)).then(|| self.pos += 1)
    }

    fn node(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// A node of what `write` writes into `written`.
    fn written(&mut self, write: impl FnOnce(&mut Vec<u8>) -> Option<()>) -> Option<usize> {
        let start = self.written.len();
        write(&mut self.written)?;
        Some(self.node(Node::Written(start, self.written.len())))
    }

    fn value(&mut self, depth: usize, top: bool) -> Option<usize> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_ws();
        match *self.src.get(self.pos)? {
            b'{' => self.object(depth, top),
            b'[' => self.array(depth),
            b'"' => self.string(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<usize> {
        let start = self.pos;
        self.src[start..].starts_with(word).then_some(())?;
        self.pos += word.len();
        Some(self.node(Node::Verbatim(start, self.pos)))
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.src.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// A number by JSON's grammar. A non-negative integer of up to 19 digits fits a `u64`
    /// and is written as it was spelled; any other goes through serde_json's own parse and
    /// output (a float's shortest form, an integer too large for 64 bits as a float).
    fn number(&mut self) -> Option<usize> {
        let start = self.pos;
        let negative = self.src[start] == b'-';
        self.pos += usize::from(negative);
        match self.src.get(self.pos)? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => _ = self.digits(),
            _ => return None,
        }
        let mut plain = !negative && self.pos - start <= 19;
        if self.src.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            (self.digits() > 0).then_some(())?;
            plain = false;
        }
        if let Some(b'e' | b'E') = self.src.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.src.get(self.pos) {
                self.pos += 1;
            }
            (self.digits() > 0).then_some(())?;
            plain = false;
        }
        if plain {
            return Some(self.node(Node::Verbatim(start, self.pos)));
        }
        let n: serde_json::Number = serde_json::from_slice(&self.src[start..self.pos]).ok()?;
        self.written(|out| serde_json::to_writer(out, &n).ok())
    }

    /// The span between a string's quotes (`self.pos` at its opening quote) and what
    /// escapes it holds; `self.pos` ends past the closing quote.
    fn string_span(&mut self) -> Option<(usize, usize, Escapes)> {
        let start = self.pos + 1;
        let mut at = start;
        let mut escapes = Escapes::None;
        loop {
            at = quote_or_backslash(self.src, at)?;
            if self.src[at] == b'"' {
                self.pos = at + 1;
                return Some((start, at, escapes));
            }
            escapes = match self.src.get(at + 1)? {
                b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => escapes.max(Escapes::Kept),
                _ => Escapes::Rewritten,
            };
            at += 2;
        }
    }

    /// A string with escapes, decoded by serde_json (quotes included in the span read).
    fn decoded(&self, start: usize, end: usize) -> Option<String> {
        serde_json::from_slice(&self.src[start - 1..=end]).ok()
    }

    fn string(&mut self) -> Option<usize> {
        let (start, end, escapes) = self.string_span()?;
        let Some(secrets) = self.redact else {
            if escapes != Escapes::Rewritten {
                return Some(self.node(Node::Verbatim(start - 1, end + 1)));
            }
            let src = self.src;
            return self.written(|out| rewrite_escapes(&src[start..end], out));
        };
        // Decoded and escaped anew, the text is canonical whatever it held: a string serde_json
        // refuses (a raw control character) must not become one it accepts.
        let raw = &self.src[start..end];
        let decoded = match escapes != Escapes::None {
            true => self.decoded(start, end)?,
            false if raw.iter().any(|&b| b < 0x20) => return None,
            false => std::str::from_utf8(raw).ok()?.to_owned(),
        };
        let text = secrets.redact_str(&decoded).unwrap_or(decoded);
        self.written(|out| {
            escape(&text, out);
            Some(())
        })
    }

    /// An object's key; `None` if a secret would be redacted out of it (the `Value` path
    /// renames such keys, which may merge two).
    fn key(&mut self) -> Option<Key> {
        (self.src.get(self.pos) == Some(&b'"')).then_some(())?;
        let (start, end, escapes) = self.string_span()?;
        let decoded = match escapes != Escapes::None {
            true => Some(self.decoded(start, end)?),
            false => None,
        };
        if let Some(secrets) = self.redact {
            let text = match &decoded {
                Some(d) => d.as_str(),
                None => std::str::from_utf8(&self.src[start..end]).ok()?,
            };
            secrets.redact_str(text).is_none().then_some(())?;
        }
        Some(match decoded {
            Some(d) => {
                self.keys.push(d);
                Key::Decoded(self.keys.len() - 1)
            }
            None => Key::Span(start, end),
        })
    }

    fn array(&mut self, depth: usize) -> Option<usize> {
        self.pos += 1;
        let mark = self.pending.len();
        if self.eat(b']').is_none() {
            loop {
                let item = self.value(depth + 1, false)?;
                self.pending.push(item);
                if self.eat(b',').is_some() {
                    continue;
                }
                self.eat(b']')?;
                break;
            }
        }
        let first = self.children.len();
        self.children.extend(self.pending.drain(mark..));
        Some(self.node(Node::Array(first, self.children.len() - first)))
    }

    fn object(&mut self, depth: usize, top: bool) -> Option<usize> {
        self.pos += 1;
        let mark = self.pending_members.len();
        if self.eat(b'}').is_none() {
            loop {
                self.skip_ws();
                let key = self.key()?;
                self.eat(b':')?;
                let name = key_bytes(self.src, &self.keys, &key);
                let transport = (top)
                    .then(|| TRANSPORT_FIELDS.iter().find(|f| f.as_bytes() == name))
                    .flatten();
                if let Some(field) = transport {
                    self.skip_ws();
                    let start = self.pos;
                    self.value(depth + 1, false)?;
                    self.transport
                        .push(((*field).to_owned(), (start, self.pos)));
                } else {
                    let node = self.value(depth + 1, false)?;
                    self.pending_members.push(Member { key, node });
                }
                if self.eat(b',').is_some() {
                    continue;
                }
                self.eat(b'}')?;
                break;
            }
        }
        let (src, keys) = (self.src, &self.keys);
        let these = &mut self.pending_members[mark..];
        these.sort_unstable_by(|a, b| {
            key_bytes(src, keys, &a.key).cmp(key_bytes(src, keys, &b.key))
        });
        let twice = these
            .windows(2)
            .any(|w| key_bytes(src, keys, &w[0].key) == key_bytes(src, keys, &w[1].key));
        if twice {
            return None;
        }
        let first = self.members.len();
        self.members.extend(self.pending_members.drain(mark..));
        Some(self.node(Node::Object(first, self.members.len() - first)))
    }

    fn emit(&self, node: usize, out: &mut Vec<u8>) {
        match self.nodes[node] {
            Node::Verbatim(a, b) => out.extend_from_slice(&self.src[a..b]),
            Node::Written(a, b) => out.extend_from_slice(&self.written[a..b]),
            Node::Array(first, len) => {
                out.push(b'[');
                for (n, &child) in self.children[first..first + len].iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    self.emit(child, out);
                }
                out.push(b']');
            }
            Node::Object(first, len) => {
                out.push(b'{');
                for (n, m) in self.members[first..first + len].iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    match m.key {
                        Key::Span(a, b) => {
                            out.push(b'"');
                            out.extend_from_slice(&self.src[a..b]);
                            out.push(b'"');
                        }
                        Key::Decoded(i) => escape(&self.keys[i], out),
                    }
                    out.push(b':');
                    self.emit(m.node, out);
                }
                out.push(b'}');
            }
        }
    }
}

/// The position of the first `"` or `\\` from `at`: the next 16 bytes eight at a time
/// (tool arguments and results are JSON in strings, dense with escapes), then with
/// `memchr2` (prose).
fn quote_or_backslash(src: &[u8], mut at: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A zero byte of `v` sets its high bit here; bits above the first zero may be set
    // too, which the lowest set bit is not affected by.
    let zero_bytes = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    for _ in 0..2 {
        let Some(chunk) = src.get(at..at + 8) else {
            break;
        };
        let w = u64::from_le_bytes(chunk.try_into().ok()?);
        let found =
            zero_bytes(w ^ (ONES * u64::from(b'"'))) | zero_bytes(w ^ (ONES * u64::from(b'\\')));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    memchr2(b'"', b'\\', src.get(at..)?).map(|i| at + i)
}

/// A string as serde_json writes it, quotes included.
fn escape(s: &str, out: &mut Vec<u8>) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(out, s);
}

/// The contents of a string with escapes (between its quotes) as serde_json writes the
/// string it decodes to, quotes included, without decoding the rest: `\/` becomes `/`,
/// `\u` escapes become their character or serde_json's escape of it, the escapes
/// serde_json writes itself stay. `None` for an escape serde_json refuses, or a
/// surrogate out of its pair (left to serde_json).
fn rewrite_escapes(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    out.push(b'"');
    let mut at = 0;
    while let Some(n) = memchr(b'\\', &text[at..]) {
        out.extend_from_slice(&text[at..at + n]);
        at += n;
        match *text.get(at + 1)? {
            b'/' => out.push(b'/'),
            e @ (b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => {
                out.extend_from_slice(&[b'\\', e])
            }
            b'u' => {
                let unit = hex4(text.get(at + 2..at + 6)?)?;
                let ch = match unit {
                    0xD800..=0xDBFF => {
                        (text.get(at + 6..at + 8)? == b"\\u").then_some(())?;
                        let low = hex4(text.get(at + 8..at + 12)?)?;
                        (0xDC00..=0xDFFF).contains(&low).then_some(())?;
                        at += 6;
                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => unit,
                };
                let ch = char::from_u32(ch)?;
                match ch {
                    '"' => out.extend_from_slice(b"\\\""),
                    '\\' => out.extend_from_slice(b"\\\\"),
                    '\u{8}' => out.extend_from_slice(b"\\b"),
                    '\t' => out.extend_from_slice(b"\\t"),
                    '\n' => out.extend_from_slice(b"\\n"),
                    '\u{c}' => out.extend_from_slice(b"\\f"),
                    '\r' => out.extend_from_slice(b"\\r"),
                    '\u{0}'..='\u{1f}' => {
                        out.extend_from_slice(format!("\\u{:04x}", u32::from(ch)).as_bytes())
                    }
                    _ => out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes()),
                }
                // The escape's own length; a pair's second half was counted above.
                at += 4;
            }
            _ => return None,
        }
        at += 2;
    }
    out.extend_from_slice(&text[at..]);
    out.push(b'"');
    Some(())
}

/// Four hex digits, either case.
fn hex4(digits: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(digits).ok()?;
    (text.len() == 4 && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u32::from_str_radix(text, 16).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matching::normalize::WithoutTransport;
    use proptest::prelude::*;

    /// What the `Value` path hashes for `raw`: parse, redact, serialize without the
    /// transport fields.
    fn by_value(raw: &[u8], secrets: &Secrets) -> Option<Vec<u8>> {
        let mut v: Value = serde_json::from_slice(raw).ok()?;
        secrets.redact_value(&mut v);
        Some(serde_json::to_vec(&WithoutTransport(&v)).unwrap())
    }

    fn secrets() -> Secrets {
        Secrets::from_vars([("OPENAI_API_KEY".to_owned(), "sk-secret-123".to_owned())])
    }

    fn same(raw: &str, secrets: &Secrets) {
        let fast = canonical(raw.as_bytes(), secrets).map(|c| c.text);
        let slow = by_value(raw.as_bytes(), secrets);
        assert_eq!(
            fast.as_deref().map(String::from_utf8_lossy),
            slow.as_deref().map(String::from_utf8_lossy),
            "{raw}"
        );
    }

    proptest! {
        #[test]
        fn finds_the_first_quote_or_backslash(bytes in prop::collection::vec(prop_oneof![
            Just(b'"'), Just(b'\\'), Just(0xa2u8), Just(0xdc), Just(0x21), Just(0x5b), Just(0x01),
            any::<u8>(),
        ], 0..40), from in 0usize..40) {
            let naive = (bytes.get(from..))
                .and_then(|rest| rest.iter().position(|&b| b == b'"' || b == b'\\'))
                .map(|i| from + i);
            prop_assert_eq!(quote_or_backslash(&bytes, from), naive);
        }
    }

    #[test]
    fn sorts_keys_drops_whitespace_and_transport_fields() {
        let c = canonical(
            br#" { "stream" : true, "model":"m", "messages":[ {"role":"user","content":"hi"} ],
                  "stream_options": {"include_usage": true}, "n": 1 } "#,
            &Secrets::default(),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(c.text).unwrap(),
            r#"{"messages":[{"content":"hi","role":"user"}],"model":"m","n":1}"#
        );
        assert_eq!(
            c.transport,
            serde_json::json!({"stream": true, "stream_options": {"include_usage": true}})
        );
    }

    #[test]
    fn agrees_with_the_value_path_on_awkward_text() {
        let none = Secrets::default();
        for raw in [
            r#"{"a":"\u00e9\/\"\\\n\u0001","é":1,"e":2,"\u0065\u0301":3}"#,
            r#"{"n":[0,-0,1.0,1e2,1E-2,-5,12345678901234567890,1234567890123456789,2.5e+3,0.1]}"#,
            r#"{"messages":[{"stream":true}],"x":{"stream":1}}"#,
            r#"[1,{"b":2,"a":[]},"s",null,true,false]"#,
            r#""just a string""#,
            r#"{"str\u0065am":true,"a":{}}"#,
            r#"{"emoji":"😀 \ud83d\ude00","tab":"a\tb"}"#,
        ] {
            same(raw, &none);
            same(raw, &secrets());
        }
    }

    #[test]
    fn redacts_secrets_however_they_are_spelled() {
        let s = secrets();
        for raw in [
            r#"{"k":"Bearer sk-secret-123","m":"x"}"#,
            r#"{"k":"Bearer sk-secr\u0065t-123"}"#,
            r#"{"k":["sk-secret-123sk-secret-123"]}"#,
        ] {
            same(raw, &s);
            let text = canonical(raw.as_bytes(), &s).unwrap().text;
            assert!(!String::from_utf8(text).unwrap().contains("sk-secret"));
        }
        // A secret in a key is left to the Value path, which renames the key.
        assert!(canonical(br#"{"sk-secret-123":1}"#, &s).is_none());
        assert!(canonical(br#"{"sk-secr\u0065t-123":1}"#, &s).is_none());
    }

    #[test]
    fn refuses_what_serde_json_refuses_or_leaves_it_to_the_value_path() {
        let none = Secrets::default();
        for raw in [
            "",
            " ",
            "{",
            "}",
            "{\"a\":1,}",
            "[1,]",
            "[1 2]",
            "{\"a\" 1}",
            "{a:1}",
            "01x",
            "tru",
            "nul",
            "{\"a\":1}x",
            "\"unterminated",
            "\"bad \\x escape\"",
            "\"\\ud800\"",
            "1.",
            "1e",
            "-",
            "--1",
            "+1",
            "[.5]",
            "\u{feff}{}",
            "{\"a\":1,\"a\":2}",
            "1e400",
        ] {
            let fast = canonical(raw.as_bytes(), &none);
            if let Some(c) = fast {
                panic!(
                    "{raw:?} gave {:?}, the Value path {:?}",
                    String::from_utf8_lossy(&c.text),
                    by_value(raw.as_bytes(), &none).map(String::from_utf8)
                );
            }
        }
        let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
        assert!(canonical(deep.as_bytes(), &none).is_none());
    }

    #[test]
    fn bytes_the_value_path_refuses_never_read_as_a_canonical_text() {
        // Not checked for UTF-8 or control characters inside strings: such output can be
        // no valid body's canonical text, so the request misses.
        for raw in [
            &b"{\"a\":\"\xff\"}"[..],
            b"{\"a\":\"x\ny\"}",
            b"{\"\x01\":1}",
        ] {
            let c = canonical(raw, &Secrets::default()).expect("read as text");
            assert!(by_value(raw, &Secrets::default()).is_none());
            let reparsed = serde_json::from_slice::<Value>(&c.text);
            assert!(reparsed.is_err(), "{:?}", String::from_utf8_lossy(&c.text));
        }
        // Nor when a secret has every string decoded and escaped anew.
        let s = secrets();
        for raw in [
            &b"{\"a\":\"x\ty\",\"k\":\"sk-secret-123\"}"[..],
            b"{\"a\":\"\xff\",\"k\":\"sk-secret-123\"}",
        ] {
            assert!(by_value(raw, &s).is_none());
            if let Some(c) = canonical(raw, &s) {
                let reparsed = serde_json::from_slice::<Value>(&c.text);
                assert!(reparsed.is_err(), "{:?}", String::from_utf8_lossy(&c.text));
            }
        }
    }

    /// A JSON value with keys and strings that need escapes, numbers of every kind and
    /// (sometimes) a secret inside.
    fn json_value() -> impl Strategy<Value = Value> {
        let text = prop_oneof![
            "[a-z]{0,6}",
            "[ -~]{0,8}",
            "\\PC{0,6}",
            Just("sk-secret-123".to_owned()),
            Just("key: sk-secret-123!".to_owned()),
            Just("stream".to_owned()),
            Just("\u{1}\t\"\\/\u{7f}é😀".to_owned()),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            text.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(
                    ("[a-z]{0,4}|stream|stream_options|é|\\PC{0,3}", inner),
                    0..6
                )
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// A step of a linear congruential generator: the spelling's choices.
    fn next(seed: &mut u64) -> u32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) as u32
    }

    /// `v` written as an SDK might: keys in any order, whitespace, escapes where none are
    /// needed (`\/`, `\u00XX`), numbers spelled otherwise (`1.0E2`).
    fn spelled(v: &Value, seed: &mut u64, out: &mut String) {
        let ws =
            |n: u32, out: &mut String| out.push_str([" ", "", "\n  ", "\t", ""][n as usize % 5]);
        match v {
            Value::String(s) => {
                out.push('"');
                for ch in s.chars() {
                    match (ch, next(seed) % 4) {
                        ('"', _) => out.push_str("\\\""),
                        ('\\', _) => out.push_str("\\\\"),
                        ('/', 0) => out.push_str("\\/"),
                        (c, _) if (c as u32) < 0x20 => {
                            out.push_str(&format!("\\u{:04x}", c as u32))
                        }
                        (c, 0) if (c as u32) < 0x10000 => {
                            out.push_str(&format!("\\u{:04X}", c as u32))
                        }
                        (c, 1) if (c as u32) >= 0x10000 => {
                            for unit in c.encode_utf16(&mut [0; 2]) {
                                out.push_str(&format!("\\u{unit:04x}"));
                            }
                        }
                        (c, _) => out.push(c),
                    }
                }
                out.push('"');
            }
            Value::Number(n) if n.is_f64() && next(seed).is_multiple_of(2) => {
                out.push_str(&format!("{:e}", n.as_f64().unwrap()));
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    ws(next(seed), out);
                    spelled(item, seed, out);
                }
                out.push(']');
            }
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                let k = entries.len().max(1);
                entries.rotate_left(next(seed) as usize % k);
                if next(seed).is_multiple_of(2) {
                    entries.reverse();
                }
                out.push('{');
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    ws(next(seed), out);
                    spelled(&Value::String(key.clone()), seed, out);
                    ws(next(seed), out);
                    out.push(':');
                    spelled(item, seed, out);
                }
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    fn key_holds_secret(v: &Value) -> bool {
        match v {
            Value::Array(items) => items.iter().any(key_holds_secret),
            Value::Object(map) => map
                .iter()
                .any(|(k, v)| k.contains("sk-secret-123") || key_holds_secret(v)),
            _ => false,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_same_text_as_the_value_path(v in json_value(), seed in any::<u64>(), secret in any::<bool>()) {
            let secrets = if secret { secrets() } else { Secrets::default() };
            let mut raw = String::new();
            spelled(&v, &mut seed.clone(), &mut raw);
            let slow = by_value(raw.as_bytes(), &secrets);
            prop_assert!(slow.is_some(), "spelled text must parse: {raw}");
            match canonical(raw.as_bytes(), &secrets) {
                Some(c) => prop_assert_eq!(Some(c.text), slow, "{}", raw),
                // Only a secret in a key is left to the Value path.
                None => prop_assert!(secret && key_holds_secret(&v), "{}", raw),
            }
        }

        #[test]
        fn any_bytes_read_as_the_value_path_reads_them(raw in prop::collection::vec(prop_oneof![
            Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b':'), Just(b','),
            Just(b'\\'), Just(b'1'), Just(b'-'), Just(b'.'), Just(b'e'), Just(b' '), Just(b'a'),
            Just(b'u'), Just(b'n'), Just(b't'),
        ], 0..24)) {
            let none = Secrets::default();
            if let Some(c) = canonical(&raw, &none) {
                prop_assert_eq!(Some(c.text), by_value(&raw, &none));
            }
        }
    }
}
