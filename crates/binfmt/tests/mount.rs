//! `binfmt mount` (issue 29) through the kernel's FUSE: for every format
//! and both ARCX dialects, `find`, `stat` and `cat` of every file equal
//! `binfmt extract`; reads at random offsets; eight readers at once; a
//! corrupt block is EIO for its file while the mount goes on; SIGTERM and
//! `umount` end it cleanly; remote mounts over nginx and SeaweedFS read
//! only what is touched. Skipped, with a note, where `/dev/fuse` cannot be
//! used (and failed under `BINFMT_INTEROP=require`).

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use binfmt_tests::cli::{arg, text};
use binfmt_tests::fixture;
use binfmt_tests::interop::servers;

const BIN: &str = env!("CARGO_BIN_EXE_binfmt");

const FILES: &[&str] = &[
    "generated/arcx/multi_block.spec.arcx",
    "generated/arcx/multi_block.arcx-cli.arcx",
    "reference/all_types.kas",
    "reference/map.par4",
    "reference/taridx/golden.taridx",
];

/// Whether FUSE mounts can be made here; a note (or a failure when
/// interop is required) when not.
fn fuse_usable() -> bool {
    let usable = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_ok();
    if !usable {
        assert!(
            std::env::var("BINFMT_INTEROP").as_deref() != Ok("require"),
            "/dev/fuse cannot be opened: FUSE mounts cannot be tested"
        );
        eprintln!("note: /dev/fuse cannot be opened here; mount tests skipped");
    }
    usable
}

fn is_mounted(dir: &Path) -> bool {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|line| line.split(' ').nth(4) == Some(dir.to_str().unwrap()))
}

/// A mount running in the foreground in a child process.
struct Mounted {
    child: Child,
    dir: PathBuf,
}

