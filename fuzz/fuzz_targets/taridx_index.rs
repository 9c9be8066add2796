//! A TARIDX index: open, then read every row's member from the interleaved
//! fixture fold's shards (each checked against its tar header) before
//! verifying; and verify without shards.
#![no_main]

use std::sync::LazyLock;

#[path = "../../tests/exercise.rs"]
mod exercise;

static SHARDS: LazyLock<binfmt_taridx::ShardBytes> = LazyLock::new(|| {
    binfmt_taridx::ShardBytes::new([
        include_bytes!("../../fixtures/generated/taridx/interleaved_0000.tar").to_vec(),
        include_bytes!("../../fixtures/generated/taridx/interleaved_0001.tar").to_vec(),
        include_bytes!("../../fixtures/generated/taridx/interleaved_0002.tar").to_vec(),
    ])
});

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = exercise::read_taridx(data.to_vec(), Some(&SHARDS));
    let _ = exercise::read_taridx(data.to_vec(), None);
});
