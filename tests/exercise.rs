//! Reading everything a reader can read from a file's bytes: shared by the
//! hostile-input sweeps (`tests/tests/hostile.rs`) and the fuzz targets
//! (`fuzz/`), which include this file as a module. Each function returns
//! `Err` when anything was rejected. None may panic, except where two reading
//! paths that both accepted a file disagree about its contents: that is a
//! bug (a silent wrong answer), and the assertion makes it a finding.

// Not every includer uses every function.
#![allow(dead_code)]

/// ARCX, either dialect: open, read every file (blocks checked by CRC32,
/// files by SHA-256) through the streaming reader, then verify.
pub fn read_arcx(bytes: Vec<u8>) -> Result<(), String> {
    let archive = binfmt_arcx::Archive::new(bytes).map_err(|e| e.to_string())?;
    for file in archive.files() {
        let mut reader = archive.reader_for(file);
        std::io::copy(&mut reader, &mut std::io::sink()).map_err(|e| e.to_string())?;
    }
    std::hint::black_box(archive.total_size().map_err(|e| e.to_string())?);
    archive.verify().map(|_| ()).map_err(|e| e.to_string())
}

/// KAST: open (every descriptor checked), then every array's bytes and
/// its typed values, in memory and through a positional source.
pub fn read_kast(bytes: Vec<u8>) -> Result<(), String> {
    let cursor = binfmt_core::SeekSource::new(std::io::Cursor::new(bytes.clone()), "fuzz")
        .map_err(|e| e.to_string())?;
    let by_offset = binfmt_kastore::Store::new(cursor).map_err(|e| e.to_string())?;
    let store = binfmt_kastore::Store::new(bytes).map_err(|e| e.to_string())?;
    for (item, positional) in store.items().zip(by_offset.items()) {
        let bytes = item.le_bytes().map_err(|e| e.to_string())?;
        let sum: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
        std::hint::black_box(sum);
        std::io::copy(
            &mut positional.reader().map_err(|e| e.to_string())?,
            &mut std::io::sink(),
        )
        .map_err(|e| e.to_string())?;
        let typed = match item.item_type() {
            binfmt_kastore::ItemType::Int8 => item.values::<i8>().map(|v| v.len()),
            binfmt_kastore::ItemType::Uint8 => item.values::<u8>().map(|v| v.len()),
            binfmt_kastore::ItemType::Int16 => item.values::<i16>().map(|v| v.len()),
            binfmt_kastore::ItemType::Uint16 => item.values::<u16>().map(|v| v.len()),
            binfmt_kastore::ItemType::Int32 => item.values::<i32>().map(|v| v.len()),
            binfmt_kastore::ItemType::Uint32 => item.values::<u32>().map(|v| v.len()),
            binfmt_kastore::ItemType::Int64 => item.values::<i64>().map(|v| v.len()),
            binfmt_kastore::ItemType::Uint64 => item.values::<u64>().map(|v| v.len()),
            binfmt_kastore::ItemType::Float32 => item.values::<f32>().map(|v| v.len()),
            _ => item.values::<f64>().map(|v| v.len()),
        };
        std::hint::black_box(typed.map_err(|e| e.to_string())?);
    }
    Ok(())
}

/// PAR4 holding a `HashMap<String, Vec<u8>>`: open, look one key up
/// (decoded, and streamed), load the whole map, stream every value, then
/// verify every chunk. Reading comes before verifying so that a reading
/// path cannot rely on `verify` having rejected the file.
pub fn read_par4_map(bytes: Vec<u8>) -> Result<(), String> {
    use std::io::Read;
    let file = binfmt_parcode::ParFile::new(bytes).map_err(|e| e.to_string())?;
    let root = file.root().map_err(|e| e.to_string())?;
    let map = binfmt_parcode::LazyMap::<String, Vec<u8>>::new(root).map_err(|e| e.to_string())?;
    map.get("café/0001.txt").map_err(|e| e.to_string())?;
    let loaded = map.load().map_err(|e| e.to_string())?;
    // What a load accepts, a lookup and a stream must agree with: a key
    // that reads back another value (or none) is a silent wrong answer.
    let mut sink = Vec::new();
    for (key, value) in &loaded {
        let got = map.get(key.as_str()).map_err(|e| e.to_string())?;
        assert_eq!(
            got.as_ref(),
            Some(value),
            "get({key:?}) disagrees with load"
        );
        let mut reader = map
            .reader(key.as_str())
            .map_err(|e| e.to_string())?
            .unwrap_or_else(|| panic!("reader({key:?}) finds nothing load found"));
        sink.clear();
        reader.read_to_end(&mut sink).map_err(|e| e.to_string())?;
        assert_eq!(&sink, value, "reader({key:?}) disagrees with load");
    }
    file.verify().map(|_| ()).map_err(|e| e.to_string())
}

