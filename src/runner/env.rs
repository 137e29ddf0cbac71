//! The environment injected into the program: where the proxy is, placeholder keys so SDKs
//! start offline, and the switches that stop SDK side traffic from going around the proxy.

use crate::cassette::format::Upstreams;
use crate::dialect::{Provider, PROVIDERS, TELEMETRY};
use crate::proxy::SECRET_VAR;

/// One injected variable and why it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injected {
    pub name: String,
    pub value: String,
    pub why: &'static str,
}

/// The variables to set for a program talking to the proxy at `base` (`http://host:port`):
/// each provider's URL variables, then `AGENTPROXY_URL` and the session's `secret` (for the
/// MCP stand-ins the program starts); in a replay also each provider's placeholder
/// credentials and side-traffic switches, unless the program's environment has them
/// (`is_set`): replay-only additions never override the user's own values.
pub fn injected(
    base: &str,
    secret: Option<&str>,
    replay: bool,
    is_set: &dyn Fn(&str) -> bool,
) -> Vec<Injected> {
    let mut out: Vec<Injected> = PROVIDERS
        .iter()
        .flat_map(|r| r.vars)
        .map(|v| var(v.name, &format!("{base}{}", v.suffix), v.why))
        .collect();
    out.push(var(
        "AGENTPROXY_URL",
        base,
        "proxy base for clients configured by hand",
    ));
    if let Some(secret) = secret {
        out.push(var(
            SECRET_VAR,
            secret,
            "the session's secret, which the MCP stand-ins present",
        ));
    }
    if replay {
        // A provider with any key of its own set gets no placeholder key, as in
        // [`placeholder_keys`].
        let keyed = |r: &crate::dialect::Row| {
            let keys = crate::dialect::key_vars(r.provider);
            let any_set = keys.iter().any(|name| is_set(name));
            r.replay
                .iter()
                .filter(move |v| !(any_set && v.value == crate::dialect::PLACEHOLDER))
        };
        let telemetry = TELEMETRY.iter().flat_map(|t| t.off);
        for v in PROVIDERS.iter().flat_map(keyed).chain(telemetry) {
            if !is_set(v.name) {
                out.push(var(v.name, v.value, v.why));
            }
        }
    }
    out
}

/// Each provider's placeholder key the environment has not set (`is_set`): what a session
/// that may record still gives, so SDKs that insist on a key start; a request carrying
/// one is never sent upstream (it fails saying which variable to set).
pub fn placeholder_keys(is_set: &dyn Fn(&str) -> bool) -> Vec<Injected> {
    let keys = |r: &crate::dialect::Row| crate::dialect::key_vars(r.provider);
    // A provider with any key of its own set gets none: its SDK would send the
    // placeholder beside the real one (Anthropic's reads both of its variables).
    (PROVIDERS.iter())
        .filter(|r| !keys(r).iter().any(|name| is_set(name)))
        .flat_map(|r| r.replay)
        .filter(|v| v.value == crate::dialect::PLACEHOLDER)
        .map(|v| var(v.name, v.value, v.why))
        .collect()
}

