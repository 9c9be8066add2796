//! Every kind of source against the same ranges, claimed sizes, maps.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::ext::READ_STEP;
use super::file::MAP_FROM;
use super::*;
use crate::error::Error;

/// 99 bytes that claim to be 64 GiB, like a lying server.
#[derive(Debug)]
struct Claiming(Vec<u8>);

impl Source for Claiming {
    fn len(&self) -> u64 {
        64 << 30
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let bytes = self
            .0
            .get(start..start + buf.len())
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(bytes);
        Ok(())
    }
    fn name(&self) -> &Path {
        Path::new("claiming")
    }
}

#[test]
fn a_claimed_size_never_allocates_before_the_bytes_arrive() {
    let source = Claiming(vec![7; 99]);
    // Not an abort: the reservation fails, or the first step beyond
    // the real bytes does.
    assert!(source.bytes_at(0, 64 << 30, "region").is_err());
    assert!(read_vec_at(&source, 16, 32 << 30, "region").is_err());
    assert_eq!(&source.bytes_at(10, 20, "ok").unwrap()[..], &[7; 20]);
    assert_eq!(read_vec_at(&source, 0, 99, "ok").unwrap(), vec![7; 99]);
    let bytes: Vec<u8> = (0..(READ_STEP * 2 + 5)).map(|i| i as u8).collect();
    let source = Claiming(bytes.clone());
    assert_eq!(
        read_vec_at(&source, 3, bytes.len() as u64 - 3, "steps").unwrap(),
        &bytes[3..]
    );
}

fn temp_file(contents: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(contents).unwrap();
    file.flush().unwrap();
    file
}

#[test]
fn open_files_are_mapped_whatever_their_position() {
    let file = temp_file(b"hello, map");
    let mut opened = File::open(file.path()).unwrap();
    opened.seek(SeekFrom::Start(3)).unwrap();
    let source = ByteSource::from_file(opened.try_clone().unwrap(), "handed over").unwrap();
    assert!(source.is_mapped());
    assert_eq!(&*source, b"hello, map");
    assert_eq!(source.path(), Path::new("handed over"));
    assert_eq!(opened.stream_position().unwrap(), 3);
    let dir = tempfile::tempdir().unwrap();
    let directory = File::open(dir.path()).unwrap();
    assert!(matches!(
        ByteSource::from_file(directory, "dir"),
        Err(Error::NotRegularFile {
            kind: "a directory",
            ..
        })
    ));
}

#[test]
fn regular_files_are_mapped() {
    let file = temp_file(b"hello, map");
    let source = ByteSource::open(file.path()).unwrap();
    assert!(source.is_mapped());
    assert_eq!(&*source, b"hello, map");
    assert_eq!(source.path(), file.path());
    assert_eq!(source.in_memory(), Some(&b"hello, map"[..]));
}

#[test]
fn large_regions_of_a_file_are_mapped_when_asked() {
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let file = temp_file(&bytes);
    let read = FileSource::open(file.path()).unwrap();
    let mapping = FileSource::open(file.path()).unwrap().map_regions(true);
    // Unaligned offsets, a region below 64 KiB, the whole file.
    for (offset, len) in [(4097, 100_000), (10, 1000), (0, 300_000), (299_999, 1)] {
        let end = offset as usize + len as usize;
        let (by_read, by_map) = (
            read.region_at(offset, len, "region").unwrap(),
            mapping.region_at(offset, len, "region").unwrap(),
        );
        assert!(matches!(by_read, Region::Owned(_)));
        assert_eq!(matches!(by_map, Region::Mapped(_)), len >= MAP_FROM);
        assert_eq!(&*by_read, &bytes[offset as usize..end]);
        assert_eq!(&*by_map, &bytes[offset as usize..end]);
    }
    assert!(mapping.region_at(200_000, 100_001, "past the end").is_err());
    assert!(matches!(
        bytes.region_at(5, 100_000, "in memory").unwrap(),
        Region::Borrowed(_)
    ));
}

#[test]
fn empty_files_and_forced_reads_are_owned() {
    let empty = temp_file(b"");
    let source = ByteSource::open(empty.path()).unwrap();
    assert!(!source.is_mapped());
    assert!(Source::is_empty(&source));

    let file = temp_file(b"copied");
    let source = ByteSource::read(file.path()).unwrap();
    assert!(!source.is_mapped());
    assert_eq!(source.as_bytes(), b"copied");
}

#[test]
fn streams_are_read_to_the_end() {
    let mut stream: &[u8] = b"from a pipe";
    let source = ByteSource::read_from(&mut stream, "<stdin>").unwrap();
    assert_eq!(&*source, b"from a pipe");
    assert_eq!(source.path(), Path::new("<stdin>"));
    assert_eq!(ByteSource::from_vec(vec![1, 2], "x").as_bytes(), &[1, 2]);
}

#[test]
fn missing_file_names_its_path() {
    let error = ByteSource::open("/nonexistent/binfmt/x.kas").unwrap_err();
    assert!(
        matches!(&error, Error::Io { path, .. } if path == Path::new("/nonexistent/binfmt/x.kas"))
    );
    assert!(FileSource::open("/nonexistent/binfmt/x.kas").is_err());
}

