//! Secrets: environment values written as `${NAME}`, and a scan for well-known key shapes
//! that refuses to let a cassette reach disk while it still holds one.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// Values shorter than this are not treated as secrets: replacing `"1"` everywhere would
/// corrupt the recording rather than protect anything.
const MIN_SECRET_LEN: usize = 8;

const SECRET_NAME_PARTS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];

/// Does an environment variable name look like it holds a secret?
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|p| upper.contains(p))
}

/// The secret values of an environment, each with the placeholder that replaces it.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// `(needle, replacement)`, longest needle first, so a secret containing another is
    /// replaced whole.
    pairs: Vec<(String, String)>,
}

/// `scheme://user:password@…`: the password of a URL-shaped value.
static URL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[A-Za-z][A-Za-z0-9+.\-]*://[^/@:\s]*:([^/@\s]+)@").expect("static regex")
});

/// What percent-encoding leaves alone in a query value (RFC 3986 unreserved).
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

impl Secrets {
    /// The secrets of an environment: the value of every variable whose name looks
    /// secret, as `${NAME}`, and of any variable holding a URL with a password (a
    /// `DATABASE_URL`, say): the whole URL as `${NAME}` and its password as
    /// `${NAME_PASSWORD}`. Each also in its percent-encoded form, as it appears in a query.
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Secrets {
        let mut pairs: Vec<(String, String)> = vec![];
        for (name, value) in vars {
            let password = URL_PASSWORD
                .captures(&value)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_owned());
            if let Some(pw) = password {
                // A short password is only safe to replace where it is one: in its URL.
                let placeholder = format!("${{{name}_PASSWORD}}");
                pairs.push((format!(":{pw}@"), format!(":{placeholder}@")));
                if pw.len() >= MIN_SECRET_LEN {
                    pairs.push((pw, placeholder));
                }
            } else if !is_secret_name(&name) {
                continue;
            }
            if value.len() >= MIN_SECRET_LEN {
                pairs.push((value, format!("${{{name}}}")));
            }
        }
        let encoded: Vec<(String, String)> = pairs
            .iter()
            .filter_map(|(needle, with)| {
                let e = percent_encoding::utf8_percent_encode(needle, QUERY_VALUE).to_string();
                (e != *needle).then(|| (e, with.clone()))
            })
            .collect();
        pairs.extend(encoded);
        pairs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.1.cmp(&b.1)));
        pairs.dedup_by(|a, b| a.0 == b.0);
        Secrets { pairs }
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Replace every secret value in `s` by its placeholder; `None` when nothing changed.
    pub fn redact_str(&self, s: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for (needle, with) in &self.pairs {
            let current = out.as_deref().unwrap_or(s);
            if current.contains(needle.as_str()) {
                out = Some(current.replace(needle.as_str(), with));
            }
        }
        out
    }

    /// Redact every string (and object key) inside a JSON value, in place; `true` when
    /// anything was replaced.
    pub fn redact_value(&self, v: &mut Value) -> bool {
        if self.pairs.is_empty() {
            return false;
        }
        match v {
            Value::String(s) => match self.redact_str(s) {
                Some(r) => {
                    *s = r;
                    true
                }
                None => false,
            },
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, i| self.redact_value(i) | changed),
            Value::Object(map) => {
                let needs_key_change = map.keys().any(|k| self.redact_str(k).is_some());
                if needs_key_change {
                    let old = std::mem::take(map);
                    for (k, val) in old {
                        map.insert(self.redact_str(&k).unwrap_or(k), val);
                    }
                }
                map.values_mut().fold(needs_key_change, |changed, i| {
                    self.redact_value(i) | changed
                })
            }
            _ => false,
        }
    }
}

/// Where a key-shaped value was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretHit {
    /// JSON pointer of the string holding it.
    pub pointer: String,
    pub kind: &'static str,
}

static KEY_SHAPES: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    [
        ("Anthropic API key", r"sk-ant-[A-Za-z0-9_\-]{20,}"),
        ("OpenAI API key", r"\bsk-[A-Za-z0-9_\-]{20,}"),
        ("AWS access key id", r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
        ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}"),
        ("GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{36,}"),
        ("Slack token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
        ("bearer token", r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{20,}=*"),
        (
            "GitHub fine-grained token",
            r"\bgithub_pat_[A-Za-z0-9_]{22,}",
        ),
        ("Stripe secret key", r"\b[sr]k_live_[A-Za-z0-9]{16,}"),
        ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
        (
            "JSON web token",
            r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        ),
        ("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ]
    .into_iter()
    .map(|(kind, re)| (kind, Regex::new(re).expect("static key-shape regex")))
    .collect()
});

/// The first key-shaped string in `v`, depth first.
pub fn scan(v: &Value) -> Option<SecretHit> {
    fn walk(v: &Value, pointer: &mut String) -> Option<SecretHit> {
        match v {
            Value::String(s) => shape_of(s).map(|kind| SecretHit {
                pointer: pointer.clone(),
                kind,
            }),
            Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                let len = pointer.len();
                pointer.push_str(&format!("/{i}"));
                let hit = walk(item, pointer);
                pointer.truncate(len);
                hit
            }),
            Value::Object(map) => map.iter().find_map(|(k, item)| {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                let hit = shape_of(k)
                    .map(|kind| SecretHit {
                        pointer: pointer.clone(),
                        kind,
                    })
                    .or_else(|| walk(item, pointer));
                pointer.truncate(len);
                hit
            }),
            _ => None,
        }
    }
    walk(v, &mut String::new())
}