impl Mounted {
    fn new(file: &str, dir: &Path, extra: &[&str], envs: &[(String, String)]) -> Self {
        let child = Command::new(BIN)
            .arg("mount")
            .args(extra)
            .arg(file)
            .arg(dir)
            .envs(envs.iter().cloned())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut mounted = Self {
            child,
            dir: dir.to_owned(),
        };
        // Waits for the mount, or for the command to fail first.
        let start = Instant::now();
        while !is_mounted(dir) {
            if let Some(status) = mounted.child.try_wait().unwrap() {
                let mut stderr = String::new();
                mounted
                    .child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut stderr)
                    .unwrap();
                panic!("binfmt mount {file} exited {status}: {stderr}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{file}: not mounted after 60 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        mounted
    }

    /// Sends SIGTERM; returns the exit status and stderr.
    fn stop(mut self) -> (std::process::ExitStatus, String) {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(!is_mounted(&self.dir), "still mounted after SIGTERM");
        (status, stderr)
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if is_mounted(&self.dir) {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every regular file under `root` with its bytes, and every directory.
fn walk(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
                found.insert(relative, None);
            } else if meta.is_file() {
                let bytes = std::fs::read(&path).unwrap();
                assert_eq!(bytes.len() as u64, meta.len(), "{relative}: stat size");
                found.insert(relative, Some(bytes));
            }
        }
    }
    found
}

fn extracted(file: &str, into: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let output = Command::new(BIN)
        .args(["extract", file, "-o", arg(into)])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    walk(into)
}

#[test]
fn every_format_mounts_as_extract_writes_it() {
    if !fuse_usable() {
        return;
    }
    for file in FILES {
        let path = fixture(file);
        let path = path.to_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (mnt, out) = (dir.path().join("mnt"), dir.path().join("out"));
        std::fs::create_dir(&mnt).unwrap();
        let want = extracted(path, &out);
        let mounted = Mounted::new(path, &mnt, &[], &[]);
        let got = walk(&mnt);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{file}: the tree"
        );
        assert!(got == want, "{file}: bytes differ from extract");
        // Random offsets: the bytes at each, out of order.
        for (name, bytes) in want.iter().filter_map(|(n, b)| Some((n, b.as_ref()?))) {
            let mut handle = std::fs::File::open(mnt.join(name)).unwrap();
            let len = bytes.len();
            for at in [len / 2, len.saturating_sub(3), 0, len / 5, len] {
                handle.seek(SeekFrom::Start(at as u64)).unwrap();
                let mut piece = vec![0; 100.min(len - at)];
                handle.read_exact(&mut piece).unwrap();
                assert_eq!(piece, bytes[at..at + piece.len()], "{file} {name} at {at}");
            }
        }
        // Writing is refused: a read-only filesystem.
        let refused = std::fs::OpenOptions::new()
            .write(true)
            .open(mnt.join(want.keys().last().unwrap()));
        assert!(refused.is_err(), "{file}: opened for writing");
        let (status, stderr) = mounted.stop();
        assert!(status.success(), "{file}: {status}: {stderr}");
    }
}

/// Eight readers at once, each reading every file of an ARCX archive of
/// several blocks, a TARIDX fold and a kastore, get the right bytes.
#[test]
fn eight_readers_at_once() {
    if !fuse_usable() {
        return;
    }
    for file in [
        "generated/arcx/multi_block.spec.arcx",
        "reference/taridx/golden.taridx",
        "reference/all_types.kas",
    ] {
        let path = fixture(file);
        let dir = tempfile::tempdir().unwrap();
        let (mnt, out) = (dir.path().join("mnt"), dir.path().join("out"));
        std::fs::create_dir(&mnt).unwrap();
        let want = extracted(path.to_str().unwrap(), &out);
        let mounted = Mounted::new(path.to_str().unwrap(), &mnt, &[], &[]);
        std::thread::scope(|scope| {
            for reader in 0..8 {
                let (mnt, want) = (&mnt, &want);
                scope.spawn(move || {
                    for round in 0..3 {
                        let mut names: Vec<_> = want.iter().filter(|(_, b)| b.is_some()).collect();
                        let turn = (reader + round) % names.len().max(1);
                        names.rotate_left(turn);
                        for (name, bytes) in names {
                            let got = std::fs::read(mnt.join(name)).unwrap();
                            assert!(
                                Some(&got) == bytes.as_ref(),
                                "{file} {name} reader {reader}"
                            );
                        }
                    }
                });
            }
        });
        let (status, _) = mounted.stop();
        assert!(status.success());
    }
}

/// A corrupt block: the mount is made (the manifest is whole), the file in
/// that block fails with EIO, logged once, and the other files still read.
#[test]
fn a_corrupt_block_is_eio_and_the_mount_goes_on() {
    if !fuse_usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spoilt.arcx");
    let mut bytes = std::fs::read(fixture("generated/arcx/multi_block.spec.arcx")).unwrap();
    let archive = binfmt_arcx::Archive::new(bytes.clone()).unwrap();
    let victim = archive
        .files()
        .find(|f| f.path().to_string() == "text/0001.txt")
        .unwrap();
    let chunk = archive.manifest().chunks()[victim.chunk_ids()[0] as usize];
    let block = archive.manifest().blocks()[chunk.block as usize];
    // A byte in the middle of the block's stored bytes.
    let at = (block.offset + 4 + u64::from(block.stored_size) / 2) as usize;
    bytes[at] ^= 0x5a;
    std::fs::write(&file, &bytes).unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Mounted::new(file.to_str().unwrap(), &mnt, &[], &[]);
    for _ in 0..2 {
        let error = std::fs::read(mnt.join("text/0001.txt")).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(5), "{error}");
    }
    let others: Vec<String> = archive
        .files()
        .map(|f| f.path().to_string())
        .filter(|name| {
            let chunk =
                archive.manifest().chunks()[archive.find(name).unwrap().chunk_ids()[0] as usize];
            chunk.block != archive.manifest().chunks()[victim.chunk_ids()[0] as usize].block
        })
        .collect();
    assert!(!others.is_empty());
    for name in &others {
        assert_eq!(
            std::fs::read(mnt.join(name)).unwrap(),
            archive.read(name).unwrap(),
            "{name}"
        );
    }
    let (status, stderr) = mounted.stop();
    assert!(status.success());
    assert_eq!(
        stderr.matches("text/0001.txt").count(),
        1,
        "logged once: {stderr}"
    );
    assert!(stderr.contains("EIO"), "{stderr}");
}

