//! Save a struct whose large field is a chunk of its own, open the file
//! and get one item lazily: the header, the root chunk and one shard are
//! read, nothing else.
//!
//! Run with `cargo run -p binfmt-parcode --example lazy_get`.

use binfmt_parcode::{Parcode, ParcodeObject};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize, ParcodeObject)]
struct Series {
    name: String,
    #[parcode(chunkable)] // a chunk of its own, loaded on demand
    values: Vec<u64>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let path = scratch.path().join("series.par4");
    let series = Series {
        name: "squares".to_owned(),
        values: (0..1_000_000u64).map(|i| i * i).collect(),
    };
    Parcode::save(&path, &series)?; // atomic; the same bytes on any core count
    println!("saved {} bytes", std::fs::metadata(&path)?.len());

    let file = Parcode::open(&path)?; // header + root trailer only
    let lazy = file.root::<Series>()?; // plain fields read, the chunkable one promised
    assert_eq!(lazy.name, "squares");
    assert_eq!(lazy.values.len(), 1_000_000); // the container, no shard
    let one = lazy.values.get(765_432)?; // decodes one shard
    assert_eq!(one, 765_432 * 765_432);
    println!("{}[765432] = {one}", lazy.name);

    let whole: Series = Parcode::load(&path)?; // everything, in parallel
    assert_eq!(whole, series);
    Ok(())
}
