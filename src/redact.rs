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

/// The secret values of an environment, each with the variable it came from.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Longest value first, so a secret containing another is replaced whole.
    pairs: Vec<(String, String)>,
}

impl Secrets {
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Secrets {
        let mut pairs: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(name, value)| is_secret_name(name) && value.len() >= MIN_SECRET_LEN)
            .collect();
        pairs.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        pairs.dedup_by(|a, b| a.1 == b.1);
        Secrets { pairs }
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Replace every secret value in `s` by `${NAME}`; `None` when nothing changed.
    pub fn redact_str(&self, s: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for (name, value) in &self.pairs {
            let current = out.as_deref().unwrap_or(s);
            if current.contains(value.as_str()) {
                out = Some(current.replace(value.as_str(), &format!("${{{name}}}")));
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
    fn scan_ignores_ordinary_text_and_redacted_placeholders() {
        let v = json!({
            "content": "Ask the task-runner about sk-short and ${OPENAI_API_KEY}",
            "id": "chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
            "call": "call_abcdefghijklmnopqrstuvwxyz"
        });
        assert_eq!(scan(&v), None);
    }
}