fn shape_of(s: &str) -> Option<&'static str> {
    KEY_SHAPES
        .iter()
        .find(|(_, re)| re.is_match(s))
        .map(|(kind, _)| *kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secrets() -> Secrets {
        Secrets::from_vars([
            ("OPENAI_API_KEY".into(), "sk-live-0123456789abcdef".into()),
            ("MY_TOKEN".into(), "tok-abcdefgh".into()),
            ("HOME".into(), "/home/someone-long".into()),
            ("SHORT_KEY".into(), "abc".into()),
        ])
    }

    #[test]
    fn names_that_look_secret() {
        assert!(is_secret_name("OPENAI_API_KEY"));
        assert!(is_secret_name("github_token"));
        assert!(is_secret_name("DB_PASSWORD"));
        assert!(is_secret_name("GOOGLE_APPLICATION_CREDENTIALS"));
        assert!(!is_secret_name("HOME"));
        assert!(!is_secret_name("PATH"));
    }

    #[test]
    fn redacts_values_everywhere_but_not_short_or_non_secret_ones() {
        let mut v = json!({
            "messages": [{"content": "my key is sk-live-0123456789abcdef, token tok-abcdefgh"}],
            "home": "/home/someone-long",
            "abc": "abc",
            "tok-abcdefgh": 1
        });
        assert!(secrets().redact_value(&mut v));
        assert_eq!(
            v,
            json!({
                "messages": [{"content": "my key is ${OPENAI_API_KEY}, token ${MY_TOKEN}"}],
                "home": "/home/someone-long",
                "abc": "abc",
                "${MY_TOKEN}": 1
            })
        );
        assert!(!secrets().redact_value(&mut v), "nothing left to replace");
    }

    #[test]
    fn scan_finds_key_shapes_with_their_path() {
        let v =
            json!({"a": [{"b": "ok"}, {"c": "Authorization: Bearer abcdefghijklmnopqrstuvwxyz"}]});
        assert_eq!(
            scan(&v),
            Some(SecretHit {
                pointer: "/a/1/c".into(),
                kind: "bearer token"
            })
        );
        let v = json!({"k": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"});
        assert_eq!(scan(&v).unwrap().kind, "Anthropic API key");
        assert_eq!(
            scan(&json!({"k": "AKIAIOSFODNN7EXAMPLE"})).unwrap().kind,
            "AWS access key id"
        );
    }

    #[test]
    fn scan_finds_the_newer_key_shapes() {
        for (text, kind) in [
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "JSON web token",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "GitHub fine-grained token",
            ),
            ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "Stripe secret key"),
            ("hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "Hugging Face token"),
            ("-----BEGIN RSA PRIVATE KEY-----\nMIIE...", "private key"),
            ("-----BEGIN PRIVATE KEY-----", "private key"),
        ] {
            assert_eq!(scan(&json!({"k": text})).map(|h| h.kind), Some(kind), "{text}");
        }
        assert_eq!(scan(&json!({"k": "-----BEGIN PUBLIC KEY-----"})), None);
    }

    #[test]
    fn url_passwords_are_redacted_whatever_the_variable_is_called() {
        let s = Secrets::from_vars([
            (
                "DATABASE_URL".into(),
                "postgres://app:pw@db.internal:5432/main".into(),
            ),
            (
                "CACHE_URL".into(),
                "redis://:longerpassword@cache:6379".into(),
            ),
            ("HOMEPAGE".into(), "https://example.org/a:b@c".into()),
        ]);
        assert_eq!(
            s.redact_str("connect to postgres://app:pw@db.internal:5432/main now")
                .unwrap(),
            "connect to ${DATABASE_URL} now"
        );
        assert_eq!(
            s.redact_str("user app:pw@db.internal").unwrap(),
            "user app:${DATABASE_URL_PASSWORD}@db.internal"
        );
        assert_eq!(
            s.redact_str("the pw is short"),
            None,
            "a short password alone stays"
        );
        assert_eq!(
            s.redact_str("password longerpassword").unwrap(),
            "password ${CACHE_URL_PASSWORD}"
        );
        assert_eq!(s.redact_str("https://example.org/a:b@c"), None);
    }

    #[test]
    fn percent_encoded_values_are_redacted_too() {
        let s = Secrets::from_vars([("DB_PASSWORD".into(), "p@ss/w0rd+x".into())]);
        assert_eq!(
            s.redact_str("/v1/x?pw=p%40ss%2Fw0rd%2Bx&y=1").unwrap(),
            "/v1/x?pw=${DB_PASSWORD}&y=1"
        );
        assert_eq!(
            s.redact_str("raw p@ss/w0rd+x").unwrap(),
            "raw ${DB_PASSWORD}"
        );
    }

    #[test]
    fn scan_ignores_ordinary_text_and_redacted_placeholders() {
        let v = json!({
            "content": "Ask the task-runner about sk-short and ${OPENAI_API_KEY}",
            "id": "chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
            "call": "call_abcdefghijklmnopqrstuvwxyz"
        });
        assert_eq!(scan(&v), None);
    }
}
