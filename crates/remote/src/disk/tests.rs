//! The disk cache's tests.

use super::*;
use std::fs;

#[test]
fn ranges_come_back_from_a_fresh_handle_and_the_limit_holds() {
    let dir = tempfile::tempdir().unwrap();
    let cache = DiskCache::new(&dir.path().join("c"), 400).unwrap();
    let object = cache.object("http://h/x", "\"e1\"", 1000).unwrap();
    let data: Bytes = (0..1000u32).map(|i| i as u8).collect::<Vec<u8>>().into();
    object.write(&cache, 100, &data.slice(100..200));
    object.write(&cache, 150, &data.slice(150..250)); // only 200..250 is new
    let again = cache.object("http://h/x", "\"e1\"", 1000).unwrap();
    let mut buf = vec![0; 200];
    let (missing, found) = again.read(vec![50..250], 50, &mut buf);
    assert_eq!(missing, vec![50..100]);
    assert_eq!(found.len(), 2);
    assert_eq!(&buf[50..200], &data[100..250]);

    // Another ETag is another object: nothing cached.
    let other = cache.object("http://h/x", "\"e2\"", 1000).unwrap();
    let (missing, _) = other.read(vec![100..200], 100, &mut [0; 100]);
    assert_eq!(missing, vec![100..200]);

    // Past the limit the least recently used range goes.
    object.write(&cache, 500, &data.slice(500..600));
    let sizes: u64 = cache.files().iter().map(|file| file.3).sum();
    assert!(sizes <= 400, "{sizes}");
}

/// The cache's one object directory and its only file.
fn only_file(cache: &DiskCache) -> (PathBuf, String) {
    let files = cache.files();
    assert_eq!(files.len(), 1, "{files:?}");
    (files[0].1.clone(), files[0].2.clone())
}

#[test]
fn a_changed_byte_is_a_miss_and_the_entry_goes() {
    let dir = tempfile::tempdir().unwrap();
    let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
    let object = cache.object("http://h/x", "\"e\"", 100).unwrap();
    object.write(&cache, 10, &Bytes::from_static(b"0123456789"));
    let (object_dir, name) = only_file(&cache);
    let path = object_dir.join(&name);
    let mut bytes = fs::read(&path).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    fs::write(&path, bytes).unwrap();
    let again = cache.object("http://h/x", "\"e\"", 100).unwrap();
    let mut buf = [0; 10];
    let (missing, found) = again.read(vec![10..20], 10, &mut buf);
    assert_eq!(missing, vec![10..20]);
    assert!(found.is_empty());
    assert!(!path.exists(), "the bad entry is removed");
}

/// A file of the first layout (`binfmtRC`, the SHA-256 of its bytes),
/// whole and right by that layout: a miss, removed when read, and
/// deleted by eviction like this layout's files.
#[test]
fn a_file_of_the_first_layout_is_a_miss_and_goes() {
    let first_layout = |start: u64, data: &[u8]| {
        let mut bytes = b"binfmtRC".to_vec();
        bytes.extend(start.to_le_bytes());
        bytes.extend((data.len() as u64).to_le_bytes());
        bytes.extend(Sha256::digest(data));
        bytes.extend(data);
        bytes
    };
    let dir = tempfile::tempdir().unwrap();
    let cache = DiskCache::new(&dir.path().join("c"), 300).unwrap();
    let object = cache.object("http://h/x", "\"e\"", 1000).unwrap();
    object.write(&cache, 10, &Bytes::from_static(b"0123456789"));
    let (object_dir, name) = only_file(&cache);
    let path = object_dir.join(&name);
    fs::write(&path, first_layout(10, b"0123456789")).unwrap();
    let again = cache.object("http://h/x", "\"e\"", 1000).unwrap();
    let (missing, found) = again.read(vec![10..20], 10, &mut [0; 10]);
    assert_eq!(missing, vec![10..20]);
    assert!(found.is_empty());
    assert!(!path.exists(), "the old file is removed when read");

    // Eviction: an old file planted as the oldest goes first.
    fs::write(object_dir.join("0-100"), first_layout(0, &[7; 100])).unwrap();
    let old = fs::File::options()
        .write(true)
        .open(object_dir.join("0-100"))
        .unwrap();
    old.set_modified(SystemTime::UNIX_EPOCH).unwrap();
    again.write(&cache, 200, &Bytes::from(vec![1u8; 150]));
    assert!(!object_dir.join("0-100").exists(), "evicted first");
    assert!(object_dir.join("200-150").exists());
}

