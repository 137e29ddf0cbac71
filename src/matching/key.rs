//! The key of a request: sha256 over its route and the canonical JSON of its normalized body.

use serde::Serialize;
use sha2::{Digest, Sha256};

/// Hex sha256 of `route`, a newline and the canonical JSON of `normalized`.
///
/// `serde_json` is built without `preserve_order`, so object keys serialize sorted and
/// compactly: the serialization *is* the canonical form, whatever order the SDK used.
pub fn key<T: Serialize + ?Sized>(route: &str, normalized: &T) -> String {
    let mut h = Sha256::new();
    h.update(route.as_bytes());
    h.update(b"\n");
    // Serialize into one buffer and hash it at once: the serializer writes a few bytes at a
    // time, and feeding those to the hasher one by one costs more than the copy.
    // Serializing a JSON value into memory cannot fail.
    let mut buf = Vec::with_capacity(16 * 1024);
    let _ = serde_json::to_writer(&mut buf, normalized);
    h.update(&buf);
    hex(&h.finalize())
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
pub fn key_raw(route: &str, bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(route.as_bytes());
    h.update(b"\n");
    h.update(bytes);
    hex(&h.finalize())
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
        assert_eq!(key("openai.chat", &a), key("openai.chat", &b));
    }

    #[test]
    fn route_and_values_matter() {
        let a = serde_json::json!({"model": "m"});
        let b = serde_json::json!({"model": "n"});
        assert_ne!(key("openai.chat", &a), key("openai.chat", &b));
        assert_ne!(key("openai.chat", &a), key("http", &a));
        assert_eq!(key("r", &a).len(), 64);
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
            key_raw("r", b"abc"),
            "124554ec7bcb0ffe2eca559f0e2461f7a2495b4a6491ba46def9d852d157f0c2"
        );
    }
}
