//! A JSON value read from a cassette and parsed on first use.
//!
//! Loading a cassette keeps each body as its text (validated, not built), so a replay
//! starts without building trees it may never look at: a byte-identical request is served
//! without parsing its recording, and a response is parsed once, when it is first served.
//! While `store::load` parses, the text is a view into the file's buffer rather than a
//! copy (see [`with_source`]), or for a large cassette its place in the file, read when it
//! is used (see [`with_file`]).

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::error::CassetteError;
use super::source::Source;

/// What is being deserialized on this thread, if the caller shared it.
enum Window {
    /// A buffer the loaded text may stay a view into.
    Memory(Bytes),
    /// Bytes read from `source` at `base`, which the loaded text stays in.
    File {
        source: Arc<Source>,
        base: u64,
        start: usize,
        end: usize,
    },
}

thread_local! {
    static WINDOW: RefCell<Option<Window>> = const { RefCell::new(None) };
}

/// Run `parse` (a deserialization from `source`'s bytes) with the loaded bodies kept as
/// views into `source` instead of copies: a cassette then costs its file size once, not
/// twice.
pub fn with_source<T>(source: &Bytes, parse: impl FnOnce() -> T) -> T {
    within(Window::Memory(source.clone()), parse)
}

/// Run `parse` (a deserialization from `window`, the bytes of `source` from `base`) with
/// the loaded bodies kept as places in the file, read when they are used: a large
/// cassette's bodies then cost no memory until they are.
pub fn with_file<T>(
    source: &Arc<Source>,
    base: u64,
    window: &[u8],
    parse: impl FnOnce() -> T,
) -> T {
    let range = window.as_ptr_range();
    let window = Window::File {
        source: source.clone(),
        base,
        start: range.start as usize,
        end: range.end as usize,
    };
    within(window, parse)
}

fn within<T>(window: Window, parse: impl FnOnce() -> T) -> T {
    WINDOW.with(|w| *w.borrow_mut() = Some(window));
    let out = parse();
    WINDOW.with(|w| *w.borrow_mut() = None);
    out
}

/// Where loaded text is kept: a view or a place when it lies in the current window, else
/// a copy.
fn share(text: &str) -> Text {
    let (from, to) = (text.as_ptr() as usize, text.as_ptr() as usize + text.len());
    WINDOW.with(|w| match w.borrow().as_ref() {
        Some(Window::Memory(b))
            if b.as_ptr_range().start as usize <= from && to <= b.as_ptr_range().end as usize =>
        {
            Text::Memory(b.slice_ref(text.as_bytes()))
        }
        Some(Window::File {
            source,
            base,
            start,
            end,
        }) if *start <= from && to <= *end => Text::File {
            source: source.clone(),
            at: base + (from - start) as u64,
            len: text.len(),
        },
        _ => Text::Memory(Bytes::copy_from_slice(text.as_bytes())),
    })
}

/// A body's text: in memory, or in a large cassette's file.
#[derive(Clone)]
enum Text {
    Memory(Bytes),
    File {
        source: Arc<Source>,
        at: u64,
        len: usize,
    },
}

impl Text {
    fn bytes(&self) -> Result<Bytes, CassetteError> {
        match self {
            Text::Memory(b) => Ok(b.clone()),
            Text::File { source, at, len } => source.read(*at, *len),
        }
    }
}

/// Loaded text as a value. The text was validated when the cassette loaded, so only a
/// file changed since (said) or a number beyond f64 (which no recording writes) fails.
fn parse(text: &Text) -> Value {
    let parsed = text
        .bytes()
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()));
    parsed.unwrap_or_else(|e| {
        tracing::error!("a cassette body could not be read: {e}");
        Value::Null
    })
}

pub struct LazyJson {
    /// The text as loaded (valid JSON), or as [`LazyJson::compact`] wrote it; `None` for
    /// a value built in memory.
    raw: Option<Text>,
    value: OnceLock<Value>,
    /// `raw` is compact text written from a value, to be laid out like any value when
    /// saved (not the text of a cassette, which is saved as it was).
    compacted: bool,
}

impl LazyJson {
    /// The value, parsed from the loaded text on first use.
    pub fn get(&self) -> &Value {
        (self.value).get_or_init(|| self.raw.as_ref().map_or(Value::Null, parse))
    }

    /// The text as loaded from a cassette, or as [`LazyJson::compact`] wrote it; `None`
    /// for a value built in memory, and for text that could not be read (said).
    pub fn text(&self) -> Option<Bytes> {
        let text = self.raw.as_ref()?.bytes();
        text.inspect_err(|e| tracing::error!("a cassette body could not be read: {e}"))
            .ok()
    }