#[test]
fn a_fifo_in_place_of_an_entry_is_a_miss_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
    let object = cache.object("http://h/x", "\"e\"", 100).unwrap();
    object.write(&cache, 0, &Bytes::from_static(b"abc"));
    let (object_dir, name) = only_file(&cache);
    let path = object_dir.join(&name);
    fs::remove_file(&path).unwrap();
    let status = std::process::Command::new("mkfifo").arg(&path).status();
    assert!(status.unwrap().success());
    let (missing, _) = object.read(vec![0..3], 0, &mut [0; 3]);
    assert_eq!(missing, vec![0..3]);
    assert!(path.exists(), "not ours: left alone");
}

/// `missing` finds the held ranges by the map's order; the same as
/// subtracting every held range from every gap.
#[test]
fn missing_is_every_held_range_subtracted() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    for _ in 0..500 {
        let mut ranges = BTreeMap::new();
        let mut at = next(5);
        for _ in 0..next(12) {
            let len = 1 + next(6);
            ranges.insert(at, len);
            at += len + next(4);
        }
        let object = DiskObject {
            root: PathBuf::new(),
            dir: PathBuf::new(),
            size: 100,
            ranges: Mutex::new(ranges.clone()),
            whole: Mutex::new(None),
        };
        let gaps: Vec<Range<u64>> = (0..next(4))
            .map(|_| {
                let start = next(60);
                start..start + 1 + next(20)
            })
            .collect();
        let mut naive = gaps.clone();
        for (&start, &len) in &ranges {
            let held = start..start + len;
            naive = naive
                .into_iter()
                .flat_map(|gap| subtract(gap, &held))
                .collect();
        }
        assert_eq!(object.missing(gaps.clone()), naive, "{ranges:?} {gaps:?}");
    }
}

#[test]
fn eviction_never_follows_a_planted_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    fs::create_dir(&victim).unwrap();
    // Named like cache entries, in a directory named like a key.
    fs::write(victim.join("0-10"), [1; 66]).unwrap();
    let root = dir.path().join("c");
    let cache = DiskCache::new(&root, 300).unwrap();
    std::os::unix::fs::symlink(&victim, root.join("0".repeat(32))).unwrap();
    std::os::unix::fs::symlink(victim.join("0-10"), root.join("1".repeat(32))).unwrap();
    let object = cache.object("http://h/x", "\"e\"", 1000).unwrap();
    // Names that would overflow: ignored, never a panic.
    let huge = format!("{0}-{0}", u64::MAX);
    fs::write(object.dir.join(&huge), b"x").unwrap();
    fs::write(object.dir.join(format!("0-{}", u64::MAX - 10)), b"x").unwrap();
    assert!(cache.object("http://h/x", "\"e\"", u64::MAX).is_some());
    for start in 0..10 {
        object.write(&cache, start * 50, &Bytes::from(vec![2; 50]));
    }
    assert_eq!(fs::read(victim.join("0-10")).unwrap(), [1; 66]);
    assert!(cache.files().iter().map(|file| file.3).sum::<u64>() <= 300);
    // A symlink to elsewhere in place of an object's directory is
    // refused, not written through.
    let key_of_other = cache.object("http://h/y", "\"e\"", 1000).unwrap().dir;
    fs::remove_dir_all(&key_of_other).unwrap();
    std::os::unix::fs::symlink(&victim, &key_of_other).unwrap();
    assert!(cache.object("http://h/y", "\"e\"", 1000).is_none());
}