/// A corrupt file fails at mount time with the usual one-line error, and
/// nothing is mounted; so does a mount point that is not a directory.
#[test]
fn a_corrupt_file_is_not_mounted() {
    if !fuse_usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.arcx");
    let mut bytes = std::fs::read(fixture("generated/arcx/multi_block.spec.arcx")).unwrap();
    let len = bytes.len();
    bytes[len - 20] ^= 0xff;
    std::fs::write(&bad, &bytes).unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let output = Command::new(BIN)
        .args(["mount", arg(&bad), arg(&mnt)])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with("binfmt: ") && stderr.trim_end().lines().count() == 1,
        "{stderr}"
    );
    assert!(!is_mounted(&mnt));
    let fifo = Command::new(BIN)
        .args(["mount", "--daemon", "/dev/zero", arg(&mnt)])
        .output()
        .unwrap();
    assert_eq!(fifo.status.code(), Some(1), "{}", text(&fifo.stderr));
    assert!(!is_mounted(&mnt));
}

/// `--daemon` returns once mounted; `umount` ends the mount and its
/// process.
#[test]
fn daemon_returns_once_mounted() {
    if !fuse_usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let file = fixture("reference/all_types.kas");
    let output = Command::new(BIN)
        .args(["mount", "--daemon", file.to_str().unwrap(), arg(&mnt)])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(is_mounted(&mnt));
    assert!(std::fs::metadata(mnt.join("int16")).unwrap().len() > 0);
    let unmounted = Command::new("umount").arg(&mnt).status().unwrap();
    assert!(unmounted.success());
    assert!(!is_mounted(&mnt));
}

/// `requests: N, bytes: M` from a `-v` stderr.
fn cost(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|line| line.starts_with("requests: "))
        .unwrap_or_else(|| panic!("no cost line: {stderr}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .map(|part| part.parse().unwrap())
        .collect();
    (numbers[0], numbers[1])
}

/// A remote mount over nginx and SeaweedFS: mounting and walking the tree
/// cost what `binfmt list` of the URL costs (the listing; no file read),
/// reading one file adds only what `binfmt get` of it costs, and the bytes
/// are right.
#[test]
fn remote_mounts_read_only_what_is_touched() {
    if !fuse_usable() {
        return;
    }
    let Some(servers) = servers() else { return };
    let run = format!("mount-{}", std::process::id());
    std::fs::create_dir_all(servers.www.join(&run)).unwrap();
    let cases = [
        (
            "generated/arcx/multi_block.spec.arcx",
            vec![],
            "large/0004.bin",
        ),
        (
            "reference/taridx/golden.taridx",
            vec![
                "reference/taridx/golden_0000.tar",
                "reference/taridx/golden_0001.tar",
                "reference/taridx/golden_0002.tar",
            ],
            "s/000001.json",
        ),
        ("reference/all_types.kas", vec![], "float64"),
    ];
    let env: Vec<(String, String)> = servers
        .s3_env(&servers.s3_secret_access_key)
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect();
    let binfmt = |args: &[&str]| {
        let output = Command::new(BIN)
            .args(args)
            .envs(env.iter().cloned())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            text(&output.stderr)
        );
        output
    };
    for (file, beside, name) in cases {
        for path in std::iter::once(&file).chain(&beside) {
            let local = fixture(path);
            let base = local.file_name().unwrap().to_str().unwrap().to_owned();
            let bytes = std::fs::read(&local).unwrap();
            std::fs::write(servers.www.join(&run).join(&base), &bytes).unwrap();
            servers.s3_put(&format!("{run}/{base}"), &bytes);
        }
        let base = fixture(file)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        let expected = binfmt(&["get", fixture(file).to_str().unwrap(), name, "-o", "-"]).stdout;
        for url in [
            format!("{}/{run}/{base}", servers.nginx),
            format!("s3://{}/{run}/{base}", servers.s3_bucket),
        ] {
            let listed = cost(&text(&binfmt(&["list", "-v", &url]).stderr));
            let got = binfmt(&["get", "-v", &url, name, "-o", "-"]);
            let fetched = cost(&text(&got.stderr));
            let dir = tempfile::tempdir().unwrap();
            // Mounted and walked (names and sizes only).
            let mounted = Mounted::new(&url, dir.path(), &["-v"], &env);
            let tree = walk_names(dir.path());
            assert!(tree.contains(&name.to_owned()), "{url}: {tree:?}");
            let (status, stderr) = mounted.stop();
            assert!(status.success(), "{url}: {stderr}");
            assert_eq!(
                cost(&stderr),
                listed,
                "{url}: walking a mount costs what list does"
            );
            // Mounted and one file read.
            let mounted = Mounted::new(&url, dir.path(), &["-v"], &env);
            assert_eq!(
                std::fs::read(dir.path().join(name)).unwrap(),
                expected,
                "{url}"
            );
            let (status, stderr) = mounted.stop();
            assert!(status.success(), "{url}: {stderr}");
            let (requests, bytes) = cost(&stderr);
            assert!(
                requests <= listed.0 + fetched.0 && bytes <= listed.1 + fetched.1,
                "{url}: mount + read {:?} > list {listed:?} + get {fetched:?}",
                (requests, bytes)
            );
        }
    }
}