    /// The value without keeping it: parsed anew from the loaded text unless it was
    /// already parsed, so a pass over a whole cassette (`show`, `diff`) holds one body at a
    /// time instead of every body as a tree.
    pub fn get_transient(&self) -> std::borrow::Cow<'_, Value> {
        match (self.value.get(), &self.raw) {
            (Some(v), _) => std::borrow::Cow::Borrowed(v),
            (None, Some(raw)) => std::borrow::Cow::Owned(parse(raw)),
            (None, None) => std::borrow::Cow::Owned(Value::Null),
        }
    }

    /// The value as compact JSON text, to serve: the loaded text without its layout when
    /// there is one (no tree built), else the value serialized. For a cassette agentproxy
    /// wrote, the two are the same bytes (its keys sorted, its numbers and escapes as the
    /// serializer writes them); a body edited by hand is served as it was written (its key
    /// order, its number spellings), without its layout. Fails only when the text is in a
    /// file that changed since it loaded.
    pub fn compact_bytes(&self) -> Result<Bytes, CassetteError> {
        Ok(match (&self.raw, self.value.get()) {
            (Some(raw), _) if self.compacted => raw.bytes()?,
            (Some(raw), _) => Bytes::from(minify(&raw.bytes()?)),
            // Serializing a Value cannot fail: its map keys are strings.
            (None, Some(v)) => Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
            (None, None) => Bytes::from_static(b"null"),
        })
    }

    /// Keep the value as its compact text, parsed again when next used: a recording holds
    /// each body until the cassette is written, and the text is a fraction of the tree.
    /// Saved, it is laid out as the value would be.
    pub fn compact(&mut self) {
        if let (None, Some(v)) = (&self.raw, self.value.get()) {
            // Serializing a Value cannot fail: its map keys are strings.
            if let Ok(text) = serde_json::to_vec(v) {
                self.raw = Some(Text::Memory(Bytes::from(text)));
                self.value = OnceLock::new();
                self.compacted = true;
            }
        }
    }

    /// The value, for editing; the loaded text is dropped.
    pub fn get_mut(&mut self) -> &mut Value {
        self.get();
        self.raw = None;
        self.compacted = false;
        self.value.get_mut().expect("initialized by get")
    }

    /// The value, owned.
    pub fn into_value(mut self) -> Value {
        self.get();
        self.value.take().unwrap_or_default()
    }
}

impl From<Value> for LazyJson {
    fn from(v: Value) -> LazyJson {
        LazyJson {
            raw: None,
            value: OnceLock::from(v),
            compacted: false,
        }
    }
}

impl std::ops::Deref for LazyJson {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.get()
    }
}

impl std::ops::DerefMut for LazyJson {
    fn deref_mut(&mut self) -> &mut Value {
        self.get_mut()
    }
}

impl Clone for LazyJson {
    fn clone(&self) -> LazyJson {
        LazyJson {
            raw: self.raw.clone(),
            value: self.value.clone(),
            compacted: self.compacted,
        }
    }
}

impl PartialEq for LazyJson {
    fn eq(&self, other: &LazyJson) -> bool {
        self.get() == other.get()
    }
}

impl fmt::Debug for LazyJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.get(), f)
    }
}

impl Serialize for LazyJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Unparsed text goes back out as it came in: a re-saved cassette keeps its bytes.
        // Compacted text is laid out as its value, parsed for the while (a recording
        // written holds one body as a tree at a time).
        let loaded = match (&self.raw, self.value.get()) {
            (Some(raw), None) if !self.compacted => {
                Some(raw.bytes().map_err(serde::ser::Error::custom)?)
            }
            _ => None,
        };
        let text = loaded.as_deref().and_then(|t| std::str::from_utf8(t).ok());
        match text.and_then(|t| serde_json::from_str::<&RawValue>(t).ok()) {
            Some(raw) => raw.serialize(s),
            None => self.get_transient().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for LazyJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LazyJson, D::Error> {
        let raw = <&RawValue>::deserialize(d)?;
        Ok(LazyJson {
            raw: Some(share(raw.get())),
            value: OnceLock::new(),
            compacted: false,
        })
    }
}

