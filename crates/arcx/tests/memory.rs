//! Heap used by the ARCX reader, measured with a counting allocator against
//! the bounds `spec/limits.md` states.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Read;

use binfmt_arcx::{Archive, Listing, PackOptions, Packer};
use binfmt_tests::memory::{Meter, measure, serial};

#[global_allocator]
static METER: Meter = Meter;

/// The decompressed manifest of an archive in the spec dialect.
fn manifest_body(bytes: &[u8]) -> usize {
    let footer = bytes.len() - 40;
    let offset = u64::from_le_bytes(bytes[footer + 8..footer + 16].try_into().unwrap()) as usize;
    zstd::decode_all(&bytes[offset + 4..footer]).unwrap().len()
}

/// Many empty files describe themselves in a few dozen bytes each, and a
/// repetitive manifest compresses by orders of magnitude: opening must
/// stay within a constant of the decompressed manifest.
#[test]
fn opening_costs_a_constant_per_manifest_byte() {
    let _alone = serial();
    let mut packer = Packer::new(std::io::Cursor::new(Vec::new()), PackOptions::default()).unwrap();
    for i in 0..200_000 {
        packer
            .add(&format!("d{}/f{i}", i % 100), &mut &b""[..])
            .unwrap();
    }
    let bytes = packer.finish().unwrap().0.into_inner();
    let body = manifest_body(&bytes);
    let (archive, usage) = measure(|| Archive::new(bytes.as_slice()).unwrap());
    assert_eq!(archive.len(), 200_000);
    let kept = archive.manifest().heap_size();
    eprintln!(
        "{} stored, {body} decompressed manifest bytes: peak {} while opening, {kept} kept",
        bytes.len(),
        usage.peak
    );
    assert!(usage.peak <= 4 * body, "peak {} > 4 × {body}", usage.peak);
    assert!(kept <= 3 * body, "kept {kept} > 3 × {body}");
}

/// Listing (what `list` and `info` do) walks the manifest without building
/// its tables: the peak is the decompressed manifest and 8 bytes a string,
/// under 100 bytes a file (`spec/limits.md`), where opening the archive
/// holds about three times the manifest.
#[test]
fn listing_streams_the_manifest() {
    let _alone = serial();
    let files = 200_000;
    let mut packer = Packer::new(std::io::Cursor::new(Vec::new()), PackOptions::default()).unwrap();
    for i in 0..files {
        packer
            .add(&format!("d{}/f{i:07}", i % 100), &mut &b""[..])
            .unwrap();
    }
    let bytes = packer.finish().unwrap().0.into_inner();
    let body = manifest_body(&bytes);
    let ((count, listing_heap), usage) = measure(|| {
        let listing = Listing::open(&bytes.as_slice(), Default::default()).unwrap();
        let mut count = 0u64;
        listing
            .for_each(|file| {
                assert!(file.path.name().starts_with('f'));
                count += 1;
                Ok::<(), binfmt_arcx::ArcxError>(())
            })
            .unwrap();
        (count, listing.heap_size())
    });
    assert_eq!(count, files as u64);
    let ((), opened) = measure(|| {
        Archive::new(bytes.as_slice()).unwrap();
    });
    eprintln!(
        "{files} files, {body} decompressed manifest bytes: listing peak {} ({} a file, {listing_heap} kept), opening peak {}",
        usage.peak,
        usage.peak / files,
        opened.peak
    );
    // What it holds: the manifest and where each string lies.
    assert!(
        listing_heap < 100 * files,
        "{listing_heap} kept for {files} files"
    );
    assert!(
        listing_heap <= body + 8 * (files + 100),
        "{listing_heap} kept"
    );
    // The peak adds the room decompression reserved (address space until
    // written): still well under opening's.
    assert!(
        3 * usage.peak < 2 * opened.peak,
        "{} vs {}",
        usage.peak,
        opened.peak
    );
}

/// Reading a large file moves it through buffers of about a block; the
/// archive is read by offset, not mapped.
#[test]
fn reading_a_large_file_holds_about_one_block() {
    let _alone = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.arcx");
    let data = binfmt_tests::pseudo_random_bytes(1, 48 << 20);
    let mut packer = Packer::create(&path, PackOptions::default()).unwrap();
    packer.add("big", &mut data.as_slice()).unwrap();
    packer.commit().unwrap();
    drop(data);
    let archive = Archive::open(&path).unwrap();
    let (copied, usage) = measure(|| {
        let mut reader = archive.reader("big").unwrap();
        let mut buffer = vec![0u8; 64 << 10];
        let mut total = 0u64;
        loop {
            let n = reader.read(&mut buffer).unwrap();
            if n == 0 {
                break total;
            }
            total += n as u64;
        }
    });
    assert_eq!(copied, 48 << 20);
    eprintln!("48 MiB file: peak {} bytes", usage.peak);
    assert!(usage.peak < 4 << 20, "peak {}", usage.peak);
}

/// A block larger than the shared-block limit is streamed: memory stays
/// bounded by the decoder's window and buffers, not the block's size.
#[test]
fn a_large_block_streams() {
    let _alone = serial();
    let data = vec![42u8; 96 << 20];
    let options = PackOptions::default().chunk_size(96 << 20);
    let mut packer = Packer::new(std::io::Cursor::new(Vec::new()), options).unwrap();
    packer.add("zeros", &mut data.as_slice()).unwrap();
    let bytes = packer.finish().unwrap().0.into_inner();
    drop(data);
    let archive = Archive::new(bytes).unwrap();
    assert_eq!(archive.manifest().blocks().len(), 1);
    let ((), usage) = measure(|| {
        let copied = std::io::copy(&mut archive.reader("zeros").unwrap(), &mut std::io::sink());
        assert_eq!(copied.unwrap(), 96 << 20);
    });
    eprintln!("96 MiB block: peak {} bytes", usage.peak);
    assert!(usage.peak < 8 << 20, "peak {}", usage.peak);
}
