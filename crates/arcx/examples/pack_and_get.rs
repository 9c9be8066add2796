//! Pack a directory into an ARCX archive, then get one file back: only the
//! footer, the manifest and that file's blocks are read.
//!
//! Run with `cargo run -p binfmt-arcx --example pack_and_get`.

use binfmt_arcx::{Archive, PackOptions, pack_dir};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let src = scratch.path().join("src");
    std::fs::create_dir_all(src.join("bin"))?;
    std::fs::write(src.join("lib.rs"), "pub fn answer() -> u32 { 42 }\n")?;
    std::fs::write(src.join("bin/main.rs"), "fn main() {}\n")?;
    // Something worth compressing.
    let table: String = (0..10_000).map(|i| format!("{i},{}\n", i * i)).collect();
    std::fs::write(src.join("squares.csv"), &table)?;

    let archive_path = scratch.path().join("src.arcx");
    let summary = pack_dir(&src, &archive_path, PackOptions::default(), |_| {})?;
    println!(
        "packed {} files into {} bytes",
        summary.files,
        std::fs::metadata(&archive_path)?.len()
    );

    // Names are relative to the packed directory: `lib.rs`, not `src/lib.rs`.
    let archive = Archive::open(&archive_path)?;
    let lib = archive.read("lib.rs")?; // SHA-256 checked
    assert_eq!(lib, b"pub fn answer() -> u32 { 42 }\n");
    assert_eq!(archive.read("squares.csv")?, table.as_bytes());
    let verified = archive.verify()?; // every block's CRC32, every file's SHA-256
    println!("lib.rs: {} bytes; verified: {verified:?}", lib.len());
    Ok(())
}
