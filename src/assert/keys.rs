//! The syntax of field keys in a matcher: dotted paths with `\` escapes, and keys that look
//! like a misspelt operator.

/// Splits a path key on unescaped dots; `\.` is a literal dot and `\\` a literal backslash.
/// The empty key is one empty segment (a literal `""` key). The error says what is malformed.
pub(super) fn split_path(key: &str) -> Result<Vec<String>, String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut chars = key.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('.' | '\\')) => current.push(escaped),
                _ => {
                    return Err(format!(
                        "path `{key}` has a `\\` that escapes neither `.` nor `\\`"
                    ))
                }
            },
            '.' => segments.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    segments.push(current);
    if !key.is_empty() && segments.iter().any(String::is_empty) {
        return Err(format!("path `{key}` has an empty segment"));
    }
    Ok(segments)
}

/// The operator a field key probably meant: the same letters ignoring case and `_`/`-`, or one
/// edit away from an operator name of 5 letters or more. Shorter names (`gt`, `not`, `type`…)
/// are only matched ignoring case, because one edit from them is an ordinary field name
/// (`lat`, `note`); `fields` likewise, because of `field`.
pub(super) fn lookalike(key: &str, operators: &[&'static str]) -> Option<&'static str> {
    let squash = |s: &str| s.to_lowercase().replace(['_', '-', ' '], "");
    let key = squash(key);
    operators.iter().copied().find(|op| {
        let op_squashed = squash(op);
        key == op_squashed
            || (*op != "fields"
                && op_squashed.chars().count() >= 5
                && edit_distance(&key, &op_squashed) == 1)
    })
}

/// Levenshtein distance over chars; operator names are short, so the quadratic table is fine.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(parts: &[&str]) -> Result<Vec<String>, String> {
        Ok(parts.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn paths_split_on_unescaped_dots() {
        assert_eq!(split_path("a.0.b"), segments(&["a", "0", "b"]));
        assert_eq!(split_path(r"a\.b.c\\"), segments(&["a.b", r"c\"]));
        assert_eq!(split_path(""), segments(&[""]));
        assert!(split_path("a..b").is_err());
        assert!(split_path(r"a\b").is_err());
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("regexp", "regex"), 1);
        assert_eq!(edit_distance("contain", "contains"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
