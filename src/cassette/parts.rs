//! A large cassette parsed on every core: its interactions split into consecutive runs, one
//! per thread, where agentproxy's own layout says an interaction starts.
//!
//! A cassette as agentproxy writes it is pretty JSON with two-space indents, so the top
//! level's `"interactions": [` and its closing `]` sit on lines of their own at indent 2,
//! and each interaction opens with `{` at indent 4 and `"route"` at indent 6. JSON strings
//! cannot hold a raw newline, so these lines are structure, never text. Each run is parsed
//! interaction by interaction and must end exactly where the next begins, the rest of the
//! document is parsed with an empty array in place: together that is the whole document,
//! read as strictly as in one pass. Anything else (another layout, an error anywhere)
//! gives `None`, and the caller parses the file in one pass, which also says where it is
//! broken.

use std::ops::Range;

use bytes::Bytes;
use memchr::memmem;

use super::format::{Cassette, Interaction};
use super::lazy;

/// Smaller files are parsed in one pass: threads would cost more than they save.
const MIN_SPLIT: usize = 8 << 20;

const ARRAY_OPEN: &[u8] = b"\n  \"interactions\": [";
const ARRAY_CLOSE: &[u8] = b"\n  ]";
const ITEM_OPEN: &[u8] = b"\n    {\n      \"route\":";

/// The cassette in `bytes`, parsed in `parts` runs at once; `None` when it cannot be
/// split so (see the module's documentation).
pub(super) fn parse(bytes: &Bytes, parts: usize) -> Option<Cassette> {
    if bytes.len() < MIN_SPLIT || parts < 2 {
        return None;
    }
    in_parts(bytes, parts)
}

fn in_parts(bytes: &Bytes, parts: usize) -> Option<Cassette> {
    let (array, starts) = split(bytes, parts)?;
    let mut rest = Vec::with_capacity(array.start + 2 + (bytes.len() - array.end));
    rest.extend_from_slice(&bytes[..array.start]);
    rest.extend_from_slice(b"[]");
    rest.extend_from_slice(&bytes[array.end..]);
    let mut cassette: Cassette = serde_json::from_slice(&rest).ok()?;
    // Each run goes from one start to the next; the last to the array's `]`.
    let ends: Vec<usize> = (starts.iter().skip(1).copied())
        .chain([array.end - 1])
        .collect();
    // A thread that cannot be started (a process limit) gives up the split like an error.
    let runs: Vec<Option<Vec<Interaction>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (starts.iter().zip(&ends).enumerate())
            .map(|(n, (&from, &to))| {
                let last = n == starts.len() - 1;
                std::thread::Builder::new().spawn_scoped(scope, move || {
                    lazy::with_source(bytes, || run(bytes, from, to, last))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.ok().and_then(|h| h.join().ok().flatten()))
            .collect()
    });
    for run in runs {
        cassette.interactions.extend(run?);
    }
    Some(cassette)
}

/// The interactions array's span (`[` to `]`, inclusive) and where each run starts: just
/// after the `[`, then at the first interaction after each `len / parts` mark.
fn split(bytes: &[u8], parts: usize) -> Option<(Range<usize>, Vec<usize>)> {
    let open = memmem::find(bytes, ARRAY_OPEN)? + ARRAY_OPEN.len() - 1;
    let close = memmem::rfind(bytes, ARRAY_CLOSE)? + ARRAY_CLOSE.len() - 1;
    // The top level's own `interactions`, not one inside a field this build skips.
    (open < close && depth(&bytes[..open]) == Some(1)).then_some(())?;
    let mut starts = vec![open + 1];
    let step = (close - open) / parts;
    for n in 1..parts {
        let mark = (open + n * step).max(*starts.last()?);
        let Some(found) = memmem::find(&bytes[mark..close], ITEM_OPEN) else {
            break;
        };
        // The interaction's `{`, after the newline and the indent.
        let start = mark + found + 5;
        if start > *starts.last()? {
            starts.push(start);
        }
    }
    Some((open..close + 1, starts))
}

/// How deep in objects and arrays the end of `text` (the start of a JSON document) is;
/// `None` when it ends inside a string.
fn depth(text: &[u8]) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in text {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'{' | b'[') => depth += 1,
            (false, _, b'}' | b']') => depth = depth.checked_sub(1)?,
            _ => {}
        }
    }
    (!in_string).then_some(depth)
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = bytes.get(at) {
        at += 1;
    }
    at
}

