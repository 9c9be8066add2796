//! The S3 settings, checked before a store is built.
//!
//! object_store reads every `AWS_*` variable it knows
//! (`AmazonS3Builder::from_env`) and trusts them: a value that cannot go
//! into an HTTP header (a newline in `AWS_SESSION_TOKEN`) or an endpoint
//! that is not a URL panics inside it on the first request. So each value
//! it would read, from the environment and from
//! [`crate::RemoteOptions::with_s3_setting`], is checked here first, by
//! what it becomes: a URL, a region (part of a host name and of the
//! signature), a file path, or header text. A bad one is one message naming
//! the variable, never its value (it may be a secret).

use std::ffi::OsString;

use object_store::ClientConfigKey;
use object_store::aws::AmazonS3ConfigKey;
use url::Url;

use crate::location::MAX_URL;

/// What a setting's value must be.
enum Kind {
    /// An `http://` or `https://` URL with a host and no userinfo.
    Url,
    /// A path on the server, starting with `/` (ECS's relative URI).
    UrlPath,
    /// Letters, digits and `-` (a region is part of a host name).
    Region,
    /// A local file's path: no control characters.
    Path,
    /// Printable ASCII (`0x20..=0x7e`): what an HTTP header may carry.
    Header,
}

fn kind(key: &AmazonS3ConfigKey) -> Kind {
    match key {
        AmazonS3ConfigKey::Endpoint
        | AmazonS3ConfigKey::S3Endpoint
        | AmazonS3ConfigKey::MetadataEndpoint
        | AmazonS3ConfigKey::StsEndpoint
        | AmazonS3ConfigKey::ContainerCredentialsFullUri
        | AmazonS3ConfigKey::Client(ClientConfigKey::ProxyUrl) => Kind::Url,
        AmazonS3ConfigKey::ContainerCredentialsRelativeUri => Kind::UrlPath,
        AmazonS3ConfigKey::Region | AmazonS3ConfigKey::DefaultRegion => Kind::Region,
        AmazonS3ConfigKey::WebIdentityTokenFile
        | AmazonS3ConfigKey::ContainerAuthorizationTokenFile
        | AmazonS3ConfigKey::Client(ClientConfigKey::ProxyCaCertificate) => Kind::Path,
        _ => Kind::Header,
    }
}

/// Why `value` is not a valid value of this kind, if it is not.
fn problem(kind: &Kind, value: &str) -> Option<&'static str> {
    let printable = |text: &str| text.bytes().all(|byte| (0x20..=0x7e).contains(&byte));
    match kind {
        Kind::Header => (!printable(value)).then_some(
            "holds a character an HTTP header cannot carry (a control character or non-ASCII)",
        ),
        Kind::Path => {
            if value.chars().any(char::is_control) {
                return Some("holds a control character");
            }
            // object_store reads the file itself, whole and blocking: the
            // input gate looks first (a FIFO would hang the read, a device
            // such as /dev/zero would be read until memory runs out).
            binfmt_core::input::read(value, SETTING_FILE_LIMIT, "setting file")
                .err()
                .map(|_| "does not name a readable regular file of at most 16 MiB")
        }
        Kind::Region => {
            let valid = !value.is_empty()
                && value.len() <= 64
                && value
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-');
            (!valid).then_some("is not a region name (letters, digits and `-`)")
        }
        Kind::UrlPath => (!value.starts_with('/') || !printable(value) || value.contains(' '))
            .then_some("is not a URL path (printable, starting with `/`)"),
        Kind::Url => {
            // The characters an HTTP request's URI cannot hold unescaped:
            // `url` would escape them, object_store's request builder
            // panics on them.
            let unescaped = |c: char| {
                matches!(
                    c,
                    ' ' | '<' | '>' | '"' | '{' | '}' | '|' | '\\' | '^' | '`'
                )
            };
            if value.len() > MAX_URL || !printable(value) || value.contains(unescaped) {
                return Some("is not an http:// or https:// URL");
            }
            match Url::parse(value) {
                Ok(url)
                    if matches!(url.scheme(), "http" | "https")
                        && url.host_str().is_some_and(|host| !host.is_empty())
                        && url.username().is_empty()
                        && url.password().is_none() =>
                {
                    None
                }
                Ok(url) if !url.username().is_empty() || url.password().is_some() => Some(
                    "holds credentials in the URL (they go in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
                ),
                _ => Some("is not an http:// or https:// URL with a host"),
            }
        }
    }
}

