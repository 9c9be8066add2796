//! A tar shard, read header by header as the indexer reads it, then indexed
//! by both key rules and every member read through the index before the
//! index is verified against the shard.
#![no_main]

#[path = "../../tests/exercise.rs"]
mod exercise;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = exercise::read_tar(data.to_vec());
});
