//! A PAR4 file: open, verify every chunk, and the typed loads of a
//! `Vec<u64>` and a `HashMap<String, Vec<u8>>` (each fails on the other's
//! layout, which is part of what is fuzzed).
#![no_main]

#[path = "../../tests/exercise.rs"]
mod exercise;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = exercise::read_par4_vec(data.to_vec());
    let _ = exercise::read_par4_map(data.to_vec());
});
