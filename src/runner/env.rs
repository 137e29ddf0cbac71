//! The environment injected into the program: where the proxy is, placeholder keys so SDKs
//! start offline, and the switches that stop SDK side traffic from going around the proxy.

use crate::cassette::format::Upstreams;
use crate::dialect::Provider;

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

/// The URL variables of streamable HTTP MCP servers served at `base`.
pub fn mcp_urls<'a>(base: &str, names: impl IntoIterator<Item = &'a String>) -> Vec<Injected> {
    names
        .into_iter()
        .map(|n| {
            var(
                &crate::dialect::mcp::url_var(n),
                &format!("{base}{}{n}", crate::proxy::mcp_http::PREFIX),
                "proxy URL of a streamable HTTP MCP server (--mcp)",
            )
        })
        .collect()
}

fn var(name: &str, value: &str, why: &'static str) -> Injected {
    Injected {
        name: name.into(),
        value: value.into(),
        why,
    }
}

/// The injected URL variables that replace a provider's base, with the recording flag
/// that sets that provider's upstream and the path the variable's value adds to the base.
const BASE_VARS: [(&str, Provider, &str, &str); 4] = [
    ("OPENAI_BASE_URL", Provider::OpenAi, "--upstream", "/v1"),
    ("OPENAI_API_BASE", Provider::OpenAi, "--upstream", "/v1"),
    (
        "ANTHROPIC_BASE_URL",
        Provider::Anthropic,
        "--anthropic-upstream",
        "",
    ),
    (
        "GOOGLE_GEMINI_BASE_URL",
        Provider::Gemini,
        "--gemini-upstream",
        "",
    ),
];

/// Warnings for a recording session about base URLs the user had set (`lookup` reads the
/// environment) that the injected ones replace: the traffic would have gone there, and now
/// goes to the configured upstream instead. Each names the old value and the flag that
/// records through it; a value that already is the configured upstream is no surprise.
pub fn overridden(lookup: &dyn Fn(&str) -> Option<String>, upstreams: &Upstreams) -> Vec<String> {
    let trim = |s: &str| s.trim_end_matches('/').to_owned();
    BASE_VARS
        .iter()
        .filter_map(|&(name, provider, flag, suffix)| {
            let old = lookup(name).filter(|v| !v.trim().is_empty())?;
            let base = trim(&old);
            let base = base.strip_suffix(suffix).unwrap_or(&base).to_owned();
            let configured = upstreams.of(provider);
            (base != trim(configured)).then(|| {
                format!(
                    "{name} was set to {old}; the program now talks to agentproxy, which records from {configured} (to record through {base}, pass {flag} {base})"
                )
            })
        })
        .collect()
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

    fn upstreams() -> Upstreams {
        Upstreams {
            openai: "https://api.openai.com".into(),
            anthropic: "https://api.anthropic.com/".into(),
            gemini: "https://generativelanguage.googleapis.com".into(),
        }
    }

    #[test]
    fn overridden_names_the_old_value_and_the_flag() {
        let env = |n: &str| match n {
            "OPENAI_BASE_URL" => Some("http://localhost:4000/v1/".to_owned()),
            "ANTHROPIC_BASE_URL" => Some("http://gw:8080/anthropic".to_owned()),
            _ => None,
        };
        let w = overridden(&env, &upstreams());
        assert_eq!(
            w,
            [
                "OPENAI_BASE_URL was set to http://localhost:4000/v1/; the program now talks to agentproxy, which records from https://api.openai.com (to record through http://localhost:4000, pass --upstream http://localhost:4000)",
                "ANTHROPIC_BASE_URL was set to http://gw:8080/anthropic; the program now talks to agentproxy, which records from https://api.anthropic.com/ (to record through http://gw:8080/anthropic, pass --anthropic-upstream http://gw:8080/anthropic)",
            ]
        );
    }

    #[test]
    fn overridden_is_quiet_when_the_old_value_is_the_upstream_or_empty() {
        let env = |n: &str| match n {
            "OPENAI_BASE_URL" => Some("https://api.openai.com/v1".to_owned()),
            "OPENAI_API_BASE" => Some(" ".to_owned()),
            "ANTHROPIC_BASE_URL" => Some("https://api.anthropic.com".to_owned()),
            _ => None,
        };
        assert!(overridden(&env, &upstreams()).is_empty());
    }

    #[test]
    fn export_lines_quote() {
        let s = export_lines(&[var("A", "it's", "x")]);
        assert_eq!(s, "export A='it'\\''s'\n");
    }
}
