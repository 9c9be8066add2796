//! The printer gate: every line binfmt shows a person passes through here.
//!
//! Text printed by binfmt comes from many places: names inside files,
//! paths from the command line, URLs from a shard list, the body of a
//! server's error. Any of them can hold bytes that forge a line (`\n`),
//! drive the terminal (ESC sequences) or show a name backwards
//! (bidirectional overrides), and some can hold a secret (a URL's
//! `user:password@`, the value of `AWS_SECRET_ACCESS_KEY`). [`line`] makes
//! any text safe to print whatever its origin:
//!
//! 1. [`redact`]: a URL's userinfo becomes `***@`, and the values of the
//!    secret environment variables ([`SECRET_VARIABLES`]) become `***`;
//! 2. [`escape`]: control characters and the invisible characters that
//!    reorder or break a line are written as Rust escapes (`\n`,
//!    `\u{1b}`, `\u{202e}`); everything else, Unicode included, as it is.
//!
//! # Examples
//!
//! ```
//! use binfmt_core::print;
//! assert_eq!(print::line("bad\nname"), "bad\\nname");
//! assert_eq!(
//!     print::line("cannot read https://ann:hunter2@example.com/a.tar"),
//!     "cannot read https://***@example.com/a.tar"
//! );
//! ```

use std::borrow::Cow;

/// Environment variables whose values are never printed.
pub const SECRET_VARIABLES: &[&str] = &[
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
];

/// `text` as one safe line: [`redact`]ed, then [`escape`]d.
pub fn line(text: impl std::fmt::Display) -> String {
    let text = text.to_string();
    escape(&redact(&text)).into_owned()
}

