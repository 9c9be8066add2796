//! URLs this crate reads: `http://`, `https://` and `s3://bucket/key`.

use object_store::path::Path as StorePath;
use url::Url;

use crate::error::{RemoteError, Result};

/// Whether a string is a URL this crate reads (by its scheme alone).
///
/// ```
/// assert!(binfmt_remote::is_remote("s3://bucket/data/train.arcx"));
/// assert!(binfmt_remote::is_remote("HTTPS://example.org/a.kas"));
/// assert!(!binfmt_remote::is_remote("data/train.arcx"));
/// ```
pub fn is_remote(path: &str) -> bool {
    // `http:`, `https:` or `s3:` with or without `//`: the URL parser reads
    // `http:u:p@h` and `http:\\u:p@h` as URLs with userinfo, so they are
    // parsed (and refused, redacted) as URLs, never taken for file names
    // whose errors would echo them (`./http:x` names such a file).
    let scheme = path.split_once(':').map(|(scheme, _)| scheme);
    scheme.is_some_and(|scheme| {
        ["http", "https", "s3"]
            .iter()
            .any(|known| scheme.eq_ignore_ascii_case(known))
    })
}

/// The longest URL accepted, in bytes: far above any real object's (S3
/// keys are at most 1,024 bytes), and far below what the HTTP stack
/// refuses by panicking (65,535), even once each path byte is
/// percent-encoded.
pub(crate) const MAX_URL: usize = 8192;

/// `url` without its userinfo: the printer gate's redaction
/// ([`binfmt_core::print::redact`]) for `scheme://user:pass@host`, and, for
/// the forms the URL parser also reads as userinfo (`http:user:pass@host`,
/// backslashes), `***` in place of everything between the scheme and the
/// last `@` of the authority. Messages never show a password, even one in a
/// refused URL.
fn redact(url: &str) -> String {
    let redacted = binfmt_core::print::redact(url).into_owned();
    let Some((scheme, rest)) = redacted.split_once(':') else {
        return redacted;
    };
    let authority = rest.trim_start_matches(['/', '\\']);
    let slashes = rest.len() - authority.len();
    let end = authority
        .find(['/', '\\', '?', '#'])
        .unwrap_or(authority.len());
    let redacted = match authority.get(..end).and_then(|part| part.rfind('@')) {
        Some(at) if !authority.starts_with("***@") => format!(
            "{scheme}:{}***{}",
            rest.get(..slashes).unwrap_or_default(),
            authority.get(at..).unwrap_or_default()
        ),
        _ => redacted,
    };
    // A query or fragment (a presigned URL's signature and token) is never
    // shown either.
    match redacted.find(['?', '#']) {
        Some(at) => format!(
            "{}{}***",
            redacted.get(..at).unwrap_or_default(),
            redacted.get(at..=at).unwrap_or_default()
        ),
        None => redacted,
    }
}

/// Whether a path segment of a URL, percent-decoded, is `.` or `..`, or
/// holds a separator once decoded (`%2e%2e`, `.%2E`, `%2f`): the URL parser
/// resolves encoded dot segments, and servers may split at a decoded `/`,
/// so such a path could name another object than it reads as.
fn hides_a_dot_segment(segment: &str) -> bool {
    let decoded: Vec<u8> = percent_decode(segment);
    decoded == b"." || decoded == b".." || decoded.contains(&b'/') || decoded.contains(&b'\\')
}

fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .filter(|_| byte == b'%')
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match hex {
            Some(value) => {
                decoded.push(value);
                at += 3;
            }
            None => {
                decoded.push(byte);
                at += 1;
            }
        }
    }
    decoded
}

/// The path of `url` as written (before the parser resolves anything):
/// after the scheme and authority, up to a query or fragment.
fn raw_path(url: &str) -> &str {
    let Some((_, rest)) = url.split_once(':') else {
        return "";
    };
    let authority = rest.trim_start_matches(['/', '\\']);
    let path = authority
        .find(['/', '\\'])
        .and_then(|start| authority.get(start..))
        .unwrap_or_default();
    let end = path.find(['?', '#']).unwrap_or(path.len());
    path.get(..end).unwrap_or_default()
}

/// How an object is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// Plain HTTP(S) GET with ranges.
    Http,
    /// The S3 API, signed from the AWS environment.
    S3,
}

