//! A block many small files share that is larger than the largest block
//! decoded whole (`Limits::max_shared_block`): a valid archive, so it is
//! read, not refused; the block is streamed once through its files' chunks
//! (reading in order, `verify`, `extract`) or decompressed up to the chunk
//! asked for (one file). The limit is lowered here, so a 1 MiB block plays
//! the 256 MiB one (16 MiB by default) without a slow debug test.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use binfmt_arcx::{Archive, ExtractOptions, Limits, OpenOptions, PackOptions, Packer};

/// An archive in memory that counts the bytes read from it.
#[derive(Debug)]
struct Counted {
    bytes: Vec<u8>,
    read: AtomicU64,
}

impl binfmt_core::Source for Counted {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let start = offset as usize;
        buf.copy_from_slice(&self.bytes[start..start + buf.len()]);
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn name(&self) -> &Path {
        Path::new("counted")
    }
}

fn contents(i: usize) -> Vec<u8> {
    format!("file {i}: ")
        .into_bytes()
        .into_iter()
        .chain(binfmt_tests::pseudo_random_bytes(i as u64, 3000))
        .collect()
}

/// 300 files of about 3 KB in one shared block of about 900 KB.
fn archive(dialect: binfmt_arcx::Dialect) -> Vec<u8> {
    let options = PackOptions::default()
        .dialect(dialect)
        .block_size(1 << 20)
        .chunk_size(1 << 20);
    let mut packer = Packer::new(std::io::Cursor::new(Vec::new()), options).unwrap();
    for i in 0..300 {
        packer
            .add(&format!("f/{i:03}"), &mut contents(i).as_slice())
            .unwrap();
    }
    packer.finish().unwrap().0.into_inner()
}

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_shared_block = 64 << 10;
    limits
}

fn open(bytes: &[u8]) -> Archive<Counted> {
    let source = Counted {
        bytes: bytes.to_vec(),
        read: AtomicU64::new(0),
    };
    Archive::with_limits(source, limits()).unwrap()
}

fn read(archive: &Archive<Counted>) -> u64 {
    archive.source().read.load(Ordering::Relaxed)
}

#[test]
fn a_shared_block_over_the_limit_is_streamed_not_refused() {
    for dialect in [binfmt_arcx::Dialect::Spec, binfmt_arcx::Dialect::ArcxCli] {
        let bytes = archive(dialect);
        let size = bytes.len() as u64;
        let probe = open(&bytes);
        let blocks = probe.manifest().blocks();
        assert_eq!(blocks.len(), 1, "{dialect:?}");
        assert!(u64::from(blocks[0].size) > 64 << 10);

        // verify reads the block once (not once a file).
        let archive = open(&bytes);
        let opened = read(&archive);
        let summary = archive.verify().unwrap();
        assert_eq!(summary.files, 300);
        assert!(
            read(&archive) - opened < size,
            "{} > {size}",
            read(&archive) - opened
        );

        // Every file in order: the same single pass, each file right.
        let archive = open(&bytes);
        let opened = read(&archive);
        for (i, file) in archive.files().enumerate() {
            let mut got = Vec::new();
            archive.reader_for(file).read_to_end(&mut got).unwrap();
            assert_eq!(got, contents(i), "{dialect:?} {i}");
        }
        assert!(read(&archive) - opened < size);

        // Out of order still reads right (from the block's start again).
        assert_eq!(archive.read("f/007").unwrap(), contents(7));
        assert_eq!(archive.read("f/299").unwrap(), contents(299));

        // One file: the block decompressed up to its chunk.
        let source = Counted {
            bytes: bytes.clone(),
            read: AtomicU64::new(0),
        };
        let options = OpenOptions::default().limits(limits());
        let one = Archive::open_one(source, "f/150", options).unwrap();
        assert_eq!(one.read().unwrap(), contents(150));

        // extract: every file, the block streamed once.
        let dir = tempfile::tempdir().unwrap();
        let archive = open(&bytes);
        let opened = read(&archive);
        archive
            .extract(dir.path(), ExtractOptions::default().jobs(Some(2)))
            .unwrap();
        for i in [0, 1, 150, 299] {
            assert_eq!(
                std::fs::read(dir.path().join(format!("f/{i:03}"))).unwrap(),
                contents(i)
            );
        }
        assert!(read(&archive) - opened < size);

        // A byte flipped inside the block is still caught.
        let mut flipped = bytes.clone();
        let at = blocks[0].offset as usize + 4 + blocks[0].stored_size as usize / 2;
        flipped[at] ^= 0x40;
        assert!(open(&flipped).verify().is_err(), "{dialect:?}");
    }
}

