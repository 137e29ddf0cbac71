//! The provider table: one row per model API the proxy stands in for. What the rest of
//! agentproxy knows about a provider (its name, the paths that are its, where its upstream
//! comes from, the variables that point a program at the proxy, the placeholder
//! credentials and side-traffic switches of a replay) is read from [`PROVIDERS`]: the CLI,
//! the injected environment, help texts, `doctor` and error messages.

use http::HeaderMap;

/// A provider API: its upstream, its error shape, its variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Provider {
    OpenAi,
    Anthropic,
    Gemini,
    Azure,
    Ollama,
    Bedrock,
    Vertex,
}

/// One provider's facts.
pub struct Row {
    pub provider: Provider,
    /// Its name in `--upstream NAME=URL`, in a cassette's `upstreams` and in messages.
    pub name: &'static str,
    /// What its users call it.
    pub title: &'static str,
    /// The paths it serves, for help and errors.
    pub paths: &'static str,
    /// The path prefixes under which its requests arrive.
    pub prefixes: &'static [&'static str],
    /// Does a request belong to it? `None` for OpenAI, which takes what no other claims.
    pub claims: Option<fn(&str, &HeaderMap) -> bool>,
    /// The flag, older than `--upstream NAME=URL`, that sets its upstream, if one.
    pub flag: Option<&'static str>,
    /// The variable of agentproxy's environment that sets its upstream.
    pub env: &'static str,
    /// Where its upstream comes from when neither the flag nor `env` gives it.
    pub fallback: Fallback,
    /// The hosts of its API (a leading `.`: any host under that domain; a `*`: any one label,
    /// or part of one): a program's
    /// HTTPS to one of them, through the proxy's forward proxy, is intercepted and served
    /// as its base-URL traffic is.
    pub hosts: &'static [&'static str],
    /// The variables that point the program at the proxy.
    pub vars: &'static [BaseVar],
    /// Set in a replay where the program's environment has not set them: placeholder
    /// credentials (so an SDK that refuses to start without a key starts offline; the proxy
    /// never forwards them) and switches that stop known side traffic around the proxy.
    pub replay: &'static [ReplayVar],
    /// Clients of this API whose requests carry values that change on every run.
    pub clients: &'static [KnownClient],
}

/// A client whose requests carry values that change on every run (a session id, the
/// date): recognised while recording, its tolerances go into the cassette's match block.
#[derive(Debug)]
pub struct KnownClient {
    pub name: &'static str,
    /// Is this request (its headers and JSON body) the client's?
    pub recognise: fn(&HeaderMap, &serde_json::Value) -> bool,
    /// JSON pointers left out of the match.
    pub ignore: &'static [&'static str],
    /// Named holes: name, regex, and the pointer they apply under (anywhere when `None`).
    pub holes: &'static [(&'static str, &'static str, Option<&'static str>)],
    /// The hosts it reaches beside the model API whatever it is asked (start-up lookups
    /// no setting in its environment switches off), and what it does there: a replay of
    /// its cassette refuses them without failing.
    pub side: &'static [&'static str],
    pub side_why: &'static str,
}

/// Every known client, of every provider.
pub fn known_clients() -> impl Iterator<Item = &'static KnownClient> {
    PROVIDERS.iter().flat_map(|r| r.clients)
}