/// Every path under `root` (names and `stat` only: nothing is read).
fn walk_names(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            found.push(
                path.strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned(),
            );
            if meta.is_dir() {
                stack.push(path);
            }
        }
    }
    found
}

/// Found from outside: a file of several chunks whose second block is
/// corrupt read back the next chunk's bytes at offset 0 (the reader had
/// moved on past the failed chunk), and `cat` succeeded with a shorter
/// file. Every read touching the bad block is EIO; the others are right.
#[test]
fn a_corrupt_block_never_shifts_the_bytes_after_it() {
    use std::os::unix::fs::FileExt;
    if !fuse_usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(fixture("generated/arcx/multi_block.spec.arcx")).unwrap();
    let archive = binfmt_arcx::Archive::new(good.clone()).unwrap();
    let want = archive.read("large/0004.bin").unwrap();
    let file = archive.find("large/0004.bin").unwrap();
    assert!(file.chunk_ids().len() > 1);
    let first = archive.manifest().chunks()[file.chunk_ids()[0] as usize];
    let block = archive.manifest().blocks()[first.block as usize];
    let mut bytes = good.clone();
    bytes[(block.offset + 4 + u64::from(block.stored_size) / 2) as usize] ^= 0x40;
    let spoilt = dir.path().join("spoilt.arcx");
    std::fs::write(&spoilt, &bytes).unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Mounted::new(spoilt.to_str().unwrap(), &mnt, &[], &[]);
    let path = mnt.join("large/0004.bin");
    assert_eq!(std::fs::read(&path).unwrap_err().raw_os_error(), Some(5));
    let handle = std::fs::File::open(&path).unwrap();
    let mut piece = [0u8; 100];
    for _ in 0..2 {
        let error = handle.read_at(&mut piece, 0).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(5));
    }
    // A later chunk, in a healthy block, still reads right.
    let later = u64::from(first.size) + 10;
    handle.read_exact_at(&mut piece, later).unwrap();
    assert_eq!(piece[..], want[later as usize..later as usize + 100]);
    // SIGTERM with a file open: the mount is detached at once and the
    // process ends when the file is closed.
    let stopping = std::thread::spawn(move || mounted.stop());
    std::thread::sleep(Duration::from_millis(300));
    assert!(!is_mounted(&mnt), "still attached after SIGTERM");
    drop(handle);
    let (status, stderr) = stopping.join().unwrap();
    assert!(status.success(), "{status}: {stderr}");
}

/// Found from outside: mounting on a FIFO hung in the kernel; on a file, a
/// non-empty directory or a mount point it succeeded; `--threads` had no
/// bound. Each is one line, exit status 1 (2 for the usage error), and
/// nothing is mounted.
#[test]
fn only_an_empty_directory_is_mounted_on() {
    if !fuse_usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = fixture("reference/all_types.kas");
    let file = file.to_str().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "x").unwrap();
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("kept"), "x").unwrap();
    let busy = dir.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    let mounted = Mounted::new(file, &busy, &[], &[]);
    for (place, why) in [
        (&fifo, "not a directory"),
        (&plain, "not a directory"),
        (&full, "not empty"),
        (&busy, "mounted there already"),
    ] {
        let output = Command::new(BIN)
            .args(["mount", "--daemon", file, arg(place)])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{place:?}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(why) && stderr.trim_end().lines().count() == 1,
            "{stderr}"
        );
    }
    assert!(!is_mounted(&full) && !is_mounted(&fifo));
    let (status, _) = mounted.stop();
    assert!(status.success());
    let threads = Command::new(BIN)
        .args(["mount", "--threads", "100000000", file, arg(&busy)])
        .output()
        .unwrap();
    assert_eq!(threads.status.code(), Some(2));
}
