//! `Upload` against SeaweedFS: parts streamed with the first held, seeks
//! back into it, refusals of what it cannot do, and what an abandoned
//! upload leaves (nothing).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Seek, SeekFrom, Write};
use std::sync::Arc;

use binfmt_core::{Inputs, OutputDir};
use binfmt_remote::{MIN_PART_SIZE, RemoteDir, RemoteOptions, Tally, UploadOptions};
use binfmt_tests::interop::{Servers, servers};
use binfmt_tests::pseudo_random_bytes;

fn options(servers: &Servers) -> RemoteOptions {
    RemoteOptions::default()
        .with_s3_setting("AWS_ENDPOINT_URL", &servers.s3_endpoint)
        .with_s3_setting("AWS_ACCESS_KEY_ID", &servers.s3_access_key_id)
        .with_s3_setting("AWS_SECRET_ACCESS_KEY", &servers.s3_secret_access_key)
        .with_s3_setting("AWS_REGION", &servers.s3_region)
        .with_s3_setting("AWS_ALLOW_HTTP", "true")
}

fn prefix(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("upload-{name}-{}-{nanos}", std::process::id())
}

fn dir(servers: &Servers, prefix: &str, tally: &Tally) -> RemoteDir {
    RemoteDir::open(
        &format!("s3://{}/{prefix}", servers.s3_bucket),
        &options(servers).with_tally(tally.clone()),
        Arc::new(Inputs::default()),
        UploadOptions::default()
            .part_size(MIN_PART_SIZE)
            .concurrency(2),
    )
    .unwrap()
}

/// 3.5 parts written in odd pieces, then the first 64 bytes rewritten (a
/// header written last): the object is exactly that, sent as parts.
#[test]
fn parts_stream_and_the_first_part_takes_a_late_header() {
    let Some(servers) = servers() else { return };
    let prefix = prefix("header");
    let tally = Tally::default();
    let out = dir(servers, &prefix, &tally);
    let mut data = pseudo_random_bytes(7, MIN_PART_SIZE * 7 / 2);
    let mut upload = out.create("object.bin").unwrap();
    upload.write_all(&[0; 64]).unwrap();
    for piece in data[64..].chunks(1_000_003) {
        upload.write_all(piece).unwrap();
    }
    assert_eq!(upload.stream_position().unwrap(), data.len() as u64);
    let header = pseudo_random_bytes(8, 64);
    upload.seek(SeekFrom::Start(0)).unwrap();
    upload.write_all(&header).unwrap();
    upload.seek(SeekFrom::End(0)).unwrap();
    // Nothing is visible before the commit.
    assert_eq!(servers.s3_get(&format!("{prefix}/object.bin")), None);
    upload.commit().unwrap();
    data[..64].copy_from_slice(&header);
    assert!(servers.s3_get(&format!("{prefix}/object.bin")).unwrap() == data);
    // HEAD, create, 4 parts, complete: a multipart upload, not one PUT.
    assert!(tally.stats().requests >= 7, "{:?}", tally.stats());
}

#[test]
fn writing_into_a_part_already_sent_is_an_error_and_nothing_appears() {
    let Some(servers) = servers() else { return };
    let prefix = prefix("sent");
    let out = dir(servers, &prefix, &Tally::default());
    let mut upload = out.create("object.bin").unwrap();
    upload
        .write_all(&pseudo_random_bytes(9, MIN_PART_SIZE * 3))
        .unwrap();
    upload
        .seek(SeekFrom::Start(MIN_PART_SIZE as u64 + 10))
        .unwrap();
    let error = upload.write_all(b"late").unwrap_err();
    assert!(error.to_string().contains("already uploaded"), "{error}");
    assert!(upload.seek(SeekFrom::Start(u64::MAX)).is_err());
    assert!(upload.commit().is_err(), "a broken upload never completes");
    assert_eq!(servers.s3_get(&format!("{prefix}/object.bin")), None);
    assert!(servers.s3_uploads_in_progress(&prefix).is_empty());
}

#[test]
fn a_dropped_upload_is_aborted() {
    let Some(servers) = servers() else { return };
    let prefix = prefix("dropped");
    let out = dir(servers, &prefix, &Tally::default());
    let mut upload = out.create("object.bin").unwrap();
    upload
        .write_all(&pseudo_random_bytes(10, MIN_PART_SIZE * 3))
        .unwrap();
    assert!(!servers.s3_uploads_in_progress(&prefix).is_empty());
    drop(upload);
    assert_eq!(servers.s3_get(&format!("{prefix}/object.bin")), None);
    assert!(servers.s3_uploads_in_progress(&prefix).is_empty());
}

/// Small and empty objects are one PUT each; listing, renaming and
/// removing see them.
#[test]
fn small_objects_rename_remove_and_list() {
    let Some(servers) = servers() else { return };
    let prefix = prefix("small");
    let tally = Tally::default();
    let out = dir(servers, &prefix, &tally);
    for (name, bytes) in [("a.txt", &b"hello"[..]), ("empty", &b""[..])] {
        let mut upload = out.create(name).unwrap();
        upload.write_all(bytes).unwrap();
        upload.commit().unwrap();
        assert_eq!(servers.s3_get(&format!("{prefix}/{name}")).unwrap(), bytes);
    }
    assert!(servers.s3_uploads_in_progress(&prefix).is_empty());
    out.rename("a.txt", "sub/b.txt").unwrap();
    assert_eq!(out.list().unwrap(), vec!["empty".to_owned()]);
    assert!(out.exists("sub/b.txt").unwrap());
    out.remove("sub/b.txt").unwrap();
    out.remove("never-there").unwrap();
    assert!(!out.exists("sub/b.txt").unwrap());
    assert!(out.create("../escape").is_err());
}

#[test]
fn plain_http_takes_no_uploads() {
    let Some(servers) = servers() else { return };
    let error = RemoteDir::open(
        &servers.nginx,
        &RemoteOptions::default(),
        Arc::default(),
        UploadOptions::default(),
    )
    .unwrap_err();
    assert!(error.to_string().contains("only s3://"), "{error}");
}