/// A name as a text listing shows it: control characters (escape, newline,
/// tab, ...) and the invisible characters that reorder or break what is
/// shown (bidirectional marks, overrides and isolates, line and paragraph
/// separators) escaped, so a name cannot forge lines, move the cursor or
/// show its extension backwards; everything else as it is.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hides) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hides(c) {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// Whether `c` is escaped by [`escape`]: a control character or one that
/// reorders or breaks a line (JSON writers use it to escape the same
/// characters as `\uXXXX`).
pub fn hides(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{61c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` without secrets: every URL's userinfo (`scheme://user:pass@`)
/// replaced by `***`, its query and fragment by `?***` (presigned URLs
/// carry signatures and tokens there), and every value of a [`SECRET_VARIABLES`] variable
/// (as it is, and as Rust's `{:?}` or [`escape`] would show it) by `***`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut text = Cow::Borrowed(text);
    for name in SECRET_VARIABLES {
        let Some(value) = std::env::var_os(name) else {
            continue;
        };
        let value = value.to_string_lossy();
        // A value of a few characters would blot out ordinary words and
        // numbers in listings (real keys are 40 characters, tokens longer).
        if value.chars().count() < 8 {
            continue;
        }
        let debug = format!("{value:?}");
        let forms = [
            value.to_string(),
            escape(&value).into_owned(),
            debug
                .get(1..debug.len().saturating_sub(1))
                .unwrap_or_default()
                .to_owned(),
        ];
        for form in forms {
            if !form.is_empty() && text.contains(&form) {
                text = Cow::Owned(text.replace(&form, "***"));
            }
        }
    }
    match redact_userinfo(&text) {
        Some(redacted) => Cow::Owned(redacted),
        None => text,
    }
}

/// Schemes whose URLs are redacted in every spelling a URL parser accepts
/// (`http:u:p@h`, `http:/u:p@h`, `http:\\u:p@h`); any other scheme only
/// when written with `://`.
const URL_SCHEMES: &[&str] = &[
    "http", "https", "s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "ftp", "sftp",
    "ssh", "file", "hf",
];

/// `text` with the userinfo of each URL (`scheme://userinfo@host`, and the
/// other spellings of [`URL_SCHEMES`]) replaced by `***`, and its query and
/// fragment by `?***` (`#***`), or `None` when there is none.
fn redact_userinfo(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = text;
    let mut changed = false;
    while let Some(authority_start) = next_authority(rest) {
        let (head, tail) = rest.split_at(authority_start);
        out.push_str(head);
        // The authority ends at the path, query, fragment or any character
        // a URL cannot hold unescaped (a quote or space around it in a
        // message).
        let end = tail
            .find(|c: char| {
                matches!(c, '/' | '\\' | '?' | '#' | '"' | '\'' | '`' | '<' | '>')
                    || c.is_whitespace()
                    || c.is_control()
            })
            .unwrap_or(tail.len());
        let (authority, after) = tail.split_at(end);
        match authority.rfind('@') {
            Some(at_sign) => {
                out.push_str("***");
                out.push_str(authority.get(at_sign..).unwrap_or_default());
                changed = true;
            }
            None => out.push_str(authority),
        }
        // The query and fragment (a presigned URL's signature and token)
        // up to where the URL ends, its closing punctuation kept.
        let url_end = after
            .find(|c: char| {
                matches!(c, '"' | '\'' | '`' | '<' | '>') || c.is_whitespace() || c.is_control()
            })
            .unwrap_or(after.len());
        let (url, beyond) = after.split_at(url_end);
        match url.find(['?', '#']) {
            Some(at) => {
                let (path, query) = url.split_at(at);
                let kept = query.len() - query.trim_end_matches([':', ',', ';', ')', '.']).len();
                out.push_str(path);
                out.push_str(query.get(..1).unwrap_or_default());
                out.push_str("***");
                out.push_str(query.get(query.len() - kept..).unwrap_or_default());
                changed = true;
                rest = beyond;
            }
            None => rest = after,
        }
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// Where the next URL authority in `text` starts: after `://`, or after a
/// known scheme's `:` and any slashes or backslashes.
fn next_authority(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(colon) = text.get(from..)?.find(':').map(|at| at + from) {
        let before = text.get(..colon).unwrap_or_default();
        let scheme_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |at| at + 1);
        let scheme = before.get(scheme_start..).unwrap_or_default();
        let after = text.get(colon + 1..).unwrap_or_default();
        let slashes = after.len() - after.trim_start_matches(['/', '\\']).len();
        let known = URL_SCHEMES
            .iter()
            .any(|known| known.eq_ignore_ascii_case(scheme));
        if !scheme.is_empty() && (known || after.starts_with("//")) {
            return Some(colon + 1 + slashes);
        }
        from = colon + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape("caf\u{e9}/\u{65e5}.txt"), "caf\u{e9}/\u{65e5}.txt");
        assert_eq!(escape("evil\nline"), "evil\\nline");
        assert_eq!(escape("\u{1b}[2Jclear"), "\\u{1b}[2Jclear");
        assert_eq!(escape("tab\there"), "tab\\there");
        // A right-to-left override would show "exe.txt" as "txt.exe".
        assert_eq!(escape("a\u{202e}txt.exe"), "a\\u{202e}txt.exe");
        assert_eq!(escape("line\u{2028}break"), "line\\u{2028}break");
        assert_eq!(escape("\u{7f}\u{85}"), "\\u{7f}\\u{85}");
    }

    #[test]
    fn queries_and_fragments_of_urls_are_redacted() {
        assert_eq!(
            redact("http://h/x.taridx?X-Amz-Security-Token=T0KEN&X-Amz-Signature=s: no"),
            "http://h/x.taridx?***: no"
        );
        assert_eq!(
            redact("'s3://b/k#frag' and more"),
            "'s3://b/k#***' and more"
        );
        assert_eq!(
            redact("http:u:pw@h/a?q=1 then https://h/b"),
            "http:***@h/a?*** then https://h/b"
        );
        assert_eq!(redact("what? no url here"), "what? no url here");
    }

    #[test]
    fn userinfo_is_redacted_wherever_a_url_stands() {
        assert_eq!(
            redact("http://user:password@host/x and s3://k:s@b/y"),
            "http://***@host/x and s3://***@b/y"
        );
        assert_eq!(
            redact("\"https://a@b@host:8/p\""),
            "\"https://***@host:8/p\""
        );
        assert_eq!(redact("no url here: a@b"), "no url here: a@b");
        assert_eq!(redact("https://host/p@q"), "https://host/p@q");
        assert_eq!(redact("ends at ftp://u:p@h"), "ends at ftp://***@h");
        // The spellings a URL parser also reads as userinfo.
        assert_eq!(redact("http:u:pw@h/x"), "http:***@h/x");
        assert_eq!(redact("http:/u:pw@h/x"), "http:/***@h/x");
        assert_eq!(redact("HTTPS:\\\\u:pw@h"), "HTTPS:\\\\***@h");
        assert_eq!(redact("binfmt: x: error: a@b"), "binfmt: x: error: a@b");
        assert_eq!(redact("key:value@x"), "key:value@x");
    }

    #[test]
    fn a_line_is_redacted_then_escaped() {
        assert_eq!(
            line("x://u:p@h/\u{1b}[31m\nforged"),
            "x://***@h/\\u{1b}[31m\\nforged"
        );
    }
}
