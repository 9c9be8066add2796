//! `.npy` headers (`kast pack --npy`): any bytes are parsed or refused,
//! never a panic; an accepted header's element bytes fit in the file, and
//! parsing the same bytes twice gives the same answer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let first = binfmt_kastore::npy::parse(data);
    if let Ok((_, elements)) = &first {
        assert!(elements.len() <= data.len());
    }
    let _ = binfmt_kastore::npy::parse_header(data, data.len() as u64);
    let again = binfmt_kastore::npy::parse(data);
    assert_eq!(first.is_ok(), again.is_ok());
});
