//! A DALI `.idx` over a shard (`taridx import dali`): any text against any
//! shard bytes is read or refused, never a panic; every member it yields
//! has its header and payload inside the shard.
#![no_main]

use binfmt_core::ByteSource;

libfuzzer_sys::fuzz_target!(|input: (String, Vec<u8>)| {
    let (text, shard) = input;
    let len = shard.len() as u64;
    let source = ByteSource::from_vec(shard, "shard.tar");
    if let Ok(members) = binfmt_taridx::foreign::read_dali_index("shard.idx", &text, &source) {
        for member in members {
            let end = member
                .offset
                .checked_add(512)
                .and_then(|end| end.checked_add(member.size));
            assert!(end.is_some_and(|end| end <= len), "{member:?} past {len}");
        }
    }
});