/// One object: the URL it was named by, and how to reach it.
#[derive(Debug, Clone)]
pub(crate) struct Location {
    /// The URL as the user wrote it (or as a sibling's name joined it).
    pub display: String,
    pub scheme: Scheme,
    /// `scheme://host[:port]` for HTTP, the bucket for S3: every object of
    /// one family shares it.
    pub base: String,
    /// The object's path (HTTP) or key (S3), percent-decoded.
    pub path: StorePath,
    url: Url,
}

fn invalid(url: &str, why: impl Into<String>) -> RemoteError {
    RemoteError::InvalidUrl {
        url: url.to_owned(),
        why: why.into(),
    }
}

impl Location {
    /// Parses and checks `url`.
    pub fn parse(url: &str) -> Result<Self> {
        let shown = redact(url);
        if url.len() > MAX_URL {
            return Err(invalid(
                &shown.chars().take(200).collect::<String>(),
                format!(
                    "the URL is {} bytes long, more than the {MAX_URL} accepted",
                    url.len()
                ),
            ));
        }
        if raw_path(url).split(['/', '\\']).any(hides_a_dot_segment) {
            return Err(invalid(
                &shown,
                "a path segment is `.` or `..` (percent-encoded or not) or holds an encoded separator",
            ));
        }
        let parsed =
            Url::parse(url).map_err(|error| invalid(&shown, format!("not a URL: {error}")))?;
        Self::from_url(shown, parsed)
    }

