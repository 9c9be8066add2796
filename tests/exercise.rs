//! Reading everything a reader can read from a file's bytes: shared by the
//! hostile-input sweeps (`tests/tests/hostile.rs`) and the fuzz targets
//! (`fuzz/`), which include this file as a module. Each function returns
//! `Err` when anything was rejected; none may panic.

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

/// PAR4 holding a `HashMap<String, Vec<u8>>`: open, verify every chunk,
/// look one key up, load the whole map.
pub fn read_par4_map(bytes: Vec<u8>) -> Result<(), String> {
    let file = binfmt_parcode::ParFile::new(bytes).map_err(|e| e.to_string())?;
    file.verify().map_err(|e| e.to_string())?;
    let root = file.root().map_err(|e| e.to_string())?;
    let map = binfmt_parcode::LazyMap::<String, Vec<u8>>::new(root).map_err(|e| e.to_string())?;
    map.get("café/0001.txt").map_err(|e| e.to_string())?;
    map.load().map(|_| ()).map_err(|e| e.to_string())
}

/// PAR4 holding a `Vec<u64>`: open, verify every chunk, get one item, load
/// them all.
pub fn read_par4_vec(bytes: Vec<u8>) -> Result<(), String> {
    let file = binfmt_parcode::ParFile::new(bytes).map_err(|e| e.to_string())?;
    file.verify().map_err(|e| e.to_string())?;
    let root = file.root().map_err(|e| e.to_string())?;
    let items = binfmt_parcode::LazyVec::<u64>::new(root).map_err(|e| e.to_string())?;
    items.get(1500).map_err(|e| e.to_string())?;
    items.load().map(|_| ()).map_err(|e| e.to_string())
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