/// Where an upstream comes from when no flag names it.
pub enum Fallback {
    /// The endpoint each request names, `from(path, headers)` (`says` how, for help):
    /// Bedrock's region in its signature, Vertex AI's location in its path. An intercepted
    /// request goes to the host it was sent to, as for every provider.
    Request {
        from: fn(&str, &HeaderMap) -> Option<String>,
        says: &'static str,
    },
    /// A fixed URL.
    Url(&'static str),
    /// The endpoint the program would have used: `var` of agentproxy's own environment,
    /// read by `read`, else `or` (no default: recording this provider needs the flag).
    Env {
        var: &'static str,
        read: fn(&str) -> String,
        or: Option<&'static str>,
    },
}

/// A variable set for the program: the proxy's base URL with `suffix` appended.
pub struct BaseVar {
    pub name: &'static str,
    pub suffix: &'static str,
    pub why: &'static str,
}

/// A variable set in a replay only.
pub struct ReplayVar {
    pub name: &'static str,
    pub value: &'static str,
    pub why: &'static str,
}

/// The key agentproxy gives an SDK that has none, so it starts offline; never sent
/// upstream (see [`carries_placeholder`]).
pub const PLACEHOLDER: &str = "agentproxy-replay-placeholder";
const PLACEHOLDER_WHY: &str = "placeholder key so the SDK starts offline";

/// API versions only Google uses (`/v1` is everyone's).
const GOOGLE_VERSIONS: [&str; 3] = ["/v1beta", "/v1alpha", "/v1beta1"];

/// Every provider, in the order help and banners list them.
pub const PROVIDERS: [Row; 7] = [
    Row {
        provider: Provider::OpenAi,
        name: "openai",
        title: "OpenAI-compatible",
        paths: "/v1/… (chat completions, Responses, and any path no other provider claims)",
        prefixes: &["/v1"],
        claims: None,
        flag: None,
        env: "AGENTPROXY_UPSTREAM",
        fallback: Fallback::Url("https://api.openai.com"),
        hosts: &["api.openai.com"],
        vars: &[
            BaseVar {
                name: "OPENAI_BASE_URL",
                suffix: "/v1",
                why: "proxy URL for the openai SDKs",
            },
            BaseVar {
                name: "OPENAI_API_BASE",
                suffix: "/v1",
                why: "proxy URL for langchain and older clients",
            },
        ],
        replay: &[
            ReplayVar {
                name: "OPENAI_API_KEY",
                value: PLACEHOLDER,
                why: PLACEHOLDER_WHY,
            },
            ReplayVar {
                name: "CODEX_API_KEY",
                value: PLACEHOLDER,
                why: "placeholder key for Codex CLI, which reads no other",
            },
            ReplayVar {
                name: "OPENAI_AGENTS_DISABLE_TRACING",
                value: "1",
                why: "OpenAI Agents SDK: trace upload to api.openai.com",
            },
            ReplayVar {
                name: "LITELLM_LOCAL_MODEL_COST_MAP",
                value: "True",
                why: "litellm: model price map download on import",
            },
        ],
        clients: &[super::openai_responses::CODEX],
    },
    Row {
        provider: Provider::Anthropic,
        name: "anthropic",
        title: "Anthropic",
        paths: "/v1/messages… and requests with an anthropic-version header",
        prefixes: &["/v1"],
        claims: Some(is_anthropic),
        flag: Some("--anthropic-upstream"),
        env: "AGENTPROXY_ANTHROPIC_UPSTREAM",
        fallback: Fallback::Url("https://api.anthropic.com"),
        hosts: &["api.anthropic.com"],
        vars: &[BaseVar {
            name: "ANTHROPIC_BASE_URL",
            suffix: "",
            why: "proxy URL for the anthropic SDK and Claude Code (they add /v1)",
        }],
        replay: &[
            ReplayVar {
                name: "ANTHROPIC_API_KEY",
                value: PLACEHOLDER,
                why: PLACEHOLDER_WHY,
            },
            ReplayVar {
                name: "ANTHROPIC_AUTH_TOKEN",
                value: PLACEHOLDER,
                why: "placeholder token for clients set up for a gateway (Claude Code with a custom endpoint)",
            },
            ReplayVar {
                name: "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                value: "1",
                why: "Claude Code: telemetry, error reports and update checks to Anthropic's hosts",
            },
        ],
        clients: &[super::anthropic::CLAUDE_CODE],
    },
    Row {
        provider: Provider::Gemini,
        name: "gemini",
        title: "Gemini",
        paths: "/v1beta/…, /v1alpha/… and /v1/models/{model}:generateContent",
        prefixes: &["/v1", "/v1beta", "/v1alpha", "/v1beta1"],
        claims: Some(is_gemini),
        flag: Some("--gemini-upstream"),
        env: "AGENTPROXY_GEMINI_UPSTREAM",
        fallback: Fallback::Url("https://generativelanguage.googleapis.com"),
        hosts: &["generativelanguage.googleapis.com"],
        vars: &[BaseVar {
            name: "GOOGLE_GEMINI_BASE_URL",
            suffix: "",
            why: "proxy URL for the google-genai SDK (it adds /v1 or /v1beta)",
        }],
        // GOOGLE_API_KEY is left alone: google-genai prefers it to GEMINI_API_KEY and warns
        // when both are set, and clients that read only GOOGLE_API_KEY fall back to this one.
        replay: &[ReplayVar {
            name: "GEMINI_API_KEY",
            value: PLACEHOLDER,
            why: PLACEHOLDER_WHY,
        }],
        clients: &[],
    },
    Row {
        provider: Provider::Azure,
        name: "azure",
        title: "Azure OpenAI",
        paths: "/openai/deployments/{deployment}/… and /openai/v1/…",
        prefixes: &["/openai"],
        claims: Some(is_azure),
        flag: None,
        env: "AGENTPROXY_AZURE_UPSTREAM",
        fallback: Fallback::Env {
            var: "AZURE_OPENAI_ENDPOINT",
            read: trimmed,
            or: None,
        },
        hosts: &[".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"],
        vars: &[
            BaseVar {
                name: "AZURE_OPENAI_ENDPOINT",
                suffix: "",
                why: "proxy URL for the openai SDK's AzureOpenAI client (it adds /openai)",
            },
            BaseVar {
                name: "AZURE_OPENAI_BASE_URL",
                suffix: "/openai",
                why: "proxy URL for Semantic Kernel's Azure connectors",
            },
        ],
        replay: &[ReplayVar {
            name: "AZURE_OPENAI_API_KEY",
            value: PLACEHOLDER,
            why: PLACEHOLDER_WHY,
        }],
        clients: &[],
    },
    Row {
        provider: Provider::Ollama,
        name: "ollama",
        title: "Ollama",
        paths: "/api/… (chat, generate, embed, tags, show, …)",
        prefixes: &["/api"],
        claims: Some(is_ollama),
        flag: None,
        env: "AGENTPROXY_OLLAMA_UPSTREAM",
        fallback: Fallback::Env {
            var: "OLLAMA_HOST",
            read: ollama_host,
            or: Some("http://127.0.0.1:11434"),
        },
        hosts: &["ollama.com"],
        vars: &[BaseVar {
            name: "OLLAMA_HOST",
            suffix: "",
            why: "proxy URL for the ollama client and the clients built on it",
        }],
        replay: &[],
        clients: &[],
    },
    Row {
        provider: Provider::Bedrock,
        name: "bedrock",
        title: "AWS Bedrock",
        paths: "/model/{model}/converse, /converse-stream, /invoke, /invoke-with-response-stream",
        prefixes: &["/model"],
        claims: Some(is_bedrock),
        flag: None,
        env: "AGENTPROXY_BEDROCK_UPSTREAM",
        fallback: Fallback::Request {
            from: super::bedrock::signature::endpoint,
            says: "Bedrock Runtime in the region its signature names",
        },
        hosts: &["bedrock-runtime.*.amazonaws.com", "bedrock-runtime-fips.*.amazonaws.com"],
        vars: &[BaseVar {
            name: "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
            suffix: "",
            why: "proxy URL for boto3's and the AWS SDKs' bedrock-runtime client",
        }],
        replay: &[
            ReplayVar {
                name: "AWS_ACCESS_KEY_ID",
                value: PLACEHOLDER,
                why: "placeholder credentials so the AWS SDKs sign offline",
            },
            ReplayVar {
                name: "AWS_SECRET_ACCESS_KEY",
                value: PLACEHOLDER,
                why: "placeholder credentials so the AWS SDKs sign offline",
            },
            ReplayVar {
                name: "AWS_DEFAULT_REGION",
                value: "us-east-1",
                why: "the AWS SDKs refuse to start without a region",
            },
        ],
        clients: &[],
    },
    Row {
        provider: Provider::Vertex,
        name: "vertex",
        title: "Google Vertex AI",
        paths: "/{version}/…publishers/google/models/{model}:generateContent (Gemini) and …publishers/anthropic/models/{model}:rawPredict (Claude)",
        prefixes: &["/v1", "/v1beta1"],
        claims: Some(is_vertex),
        flag: None,
        env: "AGENTPROXY_VERTEX_UPSTREAM",
        fallback: Fallback::Request {
            from: vertex_location,
            says: "Vertex AI in the location its path names (global when none)",
        },
        hosts: &["aiplatform.googleapis.com", "*-aiplatform.googleapis.com", "aiplatform.*.rep.googleapis.com"],
        vars: &[
            BaseVar {
                name: "GOOGLE_VERTEX_BASE_URL",
                suffix: "",
                why: "proxy URL for google-genai with vertexai=True (it adds /v1beta1)",
            },
            BaseVar {
                name: "ANTHROPIC_VERTEX_BASE_URL",
                suffix: "/v1",
                why: "proxy URL for the anthropic SDK's AnthropicVertex",
            },
        ],
        replay: &[],
        clients: &[],
    },
];

impl Provider {
    /// This provider's row.
    pub fn row(self) -> &'static Row {
        // Every provider has a row: `PROVIDERS` lists them in declaration order.
        &PROVIDERS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The provider named `name` in `--upstream NAME=URL` or a cassette.
    pub fn named(name: &str) -> Option<Provider> {
        PROVIDERS
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
            .map(|r| r.provider)
    }
}

/// The provider a request (its path, before or with the query, and headers) belongs to.
pub fn provider_of(path: &str, headers: &HeaderMap) -> Provider {
    let path = path.split('?').next().unwrap_or(path);
    PROVIDERS
        .iter()
        .find(|r| r.claims.is_some_and(|claims| claims(path, headers)))
        .map_or(Provider::OpenAi, |r| r.provider)
}

/// Does a request carry agentproxy's placeholder key (in a header, or in its query as
/// Gemini's `?key=`)? Then it cannot be recorded: the real API would refuse it.
pub fn carries_placeholder(headers: &HeaderMap, path_and_query: &str) -> bool {
    path_and_query.contains(PLACEHOLDER)
        || (headers.values()).any(|v| {
            v.as_bytes()
                .windows(PLACEHOLDER.len())
                .any(|w| w == PLACEHOLDER.as_bytes())
        })
}

/// The variables a provider's SDKs read their key from, where agentproxy puts a
/// placeholder (`OPENAI_API_KEY`, …).
pub fn key_vars(provider: Provider) -> Vec<&'static str> {
    (provider.row().replay.iter())
        .filter(|v| v.value == PLACEHOLDER)
        .map(|v| v.name)
        .collect()
}

