//! Issue 28: every remote-reading command, on every format, moves what
//! spec/remote.md says it moves. Each command runs with `-v` against the
//! real nginx that `bash .ci/servers start` runs, and its requests and
//! bytes are held to bounds derived from the file's own structure (the
//! index, the headers, the descriptors and keys, the manifest, the blocks
//! or values it reads), never to what the code happened to do.
//!
//! The data are what users meet: a TARIDX fold of many 2 KiB members
//! (a listing fetched whole shards, the 64 KiB merge swallowing every
//! payload between the headers), a KAST store of 300 arrays of 12,000
//! bytes (`kast get` of one fetched the whole store: read-ahead ran past
//! the descriptors and keys), and the same entries as ARCX and PAR4.
//!
//! Without the servers every test skips with a note, unless
//! `BINFMT_INTEROP=require`.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use binfmt_tests::cli::{arg, text};
use binfmt_tests::interop::{Servers, servers};
use binfmt_tests::pseudo_random_bytes;

/// A tar block: a member's header, and the unit its payload is padded to.
const BLOCK: u64 = 512;
/// The bytes a remote open asks for: the object's last 40.
const TAIL: u64 = 40;
/// What sniffing reads of a file its tail does not decide: its first 512
/// bytes.
const HEAD: u64 = 512;

/// Samples of the TARIDX fold (two members each, `.cls` and `.jpg`, of
/// 2 KiB), and how many go in one shard.
const SAMPLES: usize = 300;
const SAMPLES_PER_SHARD: usize = 100;
const MEMBER: usize = 2048;
/// Entries of the KAST, ARCX and PAR4 files: `k000`... of 12,000 bytes,
/// and `big` of 300,000 (read in many pieces, so read-ahead shows).
const ENTRIES: usize = 300;
const ENTRY: usize = 12_000;
const BIG: usize = 300_000;

/// Where the files of this run are: on disk (nginx's document root) and
/// at nginx.
struct Published {
    dir: PathBuf,
    url: String,
}

impl Published {
    fn local(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.url)
    }
}

/// The files, written once per run under nginx's document root by the
/// commands users write them with.
fn published(servers: &Servers) -> &'static Published {
    static PUBLISHED: OnceLock<Published> = OnceLock::new();
    PUBLISHED.get_or_init(|| {
        let name = format!("remote-cost-{}", std::process::id());
        let dir = servers.www.join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let scratch = tempfile::tempdir().unwrap();

        let samples = scratch.path().join("samples");
        std::fs::create_dir(&samples).unwrap();
        for sample in 0..SAMPLES {
            for (n, ext) in ["cls", "jpg"].iter().enumerate() {
                let bytes = pseudo_random_bytes((sample * 2 + n) as u64, MEMBER);
                std::fs::write(samples.join(format!("{sample:06}.{ext}")), bytes).unwrap();
            }
        }
        run_ok(&[
            "taridx",
            "pack",
            arg(&samples),
            "-o",
            arg(&dir.join("fold.taridx")),
            "--max-samples",
            &SAMPLES_PER_SHARD.to_string(),
        ]);

        let entries = scratch.path().join("entries");
        std::fs::create_dir(&entries).unwrap();
        for entry in 0..ENTRIES {
            let bytes = pseudo_random_bytes(1000 + entry as u64, ENTRY);
            std::fs::write(entries.join(format!("k{entry:03}")), bytes).unwrap();
        }
        std::fs::write(entries.join("big"), pseudo_random_bytes(7, BIG)).unwrap();
        let arcx = dir.join("entries.arcx");
        run_ok(&["arcx", "pack", arg(&entries), "-o", arg(&arcx)]);
        for (to, name) in [("kast", "entries.kas"), ("par4", "entries.par4")] {
            run_ok(&[
                "convert",
                arg(&arcx),
                "--to",
                to,
                "-o",
                arg(&dir.join(name)),
            ]);
        }
        Published {
            dir,
            url: format!("{}/{name}", servers.nginx),
        }
    })
}

