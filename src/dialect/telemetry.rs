//! Known telemetry: the services agents and their frameworks send traces, errors and usage
//! to, beside the model. One row each: the hosts it posts to (a leading `*.`: any host
//! under the domain), and the variables that switch it off, set in a replay where the
//! program's environment has not set them. Traffic to those hosts is named as telemetry.

use super::provider::ReplayVar;

pub struct Telemetry {
    pub name: &'static str,
    pub hosts: &'static [&'static str],
    pub off: &'static [ReplayVar],
}

/// Every known telemetry service.
pub const TELEMETRY: [Telemetry; 6] = [
    Telemetry {
        name: "LangSmith",
        hosts: &["*.smith.langchain.com"],
        off: &[
            ReplayVar {
                name: "LANGSMITH_TRACING",
                value: "false",
                why: "LangSmith: trace upload",
            },
            ReplayVar {
                name: "LANGCHAIN_TRACING_V2",
                value: "false",
                why: "LangSmith (older LangChain): trace upload",
            },
        ],
    },
    Telemetry {
        name: "Langfuse",
        hosts: &["*.langfuse.com"],
        off: &[ReplayVar {
            name: "LANGFUSE_TRACING_ENABLED",
            value: "false",
            why: "Langfuse: trace upload",
        }],
    },
    Telemetry {
        name: "OpenTelemetry",
        hosts: &[],
        off: &[ReplayVar {
            name: "OTEL_SDK_DISABLED",
            value: "true",
            why: "OpenTelemetry SDKs: span and metric export",
        }],
    },
    Telemetry {
        name: "Sentry",
        hosts: &["*.sentry.io"],
        off: &[ReplayVar {
            name: "SENTRY_DSN",
            value: "",
            why: "Sentry: error reports (an empty DSN turns the SDK off)",
        }],
    },
    Telemetry {
        name: "Datadog",
        hosts: &["*.datadoghq.com", "*.datadoghq.eu"],
        off: &[ReplayVar {
            name: "DD_TRACE_ENABLED",
            value: "false",
            why: "Datadog: trace upload",
        }],
    },
    Telemetry {
        name: "PostHog",
        hosts: &["*.posthog.com"],
        off: &[ReplayVar {
            name: "DO_NOT_TRACK",
            value: "1",
            why: "usage analytics of the tools that honour it (PostHog among them)",
        }],
    },
];

/// The telemetry service `host` (without its port) belongs to, if any.
pub fn telemetry_of(host: &str) -> Option<&'static str> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    TELEMETRY
        .iter()
        .find(|t| {
            t.hosts.iter().any(|p| match p.strip_prefix('*') {
                Some(domain) => host.ends_with(domain) && host.len() > domain.len(),
                None => host == *p,
            })
        })
        .map(|t| t.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telemetry_hosts_are_named() {
        assert_eq!(telemetry_of("api.smith.langchain.com"), Some("LangSmith"));
        assert_eq!(telemetry_of("o4504.ingest.us.sentry.io"), Some("Sentry"));
        assert_eq!(telemetry_of("us.i.posthog.com"), Some("PostHog"));
        assert_eq!(telemetry_of("sentry.io"), None);
        assert_eq!(telemetry_of("api.example.test"), None);
    }
}
