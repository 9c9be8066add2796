//! Carry an ARCX archive through every other format and back with the
//! umbrella library: names and bytes unchanged at each step.
//!
//! Run with `cargo run -p binfmt --example convert`.

use binfmt::{ConvertOptions, Format};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let src = scratch.path().join("src");
    std::fs::create_dir_all(src.join("data"))?;
    std::fs::write(src.join("a.txt"), "hello\n")?;
    std::fs::write(src.join("data/zeros.bin"), [0u8; 4096])?;
    let start = scratch.path().join("start.arcx");
    binfmt_arcx::pack_dir(&src, &start, binfmt_arcx::PackOptions::default(), |_| {})?;

    let options = ConvertOptions::default();
    let steps = [
        ("tables.kas", Format::Kast),
        ("map.par4", Format::Par4),
        ("fold.taridx", Format::Taridx),
        ("end.arcx", Format::Arcx),
    ];
    let mut input = start.clone();
    for (name, format) in steps {
        let output = scratch.path().join(name);
        binfmt::convert(&input, &output, format, &options)?;
        let source = binfmt::open(&output)?; // sniffed from its magic bytes
        assert_eq!(source.format(), format);
        let names: Vec<String> = source.list()?.into_iter().map(|entry| entry.name).collect();
        println!("{name}: {names:?}");
        assert_eq!(source.read("a.txt")?, b"hello\n");
        assert_eq!(source.read("data/zeros.bin")?, [0u8; 4096]);
        source.verify()?;
        input = output;
    }
    Ok(())
}
