//! URL parsing of the remote client: any text is accepted or refused,
//! never a panic (object_store panicked on URLs over 65,535 bytes), and an
//! accepted URL has no dot segment, encoded or not.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for url in [
        text.to_owned(),
        format!("https://host.invalid/{text}"),
        format!("s3://bucket/{text}"),
    ] {
        if binfmt_remote::__fuzz::parse_url(&url) {
            let path = url.split_once("://").map_or("", |(_, rest)| rest);
            let path = path.split(['?', '#']).next().unwrap_or("");
            for segment in path.split('/').skip(1) {
                let lower = segment.to_ascii_lowercase().replace("%2e", ".");
                assert!(lower != "." && lower != "..", "accepted a dot segment: {url:?}");
            }
        }
    }
});