/// PAR4 holding a `Vec<u64>`: open, get one item, load them all, iterate,
/// then verify every chunk.
pub fn read_par4_vec(bytes: Vec<u8>) -> Result<(), String> {
    let file = binfmt_parcode::ParFile::new(bytes).map_err(|e| e.to_string())?;
    let root = file.root().map_err(|e| e.to_string())?;
    let items = binfmt_parcode::LazyVec::<u64>::new(root).map_err(|e| e.to_string())?;
    if items.len() > 1500 {
        items.get(1500).map_err(|e| e.to_string())?;
    }
    let loaded = items.load().map_err(|e| e.to_string())?;
    // What a load accepts, item access and iteration must agree with.
    for (index, item) in items.iter().enumerate() {
        let item = item.map_err(|e| e.to_string())?;
        assert_eq!(
            loaded.get(index),
            Some(&item),
            "iter disagrees with load at {index}"
        );
    }
    for index in [0, loaded.len() / 2, loaded.len().saturating_sub(1)] {
        if let Some(expected) = loaded.get(index) {
            let item = items.get(index as u64).map_err(|e| e.to_string())?;
            assert_eq!(&item, expected, "get({index}) disagrees with load");
        }
    }
    file.verify().map(|_| ()).map_err(|e| e.to_string())
}

/// PAR4 holding a derived `Shelf` (`binfmt_tests::par4::shapes`), through
/// the drop-in API: the lazy view (items by index, lazily and whole, the
/// index by key), the whole load, then verify. What the load accepts, the
/// lazy paths must agree with.
pub fn read_par4_derived(bytes: Vec<u8>) -> Result<(), String> {
    use binfmt_tests::par4::shapes::Shelf;
    let file = binfmt_parcode::ParcodeFile::from_bytes(bytes).map_err(|e| e.to_string())?;
    let lazy = file.root::<Shelf>().map_err(|e| e.to_string())?;
    let len = lazy.items.len();
    for index in [0, len / 2, len.saturating_sub(1)] {
        if index < len {
            lazy.items.get(index).map_err(|e| e.to_string())?;
            let view = lazy.items.get_lazy(index).map_err(|e| e.to_string())?;
            view.name.load().map_err(|e| e.to_string())?;
        }
    }
    let mut views = 0;
    for view in lazy.items.iter_lazy().map_err(|e| e.to_string())? {
        view.map_err(|e| e.to_string())?;
        views += 1;
    }
    let key = "k1".to_string();
    lazy.index.get(&key).map_err(|e| e.to_string())?;
    if let Some(view) = lazy.index.get_lazy(&key).map_err(|e| e.to_string())? {
        view.name.load().map_err(|e| e.to_string())?;
    }
    lazy.first.name.load().map_err(|e| e.to_string())?;
    let loaded: Shelf = file.load().map_err(|e| e.to_string())?;
    assert_eq!(views, loaded.items.len(), "iter_lazy disagrees with load");
    for (index, item) in loaded.items.iter().enumerate() {
        let got = lazy.items.get(index).map_err(|e| e.to_string())?;
        assert_eq!(&got, item, "items.get({index}) disagrees with load");
    }
    for (key, item) in &loaded.index {
        let got = lazy.index.get(key).map_err(|e| e.to_string())?;
        assert_eq!(
            got.as_ref(),
            Some(item),
            "index.get({key:?}) disagrees with load"
        );
    }
    file.verify().map(|_| ()).map_err(|e| e.to_string())
}

/// A TARIDX index: open (header and tables checked), then, with shards,
/// read every row's member (each checked against its tar header) and look
/// every crash stem up, and only then verify every row.
pub fn read_taridx(
    bytes: Vec<u8>,
    shards: Option<&binfmt_taridx::ShardBytes>,
) -> Result<(), String> {
    let index = binfmt_taridx::Index::new(bytes).map_err(|e| e.to_string())?;
    std::hint::black_box(index.extensions().len() + index.crash_stems().count());
    let Some(shards) = shards else {
        return index.verify(None).map(|_| ()).map_err(|e| e.to_string());
    };
    let dataset =
        binfmt_taridx::Dataset::new(index, shards.clone(), binfmt_taridx::DatasetOptions::new())
            .map_err(|e| e.to_string())?;
    read_members(&dataset)?;
    dataset.verify().map(|_| ()).map_err(|e| e.to_string())
}

