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

impl Secrets {
    /// [`Secrets::from_vars`] of this process's environment. A variable whose name or
    /// value is not UTF-8 is passed over: it cannot be written in a JSON body, which
    /// `std::env::vars` would panic on.
    pub fn from_env() -> Secrets {
        Secrets::from_vars(std::env::vars_os().filter_map(|(name, value)| {
            Some((name.into_string().ok()?, value.into_string().ok()?))
        }))
    }

    /// The secrets of an environment: the value of every variable whose name looks
    /// secret, as `${NAME}`, and of any variable holding a URL with a password (a
    /// `DATABASE_URL`, say): the whole URL as `${NAME}` and its password as
    /// `${NAME_PASSWORD}`.
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
        Secrets::sorted(pairs)
    }

    /// `pairs` longest needle first, each needle once.
    fn sorted(mut pairs: Vec<(String, String)>) -> Secrets {
        pairs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.1.cmp(&b.1)));
        pairs.dedup_by(|a, b| a.0 == b.0);
        Secrets { pairs }
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The secrets of a command line (`args[0]` the program), under names that start with
    /// `prefix`: a URL with a password (`postgres://app:s3cret@db/app`) as `${PREFIX_ARG2}`,
    /// numbered as in `argv` (its password as `${PREFIX_ARG2_PASSWORD}`), and the value of a flag whose name looks secret
    /// (`--api-key VALUE`, `--token=VALUE`) as `${PREFIX_API_KEY}`.
    pub fn from_args(prefix: &str, args: &[String]) -> Secrets {
        let mut vars = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            if let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) {
                let (name, value) = match flag.split_once('=') {
                    Some((name, value)) => (name, Some(value)),
                    None => (flag, args.get(i + 1).map(String::as_str)),
                };
                let name = name.to_ascii_uppercase().replace('-', "_");
                if let (true, Some(value)) = (is_secret_name(&name), value) {
                    vars.push((format!("{prefix}_{name}"), value.to_owned()));
                }
            }
            vars.push((format!("{prefix}_ARG{i}"), arg.clone()));
        }
        // Only the URLs of the positional entries count: `from_vars` keeps an `ARG` value
        // only for its password, since its name does not look secret.
        Secrets::from_vars(vars)
    }

    /// These secrets and `other`'s.
    pub fn and(mut self, other: Secrets) -> Secrets {
        self.pairs.extend(other.pairs);
        Secrets::sorted(self.pairs)
    }

    /// Could a secret value be in the strings of `json`, a JSON text as serde_json writes
    /// it (escaping only quotes, backslashes and control characters)? `false` only when
    /// none can: no secret holds a character serde_json escapes, and none appears in the
    /// text as it is (a decoded string's other characters are in the text as they are).
    pub fn may_be_in_json(&self, json: &[u8]) -> bool {
        self.pairs.iter().any(|(needle, _)| {
            needle.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)
                || memchr::memmem::find(json, needle.as_bytes()).is_some()
        })
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

    /// Redact a request's path and query: the path as text, and each query parameter as
    /// it decodes (percent-encoding in any spelling, `+` as a space), so a secret is found
    /// however the client encoded it. A parameter that held one is stored decoded, with
    /// the placeholder: `pw=${DB_PASSWORD}`. `None` when nothing changed.
    pub fn redact_path(&self, path_and_query: &str) -> Option<String> {
        if self.pairs.is_empty() {
            return None;
        }
        let Some((path, query)) = path_and_query.split_once('?') else {
            // No query (the usual request): no copy unless a secret is there.
            return self.redact_str(path_and_query);
        };
        let mut changed = false;
        let mut out = match self.redact_str(path) {
            Some(r) => {
                changed = true;
                r
            }
            None => path.to_owned(),
        };
        let params: Vec<String> = query
            .split('&')
            .map(|param| {
                let spaced = param.replace('+', " ");
                let decoded = percent_encoding::percent_decode_str(&spaced).decode_utf8_lossy();
                match self.redact_str(&decoded) {
                    Some(r) => {
                        changed = true;
                        r
                    }
                    None => param.to_owned(),
                }
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
        changed.then_some(out)
    }

    /// Does a secret value appear once the strings of these stream events are joined as a
    /// client joins deltas? The string at each JSON pointer (say
    /// `/choices/0/delta/content`) is concatenated across the events in order; events
    /// that are not JSON are concatenated as text.
    pub fn split_across<'a>(&self, events: impl IntoIterator<Item = &'a str>) -> bool {
        if self.pairs.is_empty() {
            return false;
        }
        fn leaves(v: &Value, pointer: &mut String, out: &mut Vec<(String, String)>) {
            match v {
                Value::String(s) => out.push((pointer.clone(), s.clone())),
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let len = pointer.len();
                        pointer.push_str(&format!("/{i}"));
                        leaves(item, pointer, out);
                        pointer.truncate(len);
                    }
                }
                Value::Object(map) => {
                    for (k, item) in map {
                        let len = pointer.len();
                        pointer.push('/');
                        pointer.push_str(k);
                        leaves(item, pointer, out);
                        pointer.truncate(len);
                    }
                }
                _ => {}
            }
        }
        let mut joined: std::collections::HashMap<String, String> = Default::default();
        for data in events {
            let mut found = Vec::new();
            match serde_json::from_str::<Value>(data) {
                Ok(v) => leaves(&v, &mut String::new(), &mut found),
                Err(_) => found.push(("text".to_owned(), data.to_owned())),
            }
            for (pointer, text) in found {
                joined.entry(pointer).or_default().push_str(&text);
            }
        }
        joined.values().any(|text| self.redact_str(text).is_some())
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
    fn a_secret_split_over_deltas_is_found_in_the_joined_strings() {
        let s = Secrets::from_vars([("DB_PASSWORD".into(), "Huntersecretpass".into())]);
        let events = [
            r#"{"id":"c1","choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"city\":\"Hun"}}]}}]}"#,
            r#"{"id":"c1","choices":[{"delta":{"tool_calls":[{"function":{"arguments":"tersecr"}}]}}]}"#,
            r#"{"id":"c1","choices":[{"delta":{"tool_calls":[{"function":{"arguments":"etpass\"}"}}]}}]}"#,
        ];
        assert!(s.split_across(events));
        assert!(!s.split_across(events[..2].iter().copied()));
        assert!(s.split_across(["plain Hunters", "ecretpass text"]));
        assert!(!s.split_across([r#"{"a":"Hunter"}"#, r#"{"b":"secretpass"}"#]));
    }

    #[test]
    fn query_values_are_redacted_however_they_were_encoded() {
        let s = Secrets::from_vars([("DB_PASSWORD".into(), "p@ss/w0rd x~*".into())]);
        for query in [
            "pw=p%40ss%2Fw0rd%20x~*",
            "pw=p%40ss%2Fw0rd+x%7E%2A",
            "pw=p%40ss%2fw0rd+x%7e*",
            "pw=p@ss/w0rd%20x~*",
        ] {
            assert_eq!(
                s.redact_path(&format!("/v1/x?{query}&y=1%2B")).as_deref(),
                Some("/v1/x?pw=${DB_PASSWORD}&y=1%2B"),
                "{query}"
            );
        }
        assert_eq!(s.redact_path("/v1/x?y=1"), None);
        let k = Secrets::from_vars([("API_TOKEN".into(), "tok_abcdefgh".into())]);
        assert_eq!(
            k.redact_path("/v1/files/tok_abcdefgh/content").as_deref(),
            Some("/v1/files/${API_TOKEN}/content")
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

    #[test]
    fn a_command_line_gives_up_its_urls_with_passwords_and_its_secret_flags() {
        let args: Vec<String> = [
            "--db",
            "postgres://app:s3cret-pass@db.test/app",
            "--api-key",
            "key-0123456789",
            "--token=tok-abcdefghij",
            "--verbose",
            "plain-argument-value",
        ]
        .map(str::to_owned)
        .to_vec();
        let s = Secrets::from_args("MCP_DB", &args);
        let text = "url postgres://app:s3cret-pass@db.test/app key key-0123456789 \
                    tok tok-abcdefghij pw s3cret-pass plain-argument-value";
        assert_eq!(
            s.redact_str(text).unwrap(),
            "url ${MCP_DB_ARG1} key ${MCP_DB_API_KEY} tok ${MCP_DB_TOKEN} \
             pw ${MCP_DB_ARG1_PASSWORD} plain-argument-value"
        );
        let both = secrets().and(s);
        assert_eq!(
            both.redact_str("sk-live-0123456789abcdef key-0123456789")
                .unwrap(),
            "${OPENAI_API_KEY} ${MCP_DB_API_KEY}"
        );
    }
}
