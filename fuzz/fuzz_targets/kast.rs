//! A kastore file: open, then every array's bytes and typed values.
#![no_main]

#[path = "../../tests/exercise.rs"]
mod exercise;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = exercise::read_kast(data.to_vec());
});
