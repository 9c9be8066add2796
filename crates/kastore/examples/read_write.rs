//! Write a kastore (the container of tskit `.trees` files), read it back
//! without copying an array, then change one array the way kastore's
//! append mode does.
//!
//! Run with `cargo run -p binfmt-kastore --example read_write`.

use std::borrow::Cow;

use binfmt_kastore::{Store, Writer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let path = scratch.path().join("tables.kas");

    let times: Vec<f64> = (0..1000).map(|i| f64::from(i) * 0.5).collect();
    let flags: Vec<u32> = (0..1000).map(|i| i % 2).collect();
    let mut writer = Writer::new();
    writer.insert("nodes/time", &times[..])?;
    writer.insert("nodes/flags", &flags[..])?;
    writer.write_file(&path)?; // the same bytes as Python's kastore.dump

    let store = Store::open(&path)?; // checks every descriptor, reads no array
    let read: Cow<[f64]> = store.array("nodes/time")?; // borrowed from the map
    assert_eq!(&read[..], &times[..]);
    for item in store.items() {
        let key = String::from_utf8_lossy(item.key());
        println!(
            "{key}: {:?} x {} ({} bytes)",
            item.item_type(),
            item.len(),
            item.byte_len()
        );
    }

    // Append mode: start from the store, replace one array, write a copy.
    let doubled: Vec<f64> = times.iter().map(|t| t * 2.0).collect();
    let mut writer = Writer::from_store(&store)?;
    writer.remove("nodes/time");
    writer.insert("nodes/time", &doubled[..])?;
    let copy = scratch.path().join("copy.kas");
    writer.write_file(&copy)?;

    let copy = Store::open(&copy)?;
    assert_eq!(&copy.array::<f64>("nodes/time")?[..], &doubled[..]);
    assert_eq!(&copy.array::<u32>("nodes/flags")?[..], &flags[..]);
    println!("copy.kas: nodes/time doubled, nodes/flags kept");
    Ok(())
}
