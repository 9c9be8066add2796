//! The remote disk cache over a directory someone else filled: files of any
//! name and content, symlinks (to /dev/zero, outside the cache), FIFOs and
//! directories where ranges should be. Reading, writing and evicting must
//! never panic, block or follow a link, and a range is returned only when
//! its bytes match the checksum stored with them (`binfmtRC` header).
#![no_main]

use arbitrary::Arbitrary;

#[derive(Debug, Arbitrary)]
enum Kind {
    File(Vec<u8>),
    /// A range file with a well-formed header over these bytes.
    Range(Vec<u8>),
    SymlinkToDevZero,
    SymlinkOutside,
    Fifo,
    Directory,
}

#[derive(Debug, Arbitrary)]
struct Entry {
    start: u16,
    len: u16,
    raw_name: Option<String>,
    kind: Kind,
}

#[derive(Debug, Arbitrary)]
struct Input {
    size: u16,
    limit: u16,
    entries: Vec<Entry>,
    gaps: Vec<(u16, u16)>,
    write_at: u16,
    write: Vec<u8>,
}

fn header(start: u64, data: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    let mut bytes = b"binfmtRC".to_vec();
    bytes.extend_from_slice(&start.to_le_bytes());
    bytes.extend_from_slice(&(data.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&sha2::Sha256::digest(data));
    bytes
}

libfuzzer_sys::fuzz_target!(|input: Input| {
    let Ok(dir) = tempfile::tempdir() else { return };
    let root = dir.path().join("cache");
    let outside = dir.path().join("outside");
    let _ = std::fs::write(&outside, b"not the cache's");
    let size = u64::from(input.size);
    let (_, _, key) = binfmt_remote::__fuzz::cache_object(size);
    let object = root.join(&key);
    if std::fs::create_dir_all(&object).is_err() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700));
    for entry in input.entries.iter().take(16) {
        let name = match &entry.raw_name {
            Some(name) if !name.is_empty() && !name.contains(['/', '\0']) && name != "." && name != ".." => name.clone(),
            _ => format!("{}-{}", entry.start, entry.len),
        };
        let path = object.join(&name);
        // One entry a name: writing a second time through a FIFO made by an
        // earlier entry would block this harness, not the cache.
        if std::fs::symlink_metadata(&path).is_ok() {
            continue;
        }
        let _ = match &entry.kind {
            Kind::File(bytes) => std::fs::write(&path, bytes),
            Kind::Range(bytes) => {
                let mut file = header(u64::from(entry.start), bytes);
                file.extend_from_slice(bytes);
                std::fs::write(&path, file)
            }
            Kind::SymlinkToDevZero => std::os::unix::fs::symlink("/dev/zero", &path),
            Kind::SymlinkOutside => std::os::unix::fs::symlink(&outside, &path),
            Kind::Fifo => std::process::Command::new("mkfifo").arg(&path).status().map(|_| ()),
            Kind::Directory => std::fs::create_dir(&path),
        };
    }
    let gaps = input
        .gaps
        .iter()
        .take(8)
        .map(|&(a, b)| u64::from(a.min(b))..u64::from(a.max(b)))
        .collect();
    let found = binfmt_remote::__fuzz::cache_round(
        &root,
        u64::from(input.limit),
        size,
        gaps,
        (u64::from(input.write_at), input.write.clone()),
    );
    // Whatever came back was checked against its stored checksum, so it is
    // one of the range files' own bytes: never the outside file's.
    for (_, bytes) in found {
        assert_ne!(bytes.as_slice(), b"not the cache's".as_slice());
    }
    assert_eq!(
        std::fs::read(&outside).ok().as_deref(),
        Some(b"not the cache's".as_slice()),
        "the cache touched a file outside it"
    );
});