#[test]
fn a_directory_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("c");
    fs::create_dir(&root).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o1777)).unwrap();
    let error = DiskCache::new(&root, 100).unwrap_err();
    assert!(
        error.to_string().contains("writable by other users"),
        "{error}"
    );
    let link = dir.path().join("link");
    fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&root, &link).unwrap();
    assert!(DiskCache::new(&link, 100).is_err());
    // Found from outside: `link/` and `link/.` were looked up through
    // the symlink and accepted.
    for spelled in [
        format!("{}/", link.display()),
        format!("{}/.", link.display()),
    ] {
        let error = DiskCache::new(Path::new(&spelled), 100).unwrap_err();
        assert!(error.to_string().contains("symlink"), "{spelled}: {error}");
    }
    // A file is "not a directory", said once.
    let file = dir.path().join("file");
    fs::write(&file, b"x").unwrap();
    let error = DiskCache::new(&file, 100).unwrap_err().to_string();
    assert!(
        error.contains("is not a directory") && error.matches("not a").count() == 1,
        "{error}"
    );
}

#[test]
fn a_damaged_file_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
    let object = cache.object("s3://b/k", "\"e\"", 100).unwrap();
    object.write(&cache, 0, &Bytes::from_static(&[7; 10]));
    fs::write(object.dir.join("0-10"), [7; 4]).unwrap();
    assert_eq!(parse_name("00-10"), None);
    assert_eq!(parse_name("+1-10"), None);
    let (missing, found) = object.read(vec![0..10], 0, &mut [0; 10]);
    assert_eq!(missing, vec![0..10]);
    assert!(found.is_empty());
}

/// The bytes of every cache file under `root`.
fn on_disk(cache: &DiskCache) -> u64 {
    cache.files().iter().map(|file| file.3).sum()
}

#[test]
fn handles_sharing_a_directory_keep_it_within_the_bound() {
    // Four handles are four worker processes: each sees the others'
    // writes only by counting the directory again.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("c");
    let limit = 16_000;
    let handles: Vec<DiskCache> = (0..4)
        .map(|_| DiskCache::new(&root, limit).unwrap())
        .collect();
    let objects: Vec<DiskObject> = handles
        .iter()
        .map(|cache| cache.object("http://h/x", "\"e\"", 1 << 20).unwrap())
        .collect();
    let bound = limit + 4 * (limit / RECOUNT_SHARE);
    let mut most = 0;
    for step in 0..400u64 {
        let which = (step % 4) as usize;
        let piece = Bytes::from(vec![step as u8; 200]);
        objects[which].write(&handles[which], step * 200, &piece);
        most = most.max(on_disk(&handles[0]));
    }
    assert!(most <= bound, "{most} > {bound}");
    // 400 ranges of 256 bytes were written: far past the limit.
    assert!(most > limit / 2, "{most}");
}

#[test]
fn writers_of_one_range_never_share_a_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("c");
    let data: Bytes = (0..4096u32)
        .map(|i| (i * 7) as u8)
        .collect::<Vec<u8>>()
        .into();
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                let cache = DiskCache::new(&root, 1 << 20).unwrap();
                for _ in 0..20 {
                    // A fresh handle knows nothing: it writes the range.
                    let object = cache.object("http://h/x", "\"e\"", 8192).unwrap();
                    lock(&object.ranges).clear();
                    object.write(&cache, 100, &data);
                }
            });
        }
    });
    let cache = DiskCache::new(&root, 1 << 20).unwrap();
    let (object_dir, name) = only_file(&cache);
    assert_eq!(name, "100-4096");
    let leftovers: Vec<_> = fs::read_dir(&object_dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .filter(|entry| entry != "100-4096")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let object = cache.object("http://h/x", "\"e\"", 8192).unwrap();
    let mut buf = vec![0; 4096];
    let (missing, _) = object.read(vec![100..4196], 100, &mut buf);
    assert!(missing.is_empty());
    assert_eq!(buf, data);
    // Two temporary files for one destination have two names.
    let first = binfmt_core::AtomicFile::create(object_dir.join("0-1")).unwrap();
    let second = binfmt_core::AtomicFile::create(object_dir.join("0-1")).unwrap();
    assert_ne!(first.temp_path(), second.temp_path());
}

