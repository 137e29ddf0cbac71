//! `agentproxy doctor` with no command: what a bug report needs, in one screen. The
//! build (version, commit, date), the platform, where the binary is, whether this shell is
//! inside an agentproxy session, and the upstream each provider would record from.

use std::fmt::Write as _;

use serde::Serialize;

use crate::dialect::{Fallback, PROVIDERS};
use crate::runner::upstreams;

#[derive(Debug, Serialize)]
pub struct About {
    /// `0.1.0 (COMMIT, built DATE)`.
    pub version: &'static str,
    /// `linux x86_64`.
    pub platform: String,
    /// The kernel's release, when the system says.
    pub kernel: Option<String>,
    pub executable: Option<String>,
    /// `AGENTPROXY_URL` of this environment: set under `agentproxy record|replay|test`.
    pub session: Option<String>,
    /// Whether a program can be contained here (see `agentproxy docs egress`):
    /// `available (network namespace)`, or `not available: REASON`.
    pub containment: String,
    pub upstreams: Vec<Upstream>,
}

/// The upstream one provider records from, and what set it.
#[derive(Debug, Serialize)]
pub struct Upstream {
    pub provider: &'static str,
    /// `None`: recording this provider needs `--upstream NAME=URL`.
    pub url: Option<String>,
    /// `default`, or the variable it came from.
    pub from: String,
}

/// Read what a bug report needs from `env` (agentproxy's own environment) and the facts
/// of the build and system given.
pub fn about(
    version: &'static str,
    env: &dyn Fn(&str) -> Option<String>,
    kernel: Option<String>,
    executable: Option<String>,
    containment: Result<(), String>,
) -> About {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let resolved = upstreams::resolve(&[], env);
    let upstreams = PROVIDERS
        .iter()
        .map(|row| {
            let from = match &row.fallback {
                _ if var(row.env).is_some() => format!("${}", row.env),
                Fallback::Env { var: name, .. } if var(name).is_some() => format!("${name}"),
                Fallback::Env {
                    var: name,
                    or: None,
                    ..
                } => format!("no ${name} or ${}", row.env),
                Fallback::Request { says, .. } => format!("per request: {says}"),
                Fallback::Url(_) | Fallback::Env { .. } => "default".to_owned(),
            };
            let url = resolved.0.get(row.name).cloned();
            Upstream {
                provider: row.name,
                url,
                from,
            }
        })
        .collect();
    About {
        version,
        platform: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        kernel,
        executable,
        session: var("AGENTPROXY_URL"),
        containment: match containment {
            Ok(()) => "available (network namespace)".to_owned(),
            Err(why) => format!("not available: {why}; programs are intercepted only"),
        },
        upstreams,
    }
}

/// The report as text.
pub fn render(a: &About) -> String {
    let mut out = format!("agentproxy {}\n", a.version);
    let kernel = a.kernel.as_deref().map(|k| format!(", kernel {k}"));
    let _ = writeln!(
        out,
        "platform    {}{}",
        a.platform,
        kernel.unwrap_or_default()
    );
    let exe = a.executable.as_deref().unwrap_or("(unknown)");
    let _ = writeln!(out, "executable  {exe}");
    let session = match &a.session {
        Some(url) => format!("inside one: AGENTPROXY_URL={url}"),
        None => "none (AGENTPROXY_URL is not set)".to_owned(),
    };
    let _ = writeln!(out, "session     {session}");
    let _ = writeln!(out, "containment {}", a.containment);
    out.push_str("upstreams   what `record` forwards to (--upstream PROVIDER=URL overrides)\n");
    let width = a
        .upstreams
        .iter()
        .map(|u| u.provider.len())
        .max()
        .unwrap_or(0);
    for u in &a.upstreams {
        let url = u.url.as_deref().unwrap_or("none");
        let _ = writeln!(out, "  {:width$}  {url} ({})", u.provider, u.from);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &'static [(&'static str, &'static str)]) -> About {
        let env = move |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        };
        about(
            "0.1.0 (3c1eb896395a, built 2026-12-05)",
            &env,
            Some("6.1.0".into()),
            Some("/usr/bin/agentproxy".into()),
            Ok(()),
        )
    }

    #[test]
    fn containment_that_the_system_forbids_says_why() {
        let why = "the system does not let this user make a network namespace (unshare: Operation not permitted (os error 1))";
        let a = about("0.1.0", &|_| None, None, None, Err(why.into()));
        assert!(render(&a).contains(&format!(
            "containment not available: {why}; programs are intercepted only\n"
        )));
    }

    #[test]
    fn every_provider_says_its_upstream_and_where_it_came_from() {
        let a = with(&[
            ("ANTHROPIC_BASE_URL", "http://ignored.test"),
            ("AGENTPROXY_ANTHROPIC_UPSTREAM", "http://fake.test:9"),
            ("OLLAMA_HOST", "gpu.test:11434"),
        ]);
        let text = render(&a);
        assert!(text.starts_with("agentproxy 0.1.0 (3c1eb896395a, built 2026-12-05)\n"));
        for want in [
            "  openai     https://api.openai.com (default)\n",
            "  anthropic  http://fake.test:9 ($AGENTPROXY_ANTHROPIC_UPSTREAM)\n",
            "  azure      none (no $AZURE_OPENAI_ENDPOINT or $AGENTPROXY_AZURE_UPSTREAM)\n",
            "  ollama     http://gpu.test:11434 ($OLLAMA_HOST)\n",
            "session     none (AGENTPROXY_URL is not set)\n",
            "containment available (network namespace)\n",
            ", kernel 6.1.0\n",
            "executable  /usr/bin/agentproxy\n",
        ] {
            assert!(text.contains(want), "{want:?} not in\n{text}");
        }
        assert_eq!(a.upstreams.len(), PROVIDERS.len());
    }

    /// docs/doctor-and-determinism.md shows this (the build line fixed, so it stays put).
    #[test]
    fn about_snapshot() {
        let mut a = with(&[("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.test")]);
        a.platform = "linux x86_64".into();
        insta::assert_snapshot!(render(&a));
    }

    #[test]
    fn a_session_is_named() {
        let a = with(&[("AGENTPROXY_URL", "http://127.0.0.1:4000")]);
        assert!(
            render(&a).contains("session     inside one: AGENTPROXY_URL=http://127.0.0.1:4000\n")
        );
    }
}
