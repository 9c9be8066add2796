//! What `Dataset::read` costs per member beyond reading the payload itself.
//!
//!     cargo run --release -p binfmt-taridx --example read_overhead [MEMBERS]
//!
//! Writes one shard of MEMBERS (default 20,000) members of 4-20 KB in a
//! temporary directory and indexes it, then reads every member in a
//! shuffled order, per round: by `Dataset::read` (shards read by `pread`,
//! each header checked against its row) and by the minimal program for the
//! same bytes, `pread` of each payload at an offset known beforehand into a
//! fresh buffer (the machine's limit). Sides interleaved, the first
//! alternating; prints each side's median per member and the difference,
//! and the first round of `Dataset::read` apart (no gap check remembered
//! yet).

// An example: a failure is a panic with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::os::unix::fs::FileExt;
use std::time::Instant;

use binfmt_taridx::{Dataset, IndexBuilder, KeyRule};
use binfmt_tests::build::taridx::Tar;

fn main() {
    let members: usize = std::env::args()
        .nth(1)
        .map_or(20_000, |n| n.parse().expect("MEMBERS is a number"));
    let dir = tempfile::tempdir().unwrap();
    let mut tar = Tar::new();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..members {
        let size = 4096 + (next() % 16384) as usize;
        tar.file(&format!("s/{i:08}.jpg"), &vec![(i % 251) as u8; size]);
    }
    let shard_bytes = tar.finish();
    let shard = dir.path().join("bench_0000.tar");
    std::fs::write(&shard, &shard_bytes).unwrap();
    let mut builder = IndexBuilder::new(KeyRule::WebDataset);
    for member in binfmt_taridx::tar::scan(&shard_bytes[..]).unwrap() {
        builder.add(0, member).unwrap();
    }
    let index = dir.path().join("bench.taridx");
    std::fs::write(&index, builder.to_bytes().unwrap()).unwrap();

    let mut order: Vec<usize> = (0..members).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    let dataset = Dataset::open(&index, std::slice::from_ref(&shard)).unwrap();
    let rows = dataset.rows();
    let file = std::fs::File::open(&shard).unwrap();
    let limit = || {
        for &i in &order {
            let row = &rows[i];
            let mut bytes = vec![0; row.size.get() as usize];
            file.read_exact_at(&mut bytes, row.payload_offset())
                .unwrap();
            std::hint::black_box(bytes);
        }
    };
    let read = || {
        for &i in &order {
            std::hint::black_box(dataset.read(&rows[i]).unwrap());
        }
    };
    let time = |work: &dyn Fn()| {
        let start = Instant::now();
        work();
        start.elapsed().as_secs_f64() * 1e9 / members as f64
    };
    let cold = time(&read);
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    for round in 0..9 {
        if round % 2 == 0 {
            ours.push(time(&read));
            floor.push(time(&limit));
        } else {
            floor.push(time(&limit));
            ours.push(time(&read));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (ours, floor) = (median(ours), median(floor));
    println!(
        "{members} members of 4-20 KB, one shard read by pread, shuffled order; median of 9 rounds, ns per member"
    );
    println!(
        "| Dataset::read | pread of the payload (limit) | overhead | first round (checks cold) |"
    );
    println!("|---|---|---|---|");
    println!(
        "| {ours:.0} | {floor:.0} | {:.0} | {cold:.0} |",
        ours - floor
    );
}