#[test]
fn temporary_files_of_dead_writers_go_when_the_directory_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
    let object = cache.object("http://h/x", "\"e\"", 100).unwrap();
    let old = SystemTime::now() - STALE_TEMPORARY - std::time::Duration::from_secs(1);
    let names = [
        ".0-10.a1B2c3.tmp",
        ".0-10.a1B2c4.tmp",
        ".notours.a1B2c3.tmp",
        "0-10.tmp",
    ];
    for name in names {
        fs::write(object.dir.join(name), b"partial").unwrap();
    }
    // Old: the first and the third; only the first is a cache name.
    for name in [names[0], names[2], names[3]] {
        let file = fs::File::options()
            .write(true)
            .open(object.dir.join(name))
            .unwrap();
        file.set_modified(old).unwrap();
    }
    assert!(is_temporary(names[0]) && is_temporary(names[1]));
    assert!(!is_temporary(names[2]) && !is_temporary(names[3]));
    assert!(cache.files().is_empty());
    assert!(
        !object.dir.join(names[0]).exists(),
        "a dead writer's file goes"
    );
    for name in &names[1..] {
        assert!(object.dir.join(name).exists(), "{name} stays");
    }
}

#[test]
fn a_range_deleted_under_a_reader_is_a_miss_then_fetched_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("c");
    let writer = DiskCache::new(&root, 1 << 20).unwrap();
    let object = writer.object("http://h/x", "\"e\"", 100).unwrap();
    object.write(&writer, 0, &Bytes::from_static(b"0123456789"));
    // Another process lists the range, then it is evicted.
    let reader = DiskCache::new(&root, 1 << 20).unwrap();
    let listed = reader.object("http://h/x", "\"e\"", 100).unwrap();
    assert!(listed.missing(vec![0..10]).is_empty());
    let (object_dir, name) = only_file(&writer);
    fs::remove_file(object_dir.join(name)).unwrap();
    let mut buf = [0; 10];
    let (missing, found) = listed.read(vec![2..8], 2, &mut buf[2..8]);
    assert_eq!(missing, vec![2..8]);
    assert!(found.is_empty());
    assert_eq!(listed.missing(vec![0..10]), vec![0..10]);
    // The fetched bytes go back in, and are read.
    listed.write(&reader, 0, &Bytes::from_static(b"0123456789"));
    let (missing, _) = listed.read(vec![0..10], 0, &mut buf);
    assert!(missing.is_empty());
    assert_eq!(&buf, b"0123456789");
}

/// An object of 40,000 bytes (three checksum blocks) whose ranges are all
/// written: `(cache, its object directory, the bytes)`.
fn joined_object(dir: &Path) -> (DiskCache, PathBuf, Vec<u8>) {
    let cache = DiskCache::new(&dir.join("c"), 1 << 20).unwrap();
    let data: Vec<u8> = (0..40_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let object = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    object.write(&cache, 0, &Bytes::from(data[..25_000].to_vec()));
    assert!(object.whole().is_none(), "not every byte yet");
    object.write(&cache, 25_000, &Bytes::from(data[25_000..].to_vec()));
    assert!(object.whole().is_some(), "joined once every byte is there");
    let object_dir = cache.files()[0].1.clone();
    (cache, object_dir, data)
}

#[test]
fn an_object_held_whole_is_joined_into_one_file_and_read_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, object_dir, data) = joined_object(dir.path());
    let names: Vec<String> = cache.files().into_iter().map(|file| file.2).collect();
    assert_eq!(names, ["whole-40000"], "the range files are gone");
    assert_eq!(on_disk(&cache), whole::file_len(40_000, 1).unwrap());
    assert_eq!(on_disk(&cache), 56 + 40_000 + 3 * 16 + 16);

    // A fresh handle reads from the whole file: the blocks the gap
    // touches, checked, as pieces for the memory cache.
    let again = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    assert!(again.missing(vec![0..40_000]).is_empty());
    let mut buf = vec![0; 20_000];
    let (missing, found) = again.read(vec![15_000..35_000], 15_000, &mut buf);
    assert!(missing.is_empty());
    assert_eq!(buf, data[15_000..35_000]);
    let starts: Vec<(u64, usize)> = found.iter().map(|(at, b)| (*at, b.len())).collect();
    // The blocks read (16 KiB each), all of them, for the memory cache.
    assert_eq!(starts, [(0, 40_000)]);
    for (at, bytes) in &found {
        assert_eq!(&bytes[..], &data[*at as usize..*at as usize + bytes.len()]);
    }
    // Writes to a joined object add nothing.
    again.write(&cache, 0, &Bytes::from(data[..100].to_vec()));
    assert_eq!(cache.files().len(), 1);
    assert!(object_dir.join("whole-40000").exists());
}