/// The provider whose API `host` (without its port) is, if any.
pub fn provider_of_host(host: &str) -> Option<Provider> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let matches = |pattern: &str| match (pattern.strip_prefix('.'), pattern.split_once('*')) {
        (Some(_), _) => host.ends_with(pattern) && host.len() > pattern.len(),
        // `*`: one label or, beside a `-`, a part of one (`*-aiplatform.googleapis.com`).
        (None, Some((before, after))) => (host.strip_prefix(before))
            .and_then(|rest| rest.strip_suffix(after))
            .is_some_and(|label| !label.is_empty() && !label.contains('.')),
        (None, None) => host == pattern,
    };
    (PROVIDERS.iter())
        .find(|r| r.hosts.iter().any(|h| matches(h)))
        .map(|r| r.provider)
}

/// Is some provider's host `domain` itself or under it (as a `NO_PROXY` entry covers its
/// subdomains)?
pub fn provider_host_under(domain: &str) -> bool {
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    let domain = domain.trim_start_matches("*.").trim_start_matches('.');
    (PROVIDERS.iter().flat_map(|r| r.hosts)).any(|h| {
        let h = h.trim_start_matches("*.").trim_start_matches('.');
        h == domain || h.ends_with(&format!(".{domain}"))
    }) || provider_of_host(domain).is_some()
}

