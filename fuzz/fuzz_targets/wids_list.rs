//! A wids shard list (`taridx import wids`): any bytes are read or refused
//! through the input gate and the JSON checks, never a panic; a list is
//! never resolved to more shards than a TARIDX index can number.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else { return };
    let list = dir.path().join("list.json");
    if std::fs::write(&list, data).is_err() {
        return;
    }
    if let Ok(shards) = binfmt_taridx::foreign::read_wids_shard_list(&list) {
        assert!(shards.len() <= 65_536);
    }
});