#[test]
fn a_damaged_whole_file_is_a_miss_and_goes() {
    // A flipped byte in the bytes, in the checksum table, and a file cut
    // short: never a wrong byte.
    for damage in ["byte", "table", "runs", "cut"] {
        let dir = tempfile::tempdir().unwrap();
        let (cache, object_dir, _) = joined_object(dir.path());
        let path = object_dir.join("whole-40000");
        let mut bytes = fs::read(&path).unwrap();
        match damage {
            "byte" => bytes[56 + 20_000] ^= 1,
            "table" => bytes[56 + 40_000 + 16] ^= 1,
            "runs" => bytes[56 + 40_000 + 48 + 8] ^= 1,
            _ => bytes.truncate(bytes.len() - 1),
        }
        fs::write(&path, &bytes).unwrap();
        let again = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
        let mut buf = vec![0; 10_000];
        let (missing, _) = again.read(vec![18_000..28_000], 18_000, &mut buf);
        assert_eq!(missing, vec![18_000..28_000], "{damage}");
        if damage != "cut" {
            // Found damaged when read or opened: removed (a file of a
            // wrong length is not the cache's: never opened, never
            // counted, never deleted, as a planted file).
            assert!(!path.exists(), "{damage}");
        }
        assert!(again.whole().is_none(), "{damage}");
    }
}

#[test]
fn a_planted_symlink_as_the_whole_file_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, object_dir, _) = joined_object(dir.path());
    let path = object_dir.join("whole-40000");
    let target = dir.path().join("elsewhere");
    fs::rename(&path, &target).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let again = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    assert!(again.whole().is_none());
    let (missing, _) = again.read(vec![0..10], 0, &mut [0; 10]);
    assert_eq!(missing, vec![0..10]);
    // Eviction neither counts nor deletes it.
    assert!(cache.files().is_empty());
    assert!(target.exists());
}

#[test]
fn whole_files_are_evicted_like_ranges_and_large_objects_stay_in_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let cache = DiskCache::new(&dir.path().join("c"), 100_000).unwrap();
    // 12,500 bytes is the most joined under a limit of 100,000.
    let big = cache.object("http://h/big", "\"e\"", 12_501).unwrap();
    big.write(&cache, 0, &Bytes::from(vec![1u8; 12_501]));
    assert!(big.whole().is_none());
    let small = cache.object("http://h/small", "\"e\"", 12_500).unwrap();
    small.write(&cache, 0, &Bytes::from(vec![2u8; 12_500]));
    assert!(small.whole().is_some());
    let whole_dir = cache
        .files()
        .into_iter()
        .find(|file| file.2 == "whole-12500")
        .unwrap()
        .1;
    let old = fs::File::options()
        .write(true)
        .open(whole_dir.join("whole-12500"))
        .unwrap();
    old.set_modified(SystemTime::UNIX_EPOCH).unwrap();
    // Past the limit, the least recently used file (the whole one) goes.
    for k in 0..8u64 {
        let other = cache
            .object(&format!("http://h/{k}"), "\"e\"", 1 << 20)
            .unwrap();
        other.write(&cache, 0, &Bytes::from(vec![3u8; 10_000]));
    }
    assert!(!whole_dir.join("whole-12500").exists());
    assert!(on_disk(&cache) <= 100_000);
    assert!(is_temporary(".whole-12500.Ab3xYz.tmp"));
    assert!(!is_temporary(".whole-012500.Ab3xYz.tmp"));
}