/// JSON text without the whitespace between its tokens (strings are kept as they are).
fn minify(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for &b in text {
        if in_string {
            out.push(b);
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
            in_string = b == b'"';
            out.push(b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_loaded_body_is_served_as_its_value_serializes() {
        let values = [
            serde_json::json!({"a": [1, 2.5, -3e-7, {}], "b": {"c": null, "d": []}, "e": true}),
            serde_json::json!({"text": "spaces  inside, \"quotes\" and \\ back\\slashes\n\ttabs", "é": "ü ☃"}),
            serde_json::json!("a bare string with a \\\""),
            serde_json::json!([]),
        ];
        for v in values {
            let pretty = serde_json::to_vec_pretty(&v).unwrap();
            let loaded: LazyJson = serde_json::from_slice(&pretty).unwrap();
            assert!(loaded
                .text()
                .is_some_and(|t| t.contains(&b'\n') || !pretty.contains(&b'\n')));
            assert_eq!(
                loaded.compact_bytes().unwrap(),
                serde_json::to_vec(&v).unwrap(),
                "{v}"
            );
        }
    }

    #[test]
    fn parses_on_first_use_and_compares_by_value() {
        let loaded: LazyJson = serde_json::from_str(r#"{ "b": [1, 2], "a": "x" }"#).unwrap();
        assert!(loaded.value.get().is_none());
        assert_eq!(loaded.get(), &json!({"a": "x", "b": [1, 2]}));
        assert_eq!(loaded, LazyJson::from(json!({"b": [1, 2], "a": "x"})));
    }

    #[test]
    fn a_compacted_value_is_kept_as_text_and_saved_laid_out_as_the_value() {
        let value = json!({"z": [1, {"b": "x\u{e9}"}], "a": null,
            "f": [0.30000000000000004, 1.2345678901234567, 2.638344616030823e-256, 1e300]});
        let mut lazy = LazyJson::from(value.clone());
        lazy.compact();
        assert!(lazy.value.get().is_none());
        let text = r#"{"a":null,"f":[0.30000000000000004,1.2345678901234567,2.638344616030823e-256,1e+300],"z":[1,{"b":"xé"}]}"#;
        assert_eq!(lazy.text().as_deref(), Some(text.as_bytes()));
        assert_eq!(
            serde_json::to_string_pretty(&lazy).unwrap(),
            serde_json::to_string_pretty(&value).unwrap()
        );
        // Writing it parsed it for the while only.
        assert!(lazy.value.get().is_none());
        assert_eq!(lazy.get(), &value);
        // Text loaded from a cassette is not compacted again.
        let mut loaded: LazyJson = serde_json::from_str("{ \"a\": 1 }").unwrap();
        loaded.compact();
        assert_eq!(serde_json::to_string(&loaded).unwrap(), "{ \"a\": 1 }");
    }

    #[test]
    fn unparsed_text_is_written_back_verbatim() {
        let text = "{\n  \"z\": 1,\n  \"a\": 2\n}";
        let loaded: LazyJson = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&loaded).unwrap(), text);
        // Once parsed, it serializes as a value.
        loaded.get();
        assert_eq!(serde_json::to_string(&loaded).unwrap(), r#"{"a":2,"z":1}"#);
    }

    #[test]
    fn edits_replace_the_loaded_text() {
        let mut loaded: LazyJson = serde_json::from_str(r#"{"a": 1}"#).unwrap();
        loaded.get_mut()["a"] = json!(2);
        assert_eq!(serde_json::to_string(&loaded).unwrap(), r#"{"a":2}"#);
        assert_eq!(loaded.clone().into_value(), json!({"a": 2}));
    }

    #[test]
    fn bodies_loaded_with_a_source_are_views_into_it() {
        let source = Bytes::from_static(br#"[{"a": 1}, {"b": 2}]"#);
        let loaded: Vec<LazyJson> =
            with_source(&source, || serde_json::from_slice(&source)).unwrap();
        let in_memory = |l: &LazyJson| match l.raw.as_ref() {
            Some(Text::Memory(b)) => b.clone(),
            _ => panic!("not in memory"),
        };
        let text = in_memory(&loaded[1]);
        assert_eq!(&text[..], br#"{"b": 2}"#);
        assert!(source.as_ptr_range().contains(&text.as_ptr()), "not a copy");
        // Without a source, the text is copied.
        let copied: LazyJson = serde_json::from_slice(&source[1..9]).unwrap();
        assert!(!source.as_ptr_range().contains(&in_memory(&copied).as_ptr()));
        assert_eq!(copied.get(), &serde_json::json!({"a": 1}));
    }

    #[test]
    fn bodies_loaded_with_a_file_are_read_from_it_when_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let text = br#"head [{"a": 1}, {"b": [2, 3]}] tail"#;
        std::fs::write(&path, text).unwrap();
        let source = Arc::new(Source::new(std::fs::File::open(&path).unwrap(), &path).unwrap());
        // A window of the file from byte 5, as a large cassette is loaded.
        let window = text[5..30].to_vec();
        let loaded: Vec<LazyJson> =
            with_file(&source, 5, &window, || serde_json::from_slice(&window)).unwrap();
        drop(window);
        assert!(matches!(loaded[1].raw, Some(Text::File { at: 16, .. })));
        assert_eq!(loaded[1].text().as_deref(), Some(&br#"{"b": [2, 3]}"#[..]));
        assert_eq!(&loaded[1].compact_bytes().unwrap()[..], br#"{"b":[2,3]}"#);
        assert_eq!(
            serde_json::to_string(&loaded[0]).unwrap(),
            r#"{"a": 1}"#,
            "written back as it was"
        );
        assert_eq!(loaded[0].get(), &json!({"a": 1}));
        // The file written in place: what is not yet read is refused, not read as other text.
        std::fs::write(&path, b"something else entirely, and longer than it was").unwrap();
        assert!(matches!(
            loaded[1].compact_bytes(),
            Err(CassetteError::Changed { .. })
        ));
        assert!(serde_json::to_string(&loaded[1]).is_err());
        assert_eq!(loaded[1].get(), &Value::Null);
        assert_eq!(
            loaded[0].get(),
            &json!({"a": 1}),
            "parsed before the change"
        );
    }

    #[test]
    fn invalid_json_is_refused_at_load() {
        assert!(serde_json::from_str::<LazyJson>(r#"{"a": }"#).is_err());
    }
}
