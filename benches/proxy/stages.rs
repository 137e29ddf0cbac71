//! Where replay's time goes, in process and single-threaded: the steps agentproxy takes for
//! every request body before it can look the key up (parse, redact, normalize, hash, free),
//! each timed per request over the workload, beside floors for comparison (only hashing the
//! raw bytes; only validating the JSON), and the digest a byte-identical request is found
//! by instead.
//!
//! These are the library's public functions in the order `proxy::api` calls them on the
//! `Value` path; then the same key from the bytes (`matching::key_of_bytes`, what replay
//! does first for a request that is not byte-identical to its recording), for the
//! workload's compact text and for the same requests spelled otherwise.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;

use agentproxy::cassette::Body;
use agentproxy::matching::{key, key_of_bytes, normalize, request_key};
use agentproxy::redact::Secrets;

#[derive(Default, Clone, Copy)]
struct Times {
    parse: Duration,
    redact: Duration,
    key: Duration,
    free: Duration,
}

const ROUTE: &str = "openai.chat";
const PATH: &str = "/v1/chat/completions";

/// The key the `Value` path gives a body.
fn value_key(body: &[u8], secrets: &Secrets, rules: &normalize::Rules) -> String {
    let mut v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    secrets.redact_value(&mut v);
    let body = Body::Json(v.into());
    request_key(ROUTE, "POST", PATH, Some(&body), rules)
}

