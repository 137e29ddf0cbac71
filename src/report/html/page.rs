//! The shell of an HTML page: one self-contained file (its style and script inline, no
//! reference to anything outside it), a Content-Security-Policy that allows that style and
//! that script by their hashes and nothing else, and the escaping every value goes through.

use base64::Engine;
use sha2::{Digest, Sha256};

/// The one escaper of every HTML page: everything from a run (a cassette, a tool result,
/// a model reply) passes through it and stays text.
pub use crate::trajectory::html::esc;

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// At most `max` characters of `s`, escaped, with a note of how much was left out.
pub fn esc_cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => esc(s),
        Some((at, _)) => format!(
            "{}<span class=\"cut\">… {} more characters</span>",
            esc(&s[..at]),
            s[at..].chars().count()
        ),
    }
}

/// `'sha256-…'`, the CSP source that allows exactly this inline text.
fn hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The policy: nothing but the page's own style, and its script when it has one.
fn policy(script: bool) -> String {
    let script = if script {
        hash(JS)
    } else {
        "'none'".to_owned()
    };
    format!(
        "default-src 'none'; style-src {}; script-src {script}; img-src 'none'; base-uri 'none'; form-action 'none'",
        hash(CSS)
    )
}

/// The whole document: `title` (text) and `body` (markup already escaped), with the
/// filtering script when `script`.
pub fn document(title: &str, body: &str, script: bool) -> String {
    let js = if script {
        format!("<script>{JS}</script>\n")
    } else {
        String::new()
    };
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n<title>{}</title>\n\
         <style>{CSS}</style>\n</head>\n<body>\n{body}{js}</body>\n</html>\n",
        policy(script),
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_stays_text() {
        assert_eq!(
            esc(r#"<script>"x" & 'y'</script>"#),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
        assert_eq!(
            esc_cut("abcdef", 3),
            "abc<span class=\"cut\">… 3 more characters</span>"
        );
        assert_eq!(esc_cut("é<", 5), "é&lt;");
    }

    /// The policy names the exact hashes of the inline style and script, so a browser
    /// runs them and nothing else (a script that got into the page by any path is blocked).
    #[test]
    fn the_policy_allows_the_page_s_own_style_and_script_only() {
        let page = document("t", "", true);
        assert!(page.contains(&format!("style-src {};", hash(CSS))));
        assert!(page.contains(&format!("script-src {};", hash(JS))));
        assert!(page.contains(&format!("<style>{CSS}</style>")));
        assert!(page.contains(&format!("<script>{JS}</script>")));
        assert!(document("t", "", false).contains("script-src 'none';"));
        assert!(!document("t", "", false).contains("<script>"));
    }
}
