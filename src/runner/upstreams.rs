//! Which upstream each provider records from: `--upstream [PROVIDER=]URL` (and the older
//! per-provider flags), else the provider's `AGENTPROXY_*_UPSTREAM` variable, else its
//! fallback in the provider table (a fixed URL, or the endpoint the program would have
//! used, read from agentproxy's own environment).

use crate::cassette::format::Upstreams;
use crate::dialect::{Fallback, Provider, PROVIDERS};
use crate::proxy::upstream::InvalidUpstream;

/// `URL` (the OpenAI-compatible upstream) or `PROVIDER=URL`.
pub fn parse(value: &str) -> Result<(Provider, String), InvalidUpstream> {
    let Some((name, url)) = value.split_once('=') else {
        return Ok((Provider::OpenAi, value.to_owned()));
    };
    if name.contains([':', '/']) {
        // `=` inside a URL; the URL check refuses its query later.
        return Ok((Provider::OpenAi, value.to_owned()));
    }
    match Provider::named(name) {
        Some(p) => Ok((p, url.to_owned())),
        None => Err(InvalidUpstream {
            url: value.to_owned(),
            reason: format!("unknown provider `{name}`; the providers are {}", names()),
        }),
    }
}

/// `openai, anthropic, gemini, azure, ollama`.
pub fn names() -> String {
    PROVIDERS
        .iter()
        .map(|r| r.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every provider's upstream: the last `given` for it, else its variable, else its fallback.
/// A provider with none (Azure without an endpoint) is left out.
pub fn resolve(given: &[(Provider, String)], env: &dyn Fn(&str) -> Option<String>) -> Upstreams {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let mut out = Upstreams::default();
    for row in &PROVIDERS {
        let flag = given.iter().rev().find(|(p, _)| *p == row.provider);
        let url = match (flag, &row.fallback) {
            (Some((_, url)), _) => Some(url.clone()),
            (None, _) if var(row.env).is_some() => var(row.env),
            (None, Fallback::Url(url)) => Some((*url).to_owned()),
            (
                None,
                Fallback::Env {
                    var: name,
                    read,
                    or,
                },
            ) => var(name).map(|v| read(&v)).or(or.map(str::to_owned)),
            // Each request names its own (see `Fallback::Request`).
            (None, Fallback::Request { .. }) => None,
        };
        if let Some(url) = url {
            out.set(row.provider, url);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_url_is_openai_and_a_named_one_its_provider() {
        assert_eq!(
            parse("https://openrouter.test/api").unwrap(),
            (Provider::OpenAi, "https://openrouter.test/api".to_owned())
        );
        assert_eq!(
            parse("azure=https://res.openai.azure.test").unwrap(),
            (Provider::Azure, "https://res.openai.azure.test".to_owned())
        );
        assert_eq!(
            parse("Ollama=http://gpu.test:11434").unwrap().0,
            Provider::Ollama
        );
        let e = parse("bedrocks=https://x.test").unwrap_err();
        assert!(
            e.reason
                .contains("unknown provider `bedrocks`; the providers are openai, anthropic, gemini, azure, ollama, bedrock"),
            "{}",
            e.reason
        );
    }

    #[test]
    fn a_flag_beats_the_variable_which_beats_the_fallback() {
        let env = |name: &str| match name {
            "AGENTPROXY_ANTHROPIC_UPSTREAM" => Some("http://a.test".to_owned()),
            "AZURE_OPENAI_ENDPOINT" => Some("https://res.openai.azure.test/".to_owned()),
            "OLLAMA_HOST" => Some("gpu.test".to_owned()),
            _ => None,
        };
        let given = [
            (Provider::Gemini, "http://g1.test".to_owned()),
            (Provider::Gemini, "http://g2.test".to_owned()),
        ];
        let u = resolve(&given, &env);
        assert_eq!(u.of(Provider::OpenAi), "https://api.openai.com");
        assert_eq!(u.of(Provider::Anthropic), "http://a.test");
        assert_eq!(
            u.of(Provider::Gemini),
            "http://g2.test",
            "the last flag wins"
        );
        assert_eq!(u.of(Provider::Azure), "https://res.openai.azure.test");
        assert_eq!(u.of(Provider::Ollama), "http://gpu.test:11434");
    }

    #[test]
    fn azure_has_no_upstream_unless_an_endpoint_is_known() {
        let u = resolve(&[], &|_| None);
        assert_eq!(u.of(Provider::Azure), "");
        assert!(!u.0.contains_key("azure"));
        assert_eq!(u.of(Provider::Ollama), "http://127.0.0.1:11434");
    }
}