/// The variables that make the proxy at `base` the program's forward proxy, trusted with
/// the certificates in `bundle`: the proxy variables in both cases (read by curl, Python's
/// requests, httpx and urllib, Go, and Node 24's fetch with `NODE_USE_ENV_PROXY`), loopback
/// kept direct in `NO_PROXY` (the base URLs and MCP servers are there) with what
/// `no_proxy` (the environment's own) listed, and the trust stores: OpenSSL and httpx
/// (`SSL_CERT_FILE`), requests (`REQUESTS_CA_BUNDLE`), curl (`CURL_CA_BUNDLE`), Node
/// (`NODE_EXTRA_CA_CERTS`, added to its roots).
pub fn forward_proxy(
    base: &str,
    bundle: &std::path::Path,
    no_proxy: Option<&str>,
) -> Vec<Injected> {
    const WHY_PROXY: &str =
        "the proxy is the program's forward proxy (HTTPS to the providers' hosts is intercepted)";
    const WHY_DIRECT: &str = "loopback (the proxy's base URLs, MCP servers) stays direct";
    const WHY_CA: &str = "trust the session's certificate authority, and the system's roots";
    let bundle = bundle.to_string_lossy();
    let mut direct = vec!["localhost", "127.0.0.1", "::1"];
    direct.extend(
        no_proxy
            .into_iter()
            .flat_map(|n| n.split(','))
            .map(str::trim)
            .filter(|h| !h.is_empty() && !["localhost", "127.0.0.1", "::1", "*"].contains(h))
            // An entry that covers a provider's host would let the program go around.
            .filter(|h| {
                let host = h.rsplit_once(':').map_or(*h, |(name, _)| name);
                !crate::dialect::provider_host_under(host)
            }),
    );
    let direct = direct.join(",");
    let mut out: Vec<Injected> = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"]
        .into_iter()
        .map(|name| var(name, base, WHY_PROXY))
        .collect();
    out.push(var("NO_PROXY", &direct, WHY_DIRECT));
    out.push(var("no_proxy", &direct, WHY_DIRECT));
    for name in crate::proxy::egress::TRUST_VARS {
        out.push(var(name, &bundle, WHY_CA));
    }
    out.push(var(
        "NODE_USE_ENV_PROXY",
        "1",
        "Node 24 and later: fetch honours the proxy variables",
    ));
    out
}

/// The session's Google credentials file (a session that cannot record has one, see
/// `proxy::google_adc`), in place of any the environment names: a real one would refresh
/// its token against Google, which a replay never reaches.
pub fn google_credentials(file: &std::path::Path) -> Injected {
    var(
        crate::proxy::google_adc::VAR,
        &file.to_string_lossy(),
        "Google credentials whose token the session gives (Vertex AI clients start offline)",
    )
}

/// `PATH` with the directory of this agentproxy (`exe`) last, for a program whose MCP
/// host starts `agentproxy mcp` by name, when no `agentproxy` is on `path` already (say,
/// run as `target/debug/agentproxy` or through `cargo run`). Last, so it never shadows
/// anything the program finds there. `None` when one is found, when there is no `PATH`,
/// or when `exe` has no directory.
pub fn path_to_self(path: Option<&std::ffi::OsStr>, exe: &std::path::Path) -> Option<Injected> {
    // No PATH at all: the program searches the system's default, which must stay.
    let dirs: Vec<std::path::PathBuf> = std::env::split_paths(path?).collect();
    if dirs.iter().any(|d| d.join("agentproxy").is_file()) {
        return None;
    }
    let own = exe.parent().filter(|d| !d.as_os_str().is_empty())?;
    let joined = std::env::join_paths(dirs.iter().map(|d| d.as_path()).chain([own])).ok()?;
    Some(var(
        "PATH",
        &joined.to_string_lossy(),
        "this agentproxy's directory added last, so an MCP host finds `agentproxy mcp`",
    ))
}

/// [`path_to_self`] of agentproxy's own `PATH` and binary.
pub fn self_path() -> Option<Injected> {
    let exe = std::env::current_exe().ok()?;
    path_to_self(std::env::var_os("PATH").as_deref(), &exe)
}

/// The URL variables of streamable HTTP MCP servers served at `base`.
pub fn mcp_urls<'a>(base: &str, names: impl IntoIterator<Item = &'a String>) -> Vec<Injected> {
    let what = "proxy URL of a streamable HTTP MCP server (--mcp)";
    let at = (
        crate::proxy::mcp_http::PREFIX,
        crate::dialect::mcp::url_var as fn(&str) -> String,
    );
    named_urls(base, names, at, what)
}

