//! A PAR4 file read every way (`tests/exercise.rs`): the typed loads of a
//! `Vec<u64>` and a `HashMap<String, Vec<u8>>`, and the drop-in API's lazy
//! and whole reads of a derived struct, each before verifying (each fails
//! on the others' layouts, which is part of what is fuzzed).
#![no_main]

#[path = "../../tests/exercise.rs"]
mod exercise;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = exercise::read_par4_vec(data.to_vec());
    let _ = exercise::read_par4_map(data.to_vec());
    let _ = exercise::read_par4_derived(data.to_vec());
});