#[test]
fn an_object_held_in_part_is_joined_with_its_holes_and_joined_again_when_filled() {
    let dir = tempfile::tempdir().unwrap();
    let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
    let data: Vec<u8> = (0..40_000u32).map(|i| (i % 253) as u8).collect();
    let piece = |range: Range<usize>| Bytes::from(data[range].to_vec());
    let object = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    // 37,000 of 40,000 bytes: a hole at 20,000..22,000 and the last
    // 1,000 bytes never read.
    object.write(&cache, 0, &piece(0..20_000));
    assert!(object.whole().is_none());
    object.write(&cache, 22_000, &piece(22_000..39_000));
    assert_eq!(
        object.whole().unwrap().runs(),
        [(0, 20_000), (22_000, 17_000)]
    );
    assert_eq!(on_disk(&cache), whole::file_len(40_000, 2).unwrap());

    let again = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    assert_eq!(
        again.missing(vec![0..40_000]),
        vec![20_000..22_000, 39_000..40_000]
    );
    let mut buf = vec![0; 6_000];
    let (missing, found) = again.read(vec![18_000..24_000], 18_000, &mut buf);
    assert_eq!(
        missing,
        vec![20_000..22_000],
        "the hole is not held (its zeros never read)"
    );
    assert_eq!(&buf[..2_000], &data[18_000..20_000]);
    assert_eq!(&buf[4_000..], &data[22_000..24_000]);
    let pieces: Vec<(u64, usize)> = found.iter().map(|(at, b)| (*at, b.len())).collect();
    // The held bytes of the two blocks read (16,384..32,768).
    assert_eq!(pieces, [(16_384, 3_616), (22_000, 10_768)]);

    // The hole fetched and written: a range file beside the whole one,
    // read from there; with a sixteenth of the object in range files, the
    // two are joined again into one run.
    again.write(&cache, 19_000, &piece(19_000..22_000));
    assert_eq!(again.missing(vec![0..39_000]), Vec::<Range<u64>>::new());
    assert!(
        again.whole().unwrap().runs().len() == 2,
        "2,000 bytes: not yet"
    );
    let mut buf = vec![0; 4_000];
    assert!(
        again
            .read(vec![19_500..23_500], 19_500, &mut buf)
            .0
            .is_empty()
    );
    assert_eq!(buf, data[19_500..23_500]);
    again.write(&cache, 39_000, &piece(39_000..40_000));
    assert_eq!(again.whole().unwrap().runs(), [(0, 40_000)]);
    let names: Vec<String> = cache.files().into_iter().map(|file| file.2).collect();
    assert_eq!(names, ["whole-40000"]);
    let last = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    let mut buf = vec![0; 40_000];
    assert!(last.read(vec![0..40_000], 0, &mut buf).0.is_empty());
    assert_eq!(buf, data);
}

/// Range files written beside a whole file by a process that had not seen
/// the join (overlapping what it holds) are not used, and a later join
/// still happens.
#[test]
fn ranges_overlapping_a_whole_file_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
    let data: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    let piece = |range: Range<usize>| Bytes::from(data[range].to_vec());
    // A process that will not see the join, opened first.
    let stale = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    let joiner = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    joiner.write(&cache, 0, &piece(0..36_000));
    assert_eq!(joiner.whole().unwrap().runs(), [(0, 36_000)]);
    stale.write(&cache, 30_000, &piece(30_000..38_000));
    let again = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    assert_eq!(again.missing(vec![0..40_000]), vec![36_000..40_000]);
    again.write(&cache, 36_000, &piece(36_000..40_000));
    // A tenth of the object beside the whole file: joined again, the
    // stale range left out.
    assert_eq!(again.whole().unwrap().runs(), [(0, 40_000)]);
    let mut buf = vec![0; 40_000];
    let (missing, _) = again.read(vec![0..40_000], 0, &mut buf);
    assert!(missing.is_empty());
    assert_eq!(buf, data);
}

