//! Volatile spans: the date, time, uuid, number and hex runs a `match.holes` entry can
//! stand for, and which of them explain the change between two strings.

use std::sync::OnceLock;

use regex::Regex;

/// Volatile spans a hole can stand for, tried in this order: the first whose matches,
/// replaced in both strings, leaves them equal wins. Each is a kind name (the hole's
/// suggested name) and its regex.
pub(crate) const VOLATILE_SPANS: [(&str, &str); 6] = [
    (
        "uuid",
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    ),
    (
        "datetime",
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
    ),
    ("date", r"\d{4}-\d{2}-\d{2}"),
    ("time", r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"),
    ("number", r"\d+(?:\.\d+)?"),
    ("hex", r"[0-9a-fA-F]{8,}"),
];

fn span_regexes() -> &'static [Regex] {
    static RES: OnceLock<Vec<Regex>> = OnceLock::new();
    RES.get_or_init(|| {
        VOLATILE_SPANS
            .iter()
            .map(|(_, re)| Regex::new(re).expect("valid volatile-span regex"))
            .collect()
    })
}

/// How many kinds at the start of [`VOLATILE_SPANS`] are specific (uuid, dates, times);
/// the rest (numbers, hex) are generic and tried only when those do not explain a change.
const SPECIFIC_SPANS: usize = 4;

/// Which volatile spans, made holes, would make two differing strings equal: a single
/// specific kind, else specific kinds together, else a single generic kind, else any
/// kinds together (the fewest needed). A single kind must also stand alone (not inside a
/// longer word), so a number is not found inside an id.
pub(super) fn volatile_spans(a: &str, b: &str) -> Option<Vec<usize>> {
    let specific: Vec<usize> = (0..SPECIFIC_SPANS).collect();
    let all: Vec<usize> = (0..VOLATILE_SPANS.len()).collect();
    let single = |kinds: &[usize]| {
        kinds.iter().copied().find(|&k| {
            let re = &span_regexes()[k];
            fill_all(a, &[k]) == fill_all(b, &[k]) && stands_alone(a, re) && stands_alone(b, re)
        })
    };
    single(&specific)
        .map(|k| vec![k])
        .or_else(|| together(a, b, &specific))
        .or_else(|| single(&all[SPECIFIC_SPANS..]).map(|k| vec![k]))
        .or_else(|| together(a, b, &all))
}

/// Every match of the given kinds replaced by a marker, in order.
fn fill_all(s: &str, kinds: &[usize]) -> String {
    let mut out = s.to_owned();
    for &k in kinds {
        out = span_regexes()[k].replace_all(&out, "\u{0}").into_owned();
    }
    out
}

/// The kinds among `kinds` that, applied together, make the strings equal, with the ones
/// not needed dropped; `None` when even all of them do not.
fn together(a: &str, b: &str, kinds: &[usize]) -> Option<Vec<usize>> {
    if fill_all(a, kinds) != fill_all(b, kinds) {
        return None;
    }
    let mut used = kinds.to_vec();
    for k in kinds.iter().rev() {
        let without: Vec<usize> = used.iter().copied().filter(|u| u != k).collect();
        if fill_all(a, &without) == fill_all(b, &without) {
            used = without;
        }
    }
    Some(used)
}

/// Every match of `re` in `s` is bounded by non-alphanumeric characters.
fn stands_alone(s: &str, re: &Regex) -> bool {
    re.find_iter(s).all(|m| {
        let before = s[..m.start()].chars().next_back();
        let after = s[m.end()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric()) && !after.is_some_and(|c| c.is_alphanumeric())
    })
}
