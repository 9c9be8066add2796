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
    let scheme = path.split_once("://").map(|(scheme, _)| scheme);
    scheme.is_some_and(|scheme| {
        ["http", "https", "s3"]
            .iter()
            .any(|known| scheme.eq_ignore_ascii_case(known))
    })
}

/// `url` with anything between `://` and an `@` in its authority replaced
/// by `***`: messages never show a password, even one in a refused URL.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest
        .get(..authority_end)
        .and_then(|authority| authority.rfind('@'))
    {
        Some(at) => format!("{scheme}://***{}", rest.get(at..).unwrap_or_default()),
        None => url.to_owned(),
    }
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
        let parsed =
            Url::parse(url).map_err(|error| invalid(&shown, format!("not a URL: {error}")))?;
        Self::from_url(shown, parsed)
    }

    fn from_url(display: String, url: Url) -> Result<Self> {
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
                .any(|part| part.is_empty() || part == "." || part == "..");
        if bad {
            return Err(invalid(
                &self.display,
                format!("sibling name {name:?} is not a relative object name"),
            ));
        }
        let joined = self
            .url
            .join(name)
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
}