/// Every kind of source gives the same bytes, borrowed only from memory.
#[test]
fn every_source_reads_the_same_ranges() {
    let content = b"0123456789".to_vec();
    let file = temp_file(&content);
    let sources: Vec<Box<dyn Source>> = vec![
        Box::new(content.clone()),
        Box::new(ByteSource::open(file.path()).unwrap()),
        Box::new(FileSource::open(file.path()).unwrap()),
        Box::new(SeekSource::new(Cursor::new(content.clone()), "cursor").unwrap()),
    ];
    for source in &sources {
        assert_eq!(source.len(), 10);
        let tail = source.bytes_at(7, 3, "tail").unwrap();
        assert_eq!(&*tail, b"789");
        assert_eq!(
            matches!(tail, Cow::Borrowed(_)),
            source.in_memory().is_some()
        );
        assert_eq!(source.array_at::<2>(0, "head").unwrap(), *b"01");
        let mut all = Vec::new();
        source
            .reader(2, 6, "middle")
            .unwrap()
            .read_to_end(&mut all)
            .unwrap();
        assert_eq!(all, b"234567");
        assert_eq!(read_vec_at(&**source, 0, 2, "head").unwrap(), b"01");
    }
}

#[test]
fn ranges_outside_the_source_fail_before_allocating() {
    let file = temp_file(b"0123456789");
    let source = FileSource::open(file.path()).unwrap();
    let mut buf = [0; 4];
    assert!(matches!(
        source.fill_at(8, &mut buf, "footer"),
        Err(Error::OutOfBounds {
            offset: 8,
            len: 4,
            file_size: 10,
            ..
        })
    ));
    assert!(matches!(
        source.bytes_at(0, 1 << 60, "manifest"),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        source.bytes_at(u64::MAX, 2, "manifest"),
        Err(Error::Overflow { .. })
    ));
    assert!(source.reader(9, 2, "payload").is_err());
}

#[test]
fn records_are_read_at_their_offset() {
    use crate::layout::U32;
    #[derive(
        Debug,
        crate::layout::FromBytes,
        crate::layout::IntoBytes,
        crate::layout::KnownLayout,
        crate::layout::Immutable,
        crate::layout::Unaligned,
    )]
    #[repr(C)]
    struct Pair {
        a: U32,
        b: U32,
    }
    crate::fixed_layout!(Pair, 8, "pair");
    let mut bytes = vec![0xff; 3];
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&2u32.to_le_bytes());
    let source = SeekSource::new(Cursor::new(bytes), "pairs").unwrap();
    let pair: Pair = source.record_at(3).unwrap();
    assert_eq!((pair.a.get(), pair.b.get()), (1, 2));
    assert!(matches!(
        source.record_at::<Pair>(4),
        Err(Error::OutOfBounds { offset: 4, .. })
    ));
}

#[cfg(unix)]
#[test]
fn non_regular_files_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    for error in [
        FileSource::open(&fifo).unwrap_err(),
        ByteSource::open(&fifo).unwrap_err(),
    ] {
        assert!(
            matches!(&error, Error::NotRegularFile { kind: "a FIFO", .. }),
            "{error}"
        );
    }
    let link = dir.path().join("zero");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    assert!(matches!(
        FileSource::open(&link),
        Err(Error::NotRegularFile {
            kind: "a character device",
            ..
        })
    ));
    assert!(matches!(
        ByteSource::open(dir.path()),
        Err(Error::NotRegularFile {
            kind: "a directory",
            ..
        })
    ));
    // A socket cannot be opened at all: its kind is still named.
    let socket = dir.path().join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    assert!(matches!(
        MapOnDemand::open(&socket),
        Err(Error::NotRegularFile {
            kind: "a socket",
            ..
        })
    ));
}

#[test]
fn vectored_reads_fill_each_buffer_in_turn() {
    let data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    let file = temp_file(&data);
    let source = FileSource::open(file.path()).unwrap();
    let (mut a, mut b, mut c) = (vec![0u8; 700], vec![0u8; 0], vec![0u8; 3000]);
    let mut bufs = [
        io::IoSliceMut::new(&mut a),
        io::IoSliceMut::new(&mut b),
        io::IoSliceMut::new(&mut c),
    ];
    source.read_vectored_exact_at(123, &mut bufs).unwrap();
    assert_eq!(a[..], data[123..823]);
    assert_eq!(c[..], data[823..3823]);
    // The default (one read per buffer) gives the same bytes.
    let (mut d, mut e) = (vec![0u8; 700], vec![0u8; 3000]);
    let mut bufs = [io::IoSliceMut::new(&mut d), io::IoSliceMut::new(&mut e)];
    data.read_vectored_exact_at(123, &mut bufs).unwrap();
    assert_eq!((d, e), (a, c));
    // Past the end: an error, never a short buffer taken as whole.
    let mut tail = vec![0u8; 200];
    let error = source
        .read_vectored_exact_at(9_900, &mut [io::IoSliceMut::new(&mut tail)])
        .unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
}
