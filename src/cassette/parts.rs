//! A large cassette loaded a window at a time and parsed on every core: its interactions
//! split into consecutive runs where agentproxy's own layout says an interaction starts,
//! each body kept as its place in the file (see [`super::source`]), so loading holds a
//! window of the file in memory, never the whole.
//!
//! A cassette as agentproxy writes it is pretty JSON with two-space indents, so the top
//! level's `"interactions": [` and its closing `]` sit on lines of their own at indent 2,
//! and each interaction opens with `{` at indent 4 and `"route"` at indent 6. JSON strings
//! cannot hold a raw newline, so these lines are structure, never text. A window ends
//! where its last interaction starts; its runs are parsed interaction by interaction and
//! must end exactly where the next begins, and the rest of the document (its head and
//! tail) is parsed with an empty array in place: together that is the whole document, read
//! as strictly as in one pass. Anything else (another layout, an error anywhere) gives
//! `None`, and the caller parses the file in one pass, which also says where it is broken.

use std::sync::Arc;

use memchr::memmem;

use super::error::CassetteError;
use super::format::{Cassette, Interaction};
use super::lazy;
use super::source::Source;

/// Bytes read and parsed at a time; a load holds two windows, the one it parses and the
/// next, being read (more only for an interaction larger than this).
const WINDOW: usize = 8 << 20;
/// How far from its end the file is read for the array's `]` and what follows it.
const TAIL: usize = 64 << 10;

const ARRAY_OPEN: &[u8] = b"\n  \"interactions\": [";
const ARRAY_CLOSE: &[u8] = b"\n  ]";
const ITEM_OPEN: &[u8] = b"\n    {\n      \"route\":";

/// The cassette in `source`, parsed a window at a time in `parts` runs at once; `None`
/// when it cannot be split so (see the module's documentation).
pub(super) fn load(source: &Arc<Source>, parts: usize) -> Result<Option<Cassette>, CassetteError> {
    load_by(source, parts, WINDOW)
}

fn load_by(
    source: &Arc<Source>,
    parts: usize,
    window: usize,
) -> Result<Option<Cassette>, CassetteError> {
    let Some((mut cassette, from, close)) = frame(source, window)? else {
        return Ok(None);
    };
    let mut now = read_window(source, (from, close), window, Vec::new())?;
    let mut spare = Vec::new();
    loop {
        // The next window is read while this one is parsed. A thread that cannot be
        // started (a process limit) gives up the split like an error.
        let (parsed, next) = std::thread::scope(|scope| {
            let next = (!now.last).then(|| {
                let (from, buf) = (now.from + now.len, std::mem::take(&mut spare));
                std::thread::Builder::new().spawn_scoped(scope, move || {
                    read_window(source, (from, close), window, buf)
                })
            });
            let parsed = parse_window(source, now.from, &now.buf[..now.len], parts, now.last);
            (parsed, next.map(|n| n.ok().and_then(|n| n.join().ok())))
        });
        let Some(parsed) = parsed else {
            return Ok(None);
        };
        cassette.interactions.extend(parsed);
        match next {
            None => return Ok(Some(cassette)),
            Some(Some(next)) => spare = std::mem::replace(&mut now, next?).buf,
            Some(None) => return Ok(None),
        }
    }
}

/// A window of the interactions: the file's bytes from `from` in `buf`, whose first `len`
/// end where an interaction starts or, the `last`, at the array's `]`.
struct Window {
    from: usize,
    buf: Vec<u8>,
    len: usize,
    last: bool,
}

/// The window from `from` (before `close`, the array's `]`), read into `buf`: `window`
/// bytes, cut where the last interaction in them starts; one interaction larger than that
/// widens it.
fn read_window(
    source: &Source,
    (from, close): (usize, usize),
    window: usize,
    mut buf: Vec<u8>,
) -> Result<Window, CassetteError> {
    let mut want = window;
    loop {
        let end = (from + want).min(close);
        buf.resize(end - from, 0);
        source.read_into(from as u64, &mut buf)?;
        let len = if end == close {
            Some(end - from)
        } else {
            let first = skip_ws(&buf, 0);
            let cut = memmem::rfind(&buf, ITEM_OPEN).map(|at| at + 5);
            cut.filter(|&cut| cut > first)
        };
        match len {
            Some(len) => {
                let last = end == close;
                return Ok(Window {
                    from,
                    buf,
                    len,
                    last,
                });
            }
            None => want *= 2,
        }
    }
}

/// The document without its interactions (its head and tail around an empty array), and
/// the span of the interactions between the array's `[` and `]`, read from the first
/// [`TAIL`] bytes (the first `window` when the head is longer) and the last [`TAIL`].
fn frame(
    source: &Source,
    window: usize,
) -> Result<Option<(Cassette, usize, usize)>, CassetteError> {
    let len = source.len() as usize;
    let open = |head: &[u8]| memmem::find(head, ARRAY_OPEN).map(|at| at + ARRAY_OPEN.len() - 1);
    let mut head = source.read(0, len.min(TAIL))?;
    if open(&head).is_none() && len > TAIL {
        head = source.read(0, len.min(window))?;
    }
    let Some(open) = open(&head) else {
        return Ok(None);
    };
    // The top level's own `interactions`, not one inside a field this build skips.
    if depth(&head[..open]) != Some(1) {
        return Ok(None);
    }
    let tail_from = len.saturating_sub(TAIL).max(open + 1);
    let tail = source.read(tail_from as u64, len - tail_from)?;
    let Some(close) =
        memmem::rfind(&tail, ARRAY_CLOSE).map(|at| tail_from + at + ARRAY_CLOSE.len() - 1)
    else {
        return Ok(None);
    };
    let mut rest = Vec::with_capacity(open + 2 + (len - close));
    rest.extend_from_slice(&head[..open]);
    rest.extend_from_slice(b"[]");
    rest.extend_from_slice(&tail[close + 1 - tail_from..]);
    Ok(serde_json::from_slice(&rest)
        .ok()
        .map(|cassette| (cassette, open + 1, close)))
}

