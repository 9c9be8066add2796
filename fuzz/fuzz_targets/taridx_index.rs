//! A TARIDX index: open, then verify every row, with and without shard sizes.
#![no_main]

#[path = "../../tests/exercise.rs"]
mod exercise;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = exercise::read_taridx(data.to_vec(), None);
    let _ = exercise::read_taridx(data.to_vec(), Some(&[4096, 1 << 20]));
});
