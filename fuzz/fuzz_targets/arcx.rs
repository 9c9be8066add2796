//! An ARCX archive of either dialect: open, read every file, verify; then
//! the one-path lookup of each file against the full open.
#![no_main]

#[path = "../../tests/exercise.rs"]
mod exercise;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = exercise::read_arcx(data.to_vec());
    exercise::compare_arcx_lookup(data, &[]);
});