/// The largest file a setting may name (a web identity token, a CA
/// certificate bundle).
const SETTING_FILE_LIMIT: u64 = 16 << 20;

/// Checks the variables the TLS stack reads for any `https://` request
/// (`SSL_CERT_FILE`: a certificate bundle read whole): a FIFO, a device or
/// a file over 16 MiB there is one message naming the variable.
pub(crate) fn check_tls(
    environment: impl IntoIterator<Item = (OsString, OsString)>,
) -> Result<(), String> {
    for (name, value) in environment {
        if name == "SSL_CERT_FILE" {
            let path = std::path::PathBuf::from(value);
            if binfmt_core::input::read(&path, SETTING_FILE_LIMIT, "certificate file").is_err() {
                return Err(
                    "SSL_CERT_FILE does not name a readable regular file of at most 16 MiB (its value is not shown)"
                        .to_owned(),
                );
            }
        }
    }
    Ok(())
}

/// The message for the setting `name`.
fn message(name: &str, why: &str) -> String {
    format!("the S3 setting {name} {why} (its value is not shown)")
}

/// Checks one setting, by name (`AWS_REGION`, `aws_region`, ...): unknown
/// names are left to the caller.
fn check_one(name: &str, value: &str) -> Result<(), String> {
    let Ok(key) = name.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() else {
        return Ok(());
    };
    match problem(&kind(&key), value) {
        Some(why) => Err(message(name, why)),
        None => Ok(()),
    }
}

/// Checks every `AWS_*` variable of `environment` that object_store would
/// read, then `settings` (which take precedence): the first bad one is the
/// error, naming it.
pub(crate) fn check_s3(
    environment: impl IntoIterator<Item = (OsString, OsString)>,
    settings: &[(String, String)],
) -> Result<(), String> {
    let mut names: Vec<(String, Result<String, ()>)> = environment
        .into_iter()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            let known = name.starts_with("AWS_")
                && name
                    .to_ascii_lowercase()
                    .parse::<AmazonS3ConfigKey>()
                    .is_ok();
            known.then(|| (name, value.into_string().map_err(|_| ())))
        })
        .collect();
    // The same order whatever the environment's.
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, value) in names {
        // object_store skips a value that is not UTF-8: reading without
        // the setting the user made is refused instead.
        let value = value.map_err(|()| message(&name, "is not UTF-8 text"))?;
        check_one(&name, &value)?;
    }
    for (name, value) in settings {
        check_one(name, value)?;
    }
    Ok(())
}