/// The URL variables of the remote agents served at `base`.
pub fn a2a_urls<'a>(base: &str, names: impl IntoIterator<Item = &'a String>) -> Vec<Injected> {
    let what = "proxy URL of a remote agent over A2A (--a2a)";
    let at = (
        crate::proxy::a2a::PREFIX,
        crate::dialect::a2a::url_var as fn(&str) -> String,
    );
    named_urls(base, names, at, what)
}

/// The variables (`var` of each name) of the relays served at `base` under `prefix`.
fn named_urls<'a>(
    base: &str,
    names: impl IntoIterator<Item = &'a String>,
    (prefix, var_of): (&str, fn(&str) -> String),
    why: &'static str,
) -> Vec<Injected> {
    (names.into_iter())
        .map(|n| var(&var_of(n), &format!("{base}{prefix}{n}"), why))
        .collect()
}

fn var(name: &str, value: &str, why: &'static str) -> Injected {
    Injected {
        name: name.into(),
        value: value.into(),
        why,
    }
}

/// Warnings for a recording session about base URLs the user had set (`lookup` reads the
/// environment) that the injected ones replace: the traffic would have gone there, and now
/// goes to the configured upstream instead. Each names the old value and the flag that
/// records through it; a value that already is the configured upstream is no surprise.
pub fn overridden(lookup: &dyn Fn(&str) -> Option<String>, upstreams: &Upstreams) -> Vec<String> {
    let trim = |s: &str| s.trim_end_matches('/').to_owned();
    PROVIDERS
        .iter()
        .flat_map(|r| r.vars.iter().map(move |v| (r.provider, v)))
        .filter_map(|(provider, v)| {
            let old = lookup(v.name).filter(|v| !v.trim().is_empty())?;
            let base = trim(&old);
            let base = base.strip_suffix(v.suffix).unwrap_or(&base).to_owned();
            let configured = upstreams.of(provider);
            (base != trim(configured)).then(|| {
                let name = v.name;
                let flag = match provider {
                    Provider::OpenAi => format!("--upstream {base}"),
                    p => format!("--upstream {}={base}", p.name()),
                };
                let from = match configured {
                    "" => "has no upstream for it".to_owned(),
                    c => format!("records from {c}"),
                };
                format!(
                    "{name} was set to {old}; the program now talks to agentproxy, which {from} (to record through {base}, pass {flag})"
                )
            })
        })
        .collect()
}

