//! How old a cassette is, for `--max-age`: a recording of a model that has since changed
//! keeps passing, so an old one deserves a warning.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// The warning for the cassette at `path`, recorded at `recorded_at` (RFC 3339), when at
/// `now` it is older than `max_age`; `None` when it is not, or when its date cannot be
/// read (a cassette written by hand).
pub fn stale(path: &Path, recorded_at: &str, max_age: Duration, now: SystemTime) -> Option<String> {
    let recorded = humantime::parse_rfc3339_weak(recorded_at).ok()?;
    let age = now.duration_since(recorded).ok()?;
    (age > max_age).then(|| {
        format!(
            "cassette {} was recorded {} ago ({recorded_at}), more than the maximum age of {}; re-record it to check the agent against today's model",
            path.display(),
            rough(age),
            humantime::format_duration(max_age)
        )
    })
}

/// An age in its largest whole unit: `45 days`, `3 hours`, `10 minutes`.
fn rough(age: Duration) -> String {
    let secs = age.as_secs();
    let (n, unit) = match secs {
        0..3600 => (secs / 60, "minute"),
        3600..86_400 => (secs / 3600, "hour"),
        _ => (secs / 86_400, "day"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = 86_400;

    fn at(rfc3339: &str) -> SystemTime {
        humantime::parse_rfc3339(rfc3339).unwrap()
    }

    #[test]
    fn older_than_the_maximum_is_named_with_its_age() {
        let now = at("2026-12-02T08:00:00Z");
        let w = stale(
            Path::new("c.json"),
            "2026-10-17T08:00:00Z",
            Duration::from_secs(30 * DAY),
            now,
        );
        assert_eq!(
            w.as_deref(),
            Some("cassette c.json was recorded 46 days ago (2026-10-17T08:00:00Z), more than the maximum age of 30days; re-record it to check the agent against today's model")
        );
        let fresh = stale(
            Path::new("c.json"),
            "2026-11-30T08:00:00Z",
            Duration::from_secs(30 * DAY),
            now,
        );
        assert_eq!(fresh, None);
    }

    #[test]
    fn an_unreadable_or_future_date_is_no_warning() {
        let now = at("2026-12-02T08:00:00Z");
        let max = Duration::from_secs(60);
        assert_eq!(stale(Path::new("c"), "yesterday", max, now), None);
        assert_eq!(
            stale(Path::new("c"), "2027-01-01T00:00:00Z", max, now),
            None
        );
    }

    #[test]
    fn ages_round_down_to_their_largest_unit() {
        assert_eq!(rough(Duration::from_secs(59)), "0 minutes");
        assert_eq!(rough(Duration::from_secs(2 * 3600 + 5)), "2 hours");
        assert_eq!(rough(Duration::from_secs(DAY)), "1 day");
    }
}