    fn from_url(display: String, url: Url) -> Result<Self> {
        if url.as_str().len() > MAX_URL {
            return Err(invalid(
                &display.chars().take(200).collect::<String>(),
                format!("the URL is longer than the {MAX_URL} bytes accepted"),
            ));
        }
        let scheme = match url.scheme() {
            "http" | "https" => Scheme::Http,
            "s3" => Scheme::S3,
            other => {
                return Err(invalid(
                    &display,
                    format!("unsupported scheme {other:?} (http, https and s3 are read)"),
                ));
            }
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid(
                &display,
                "credentials in URLs are not accepted (S3 takes them from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(invalid(
                &display,
                "URLs with a query or fragment are not supported",
            ));
        }
        let Some(host) = url.host_str().filter(|host| !host.is_empty()) else {
            return Err(invalid(&display, "no host (or bucket) in the URL"));
        };
        let base = match scheme {
            Scheme::Http => url.origin().ascii_serialization(),
            Scheme::S3 => host.to_owned(),
        };
        let path = StorePath::from_url_path(url.path())
            .map_err(|error| invalid(&display, format!("bad object path: {error}")))?;
        Ok(Self {
            display,
            scheme,
            base,
            path,
            url,
        })
    }

    /// Whether the URL names a directory (ends with `/`) rather than an
    /// object.
    pub fn is_directory(&self) -> bool {
        self.url.path().ends_with('/')
    }

    /// The object called `name` in the same directory (`name` may have
    /// `/`-separated components, but no empty, `.` or `..` ones).
    pub fn sibling(&self, name: &str) -> Result<Self> {
        let bad = name.is_empty()
            || name.starts_with('/')
            || name.ends_with('/')
            || name.contains(['?', '#', '\\'])
            || name
                .split('/')
                .any(|part| part.is_empty() || hides_a_dot_segment(part));
        if bad {
            return Err(invalid(
                &self.display,
                format!("sibling name {name:?} is not a relative object name"),
            ));
        }
        // "./" first: a name with a ':' before any '/' (`c:d.tar`) is a
        // file name here, never a URL with a scheme.
        let joined = self
            .url
            .join(&format!("./{name}"))
            .map_err(|error| invalid(&self.display, format!("sibling {name:?}: {error}")))?;
        let display = match self.display.rfind('/') {
            Some(slash) => format!("{}/{name}", self.display.get(..slash).unwrap_or_default()),
            None => joined.to_string(),
        };
        Self::from_url(display, joined)
    }

    /// The directory the object lies in, as a prefix for listing.
    pub fn directory(&self) -> StorePath {
        if self.is_directory() {
            return self.path.clone();
        }
        let parts: Vec<_> = self.path.parts().collect();
        let keep = parts.len().saturating_sub(1);
        parts.into_iter().take(keep).collect()
    }

    /// The URL of another object of the same family, by its path.
    pub fn url_of(&self, path: &StorePath) -> String {
        match self.scheme {
            Scheme::Http => format!("{}/{path}", self.base),
            Scheme::S3 => format!("s3://{}/{path}", self.base),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_urls_split_into_origin_and_path() {
        let location = Location::parse("http://127.0.0.1:8080/dir/a%20b.arcx").unwrap();
        assert_eq!(location.scheme, Scheme::Http);
        assert_eq!(location.base, "http://127.0.0.1:8080");
        assert_eq!(location.path.as_ref(), "dir/a b.arcx");
        assert_eq!(location.directory().as_ref(), "dir");
    }

    #[test]
    fn s3_urls_name_bucket_and_key() {
        let location = Location::parse("s3://bucket/data/train.taridx").unwrap();
        assert_eq!(location.scheme, Scheme::S3);
        assert_eq!(location.base, "bucket");
        assert_eq!(location.path.as_ref(), "data/train.taridx");
        let shard = location.sibling("train_0001.tar").unwrap();
        assert_eq!(shard.display, "s3://bucket/data/train_0001.tar");
        assert_eq!(shard.path.as_ref(), "data/train_0001.tar");
        assert_eq!(
            location.url_of(&shard.path),
            "s3://bucket/data/train_0001.tar"
        );
    }

    #[test]
    fn siblings_stay_in_the_directory() {
        let location = Location::parse("http://h/a/b/index.taridx").unwrap();
        assert_eq!(
            location.sibling("sub/x.tar").unwrap().display,
            "http://h/a/b/sub/x.tar"
        );
        for bad in ["", "../x", "/x", "a//b", "./x", "x/", "x?y"] {
            assert!(location.sibling(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn unreadable_urls_are_refused_with_a_reason() {
        for (url, why) in [
            ("ftp://h/x", "unsupported scheme"),
            ("http://user:secret@h/x", "credentials"),
            ("https://h/x?X-Amz-Signature=1", "query"),
            ("not a url", "not a URL"),
        ] {
            let error = Location::parse(url).unwrap_err();
            assert!(error.to_string().contains(why), "{error}");
            assert!(!error.to_string().contains("secret@"), "{error}");
        }
        assert!(is_remote("http://h/x") && is_remote("s3://b/k") && !is_remote("/tmp/x"));
    }

    #[test]
    fn dot_segments_are_refused_encoded_or_not() {
        for url in [
            "http://h/a/../b",
            "http://h/a/./b",
            "http://h/a/%2e%2e/b",
            "http://h/a/%2E%2E/b",
            "http://h/a/.%2e/b",
            "http://h/a/%2e./b",
            "http://h/a/%2e/b",
            "s3://bucket/%2e%2e/other/key",
            "http://h/a/%2e%2e",
            "http://h/a/..%2fb",
            "http://h/a\\..\\b",
        ] {
            let error = Location::parse(url).unwrap_err();
            assert!(error.to_string().contains("`.` or `..`"), "{url}: {error}");
        }
        assert!(Location::parse("http://h/a/..b/%2e.x").is_ok());
        let location = Location::parse("http://h/a/b").unwrap();
        for bad in ["%2e%2e/x", ".%2E/x", "%2e/x", "a%2fb"] {
            assert!(location.sibling(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn overlong_urls_are_refused_before_the_http_stack_sees_them() {
        let url = format!("http://h/{}", "a".repeat(70_000));
        let error = Location::parse(&url).unwrap_err();
        assert!(error.to_string().contains("more than the 8192"), "{error}");
        assert!(error.to_string().len() < 400);
        let location = Location::parse("s3://b/k").unwrap();
        assert!(location.sibling(&"x".repeat(MAX_URL)).is_err());
    }

    #[test]
    fn userinfo_never_reaches_an_error_in_any_spelling() {
        for url in [
            "http://user:hunter22@h/x",
            "http:user:hunter22@h/x",
            "http:/user:hunter22@h/x",
            "http:\\\\user:hunter22@h/x",
            "s3://user:hunter22@bucket/x",
            "https://user:hunter22@/x",
            "http://a:hunter22@b@h/x",
            "https:bob:hunter22@h/x.taridx",
            "s3:bob:hunter22@bucket/x",
            "http://h/x?X-Amz-Security-Token=hunter22&X-Amz-Signature=hunter22",
            "http://h/x#hunter22",
        ] {
            // Each spelling is a URL (never a file name whose error would
            // echo it), and refused without the secret.
            assert!(is_remote(url), "{url}");
            let error = Location::parse(url).unwrap_err();
            let RemoteError::InvalidUrl { url: shown, .. } = &error else {
                unreachable!("{error:?}")
            };
            assert!(!error.to_string().contains("hunter22"), "{url}: {error}");
            assert!(!shown.contains("hunter22"), "{url}: {error}");
        }
    }
}