/// Every provider's URL variable, for messages: `OPENAI_BASE_URL, …, OLLAMA_HOST`.
pub fn url_var_names() -> String {
    (PROVIDERS.iter())
        .flat_map(|r| r.vars)
        .map(|v| v.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `openai https://api.openai.com, anthropic …`: each provider with an upstream.
pub fn upstream_list(upstreams: &Upstreams) -> String {
    PROVIDERS
        .iter()
        .filter(|r| !upstreams.of(r.provider).is_empty())
        .map(|r| format!("{} {}", r.name, upstreams.of(r.provider)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `words` as one POSIX shell line, to paste: a word that needs no quoting as it is, the
/// others in single quotes.
pub fn shell_line<S: AsRef<str>>(words: &[S]) -> String {
    let word = |w: &str| {
        let plain = !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-./:=@%+,".contains(&b));
        if plain {
            w.to_owned()
        } else {
            format!("'{}'", w.replace('\'', r"'\''"))
        }
    };
    let words: Vec<String> = words.iter().map(|w| word(w.as_ref())).collect();
    words.join(" ")
}

/// `NAME=value` lines for the daemon's `export` hints, quoted for POSIX shells.
/// The variables as `-v` lists them on stderr (a CI log): `NAME=VALUE  (why)`, the
/// session's secret named but not shown.
pub fn listing(vars: &[Injected]) -> Vec<String> {
    (vars.iter())
        .map(|v| match v.name == SECRET_VAR {
            true => format!("{}=(hidden)  ({})", v.name, v.why),
            false => format!("{}={}  ({})", v.name, v.value, v.why),
        })
        .collect()
}

pub fn export_lines(vars: &[Injected]) -> String {
    vars.iter()
        .map(|v| format!("export {}='{}'\n", v.name, v.value.replace('\'', r"'\''")))
        .collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_forward_proxy_keeps_loopback_direct_and_no_way_around_it() {
        let bundle = std::path::Path::new("/tmp/agentproxy-ca-x.pem");
        let vars = forward_proxy(
            "http://127.0.0.1:4000",
            bundle,
            Some("*, corp.test,.openai.azure.com, api.openai.com:443 ,azure.com,db.test"),
        );
        let get = |name: &str| {
            vars.iter()
                .find(|v| v.name == name)
                .map(|v| v.value.as_str())
        };
        for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
            assert_eq!(get(name), Some("http://127.0.0.1:4000"), "{name}");
        }
        // `*` and entries that cover a provider's host would bypass the proxy: dropped.
        assert_eq!(
            get("NO_PROXY"),
            Some("localhost,127.0.0.1,::1,corp.test,db.test")
        );
        assert_eq!(get("no_proxy"), get("NO_PROXY"));
        for name in [
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            "NODE_EXTRA_CA_CERTS",
        ] {
            assert_eq!(get(name), Some("/tmp/agentproxy-ca-x.pem"), "{name}");
        }
        assert_eq!(get("NODE_USE_ENV_PROXY"), Some("1"));
    }

    #[test]
    fn agentproxy_s_directory_goes_last_on_path_when_none_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let (with, without) = (dir.path().join("with"), dir.path().join("without"));
        std::fs::create_dir_all(&with).unwrap();
        std::fs::create_dir_all(&without).unwrap();
        std::fs::write(with.join("agentproxy"), "").unwrap();
        let exe = std::path::Path::new("/opt/agentproxy/bin/agentproxy");
        let path = std::env::join_paths([&without]).unwrap();
        let added = path_to_self(Some(&path), exe).unwrap();
        assert_eq!(added.name, "PATH");
        assert_eq!(
            added.value,
            format!("{}:/opt/agentproxy/bin", without.display())
        );
        let path = std::env::join_paths([&without, &with]).unwrap();
        assert_eq!(path_to_self(Some(&path), exe), None);
        assert_eq!(path_to_self(None, exe), None);
    }

    use super::*;

    fn names(v: &[Injected]) -> Vec<&str> {
        v.iter().map(|i| i.name.as_str()).collect()
    }

    #[test]
    fn record_injects_urls_only() {
        let v = injected("http://127.0.0.1:9", Some("s3cr3t"), false, &|_| false);
        assert_eq!(
            names(&v),
            [
                "OPENAI_BASE_URL",
                "OPENAI_API_BASE",
                "ANTHROPIC_BASE_URL",
                "GOOGLE_GEMINI_BASE_URL",
                "AZURE_OPENAI_ENDPOINT",
                "AZURE_OPENAI_BASE_URL",
                "OLLAMA_HOST",
                "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
                "GOOGLE_VERTEX_BASE_URL",
                "ANTHROPIC_VERTEX_BASE_URL",
                "AGENTPROXY_URL",
                "AGENTPROXY_SECRET"
            ]
        );
        assert_eq!(v[0].value, "http://127.0.0.1:9/v1");
        assert_eq!(v[2].value, "http://127.0.0.1:9");
        assert_eq!(v[3].value, "http://127.0.0.1:9");
        assert_eq!(v[5].value, "http://127.0.0.1:9/openai");
    }

    #[test]
    fn replay_adds_placeholders_and_switches_unless_set() {
        let v = injected("http://127.0.0.1:9", None, true, &|n| n == "OPENAI_API_KEY");
        let n = names(&v);
        assert!(!n.contains(&"OPENAI_API_KEY"));
        assert!(n.contains(&"ANTHROPIC_API_KEY") && n.contains(&"GEMINI_API_KEY"));
        assert!(!n.contains(&"GOOGLE_API_KEY"));
        assert!(n.contains(&"OPENAI_AGENTS_DISABLE_TRACING"));
        assert!(n.contains(&"LITELLM_LOCAL_MODEL_COST_MAP"));
        assert!(n.contains(&"ANTHROPIC_AUTH_TOKEN") && n.contains(&"AZURE_OPENAI_API_KEY"));
        assert!(n.contains(&"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"));
        // One of Anthropic's keys set: its SDK would warn of both, so the other gets none.
        let v = injected("http://127.0.0.1:9", None, true, &|n| {
            n == "ANTHROPIC_API_KEY"
        });
        let n = names(&v);
        assert!(!n.contains(&"ANTHROPIC_AUTH_TOKEN") && !n.contains(&"ANTHROPIC_API_KEY"));
        assert!(
            n.contains(&"OPENAI_API_KEY")
                && n.contains(&"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
        );
    }

    #[test]
    fn a_shell_line_quotes_only_what_needs_it() {
        assert_eq!(
            shell_line(&["agentproxy", "test", "specs/a b.yaml", "--case", "it's", ""]),
            r"agentproxy test 'specs/a b.yaml' --case 'it'\''s' ''"
        );
        assert_eq!(
            shell_line(&["python3", "app.py", "--x=1"]),
            "python3 app.py --x=1"
        );
    }

    #[test]
    fn record_lists_the_providers_with_an_upstream() {
        assert_eq!(
            upstream_list(&upstreams()),
            "openai https://api.openai.com, anthropic https://api.anthropic.com/, gemini https://generativelanguage.googleapis.com"
        );
    }

    fn upstreams() -> Upstreams {
        let mut u = Upstreams::default();
        u.set(Provider::OpenAi, "https://api.openai.com");
        u.set(Provider::Anthropic, "https://api.anthropic.com/");
        u.set(
            Provider::Gemini,
            "https://generativelanguage.googleapis.com",
        );
        u
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
                "ANTHROPIC_BASE_URL was set to http://gw:8080/anthropic; the program now talks to agentproxy, which records from https://api.anthropic.com/ (to record through http://gw:8080/anthropic, pass --upstream anthropic=http://gw:8080/anthropic)",
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
    fn the_listing_hides_the_secret() {
        let vars = injected("http://127.0.0.1:1", Some("s3cr3t-value"), false, &|_| {
            false
        });
        let listed = listing(&vars).join("\n");
        assert!(!listed.contains("s3cr3t-value"), "{listed}");
        assert!(listed.contains("AGENTPROXY_SECRET=(hidden)"), "{listed}");
        assert!(
            listed.contains("AGENTPROXY_URL=http://127.0.0.1:1"),
            "{listed}"
        );
    }

    #[test]
    fn export_lines_quote() {
        let s = export_lines(&[var("A", "it's", "x")]);
        assert_eq!(s, "export A='it'\\''s'\n");
    }

    #[test]
    fn placeholder_keys_are_only_the_keys_the_environment_lacks() {
        let v = placeholder_keys(&|n| n == "OPENAI_API_KEY" || n == "ANTHROPIC_AUTH_TOKEN");
        let names: Vec<&str> = v.iter().map(|i| i.name.as_str()).collect();
        assert!(!names.contains(&"OPENAI_API_KEY"), "{names:?}");
        // One of Anthropic's keys is set: the other gets no placeholder either.
        assert!(!names.contains(&"ANTHROPIC_API_KEY"), "{names:?}");
        assert!(names.contains(&"GEMINI_API_KEY"), "{names:?}");
        assert!(
            !names.contains(&"OPENAI_AGENTS_DISABLE_TRACING"),
            "{names:?}"
        );
        assert!(v.iter().all(|i| i.value == crate::dialect::PLACEHOLDER));
    }
}