fn run_ok(args: &[&str]) -> std::process::Output {
    let output = Command::new(env!("CARGO_BIN_EXE_binfmt"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "binfmt {}: {}",
        args.join(" "),
        text(&output.stderr)
    );
    output
}

/// What a command may cost: at most `requests` requests and `bytes`
/// bytes.
#[derive(Debug, Clone, Copy)]
struct Cost {
    requests: u64,
    bytes: u64,
}

impl Cost {
    const fn new(requests: u64, bytes: u64) -> Self {
        Self { requests, bytes }
    }

    fn plus(self, other: Cost) -> Self {
        Self::new(self.requests + other.requests, self.bytes + other.bytes)
    }
}

/// Runs `binfmt ARGS` (with `-v` right after the subcommand) and returns
/// its cost as `-v` printed it.
fn cost(args: &[&str]) -> Cost {
    let split = if ["taridx", "kast", "arcx", "par4"].contains(&args[0]) {
        2
    } else {
        1
    };
    let mut full: Vec<&str> = args[..split].to_vec();
    full.push("-v");
    full.extend_from_slice(&args[split..]);
    let output = run_ok(&full);
    let stderr = text(&output.stderr);
    let line = stderr
        .lines()
        .find_map(|line| line.strip_prefix("requests: "))
        .unwrap_or_else(|| panic!("binfmt {}: no cost line in {stderr}", full.join(" ")));
    let (requests, bytes) = line.split_once(", bytes: ").unwrap();
    Cost::new(requests.parse().unwrap(), bytes.parse().unwrap())
}

/// Runs each command and checks its cost against its bound, reporting
/// every command over its bound at once.
fn check(commands: &[(Vec<String>, Cost)]) {
    let mut over = Vec::new();
    for (args, bound) in commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = cost(&args);
        eprintln!(
            "binfmt {}: {} requests, {} bytes (at most {}, {})",
            args.join(" "),
            got.requests,
            got.bytes,
            bound.requests,
            bound.bytes
        );
        if got.requests > bound.requests || got.bytes > bound.bytes {
            over.push(format!(
                "binfmt {}: {} requests, {} bytes; at most {} requests, {} bytes",
                args.join(" "),
                got.requests,
                got.bytes,
                bound.requests,
                bound.bytes
            ));
        }
    }
    assert!(over.is_empty(), "over their bounds:\n{}", over.join("\n"));
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// A payload with its padding to whole tar blocks.
fn padded(size: u64) -> u64 {
    size.div_ceil(BLOCK) * BLOCK
}

/// What a TARIDX fold's plans read, from its index: per shard, its
/// length, its members' sizes in offset order, and the bytes after its
/// last member (the end-of-archive blocks the coverage check reads).
struct Fold {
    index: u64,
    shards: Vec<(u64, Vec<u64>)>,
    after_last: u64,
}

impl Fold {
    fn of(published: &Published) -> Self {
        let index = binfmt_taridx::Index::open(published.local("fold.taridx")).unwrap();
        let rows = index.rows().unwrap();
        let count = index.shard_count().unwrap();
        let mut shards = Vec::new();
        let mut after_last = 0;
        for fid in 0..count {
            let path = published.local(&binfmt_taridx::fold_shard_name("fold", fid));
            let len = size(&path);
            let mut members: Vec<(u64, u64)> = rows
                .iter()
                .filter(|row| usize::from(row.fid.get()) == fid)
                .map(|row| (row.offset.get(), row.size.get()))
                .collect();
            members.sort_unstable();
            let end = members
                .last()
                .map_or(0, |&(offset, size)| offset + BLOCK + padded(size));
            after_last += len - end;
            shards.push((len, members.into_iter().map(|(_, size)| size).collect()));
        }
        Self {
            index: size(&published.local("fold.taridx")),
            shards,
            after_last,
        }
    }

    fn members(&self) -> u64 {
        self.shards
            .iter()
            .map(|(_, sizes)| sizes.len() as u64)
            .sum()
    }

    fn shard_count(&self) -> u64 {
        self.shards.len() as u64
    }
}

/// The open of a remote TARIDX index: the tail, then the first 512 bytes
/// (sniffing, which also holds the header and the blocks of a small
/// index), then the rest of the index (its rows). With room for the probe
/// of the sidecar `INDEX.taridx.shards.json` the open is to make (one
/// request, a 404 on plain HTTP): one more request of a few hundred bytes.
fn taridx_open(fold: &Fold) -> Cost {
    Cost::new(3, fold.index + TAIL).plus(SIDECAR_PROBE)
}

/// The sidecar probe (`INDEX.taridx.shards.json`) a remote TARIDX open is
/// about to make: one request, its answer at most a few hundred bytes.
const SIDECAR_PROBE: Cost = Cost::new(1, 512);

/// What a pass over every member's header costs (`list`, `verify`): each
/// shard opened (its tail) twice (the coverage check, then the pass), the
/// coverage check's read past the last member, the probe for a shard past
/// the last (a 404), and every member's header: one request each at most,
/// and at most twice the header bytes (a request merges over a gap only
/// while it stays at least half bytes asked for; 2 KiB payloads between
/// 512-byte headers are never merged over).
fn taridx_headers(fold: &Fold) -> Cost {
    let shards = fold.shard_count();
    Cost::new(
        fold.members() + 3 * shards + 1,
        2 * fold.members() * BLOCK + shards * 2 * TAIL + fold.after_last,
    )
}

#[test]
fn taridx_commands_read_the_index_then_headers_never_payloads_they_do_not_need() {
    let Some(servers) = servers() else { return };
    let published = published(servers);
    let fold = Fold::of(published);
    let url = published.url("fold.taridx");
    let scratch = tempfile::tempdir().unwrap();
    let out = |name: &str| scratch.path().join(name).to_str().unwrap().to_owned();
    let open = taridx_open(&fold);
    let headers = open.plus(taridx_headers(&fold));
    // One member found by name: the shard's tail, then one request for its
    // predecessor's header, the gap to its own header and its payload
    // (merged over the predecessor's payload only while the request stays
    // at least half bytes asked for).
    let one = |payload: u64| Cost::new(2, TAIL + 2 * (2 * BLOCK + padded(payload)));
    let member = one(MEMBER as u64);
    // A sample: its two members and their predecessors, one request.
    let sample = Cost::new(2, TAIL + 2 * (3 * BLOCK + 2 * padded(MEMBER as u64)));
    // Extraction and conversion of a fold whose members fit half the
    // memory cache (this one): the listing pass fetches the members whole,
    // a window of rows per request and shard, and reading them costs
    // nothing more; each shard opened twice, the coverage check's reads
    // (the last member's and its predecessor's headers, which a window's
    // request may fetch again, and the end), the probe past the last shard.
    let shards = fold.shard_count();
    let fold_bytes: u64 = fold.shards.iter().map(|(len, _)| len).sum();
    let everything = open.plus(Cost::new(
        6 * shards + 1,
        fold_bytes + shards * 2 * (TAIL + BLOCK),
    ));
    let commands = vec![
        // The index only: no shard is opened.
        (strings(&["info", &url]), open),
        (
            strings(&["taridx", "info", &url]),
            Cost::new(2, TAIL + HEAD).plus(SIDECAR_PROBE),
        ),
        (strings(&["sniff", &url]), Cost::new(2, TAIL + HEAD)),
        (strings(&["list", &url]), headers),
        (strings(&["taridx", "list", &url]), headers),
        (strings(&["verify", &url]), headers),
        (strings(&["taridx", "verify", &url]), headers),
        (
            strings(&["get", &url, "000123.jpg", "-o", &out("get.jpg")]),
            open.plus(member),
        ),
        (
            strings(&["taridx", "get", &url, "000123.jpg", "-o", &out("own.jpg")]),
            open.plus(member),
        ),
        (
            strings(&["taridx", "get", &url, "000123", "-o", &out("sample")]),
            open.plus(sample),
        ),
        (strings(&["extract", &url, "-o", &out("all")]), everything),
        (
            strings(&["taridx", "extract", &url, "-o", &out("own")]),
            everything,
        ),
        (
            strings(&["convert", &url, "--to", "arcx", "-o", &out("fold.arcx")]),
            everything,
        ),
    ];
    check(&commands);
    // The header passes are bounded far below the fold: no listing fetches
    // the payloads of the members it names.
    assert!(
        headers.bytes < fold_bytes / 2,
        "{} of {fold_bytes}",
        headers.bytes
    );
}

/// What a KAST store's plans read: the region before its first array
/// (header, descriptors, keys), the file's size, and each array's bytes.
struct Kast {
    meta: u64,
    file: u64,
    arrays: Vec<(String, u64)>,
}

impl Kast {
    fn of(path: &Path) -> Self {
        let store = binfmt_kastore::Store::open(path).unwrap();
        let meta = store.items().map(|item| item.offset()).min().unwrap();
        let arrays = store
            .items()
            .map(|item| (item.key_str().unwrap().to_owned(), item.byte_len()))
            .collect();
        Self {
            meta,
            file: size(path),
            arrays,
        }
    }

    fn array(&self, key: &str) -> u64 {
        self.arrays.iter().find(|(k, _)| k == key).unwrap().1
    }
}

#[test]
fn kast_commands_read_the_descriptors_and_keys_then_only_the_arrays_asked_for() {
    let Some(servers) = servers() else { return };
    let published = published(servers);
    let kast = Kast::of(&published.local("entries.kas"));
    assert!(
        kast.meta > HEAD,
        "the descriptors and keys outgrow the sniffed head"
    );
    let url = published.url("entries.kas");
    let scratch = tempfile::tempdir().unwrap();
    let out = |name: &str| scratch.path().join(name).to_str().unwrap().to_owned();
    // The tail, the sniffed head (the header and the first descriptors),
    // the rest of the descriptors, then the keys: never an array.
    let open = Cost::new(4, TAIL + kast.meta);
    let with = |key: &str| open.plus(Cost::new(1, kast.array(key)));
    let everything = open.plus(Cost::new(2, kast.file - kast.meta));
    let commands = vec![
        (strings(&["info", &url]), open),
        (strings(&["list", &url]), open),
        (strings(&["verify", &url]), open),
        (strings(&["sniff", &url]), Cost::new(2, TAIL + HEAD)),
        (strings(&["kast", "info", &url]), open),
        (strings(&["kast", "list", &url]), open),
        (strings(&["kast", "verify", &url]), open),
        (
            strings(&["get", &url, "k123", "-o", &out("k123")]),
            with("k123"),
        ),
        (
            strings(&["get", &url, "big", "-o", &out("big")]),
            with("big"),
        ),
        (
            strings(&["kast", "get", &url, "k123", "-o", &out("own")]),
            with("k123"),
        ),
        (strings(&["kast", "dump", &url, "big"]), with("big")),
        (strings(&["extract", &url, "-o", &out("all")]), everything),
        (
            strings(&["kast", "extract", &url, "-o", &out("own-all")]),
            everything,
        ),
        (
            strings(&["convert", &url, "--to", "arcx", "-o", &out("c.arcx")]),
            everything,
        ),
    ];
    check(&commands);
}

/// What an ARCX archive's plans read: the region from the manifest to
/// the footer, each file's blocks, and the file's size.
struct Arcx {
    manifest: u64,
    file: u64,
    blocks: u64,
    archive: binfmt_arcx::Archive,
}

impl Arcx {
    fn of(path: &Path) -> Self {
        let archive = binfmt_arcx::Archive::open(path).unwrap();
        let file = size(path);
        let (offset, _) = archive.manifest_region();
        let blocks = archive
            .files()
            .flat_map(|entry| entry.chunks().map(|chunk| chunk.block).collect::<Vec<_>>())
            .collect::<BTreeSet<u32>>()
            .len() as u64;
        Self {
            manifest: file - offset,
            file,
            blocks,
            archive,
        }
    }

    /// The stored blocks (size prefix included) holding `name`.
    fn blocks_of(&self, name: &str) -> u64 {
        let entry = self.archive.find(name).unwrap();
        let blocks: BTreeSet<u32> = entry.chunks().map(|chunk| chunk.block).collect();
        blocks
            .into_iter()
            .map(|id| {
                let block = self.archive.manifest().block(id).unwrap();
                4 + u64::from(block.stored_size)
            })
            .sum()
    }
}

#[test]
fn arcx_commands_read_the_manifest_then_only_the_blocks_asked_for() {
    let Some(servers) = servers() else { return };
    let published = published(servers);
    let arcx = Arcx::of(&published.local("entries.arcx"));
    let url = published.url("entries.arcx");
    let scratch = tempfile::tempdir().unwrap();
    let out = |name: &str| scratch.path().join(name).to_str().unwrap().to_owned();
    // The tail (the footer), then the manifest through the footer.
    let open = Cost::new(2, TAIL + arcx.manifest);
    let with = |name: &str| open.plus(Cost::new(1, arcx.blocks_of(name)));
    // Every block, adjacent ones merged (the header's 80 bytes too for
    // verify).
    let everything = open.plus(Cost::new(arcx.blocks + 1, arcx.file - arcx.manifest));
    let commands = vec![
        (strings(&["info", &url]), open),
        (strings(&["list", &url]), open),
        (strings(&["sniff", &url]), Cost::new(2, TAIL + HEAD)),
        (strings(&["arcx", "info", &url]), open),
        (strings(&["arcx", "list", &url]), open),
        (
            strings(&["get", &url, "k123", "-o", &out("k123")]),
            with("k123"),
        ),
        (
            strings(&["get", &url, "big", "-o", &out("big")]),
            with("big"),
        ),
        (
            strings(&["arcx", "get", &url, "k123", "-o", &out("own")]),
            with("k123"),
        ),
        (strings(&["verify", &url]), everything),
        (strings(&["arcx", "verify", &url]), everything),
        (strings(&["extract", &url, "-o", &out("all")]), everything),
        (
            strings(&["arcx", "extract", &url, "-o", &out("own-all")]),
            everything,
        ),
        (
            strings(&["convert", &url, "--to", "kast", "-o", &out("c.kas")]),
            everything,
        ),
    ];
    check(&commands);
}

/// What a PAR4 map's plans read: its buckets, its entries, each entry's
/// bytes (key, length, value), and the file's size.
struct Par4 {
    buckets: u64,
    entries: u64,
    file: u64,
}

/// The parcode reader's reads (spec/remote.md): the tail read of a chunk
/// (its trailer and what precedes it), a bucket's first read (its header
/// and the tables of up to 2,304 entries, 12 bytes each with the offsets),
/// and the first bytes of an entry a listing reads.
const CHUNK_TAIL: u64 = 4096;
const BUCKET_HEAD: u64 = 8 + 2304 * 12;
const LISTED_PREFIX: u64 = 256;
/// A lookup's first read of an entry (its key), before the value.
const KEY_READ: u64 = 4096;

impl Par4 {
    fn of(path: &Path) -> Self {
        let file = binfmt_parcode::ParFile::open(path).unwrap();
        let buckets = u64::from(file.root().unwrap().child_count());
        Self {
            buckets,
            entries: ENTRIES as u64 + 1,
            file: size(path),
        }
    }
}

#[test]
fn par4_commands_read_keys_and_lengths_then_only_the_values_asked_for() {
    let Some(servers) = servers() else { return };
    let published = published(servers);
    let par4 = Par4::of(&published.local("entries.par4"));
    let url = published.url("entries.par4");
    let scratch = tempfile::tempdir().unwrap();
    let out = |name: &str| scratch.path().join(name).to_str().unwrap().to_owned();
    // The tail, then the root's trailer with the 4 KiB before it.
    let open = Cost::new(2, TAIL + CHUNK_TAIL);
    // Each bucket's trailer and first read, then every entry's first 256
    // bytes (merged over a gap only while a request stays at least half
    // bytes asked for).
    let listing = open.plus(Cost::new(
        2 * par4.buckets + par4.entries,
        par4.buckets * (CHUNK_TAIL + BUCKET_HEAD) + 2 * par4.entries * LISTED_PREFIX,
    ));
    // One value: its bucket's trailer and first read, the entry's first
    // 4 KiB, the rest of the value (announced: read-ahead stops at its end).
    let with = |value: u64| {
        open.plus(Cost::new(
            4,
            CHUNK_TAIL + BUCKET_HEAD + KEY_READ + value + 16,
        ))
    };
    // Extraction and conversion read every value: a file that fits half
    // the memory cache (this one) is fetched whole after the open, in
    // requests of at most 16 MiB, before the listing.
    let extraction = open.plus(Cost::new(par4.file.div_ceil(16 << 20), par4.file));
    let commands = vec![
        (
            strings(&["par4", "info", &url]),
            open.plus(Cost::new(par4.buckets, par4.buckets * CHUNK_TAIL)),
        ),
        (strings(&["sniff", &url]), Cost::new(2, TAIL + HEAD)),
        (strings(&["info", &url]), listing),
        (strings(&["list", &url]), listing),
        (strings(&["par4", "list", &url]), listing),
        (
            strings(&["get", &url, "k123", "-o", &out("k123")]),
            with(ENTRY as u64),
        ),
        (
            strings(&["get", &url, "big", "-o", &out("big")]),
            with(BIG as u64),
        ),
        (
            strings(&["par4", "get", &url, "big", "-o", &out("own")]),
            with(BIG as u64),
        ),
        // Verify checks every chunk's bytes: the whole file.
        (strings(&["verify", &url]), Cost::new(3, par4.file + TAIL)),
        (
            strings(&["par4", "verify", &url]),
            Cost::new(3, par4.file + TAIL),
        ),
        (strings(&["extract", &url, "-o", &out("all")]), extraction),
        (
            strings(&["par4", "extract", &url, "-o", &out("own-all")]),
            extraction,
        ),
        (
            strings(&["convert", &url, "--to", "arcx", "-o", &out("c.arcx")]),
            extraction,
        ),
    ];
    check(&commands);
}