/// The message for a failure of object_store's builder (a value it could
/// not parse: `AWS_TIMEOUT=soon`), whose text repeats the value: the
/// setting whose value the text holds is named instead, and the text left
/// out. Text that holds no setting's value is kept.
pub(crate) fn explain_build_error(
    text: &str,
    environment: impl IntoIterator<Item = (OsString, OsString)>,
    settings: &[(String, String)],
) -> String {
    let mut candidates: Vec<(String, String)> = environment
        .into_iter()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| {
            name.starts_with("AWS_")
                && name
                    .to_ascii_lowercase()
                    .parse::<AmazonS3ConfigKey>()
                    .is_ok()
        })
        .collect();
    candidates.sort();
    // Settings take precedence over the environment: looked at first.
    let all: Vec<(String, String)> = settings.iter().cloned().chain(candidates).collect();
    let quoted = all
        .iter()
        .find(|(_, value)| !value.is_empty() && text.contains(&format!("{value:?}")));
    let bare = || {
        all.iter()
            .find(|(_, value)| value.len() >= 4 && text.contains(value.as_str()))
    };
    match quoted.or_else(bare) {
        Some((name, _)) => message(name, "is not a value object_store accepts"),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value)))
            .collect()
    }

    #[test]
    fn good_settings_pass() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("tok en");
        std::fs::write(&token, "a web identity token").unwrap();
        let environment = env(&[
            ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "abc/def+ghi=="),
            ("AWS_SESSION_TOKEN", "FwoGZXIvYXdzE+/="),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000"),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
            (
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "/v2/credentials/x",
            ),
            ("AWS_PROFILE", "unread\nby object_store"),
            ("PATH", "/bin\n"),
        ]);
        check_s3(environment, &[("aws_region".into(), "us-east-1".into())]).unwrap();
    }

    #[test]
    fn bad_settings_name_the_variable_never_the_value() {
        for (name, value) in [
            ("AWS_SESSION_TOKEN", "tok\nen-secret"),
            ("AWS_ACCESS_KEY_ID", "key\r\nX-Injected: 1"),
            ("AWS_SECRET_ACCESS_KEY", "s\u{e9}cret-value"),
            ("AWS_REGION", "us-east-1\n"),
            ("AWS_DEFAULT_REGION", "a/b"),
            ("AWS_ENDPOINT_URL", "not a url-secret"),
            ("AWS_ENDPOINT", "ftp://host-secret"),
            ("AWS_ENDPOINT_URL_S3", "http://"),
            ("AWS_ENDPOINT_URL_STS", "http://u:p-secret@h"),
            ("AWS_METADATA_ENDPOINT", "169.254.169.254-secret"),
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "::secret"),
            ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "v2-secret"),
            ("AWS_PROXY_URL", "proxy-secret"),
            ("AWS_BUCKET", "b\tsecret"),
        ] {
            let error = check_s3(env(&[(name, value)]), &[]).unwrap_err();
            assert!(error.contains(name), "{error}");
            assert!(!error.contains("secret"), "{name}: {error}");
            assert!(!error.contains('\n'), "{error}");
            let error = check_s3(Vec::new(), &[(name.into(), value.into())]).unwrap_err();
            assert!(error.contains(name), "{error}");
        }
        let long = format!("http://h/{}", "a".repeat(70_000));
        assert!(check_s3(env(&[("AWS_ENDPOINT_URL", &long)]), &[]).is_err());
        // What `url` would escape but object_store's request builder
        // panics on (found from outside: AWS_ENDPOINT_URL='http://h:9/a b').
        for endpoint in [
            "http://127.0.0.1:9/a b",
            "http://h/<x>",
            "http://h:9\\@x/ y",
        ] {
            for name in [
                "AWS_ENDPOINT_URL",
                "AWS_METADATA_ENDPOINT",
                "AWS_ENDPOINT_URL_STS",
            ] {
                let error = check_s3(env(&[(name, endpoint)]), &[]).unwrap_err();
                assert!(error.contains(name), "{error}");
            }
        }
    }

    /// Found from outside: object_store read a token file named by the
    /// environment whole and blocking (a FIFO hung, /dev/zero took 2 GB),
    /// and the TLS stack does the same with SSL_CERT_FILE.
    #[cfg(unix)]
    #[test]
    fn files_named_by_settings_go_through_the_input_gate() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let missing = dir.path().join("missing");
        for path in [
            fifo.as_path(),
            Path::new("/dev/zero"),
            dir.path(),
            missing.as_path(),
        ] {
            let path = path.to_str().unwrap();
            for name in [
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            ] {
                let error = check_s3(env(&[(name, path)]), &[]).unwrap_err();
                assert!(error.contains(name) && !error.contains(path), "{error}");
            }
            let error = check_tls(env(&[("SSL_CERT_FILE", path)])).unwrap_err();
            assert!(
                error.contains("SSL_CERT_FILE") && !error.contains(path),
                "{error}"
            );
        }
        let bundle = dir.path().join("ca.pem");
        std::fs::write(&bundle, "-----BEGIN CERTIFICATE-----").unwrap();
        check_tls(env(&[("SSL_CERT_FILE", bundle.to_str().unwrap())])).unwrap();
    }

    #[test]
    fn a_value_the_builder_refuses_is_named_not_shown() {
        let environment = env(&[("AWS_TIMEOUT", "soon-secret"), ("AWS_REGION", "eu-west-1")]);
        let text = r#"Generic Config error: failed to parse "soon-secret" as Duration"#;
        let message = explain_build_error(text, environment.clone(), &[]);
        assert!(
            message.contains("AWS_TIMEOUT") && !message.contains("secret"),
            "{message}"
        );
        let text = "Invalid encryption type: sse-secret. Valid values are ...";
        let settings = [(
            "AWS_SERVER_SIDE_ENCRYPTION".to_owned(),
            "sse-secret".to_owned(),
        )];
        let message = explain_build_error(text, environment.clone(), &settings);
        assert!(message.contains("AWS_SERVER_SIDE_ENCRYPTION") && !message.contains("secret"));
        assert_eq!(explain_build_error("other", environment, &[]), "other");
    }

    #[cfg(unix)]
    #[test]
    fn a_value_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStringExt;
        let environment = vec![(
            OsString::from("AWS_SESSION_TOKEN"),
            OsString::from_vec(vec![0xff, b'x']),
        )];
        let error = check_s3(environment, &[]).unwrap_err();
        assert!(error.contains("AWS_SESSION_TOKEN") && error.contains("UTF-8"));
    }
}
