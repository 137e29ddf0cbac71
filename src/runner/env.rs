//! The environment injected into the program: where the proxy is, placeholder keys so SDKs
//! start offline, and the switches that stop SDK side traffic from going around the proxy.

/// Variables that stop known SDK side traffic which would bypass the proxy, set for a
/// replayed program unless it sets them itself.
pub const SIDE_TRAFFIC_SWITCHES: [(&str, &str, &str); 2] = [
    (
        "OPENAI_AGENTS_DISABLE_TRACING",
        "1",
        "OpenAI Agents SDK: trace upload to api.openai.com",
    ),
    (
        "LITELLM_LOCAL_MODEL_COST_MAP",
        "True",
        "litellm: model price map download on import",
    ),
];

/// Placeholder credentials for a replay, so an SDK that refuses to start without a key
/// starts; the proxy never forwards them anywhere.
/// `GOOGLE_API_KEY` is left alone: google-genai prefers it to `GEMINI_API_KEY` and warns
/// when both are set, and clients that read only `GOOGLE_API_KEY` fall back to this one.
const PLACEHOLDER_KEYS: [(&str, &str); 3] = [
    ("OPENAI_API_KEY", "agentproxy-replay-placeholder"),
    ("ANTHROPIC_API_KEY", "agentproxy-replay-placeholder"),
    ("GEMINI_API_KEY", "agentproxy-replay-placeholder"),
];

/// One injected variable and why it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injected {
    pub name: String,
    pub value: String,
    pub why: &'static str,
}

/// The variables to set for a program talking to the proxy at `base` (`http://host:port`).
/// `is_set` tells whether the program's environment already has a variable; replay-only
/// additions never override the user's own values.
pub fn injected(base: &str, replay: bool, is_set: &dyn Fn(&str) -> bool) -> Vec<Injected> {
    let v1 = format!("{base}/v1");
    let mut out = vec![
        var("OPENAI_BASE_URL", &v1, "proxy URL for the openai SDKs"),
        var(
            "OPENAI_API_BASE",
            &v1,
            "proxy URL for langchain and older clients",
        ),
        var(
            "ANTHROPIC_BASE_URL",
            base,
            "proxy URL for the anthropic SDK (it adds /v1)",
        ),
        var(
            "GOOGLE_GEMINI_BASE_URL",
            base,
            "proxy URL for the google-genai SDK (it adds /v1 or /v1beta)",
        ),
        var(
            "AGENTPROXY_URL",
            base,
            "proxy base for clients configured by hand",
        ),
    ];
    if replay {
        for (name, value) in PLACEHOLDER_KEYS {
            if !is_set(name) {
                out.push(var(
                    name,
                    value,
                    "placeholder key so the SDK starts offline",
                ));
            }
        }
        for (name, value, why) in SIDE_TRAFFIC_SWITCHES {
            if !is_set(name) {
                out.push(var(name, value, why));
            }
        }
    }
    out
}

fn var(name: &str, value: &str, why: &'static str) -> Injected {
    Injected {
        name: name.into(),
        value: value.into(),
        why,
    }
}

/// `NAME=value` lines for the daemon's `export` hints, quoted for POSIX shells.
pub fn export_lines(vars: &[Injected]) -> String {
    vars.iter()
        .map(|v| format!("export {}='{}'\n", v.name, v.value.replace('\'', r"'\''")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[Injected]) -> Vec<&str> {
        v.iter().map(|i| i.name.as_str()).collect()
    }

    #[test]
    fn record_injects_urls_only() {
        let v = injected("http://127.0.0.1:9", false, &|_| false);
        assert_eq!(
            names(&v),
            [
                "OPENAI_BASE_URL",
                "OPENAI_API_BASE",
                "ANTHROPIC_BASE_URL",
                "GOOGLE_GEMINI_BASE_URL",
                "AGENTPROXY_URL"
            ]
        );
        assert_eq!(v[0].value, "http://127.0.0.1:9/v1");
        assert_eq!(v[2].value, "http://127.0.0.1:9");
        assert_eq!(v[3].value, "http://127.0.0.1:9");
    }

    #[test]
    fn replay_adds_placeholders_and_switches_unless_set() {
        let v = injected("http://127.0.0.1:9", true, &|n| n == "OPENAI_API_KEY");
        let n = names(&v);
        assert!(!n.contains(&"OPENAI_API_KEY"));
        assert!(n.contains(&"ANTHROPIC_API_KEY") && n.contains(&"GEMINI_API_KEY"));
        assert!(!n.contains(&"GOOGLE_API_KEY"));
        assert!(n.contains(&"OPENAI_AGENTS_DISABLE_TRACING"));
        assert!(n.contains(&"LITELLM_LOCAL_MODEL_COST_MAP"));
    }

    #[test]
    fn export_lines_quote() {
        let s = export_lines(&[var("A", "it's", "x")]);
        assert_eq!(s, "export A='it'\\''s'\n");
    }
}
