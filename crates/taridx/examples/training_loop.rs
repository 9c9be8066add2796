//! A TARIDX training loop: write a fold of WebDataset-style samples into
//! tar shards (the index written in the same pass), then read it the way a
//! data loader does, in a shuffled order per epoch, each member checked
//! against its tar header before its bytes are returned.
//!
//! Run with `cargo run -p binfmt-taridx --example training_loop`.

use binfmt_taridx::{Dataset, SampleWriter, SampleWriterOptions};

/// A fixed shuffle (xorshift), so every run sees the same order.
fn shuffled(count: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..count).collect();
    let mut state = seed.max(1);
    for i in (1..order.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = usize::try_from(state % (i as u64 + 1)).unwrap_or(0);
        order.swap(i, j);
    }
    order
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let options = SampleWriterOptions::new().max_samples(100);
    let mut writer = SampleWriter::create(scratch.path(), "train", options)?;
    for i in 0..250u32 {
        let image = vec![u8::try_from(i % 251)?; 64 + i as usize];
        let label = (i % 10).to_string();
        writer.write(
            &format!("{i:06}"),
            &[("jpg", &image[..]), ("cls", label.as_bytes())],
        )?;
    }
    let fold = writer.finish()?;
    println!(
        "wrote {} samples into {} shards",
        fold.samples,
        fold.shards.len()
    );

    let mut dataset = Dataset::open_fold(scratch.path(), "train")?; // reads the index only
    dataset.filter_extensions(&["jpg", "cls"])?; // samples that have both
    let samples = dataset.num_samples()?;
    for epoch in 0..2u64 {
        let (mut bytes, mut label_sum) = (0usize, 0u64);
        for i in shuffled(samples, epoch + 1) {
            let rows = dataset.sample(i)?.ok_or("a sample vanished")?;
            for row in rows {
                let member = dataset.read(row)?; // header checked against the row first
                if dataset.extension(row) == Some("cls") {
                    label_sum += std::str::from_utf8(&member)?.parse::<u64>()?;
                }
                bytes += member.len();
            }
        }
        println!("epoch {epoch}: {samples} samples, {bytes} bytes, label sum {label_sum}");
        assert_eq!(label_sum, (0..250u64).map(|i| i % 10).sum::<u64>());
    }
    Ok(())
}
