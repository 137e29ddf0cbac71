//! A cheap sketch of a JSON body, to find a miss's nearest recording without building
//! every recording's tree: the sorted hashes of its leaves, each hashed with its path.
//! Built by streaming over the text (nothing is allocated per value) or by walking a
//! value; both give the same sketch for the same JSON. Two sketches are compared by the
//! leaves one has and the other lacks, which tracks the near-miss report's own distance
//! (differing leaves) closely enough to pick the few candidates it then measures exactly.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The sorted leaf hashes of one body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sketch(Vec<u32>);

impl Sketch {
    /// The sketch of a JSON text; `None` when it is not JSON.
    pub fn of_text(json: &[u8]) -> Option<Sketch> {
        let mut leaves = Vec::new();
        let mut de = serde_json::Deserializer::from_slice(json);
        Walk {
            path: ROOT,
            out: &mut leaves,
        }
        .deserialize(&mut de)
        .ok()?;
        de.end().ok()?;
        Some(Sketch::sorted(leaves))
    }

    /// The sketch of a value.
    pub fn of_value(value: &Value) -> Sketch {
        fn walk(value: &Value, path: u64, out: &mut Vec<u32>) {
            match value {
                Value::Object(map) if !map.is_empty() => {
                    for (k, v) in map {
                        walk(v, child(path, k.as_bytes()), out);
                    }
                }
                Value::Array(items) if !items.is_empty() => {
                    for (i, v) in items.iter().enumerate() {
                        walk(v, child(path, &(i as u64).to_le_bytes()), out);
                    }
                }
                Value::Object(_) => out.push(leaf(path, b"{}")),
                Value::Array(_) => out.push(leaf(path, b"[]")),
                Value::Null => out.push(leaf(path, b"n")),
                Value::Bool(b) => out.push(leaf(path, if *b { b"t" } else { b"f" })),
                Value::String(s) => out.push(string_leaf(path, s)),
                Value::Number(n) => out.push(number_leaf(path, n)),
            }
        }
        let mut leaves = Vec::new();
        walk(value, ROOT, &mut leaves);
        Sketch::sorted(leaves)
    }

    fn sorted(mut leaves: Vec<u32>) -> Sketch {
        leaves.sort_unstable();
        Sketch(leaves)
    }

    /// The leaves one sketch has and the other lacks (counted with repeats).
    pub fn distance(&self, other: &Sketch) -> usize {
        let (a, b) = (&self.0, &other.0);
        let (mut i, mut j, mut shared) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    shared += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        a.len() + b.len() - 2 * shared
    }
}

const ROOT: u64 = 0x9e37_79b9_7f4a_7c15;

fn child(path: u64, step: &[u8]) -> u64 {
    xxh3_64_with_seed(step, path)
}

fn leaf(path: u64, bytes: &[u8]) -> u32 {
    // The high half: xxh3's bits are all good.
    (xxh3_64_with_seed(bytes, path) >> 32) as u32
}

fn string_leaf(path: u64, s: &str) -> u32 {
    leaf(path ^ 0x5, s.as_bytes())
}

fn number_leaf(path: u64, n: &serde_json::Number) -> u32 {
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => leaf(path ^ 0x1, &u.to_le_bytes()),
        (None, Some(i)) => leaf(path ^ 0x2, &i.to_le_bytes()),
        _ => leaf(
            path ^ 0x3,
            &n.as_f64().unwrap_or(0.0).to_bits().to_le_bytes(),
        ),
    }
}

/// Streams over one value of the text, pushing its leaves' hashes.
struct Walk<'o> {
    path: u64,
    out: &'o mut Vec<u32>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.push(leaf(self.path, b"n"));
        Ok(())
    }

    fn visit_bool<E>(self, b: bool) -> Result<(), E> {
        self.out.push(leaf(self.path, if b { b"t" } else { b"f" }));
        Ok(())
    }

    fn visit_u64<E>(self, u: u64) -> Result<(), E> {
        self.out.push(number_leaf(self.path, &u.into()));
        Ok(())
    }

    fn visit_i64<E>(self, i: i64) -> Result<(), E> {
        self.out.push(number_leaf(self.path, &i.into()));
        Ok(())
    }

    fn visit_f64<E>(self, f: f64) -> Result<(), E> {
        let n = serde_json::Number::from_f64(f).unwrap_or_else(|| 0.into());
        self.out.push(number_leaf(self.path, &n));
        Ok(())
    }

    fn visit_str<E>(self, s: &str) -> Result<(), E> {
        self.out.push(string_leaf(self.path, s));
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut empty = true;
        while let Some(key) = map.next_key::<KeyPath>()? {
            empty = false;
            let path = child(self.path, key.0.as_bytes());
            map.next_value_seed(Walk {
                path,
                out: &mut *self.out,
            })?;
        }
        if empty {
            self.out.push(leaf(self.path, b"{}"));
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i: u64 = 0;
        loop {
            let path = child(self.path, &i.to_le_bytes());
            let walk = Walk {
                path,
                out: &mut *self.out,
            };
            if seq.next_element_seed(walk)?.is_none() {
                break;
            }
            i += 1;
        }
        if i == 0 {
            self.out.push(leaf(self.path, b"[]"));
        }
        Ok(())
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct KeyPath<'de>(std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for KeyPath<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct Key;
        impl<'de> Visitor<'de> for Key {
            type Value = KeyPath<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<KeyPath<'de>, E> {
                Ok(KeyPath(std::borrow::Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<KeyPath<'de>, E> {
                Ok(KeyPath(std::borrow::Cow::Owned(s.to_owned())))
            }
        }
        de.deserialize_str(Key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_and_value_give_the_same_sketch() {
        let v = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "caf\u{e9} \"q\""}],
            "n": 1, "t": -2, "p": 0.5, "x": null, "ok": true, "e": {}, "a": []});
        let text = serde_json::to_vec_pretty(&v).unwrap();
        assert_eq!(Sketch::of_text(&text), Some(Sketch::of_value(&v)));
        assert_eq!(
            Sketch::of_text(b"{\"k\\u0065y\": 1}"),
            Some(Sketch::of_value(&json!({"key": 1})))
        );
        assert_eq!(Sketch::of_text(b"{not json"), None);
        assert_eq!(Sketch::of_text(b"1 2"), None);
    }

    #[test]
    fn the_distance_counts_the_leaves_that_differ() {
        let a = Sketch::of_value(
            &json!({"messages": [{"content": "hi"}, {"content": "there"}], "model": "m"}),
        );
        let b = Sketch::of_value(
            &json!({"messages": [{"content": "hi"}, {"content": "you"}], "model": "m"}),
        );
        let c = Sketch::of_value(&json!({"messages": [{"content": "hi"}], "model": "m"}));
        assert_eq!(a.distance(&a), 0);
        // One leaf changed: it is in neither the other.
        assert_eq!(a.distance(&b), 2);
        assert_eq!(a.distance(&c), 1);
        // A value moved to another path is a different leaf.
        let moved = Sketch::of_value(&json!({"model": "hi"}));
        assert_eq!(
            Sketch::of_value(&json!({"other": "hi"})).distance(&moved),
            2
        );
    }
}