/// Found from outside: one flipped bit in a run's start made the run claim
/// bytes of a hole (zeros in the file, whose block checksums still match)
/// and they were served. The header, checksums and runs are under a
/// checksum of their own: such a file is never opened.
#[test]
fn a_run_moved_by_one_flipped_bit_is_damage_not_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let cache = DiskCache::new(&dir.path().join("c"), 1 << 20).unwrap();
    let data: Vec<u8> = (0..40_000u32).map(|i| 1 + (i % 250) as u8).collect();
    let object = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    object.write(&cache, 0, &Bytes::from(data[..20_000].to_vec()));
    object.write(&cache, 22_000, &Bytes::from(data[22_000..39_000].to_vec()));
    assert_eq!(
        object.whole().unwrap().runs(),
        [(0, 20_000), (22_000, 17_000)]
    );
    let path = cache.files()[0].1.join("whole-40000");
    let mut bytes = fs::read(&path).unwrap();
    // The second run's start, 22,000, becomes 20,976 (bit 10 flipped).
    let second = 56 + 40_000 + 3 * 16 + 16;
    let start = u64::from_le_bytes(bytes[second..second + 8].try_into().unwrap());
    assert_eq!(start, 22_000);
    bytes[second..second + 8].copy_from_slice(&(start ^ 1024).to_le_bytes());
    fs::write(&path, &bytes).unwrap();
    let again = cache.object("http://h/x", "\"e\"", 40_000).unwrap();
    assert!(again.whole().is_none(), "never opened");
    assert!(!path.exists(), "removed as damaged");
    fs::write(&path, &bytes).unwrap();
    let mut buf = vec![0; 2_000];
    let (missing, found) = again.read(vec![20_500..22_500], 20_500, &mut buf);
    assert_eq!(missing, vec![20_500..22_500]);
    assert!(found.is_empty());
    // A flipped bit in the header's run count or block size: the same.
    for at in [24, 32] {
        let mut bytes = fs::read(&path).unwrap();
        bytes[second..second + 8].copy_from_slice(&start.to_le_bytes());
        bytes[at] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(
            Whole::open(path.parent().unwrap(), 40_000).is_none(),
            "{at}"
        );
    }
}

/// Found from outside: the object's directory (or the cache directory)
/// swapped for a symlink after a handle used it was followed by later
/// writes. Both are checked again before every write and read.
#[test]
fn a_directory_swapped_for_a_symlink_after_use_is_not_followed() {
    for swapped in ["object", "root"] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("c");
        let cache = DiskCache::new(&root, 1 << 20).unwrap();
        let object = cache.object("http://h/x", "\"e\"", 100_000).unwrap();
        object.write(&cache, 0, &Bytes::from_static(b"first"));
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let real = if swapped == "object" {
            cache.files()[0].1.clone()
        } else {
            root.clone()
        };
        let moved = dir.path().join("moved");
        fs::rename(&real, &moved).unwrap();
        if swapped == "object" {
            // The moved object directory's files are what the link shows.
            for entry in fs::read_dir(&moved).unwrap() {
                let entry = entry.unwrap();
                fs::copy(entry.path(), elsewhere.join(entry.file_name())).unwrap();
            }
        }
        std::os::unix::fs::symlink(&elsewhere, &real).unwrap();
        object.write(&cache, 100, &Bytes::from_static(b"second"));
        let (missing, _) = object.read(vec![0..5], 0, &mut [0; 5]);
        assert_eq!(
            missing,
            vec![0..5],
            "{swapped}: nothing read through the link"
        );
        let written: Vec<_> = fs::read_dir(&elsewhere)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert!(
            written.len() <= 1 && !written.iter().any(|name| name == "100-6"),
            "{swapped}: {written:?}"
        );
        assert!(cache.object("http://h/y", "\"e\"", 10).is_none() || swapped == "object");
    }
}
