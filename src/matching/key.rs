//! The key of a request: a hash over its route and the canonical JSON of its normalized
//! body: XXH3-128 in cassettes recorded at format 2.0 and later, SHA-256 before.

use serde::Serialize;
use sha2::Digest;

/// How a cassette's keys are hashed. XXH3-128 (32 hex digits) from cassette format 2.0:
/// a key needs no cryptographic hash (for the same reason as [`body_digest`]), and SHA-256
/// was two fifths of keying a request. Cassettes recorded before keep SHA-256 (64 hex
/// digits): a session keys its requests as its cassette's keys are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyHash {
    #[default]
    Xxh3,
    Sha256,
}

impl KeyHash {
    /// The hash these keys were made with, told by their length (none: the default);
    /// `None` when they mix kinds or are of neither.
    pub fn of<'a>(mut keys: impl Iterator<Item = &'a str>) -> Option<KeyHash> {
        let kind = |k: &str| match k.len() {
            32 => Some(KeyHash::Xxh3),
            64 => Some(KeyHash::Sha256),
            _ => None,
        };
        let Some(first) = keys.next() else {
            return Some(KeyHash::default());
        };
        let hash = kind(first)?;
        keys.all(|k| kind(k) == Some(hash)).then_some(hash)
    }

    /// The hash of `scope`, a newline and `body`, in hex.
    fn hex(self, scope: &str, body: &[u8]) -> String {
        match self {
            KeyHash::Xxh3 => {
                let mut h = xxhash_rust::xxh3::Xxh3::new();
                h.update(scope.as_bytes());
                h.update(b"\n");
                h.update(body);
                digest_hex(h.digest128())
            }
            KeyHash::Sha256 => {
                let mut h = sha2::Sha256::new();
                h.update(scope.as_bytes());
                h.update(b"\n");
                h.update(body);
                hex(&h.finalize())
            }
        }
    }
}

/// The hash of `route`, a newline and the canonical JSON of `normalized`, in hex.
///
/// `serde_json` is built without `preserve_order`, so object keys serialize sorted and
/// compactly: the serialization *is* the canonical form, whatever order the SDK used.
pub fn key<T: Serialize + ?Sized>(hash: KeyHash, route: &str, normalized: &T) -> String {
    // Serialize into one buffer and hash it at once: the serializer writes a few bytes at a
    // time, and feeding those to the hasher one by one costs more than the copy.
    // Serializing a JSON value into memory cannot fail.
    let mut buf = Vec::with_capacity(16 * 1024);
    let _ = serde_json::to_writer(&mut buf, normalized);
    hash.hex(route, &buf)
}

/// [`key`] of a body whose canonical JSON is `canonical` (see [`super::canonical`]).
pub fn key_of_canonical(hash: KeyHash, route: &str, canonical: &[u8]) -> String {
    hash.hex(route, canonical)
}

/// The digest of a request body's bytes exactly as sent (XXH3, 128 bits): a request whose
/// digest is a recording's is byte-identical to it, so replay can serve it without parsing
/// it. Not a cryptographic hash, and it needs not be: the odds of two different bodies
/// colliding by accident are about n²/2¹²⁹ (1 in 10²⁷ for a million recordings), and a
/// body built to collide could only get a program a recording it could ask for anyway.
pub fn body_digest(bytes: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(bytes)
}

/// A digest as stored in a cassette: 32 hex digits.
pub fn digest_hex(digest: u128) -> String {
    format!("{digest:032x}")
}

/// A stored digest, if it is one.
pub fn parse_digest(hex: &str) -> Option<u128> {
    (hex.len() == 32)
        .then(|| u128::from_str_radix(hex, 16).ok())
        .flatten()
}

/// Key of a body that is not JSON: route, then the raw bytes.
pub fn key_raw(hash: KeyHash, route: &str, bytes: &[u8]) -> String {
    hash.hex(route, bytes)
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 0xf) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a: Value =
            serde_json::from_str(r#"{"model":"m","messages":[{"role":"user","content":"hi °"}]}"#)
                .unwrap();
        let b: Value = serde_json::from_str("{ \"messages\" : [ {\"content\":\"hi \\u00b0\", \"role\":\"user\"} ],\n \"model\":\"m\" }").unwrap();
        for hash in [KeyHash::Xxh3, KeyHash::Sha256] {
            assert_eq!(key(hash, "openai.chat", &a), key(hash, "openai.chat", &b));
        }
    }

    #[test]
    fn route_and_values_matter() {
        let a = serde_json::json!({"model": "m"});
        let b = serde_json::json!({"model": "n"});
        for hash in [KeyHash::Xxh3, KeyHash::Sha256] {
            assert_ne!(key(hash, "openai.chat", &a), key(hash, "openai.chat", &b));
            assert_ne!(key(hash, "openai.chat", &a), key(hash, "http", &a));
        }
        assert_eq!(key(KeyHash::Xxh3, "r", &a).len(), 32);
        assert_eq!(key(KeyHash::Sha256, "r", &a).len(), 64);
    }

    #[test]
    fn digests_round_trip_through_hex() {
        let d = body_digest(b"{}");
        assert_ne!(d, body_digest(b"{ }"), "whitespace is part of the bytes");
        let hex = digest_hex(d);
        assert_eq!(hex.len(), 32);
        assert_eq!(parse_digest(&hex), Some(d));
        assert_eq!(digest_hex(1), "00000000000000000000000000000001");
        assert_eq!(parse_digest("xyz"), None);
        assert_eq!(parse_digest(&"g".repeat(32)), None);
    }

    #[test]
    fn raw_key_matches_known_digest() {
        // printf 'r\nabc' | sha256sum
        assert_eq!(
            key_raw(KeyHash::Sha256, "r", b"abc"),
            "124554ec7bcb0ffe2eca559f0e2461f7a2495b4a6491ba46def9d852d157f0c2"
        );
        // printf 'r\nabc' | xxhsum -H128
        assert_eq!(
            key_raw(KeyHash::Xxh3, "r", b"abc"),
            digest_hex(xxhash_rust::xxh3::xxh3_128(b"r\nabc"))
        );
    }

    #[test]
    fn a_cassettes_hash_is_told_by_its_keys() {
        let (x, s) = ("a".repeat(32), "b".repeat(64));
        assert_eq!(KeyHash::of([].into_iter()), Some(KeyHash::Xxh3));
        assert_eq!(
            KeyHash::of([x.as_str(), x.as_str()].into_iter()),
            Some(KeyHash::Xxh3)
        );
        assert_eq!(KeyHash::of([s.as_str()].into_iter()), Some(KeyHash::Sha256));
        assert_eq!(KeyHash::of([x.as_str(), s.as_str()].into_iter()), None);
        assert_eq!(KeyHash::of(["short"].into_iter()), None);
    }
}
