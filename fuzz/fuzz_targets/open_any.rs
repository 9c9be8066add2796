//! The umbrella: sniff the bytes, then open them as a file of whatever
//! format they claim, list, read every entry and verify.
#![no_main]

use std::io::Write;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = binfmt::sniff_bytes(data, data);
    let Ok(mut file) = tempfile::NamedTempFile::new() else {
        return;
    };
    if file.write_all(data).is_err() {
        return;
    }
    let Ok(source) = binfmt::open(file.path()) else {
        return;
    };
    if let Ok(entries) = source.list() {
        for entry in entries {
            let _ = source.read(&entry.name);
        }
    }
    let _ = source.verify();
});