/// The interactions from `from` (the first one's `{`, or whitespace before it) to `to`
/// (the next run's first `{`, or for the `last` run the array's `]`), separated by commas.
fn run(bytes: &[u8], from: usize, to: usize, last: bool) -> Option<Vec<Interaction>> {
    let mut out = Vec::new();
    let mut at = skip_ws(bytes, from);
    // An empty array, or a run that found no interaction of its own.
    if at == to {
        return Some(out);
    }
    loop {
        let mut one = serde_json::Deserializer::from_slice(&bytes[at..to]).into_iter();
        out.push(one.next()?.ok()?);
        at = skip_ws(bytes, at + one.byte_offset());
        if at == to && last {
            return Some(out);
        }
        (bytes.get(at) == Some(&b',')).then_some(())?;
        at = skip_ws(bytes, at + 1);
        if at == to {
            // A comma ends a run only before the next run's first interaction.
            return (!last).then_some(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::store;

    fn cassette_text(n: usize) -> Vec<u8> {
        let it = |i: usize| {
            serde_json::json!({
                "route": "openai.chat",
                "key": format!("{i:032x}"),
                "request": {"method": "POST", "path": "/v1/chat/completions",
                            "body": {"json": {"model": "m", "messages": [{"role": "user", "content": format!("{i} \"\n    {{\n      \"route\": x")}]}}},
                "response": {"status": 200, "headers": {}, "body": {"json": {"n": i}}},
                "latency_ms": 1
            })
        };
        let doc = serde_json::json!({
            "format": "2.0", "recorder": "agentproxy test", "recorded_at": "2026-01-01T00:00:00Z",
            "upstreams": {"openai": "https://api.openai.com"},
            "interactions": (0..n).map(it).collect::<Vec<_>>(),
        });
        // As agentproxy writes it: fields in the model's order.
        let text = serde_json::to_vec(&doc).unwrap();
        store::to_bytes(&store::parse(std::path::Path::new("c.json"), &text).unwrap())
    }

    fn whole(bytes: &Bytes) -> Cassette {
        store::parse(std::path::Path::new("c.json"), bytes).unwrap()
    }

    #[test]
    fn runs_meet_and_read_as_the_whole_document_does() {
        let bytes = Bytes::from(cassette_text(50));
        let one = whole(&bytes);
        for parts in [2, 3, 7, 50, 80] {
            let (array, starts) = split(&bytes, parts).unwrap();
            assert_eq!((bytes[array.start], bytes[array.end - 1]), (b'[', b']'));
            assert!(starts[1..].iter().all(|&s| bytes[s] == b'{'));
            assert!(starts.windows(2).all(|w| w[0] < w[1]));
            assert!(
                starts.len() == parts || parts > 7,
                "{parts} parts: {starts:?}"
            );
            let split = in_parts(&bytes, parts).unwrap();
            assert_eq!(split.interactions.len(), one.interactions.len());
            for (a, b) in split.interactions.iter().zip(&one.interactions) {
                assert_eq!(a.key, b.key, "{parts} parts");
                assert_eq!(
                    serde_json::to_value(a).unwrap(),
                    serde_json::to_value(b).unwrap()
                );
            }
            assert_eq!(split.upstreams, one.upstreams);
        }
    }

    #[test]
    fn a_file_broken_anywhere_is_left_to_the_single_pass() {
        let good = cassette_text(40);
        let (array, starts) = split(&good, 4).unwrap();
        assert_eq!(starts.len(), 4);
        assert!(in_parts(&Bytes::from(good.clone()), 4).is_some());
        let broken = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut text = good.clone();
            edit(&mut text);
            in_parts(&Bytes::from(text), 4).is_none()
        };
        // The comma before a run's first interaction, and one inside a run.
        assert!(broken(&|t| t[starts[1] - 6] = b' '));
        let inside = memmem::find(&good[starts[1] + 10..], b"},\n    {").unwrap() + starts[1] + 11;
        assert!(broken(&|t| t[inside] = b' '));
        // A trailing comma, a broken interaction, a broken top level.
        assert!(broken(&|t| t
            .splice(array.end - 5..array.end - 5, *b",")
            .for_each(drop)));
        assert!(broken(&|t| {
            let at = memmem::find(t, b"\"latency_ms\": 1").unwrap();
            t[at + 14] = b'}';
        }));
        assert!(broken(&|t| t[1] = b'['));
    }

    #[test]
    fn only_the_top_levels_interactions_are_split() {
        let good = cassette_text(4);
        // An unknown field holding an `interactions` array laid out as the real one, before
        // it: the single pass skips the field.
        let at = memmem::find(&good, b"\n  \"interactions\": [").unwrap();
        let items_end = memmem::rfind(&good, b"\n  ]").unwrap() + 4;
        let mut text = good[..at].to_vec();
        text.extend_from_slice(b"\n  \"x\": {");
        text.extend_from_slice(&good[at..items_end]);
        text.extend_from_slice(b"\n  },\n  \"interactions\": []\n}\n");
        let one = store::parse(std::path::Path::new("c.json"), &text).unwrap();
        assert!(one.interactions.is_empty());
        assert!(in_parts(&Bytes::from(text), 2).is_none());
        assert_eq!(depth(br#"{"a": "{[\"", "b": [{"#), Some(3));
        assert_eq!(depth(br#"{"a": "unterminated"#), None);
    }

    #[test]
    fn small_or_foreign_layouts_are_not_split() {
        let small = Bytes::from(cassette_text(3));
        assert!(parse(&small, 4).is_none(), "under the size to split");
        let value: serde_json::Value = serde_json::from_slice(&small).unwrap();
        assert!(split(&serde_json::to_vec(&value).unwrap(), 2).is_none());
    }
}