/// A large shared block is streamed once, so its chunks must follow file
/// order: one whose files go back inside it is refused when it is over
/// the limit, and read (decoded whole) when it is not.
#[test]
fn a_large_shared_block_out_of_file_order_is_refused() {
    use binfmt_tests::build::arcx::{Archive as Build, Block};
    let (a, b, c) = (vec![b'a'; 40_000], vec![b'b'; 30_000], vec![b'c'; 20_000]);
    let mut build = Build::of(&[("a", &a), ("b", &b), ("c", &c)]);
    // b's bytes first in the block, then a's, then c's.
    build.chunks[0].block_offset = b.len() as u64;
    build.chunks[1].block_offset = 0;
    build.blocks[0] = Block::zstd([b.clone(), a.clone(), c.clone()].concat());
    for (dialect, bytes) in [("spec", build.spec()), ("arcx-cli", build.cli())] {
        let mut small = Limits::default();
        small.max_shared_block = 64 << 10;
        let error = Archive::with_limits(bytes.as_slice(), small).unwrap_err();
        assert!(
            error.to_string().contains("follow file order"),
            "{dialect}: {error}"
        );
        let whole = Archive::new(bytes.as_slice()).unwrap();
        assert_eq!(whole.read("a").unwrap(), a, "{dialect}");
        assert_eq!(whole.read("b").unwrap(), b, "{dialect}");
        whole.verify().unwrap();
    }
}

/// Seeking (issue 29: a mounted file read at any offset): the bytes at any
/// position, in a shared block streamed by cursor and in a large file of
/// many blocks, where a read at the end decompresses only its own block.
#[test]
fn seeking_reads_only_the_chunk_it_lands_in() {
    use std::io::{Seek, SeekFrom};
    for dialect in [binfmt_arcx::Dialect::Spec, binfmt_arcx::Dialect::ArcxCli] {
        // A file in the shared block over the limit (a cursor piece).
        let archive = open(&archive(dialect));
        let file = archive.find("f/150").unwrap();
        let mut reader = archive.reader_for(file);
        let want = contents(150);
        for at in [2000u64, 10, 2999, 0] {
            reader.seek(SeekFrom::Start(at)).unwrap();
            let mut got = vec![0; 7];
            reader.read_exact(&mut got).unwrap();
            assert_eq!(got, want[at as usize..at as usize + 7], "{dialect:?} {at}");
        }

        // A file of 64 blocks of 16 KiB each (random, so each block is
        // stored at about its size).
        let big = binfmt_tests::pseudo_random_bytes(9, 64 << 14);
        let options = PackOptions::default()
            .dialect(dialect)
            .block_size(16 << 10)
            .chunk_size(16 << 10);
        let mut packer = Packer::new(std::io::Cursor::new(Vec::new()), options).unwrap();
        packer.add("big.bin", &mut big.as_slice()).unwrap();
        let bytes = packer.finish().unwrap().0.into_inner();
        let archive = open(&bytes);
        let file = archive.find("big.bin").unwrap();
        assert!(archive.manifest().blocks().len() >= 64);
        let mut reader = archive.reader_for(file);
        let before = read(&archive);
        reader.seek(SeekFrom::End(-100)).unwrap();
        let mut tail = Vec::new();
        reader.read_to_end(&mut tail).unwrap();
        assert_eq!(tail, big[big.len() - 100..]);
        let moved = read(&archive) - before;
        assert!(
            moved < 3 * (16 << 10),
            "{dialect:?}: {moved} bytes read for the last 100"
        );
        // Back, forward, relative, and past the end.
        for (to, at) in [
            (SeekFrom::Start(5), 5usize),
            (SeekFrom::Current(40_000), 40_011),
            (SeekFrom::Start((32 << 14) - 3), (32 << 14) - 3),
        ] {
            assert_eq!(reader.seek(to).unwrap(), at as u64);
            let mut got = vec![0; 6];
            reader.read_exact(&mut got).unwrap();
            assert_eq!(got, big[at..at + 6]);
        }
        reader.seek(SeekFrom::Start(big.len() as u64 + 5)).unwrap();
        assert_eq!(reader.read(&mut [0; 4]).unwrap(), 0);
        assert!(
            reader
                .seek(SeekFrom::Current(-(big.len() as i64) - 10))
                .is_err()
        );
    }
}