/// Is `path` under one of the providers' prefixes?
pub fn is_api_path(path: &str) -> bool {
    PROVIDERS
        .iter()
        .flat_map(|r| r.prefixes)
        .any(|p| under(path, p))
}

/// Every provider prefix once, for messages: `/v1/…, /v1beta/…, …`.
pub fn prefixes() -> String {
    let mut seen: Vec<&str> = Vec::new();
    for p in PROVIDERS.iter().flat_map(|r| r.prefixes) {
        if !seen.contains(p) {
            seen.push(p);
        }
    }
    seen.iter()
        .map(|p| format!("{p}/…"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// Anthropic's API lives under `/v1/messages` (including `count_tokens` and `batches`) and
/// is also recognised by its version header.
fn is_anthropic(path: &str, headers: &HeaderMap) -> bool {
    path.strip_prefix("/v1/messages")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        || headers.contains_key("anthropic-version")
}

/// Google's API by its generate paths, its own versions or its key header (Vertex AI's
/// publisher paths are Vertex's).
fn is_gemini(path: &str, headers: &HeaderMap) -> bool {
    !is_vertex(path, headers)
        && (super::gemini::is_generate_path(path)
            || GOOGLE_VERSIONS.iter().any(|v| under(path, v))
            || headers.contains_key("x-goog-api-key"))
}

fn is_azure(path: &str, _: &HeaderMap) -> bool {
    under(path, "/openai")
}

fn is_ollama(path: &str, _: &HeaderMap) -> bool {
    under(path, "/api")
}

/// Vertex AI's model paths: `/{version}/publishers/{publisher}/models/…` and
/// `/{version}/projects/{p}/locations/{l}/publishers/{publisher}/models/…`.
fn is_vertex(path: &str, _: &HeaderMap) -> bool {
    let Some((_, rest)) = path.trim_start_matches('/').split_once('/') else {
        return false;
    };
    let rest = match rest.strip_prefix("projects/") {
        Some(scoped) => {
            let mut parts = scoped.splitn(4, '/');
            match (parts.next(), parts.next(), parts.next(), parts.next()) {
                (Some(_), Some("locations"), Some(_), Some(rest)) => rest,
                _ => return false,
            }
        }
        None => rest,
    };
    rest.starts_with("publishers/")
}

/// Vertex AI's endpoint for the location of a request's path (`…/locations/{l}/…`): the
/// global host, a multi-region's (`us`, `eu`), or a region's; the global host when the
/// path names none (express mode).
fn vertex_location(path: &str, _: &HeaderMap) -> Option<String> {
    let location = (path.split('?').next().unwrap_or(path).split('/'))
        .skip_while(|s| *s != "locations")
        .nth(1)
        .unwrap_or("global");
    if location.is_empty()
        || !location
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return None;
    }
    Some(match location {
        "global" => "https://aiplatform.googleapis.com".to_owned(),
        multi @ ("us" | "eu") => format!("https://aiplatform.{multi}.rep.googleapis.com"),
        region => format!("https://{region}-aiplatform.googleapis.com"),
    })
}

fn is_bedrock(path: &str, _: &HeaderMap) -> bool {
    under(path, "/model")
}

fn trimmed(value: &str) -> String {
    value.trim().trim_end_matches('/').to_owned()
}

/// `OLLAMA_HOST` as the ollama client reads it: a URL as it is; `host`, `host:port` or
/// `:port` as http, on port 11434 when none is given; `0.0.0.0` (a server's
/// listen-on-all) or no host means this machine.
fn ollama_host(value: &str) -> String {
    let value = trimmed(value);
    if value.contains("://") {
        return value.replacen("://0.0.0.0", "://127.0.0.1", 1);
    }
    let (authority, path) = value
        .find('/')
        .map_or((value.as_str(), ""), |i| value.split_at(i));
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => (host, port),
        _ => (authority, "11434"),
    };
    let host = match host {
        "" | "0.0.0.0" => "127.0.0.1",
        host => host,
    };
    format!("http://{host}:{port}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_has_its_own_row_in_declaration_order() {
        for (i, row) in PROVIDERS.iter().enumerate() {
            assert_eq!(row.provider as usize, i, "{}", row.name);
            assert_eq!(Provider::named(row.name), Some(row.provider));
        }
        assert_eq!(Provider::named("Azure"), Some(Provider::Azure));
        assert_eq!(Provider::named("Bedrock"), Some(Provider::Bedrock));
    }

    #[test]
    fn hosts_name_their_provider_and_a_domain_covers_its_subdomains_only() {
        for (host, provider) in [
            ("api.openai.com", Some(Provider::OpenAi)),
            ("API.OpenAI.com.", Some(Provider::OpenAi)),
            ("api.anthropic.com", Some(Provider::Anthropic)),
            ("generativelanguage.googleapis.com", Some(Provider::Gemini)),
            (
                "us-central1-aiplatform.googleapis.com",
                Some(Provider::Vertex),
            ),
            ("aiplatform.googleapis.com", Some(Provider::Vertex)),
            ("aiplatform.eu.rep.googleapis.com", Some(Provider::Vertex)),
            ("us-central1.aiplatform.googleapis.com", None),
            ("evil.test-aiplatform.googleapis.com", None),
            ("my-resource.openai.azure.com", Some(Provider::Azure)),
            (".openai.azure.com", None),
            ("openai.azure.com", None),
            ("evil-openai.azure.com", None),
            ("api.openai.com.evil.test", None),
            (
                "bedrock-runtime.us-east-1.amazonaws.com",
                Some(Provider::Bedrock),
            ),
            (
                "bedrock-runtime-fips.us-west-2.amazonaws.com",
                Some(Provider::Bedrock),
            ),
            ("bedrock-runtime.amazonaws.com", None),
            ("bedrock-runtime.a.b.amazonaws.com", None),
            ("s3.us-east-1.amazonaws.com", None),
            ("example.test", None),
        ] {
            assert_eq!(provider_of_host(host), provider, "{host}");
        }
    }

    #[test]
    fn requests_go_to_the_provider_whose_paths_they_are() {
        let h = HeaderMap::new();
        let of = |p| provider_of(p, &h);
        assert_eq!(of("/v1/chat/completions"), Provider::OpenAi);
        assert_eq!(of("/v1/messages?beta=true"), Provider::Anthropic);
        assert_eq!(of("/v1beta/models/g:generateContent"), Provider::Gemini);
        assert_eq!(
            of("/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21"),
            Provider::Azure
        );
        assert_eq!(of("/openai/v1/responses"), Provider::Azure);
        assert_eq!(of("/api/chat"), Provider::Ollama);
        assert_eq!(
            of("/api"),
            Provider::OpenAi,
            "a prefix alone is no path under it"
        );
        assert!(is_api_path("/api/tags") && is_api_path("/openai/v1/models"));
        assert!(!is_api_path("/openaix/v1") && !is_api_path("/"));
        assert_eq!(
            prefixes(),
            "/v1/…, /v1beta/…, /v1alpha/…, /v1beta1/…, /openai/…, /api/…, /model/…"
        );
        assert_eq!(of("/model/anthropic.claude-v2/converse"), Provider::Bedrock);
        for vertex in [
            "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude@1:rawPredict",
            "/v1beta1/projects/p/locations/global/publishers/google/models/g:generateContent",
            "/v1beta1/publishers/google/models/g:streamGenerateContent?alt=sse",
        ] {
            assert_eq!(of(vertex), Provider::Vertex, "{vertex}");
        }
        assert_eq!(of("/v1/projects/p/models/x"), Provider::OpenAi);
        let at = |p| vertex_location(p, &h);
        assert_eq!(
            at("/v1/projects/p/locations/us-east5/publishers/anthropic/models/c:rawPredict")
                .as_deref(),
            Some("https://us-east5-aiplatform.googleapis.com")
        );
        assert_eq!(
            at("/v1beta1/projects/p/locations/eu/publishers/google/models/g:generateContent")
                .as_deref(),
            Some("https://aiplatform.eu.rep.googleapis.com")
        );
        assert_eq!(
            at("/v1beta1/publishers/google/models/g:generateContent").as_deref(),
            Some("https://aiplatform.googleapis.com")
        );
        assert_eq!(at("/v1/projects/p/locations/evil.test/x"), None);
    }

    #[test]
    fn ollama_host_is_read_as_the_ollama_client_reads_it() {
        assert_eq!(ollama_host("example.test"), "http://example.test:11434");
        assert_eq!(ollama_host("example.test:8080"), "http://example.test:8080");
        assert_eq!(ollama_host("0.0.0.0"), "http://127.0.0.1:11434");
        assert_eq!(ollama_host(":9000"), "http://127.0.0.1:9000");
        assert_eq!(ollama_host("[::1]"), "http://[::1]:11434");
        assert_eq!(
            ollama_host("example.test/prefix"),
            "http://example.test:11434/prefix"
        );
        assert_eq!(
            ollama_host("http://example.test:1234/prefix/"),
            "http://example.test:1234/prefix"
        );
        assert_eq!(ollama_host("https://example.test"), "https://example.test");
    }

    #[test]
    fn the_placeholder_is_found_in_any_header_or_the_query_and_named_by_its_variables() {
        let mut h = HeaderMap::new();
        assert!(!carries_placeholder(&h, "/v1/chat/completions"));
        h.insert(
            "authorization",
            format!("Bearer {PLACEHOLDER}").parse().unwrap(),
        );
        assert!(carries_placeholder(&h, "/v1/chat/completions"));
        let query = format!("/v1beta/models/m:generateContent?key={PLACEHOLDER}");
        assert!(carries_placeholder(&HeaderMap::new(), &query));
        assert_eq!(
            key_vars(Provider::OpenAi),
            ["OPENAI_API_KEY", "CODEX_API_KEY"]
        );
        assert_eq!(
            key_vars(Provider::Anthropic),
            ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"]
        );
        assert!(key_vars(Provider::Ollama).is_empty());
    }
}