/// The interactions in `window` (the file's bytes from `base`, which start at an
/// interaction or the whitespace before the first, and end where the next begins or, the
/// `last`, at the array's `]`), parsed in up to `parts` runs at once. A thread that
/// cannot be started (a process limit) gives up the split like an error.
fn parse_window(
    source: &Arc<Source>,
    base: usize,
    window: &[u8],
    parts: usize,
    last: bool,
) -> Option<Vec<Interaction>> {
    let starts = starts(window, parts);
    let ends: Vec<usize> = (starts.iter().skip(1).copied())
        .chain([window.len()])
        .collect();
    let runs: Vec<Option<Vec<Interaction>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (starts.iter().zip(&ends).enumerate())
            .map(|(n, (&from, &to))| {
                let last = last && n == starts.len() - 1;
                std::thread::Builder::new().spawn_scoped(scope, move || {
                    lazy::with_file(source, base as u64, window, || run(window, from, to, last))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.ok().and_then(|h| h.join().ok().flatten()))
            .collect()
    });
    let mut out = Vec::new();
    for run in runs {
        out.extend(run?);
    }
    Some(out)
}

/// Where each run of `window` starts: at its start, then at the first interaction after
/// each `len / parts` mark.
fn starts(window: &[u8], parts: usize) -> Vec<usize> {
    let mut starts = vec![0];
    let step = window.len() / parts.max(1);
    for n in 1..parts {
        let mark = (n * step).max(starts[starts.len() - 1]);
        let Some(found) = memmem::find(&window[mark..], ITEM_OPEN) else {
            break;
        };
        // The interaction's `{`, after the newline and the indent.
        let start = mark + found + 5;
        if start > starts[starts.len() - 1] {
            starts.push(start);
        }
    }
    starts
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

    fn whole(bytes: &[u8]) -> Cassette {
        store::parse(std::path::Path::new("c.json"), bytes).unwrap()
    }

    /// `text` loaded from a file, a `window` at a time, in `parts` runs.
    fn loaded(text: &[u8], parts: usize, window: usize) -> Option<Cassette> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, text).unwrap();
        let source = Source::new(std::fs::File::open(&path).unwrap(), &path).unwrap();
        load_by(&Arc::new(source), parts, window).unwrap()
    }

    #[test]
    fn windows_and_runs_meet_and_read_as_the_whole_document_does() {
        let bytes = cassette_text(50);
        let one = whole(&bytes);
        let item = bytes.len() / 50;
        // A window of less than one interaction, of a few, of all.
        for window in [item / 3, 3 * item, bytes.len()] {
            for parts in [1, 2, 3, 7, 80] {
                let split = loaded(&bytes, parts, window).unwrap();
                assert_eq!(split.interactions.len(), one.interactions.len());
                for (a, b) in split.interactions.iter().zip(&one.interactions) {
                    assert_eq!(a.key, b.key, "{parts} parts, window {window}");
                    assert_eq!(
                        serde_json::to_value(a).unwrap(),
                        serde_json::to_value(b).unwrap()
                    );
                }
                assert_eq!(split.upstreams, one.upstreams);
            }
        }
        let open = memmem::find(&bytes, ARRAY_OPEN).unwrap() + ARRAY_OPEN.len();
        let close = memmem::rfind(&bytes, ARRAY_CLOSE).unwrap();
        let window = &bytes[open..close];
        for parts in [2, 3, 7] {
            let starts = starts(window, parts);
            assert_eq!(starts.len(), parts);
            assert!(starts[1..].iter().all(|&s| window[s] == b'{'));
            assert!(starts.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn a_file_broken_anywhere_is_left_to_the_single_pass() {
        let good = cassette_text(40);
        let item = good.len() / 40;
        assert!(loaded(&good, 4, 5 * item).is_some());
        let broken = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut text = good.clone();
            edit(&mut text);
            [1, 4].iter().all(|&parts| {
                [item / 2, 5 * item, text.len()]
                    .iter()
                    .all(|&window| loaded(&text, parts, window).is_none())
            })
        };
        // The commas between interactions: the first, one in the middle, the last.
        let commas: Vec<usize> = memmem::find_iter(&good, b"},\n    {")
            .map(|at| at + 1)
            .collect();
        for at in [
            commas[0],
            commas[commas.len() / 2],
            commas[commas.len() - 1],
        ] {
            assert!(broken(&|t| t[at] = b' '), "comma at {at}");
        }
        // A trailing comma, a broken interaction, a broken top level.
        let close = memmem::rfind(&good, ARRAY_CLOSE).unwrap();
        assert!(broken(&|t| t.splice(close..close, *b",").for_each(drop)));
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
        assert!(loaded(&text, 2, text.len()).is_none());
        assert_eq!(depth(br#"{"a": "{[\"", "b": [{"#), Some(3));
        assert_eq!(depth(br#"{"a": "unterminated"#), None);
    }

    #[test]
    fn foreign_layouts_are_not_split() {
        let value: serde_json::Value = serde_json::from_slice(&cassette_text(3)).unwrap();
        let compact = serde_json::to_vec(&value).unwrap();
        assert!(loaded(&compact, 2, compact.len()).is_none());
    }
}