/// Print µs per request for each step, over at least `min_time` of repetitions; fails
/// when a key from the bytes differs from the `Value` path's.
pub fn run(bodies: &[Bytes], respelled: &[Bytes], min_time: Duration) -> Result<(), String> {
    let secrets = Secrets::from_vars([(
        "OPENAI_API_KEY".to_owned(),
        super::daemon::API_KEY.to_owned(),
    )]);
    let rules = normalize::Rules::default();
    let bytes: usize = bodies.iter().map(Bytes::len).sum();
    // Each step's figure is its fastest pass: the machine is shared, and a pass another
    // process interrupted says nothing about agentproxy.
    let mut best: Option<Times> = None;
    let mut passes = 0u32;
    let started = Instant::now();
    let mut sink = 0usize;
    while passes < 3 || started.elapsed() < min_time {
        let mut t = Times::default();
        for b in bodies {
            let t0 = Instant::now();
            let mut v: Value = serde_json::from_slice(b).unwrap_or(Value::Null);
            let t1 = Instant::now();
            secrets.redact_value(&mut v);
            let t2 = Instant::now();
            let body = Body::Json(v.into());
            let k = request_key(ROUTE, "POST", PATH, Some(&body), &rules);
            let t3 = Instant::now();
            sink += k.len();
            drop(body);
            let t4 = Instant::now();
            t.parse += t1 - t0;
            t.redact += t2 - t1;
            t.key += t3 - t2;
            t.free += t4 - t3;
        }
        best = Some(match best {
            None => t,
            Some(b) => Times {
                parse: b.parse.min(t.parse),
                redact: b.redact.min(t.redact),
                key: b.key.min(t.key),
                free: b.free.min(t.free),
            },
        });
        passes += 1;
    }
    let t = best.unwrap_or_default();
    let n = bodies.len() as f64;
    let per = |d: Duration| d.as_secs_f64() * 1e6 / n;
    let mbps = |d: Duration| bytes as f64 / d.as_secs_f64().max(1e-9) / 1e6;
    let sha256 = rules.clone().hashed_with(key::KeyHash::Sha256);
    for (body, other) in bodies.iter().zip(respelled) {
        for (rules, by_value) in [
            (&rules, value_key(body, &secrets, &rules)),
            (&sha256, value_key(body, &secrets, &sha256)),
        ] {
            for b in [body, other] {
                let by_bytes =
                    key_of_bytes(ROUTE, ("POST", PATH), b, &secrets, rules).map(|(k, _)| k);
                if by_bytes.as_ref() != Some(&by_value) {
                    return Err(format!(
                    "the key from the bytes ({by_bytes:?}) is not the Value path's ({by_value}) for {}",
                    String::from_utf8_lossy(b)
                ));
                }
            }
        }
    }
    // For comparison: normalizing by copy (what match rules need), the floors, and the key
    // from the bytes.
    let (mut norm, mut raw, mut validate, mut digest) =
        (Duration::MAX, Duration::MAX, Duration::MAX, Duration::MAX);
    let (mut from_bytes, mut from_respelled) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        let (mut a, mut b, mut c, mut d) = (
            Duration::ZERO,
            Duration::ZERO,
            Duration::ZERO,
            Duration::ZERO,
        );
        let (mut e, mut f) = (Duration::ZERO, Duration::ZERO);
        for (body, other) in bodies.iter().zip(respelled) {
            let t0 = Instant::now();
            sink += key_of_bytes(ROUTE, ("POST", PATH), body, &secrets, &rules)
                .map_or(0, |k| k.0.len());
            let t1 = Instant::now();
            sink += key_of_bytes(ROUTE, ("POST", PATH), other, &secrets, &rules)
                .map_or(0, |k| k.0.len());
            e += t1 - t0;
            f += t1.elapsed();
        }
        from_bytes = from_bytes.min(e);
        from_respelled = from_respelled.min(f);
        for body in bodies {
            let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let t0 = Instant::now();
            let nv = normalize::normalize(&v, &rules);
            drop(nv);
            let t1 = Instant::now();
            sink += key::key_raw(key::KeyHash::Sha256, ROUTE, body).len();
            let t2 = Instant::now();
            sink += usize::from(serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok());
            let t3 = Instant::now();
            sink = sink.wrapping_add(key::body_digest(body) as usize);
            let t4 = Instant::now();
            a += t1 - t0;
            b += t2 - t1;
            c += t3 - t2;
            d += t4 - t3;
        }
        norm = norm.min(a);
        raw = raw.min(b);
        validate = validate.min(c);
        digest = digest.min(d);
    }
    let total = t.parse + t.redact + t.key + t.free;
    println!(
        "\n0. replay's per-request work, in process, 1 thread, {} bodies (mean {:.1} KB), fastest of {passes} passes",
        bodies.len(),
        bytes as f64 / bodies.len() as f64 / 1024.0
    );
    println!("   step                                         | µs/request | MB/s");
    println!(
        "   parse body to serde_json::Value              | {:>10.1} | {:>5.0}",
        per(t.parse),
        mbps(t.parse)
    );
    println!(
        "   redact (1 secret in the environment)         | {:>10.1} |",
        per(t.redact)
    );
    println!(
        "   request_key (normalize, canonical XXH3-128)  | {:>10.1} | {:>5.0}",
        per(t.key),
        mbps(t.key)
    );
    println!(
        "   free the parsed body                         | {:>10.1} |",
        per(t.free)
    );
    println!(
        "   total                                        | {:>10.1} | {:>5.0}",
        per(total),
        mbps(total)
    );
    println!(
        "   (a copy of the body and its free: what normalize costs with match rules) | {:.1}",
        per(norm)
    );
    println!(
        "   floor: sha256 of the raw bytes only          | {:>10.1} | {:>5.0}",
        per(raw),
        mbps(raw)
    );
    println!(
        "   floor: validate JSON without building it     | {:>10.1} | {:>5.0}",
        per(validate),
        mbps(validate)
    );
    println!(
        "   instead, for a byte-identical request: XXH3-128 digest of the raw bytes | {:>5.1} | {:>5.0}",
        per(digest),
        mbps(digest)
    );
    println!(
        "   key from the bytes (matching::key_of_bytes), the same text | {:>5.1} | {:>5.0}",
        per(from_bytes),
        mbps(from_bytes)
    );
    println!(
        "   key from the bytes, spelled otherwise (keys reversed, spaces) | {:>5.1} |",
        per(from_respelled),
    );
    if sink == 0 {
        println!("   (nothing hashed)");
    }
    Ok(())
}
