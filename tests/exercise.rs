//! Reading everything a reader can read from a file's bytes: shared by the
//! hostile-input sweeps (`tests/tests/hostile.rs`) and the fuzz targets
//! (`fuzz/`), which include this file as a module. Each function returns
//! `Err` when anything was rejected. None may panic, except where two reading
//! paths that both accepted a file disagree about its contents: that is a
//! bug (a silent wrong answer), and the assertion makes it a finding.

// Not every includer uses every function.
#![allow(dead_code)]

/// ARCX, either dialect: open, read every file (blocks checked by CRC32,
/// files by SHA-256), verify.
pub fn read_arcx(bytes: Vec<u8>) -> Result<(), String> {
    let archive = binfmt_arcx::Archive::new(bytes).map_err(|e| e.to_string())?;
    let paths: Vec<String> = archive
        .manifest()
        .files
        .iter()
        .map(|file| file.path.clone())
        .collect();
    for path in paths {
        archive.read(&path).map_err(|e| e.to_string())?;
    }
    archive.verify().map_err(|e| e.to_string())
}

/// KAST: open (every descriptor checked), then every array's bytes and
/// its typed values.
pub fn read_kast(bytes: Vec<u8>) -> Result<(), String> {
    let store = binfmt_kastore::Store::new(bytes).map_err(|e| e.to_string())?;
    for item in store.items() {
        let sum: u64 = item.le_bytes().iter().map(|&b| u64::from(b)).sum();
        std::hint::black_box(sum);
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
            binfmt_kastore::ItemType::Float64 => item.values::<f64>().map(|v| v.len()),
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

/// A TARIDX index: open (header and tables checked), verify every row,
/// against shards of `shard_lens` bytes when given.
pub fn read_taridx(bytes: Vec<u8>, shard_lens: Option<&[u64]>) -> Result<(), String> {
    let index = binfmt_taridx::Index::new(bytes).map_err(|e| e.to_string())?;
    index.verify(shard_lens).map_err(|e| e.to_string())?;
    std::hint::black_box(index.extensions().len() + index.crash_stems().len());
    Ok(())
}

/// A tar shard: every header, as the indexer reads it.
pub fn read_tar(bytes: Vec<u8>) -> Result<(), String> {
    binfmt_taridx::tar::scan(&bytes)
        .map(|members| {
            std::hint::black_box(members.len());
        })
        .map_err(|(offset, problem)| format!("{problem} at {offset}"))
}
