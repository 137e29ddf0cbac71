//! The egress log in words: the summary `record` and `replay` tell, what a test case's
//! verdict says, and the hosts a recording that caught nothing reached instead. Pure.

use super::log::{label, Counts, Log, OTHER_HOSTS};

/// A line of the egress summary; `refused` traffic fails a replay, so its line is said
/// even under `--quiet`.
#[derive(Debug)]
pub struct Line {
    pub text: String,
    pub refused: bool,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The summary `record` and `replay` tell on stderr: how far the program was contained
/// (`level`), and the traffic to hosts the proxy does not stand
/// in for: what went through while recording, what a replay refused.
pub fn lines(log: &Log, level: Option<&dyn std::fmt::Display>) -> Vec<Line> {
    // A line names at most SHOWN hosts: a program that reached thousands must not make
    // one line of its stderr hundreds of kilobytes long (`--json` names up to
    // `NAMED_HOSTS`).
    const SHOWN: usize = 20;
    let list = |pick: &dyn Fn(&Counts) -> usize| -> Vec<String> {
        let all: Vec<(&String, usize)> = (log.iter())
            .map(|(host, e)| (host, pick(e)))
            .filter(|(host, n)| *n > 0 && *host != OTHER_HOSTS)
            .collect();
        let mut shown: Vec<String> = (all.iter().take(SHOWN))
            .map(|(host, n)| format!("{} ×{n}", label(host)))
            .collect();
        if all.len() > SHOWN {
            shown.push(format!("and {} more hosts", all.len() - SHOWN));
        }
        match log.get(OTHER_HOSTS).map(pick) {
            Some(n) if n > 0 => shown.push(format!("{} ×{n}", label(OTHER_HOSTS))),
            _ => {}
        }
        shown
    };
    let said = |text: String| Line {
        text,
        refused: false,
    };
    let mut lines: Vec<Line> = (level.map(|l| said(format!("agentproxy: egress: {l}"))))
        .into_iter()
        .collect();
    for (pick, refused, text) in SUMMARY {
        let hosts = list(&pick);
        if !hosts.is_empty() {
            let text = text.replacen("{}", &hosts.join(", "), 1);
            lines.push(Line { text, refused });
        }
    }
    lines
}

/// The summary's lines in order: what each counts, whether it is a refusal (said even
/// under `--quiet`), and its text, `{}` standing for the hosts.
type Summary = (fn(&Counts) -> usize, bool, &'static str);
const SUMMARY: [Summary; 8] = [
    (|e| e.intercepted, false, "agentproxy: intercepted {} (recorded and replayed as base-URL traffic is)"),
    (|e| e.passed, false, "agentproxy: other hosts the program reached through the proxy (not recorded, so a replay refuses them; --record-other-hosts records them): {}"),
    (|e| e.allowed, false, "agentproxy: allowed hosts the program reached through the proxy: {}"),
    (|e| e.refused, true, "agentproxy: refused: {} outside the cassette (a replay reaches no host but the model APIs it serves); exit 1"),
    (|e| e.side, false, "agentproxy: refused a known client's side traffic, as its replay does (not a failure; see `agentproxy docs egress`): {}"),
    (|e| e.loopback, true, "agentproxy: refused the host's own loopback (contained, the program reaches none of the host's services through the proxy; --allow-host HOST:PORT lets one through): {}"),
    (|e| e.direct, true, "agentproxy: refused direct connections (the program ignored the proxy variables; contained, it reaches only the proxy): {}"),
    (|e| e.looked_up, false, "agentproxy: names the program looked up itself (ignoring the proxy variables; contained, each was answered with its own loopback): {}"),
];

/// What a test case's verdict says of its egress: traffic refused in a replay (a problem:
/// the case cannot be certified), named while recording (a warning: a replay will refuse
/// it).
pub fn findings(log: &Log, problems: &mut Vec<String>, warnings: &mut Vec<String>) {
    for (host, e) in log.iter() {
        let host = label(host);
        if e.refused > 0 {
            problems.push(format!(
                "{host} is outside the cassette: the replay refused {} connection(s) to it",
                e.refused
            ));
        }
        if e.direct > 0 {
            problems.push(format!(
                "the program ignored the proxy variables and connected to {host} directly ({} time(s)): contained, it was refused",
                e.direct
            ));
        }
        if e.loopback > 0 {
            warnings.push(format!(
                "the program asked the proxy for {host}, the host's own loopback ({} time(s)): contained, it was refused (`egress.allow` lets it through)",
                e.loopback
            ));
        }
        if e.looked_up > 0 {
            warnings.push(format!(
                "the program looked up {host} itself ({} time(s)), ignoring the proxy variables: contained, it was answered with its own loopback",
                e.looked_up
            ));
        }
        if e.passed > 0 {
            warnings.push(format!(
                "the program reached {host} through the proxy ({} connection(s)); it is not recorded, and a replay refuses it (`egress.record: true` records it)",
                e.passed
            ));
        }
    }
}

/// The other hosts the program reached through the proxy, not recorded: what a
/// recording that caught nothing names instead.
pub fn reached_elsewhere(log: &Log) -> Vec<String> {
    (log.iter())
        .filter(|(_, e)| e.passed + e.allowed > 0)
        .map(|(host, _)| label(host))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::log::{Passage, NAMED_HOSTS};
    use super::*;

    #[test]
    fn an_egress_line_names_at_most_twenty_hosts() {
        let mut log = Log::default();
        for n in 0..6000 {
            log.note(&format!("h{n:04}.test:443"), Passage::Passed);
        }
        let lines = lines(&log, None);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].text.len() < 800, "{} bytes", lines[0].text.len());
        assert!(lines[0].text.contains("h0000.test:443 ×1"), "{}", lines[0]);
        // Beyond the hosts the log names, the rest are counted together, last.
        let tail = format!(
            ", and {} more hosts, other hosts (beyond the first {NAMED_HOSTS}) ×{}",
            NAMED_HOSTS - 20,
            6000 - NAMED_HOSTS
        );
        assert!(lines[0].text.ends_with(&tail), "{}", lines[0]);
        assert!(!lines[0].refused);
    }

    #[test]
    fn refusals_are_problems_and_what_passed_is_a_warning() {
        let mut log = Log::default();
        log.note("db.test:5432", Passage::Refused);
        log.note("api.weather.test:443", Passage::Passed);
        let (mut problems, mut warnings) = (vec![], vec![]);
        findings(&log, &mut problems, &mut warnings);
        assert_eq!(
            problems,
            ["db.test:5432 is outside the cassette: the replay refused 1 connection(s) to it"]
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("the program reached api.weather.test:443"));
        assert_eq!(reached_elsewhere(&log), ["api.weather.test:443"]);
        let said = lines(&log, Some(&"contained (network namespace)"));
        assert_eq!(
            said[0].text,
            "agentproxy: egress: contained (network namespace)"
        );
        assert!(said
            .iter()
            .any(|l| l.refused && l.text.contains("db.test:5432 ×1")));
    }
}