/// Reads every member of a dataset through its row, and finds it again by
/// its name.
fn read_members<S: binfmt_core::Source>(dataset: &binfmt_taridx::Dataset<S>) -> Result<(), String> {
    let crash: Vec<String> = dataset.index().crash_stems().map(str::to_owned).collect();
    for stem in &crash {
        std::hint::black_box(dataset.lookup(stem).len());
    }
    for row in dataset.rows() {
        let member = dataset.member(row).map_err(|e| e.to_string())?;
        let name = member.name().to_owned();
        std::hint::black_box(member.into_vec().map_err(|e| e.to_string())?.len());
        dataset.find(&name).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A tar shard: every header, as the indexer reads it; then indexed (by
/// both key rules), every member read through the index, and verified.
pub fn read_tar(bytes: Vec<u8>) -> Result<(), String> {
    let members = binfmt_taridx::tar::scan(&bytes).map_err(|e| e.to_string())?;
    let shards = binfmt_taridx::ShardBytes::new([bytes]);
    for rule in [
        binfmt_taridx::KeyRule::Glzn,
        binfmt_taridx::KeyRule::WebDataset,
    ] {
        let mut builder = binfmt_taridx::IndexBuilder::new(rule);
        for member in &members {
            builder.add(0, member.clone()).map_err(|e| e.to_string())?;
        }
        read_taridx(
            builder.to_bytes().map_err(|e| e.to_string())?,
            Some(&shards),
        )?;
    }
    Ok(())
}

/// A whole fold packed in one tar (`index.taridx`, then the shards in fid
/// order, as `tests/regressions/taridx_fold/` stores hostile folds): read
/// as [`read_taridx`] reads an index with its shards.
pub fn read_fold(bytes: Vec<u8>) -> Result<(), String> {
    let (index, shards) = unpack_fold(&bytes)?;
    read_taridx(index, Some(&binfmt_taridx::ShardBytes::new(shards)))
}

/// Packs an index and its shards into one tar (the regression format).
pub fn pack_fold(index: &[u8], shards: &[Vec<u8>]) -> Vec<u8> {
    let mut tar = binfmt_taridx::TarWriter::new(Vec::new());
    let _ = tar.append_bytes("index.taridx", index);
    for (fid, shard) in shards.iter().enumerate() {
        let _ = tar.append_bytes(&format!("shard-{fid:04}.tar"), shard);
    }
    tar.finish().unwrap_or_default()
}

/// The index and shards of a packed fold.
pub fn unpack_fold(bytes: &[u8]) -> Result<(Vec<u8>, Vec<Vec<u8>>), String> {
    let members = binfmt_taridx::tar::scan(bytes).map_err(|e| format!("container: {e}"))?;
    let mut parts = members.iter().map(|member| {
        let start = usize::try_from(member.offset + 512).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(member.size).unwrap_or(usize::MAX));
        bytes
            .get(start..end)
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
    });
    let index = parts.next().ok_or("container: no index member")?;
    Ok((index, parts.collect()))
}

/// ARCX: the one-path lookup (`Archive::open_one`) against the full open,
/// for each path the full open lists (the first 32) and each of `paths`.
/// Where the full open accepts the archive, the lookup must find exactly
/// its files and read the same bytes (or fail where the full read fails).
/// Wherever the lookup reads a regular file, the bytes must have the size
/// and the SHA-256 the manifest states. Panics on a disagreement.
pub fn compare_arcx_lookup(bytes: &[u8], paths: &[String]) {
    let full = binfmt_arcx::Archive::new(bytes).ok();
    let mut all: Vec<String> = paths.iter().take(32).cloned().collect();
    if let Some(full) = &full {
        all.extend(full.files().take(32).map(|file| file.path().to_string()));
    }
    for path in &all {
        let one = binfmt_arcx::Archive::open_one(bytes, path, Default::default());
        if let Some(full) = &full {
            let Some(_) = full.find(path) else {
                assert!(
                    one.is_err(),
                    "{path:?}: not in the archive, but open_one found it"
                );
                continue;
            };
            let one = one.unwrap_or_else(|error| {
                panic!("{path:?}: the full open accepts the archive, open_one says: {error}")
            });
            match (full.read(path), one.read()) {
                (Ok(whole), Ok(alone)) => assert!(whole == alone, "{path:?}: different bytes"),
                (Err(_), Err(_)) => {}
                (whole, alone) => panic!(
                    "{path:?}: the full open reads {:?}, open_one {:?}",
                    whole.map(|b| b.len()),
                    alone.map(|b| b.len())
                ),
            }
        }
        if let Ok(one) = binfmt_arcx::Archive::open_one(bytes, path, Default::default())
            && one.file().attributes().kind == binfmt_arcx::FileKind::File
            && let Ok(read) = one.read()
        {
            assert_eq!(read.len() as u64, one.file().size(), "{path:?}: size");
            assert!(
                binfmt_tests::build::arcx::sha256(&read) == *one.file().sha256(),
                "{path:?}: bytes whose SHA-256 is not the file's"
            );
        }
    }
}
