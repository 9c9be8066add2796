//! kastore files built from structure: keys, types and arrays chosen by the
//! fuzzer and laid out as kastore does, then one field of the header or a
//! descriptor changed to a chosen value, then read every way.
#![no_main]

use arbitrary::Arbitrary;

#[path = "../../tests/exercise.rs"]
mod exercise;

#[derive(Debug, Arbitrary)]
struct Item {
    key: Vec<u8>,
    type_id: u8,
    bytes: Vec<u8>,
}

#[derive(Debug, Arbitrary)]
struct Edit {
    /// Which u64 field: 0 file_size, else descriptor field (n - 1) / 4 of
    /// item (n - 1) % 4 (key_start, key_len, array_start, array_len).
    field: u8,
    value: u64,
}

#[derive(Debug, Arbitrary)]
struct Input {
    items: Vec<Item>,
    edits: Vec<Edit>,
    num_items: Option<u32>,
}

libfuzzer_sys::fuzz_target!(|input: Input| {
    let items: Vec<(Vec<u8>, u8, Vec<u8>)> = input
        .items
        .into_iter()
        .take(32)
        .map(|item| (item.key, item.type_id % 12, item.bytes))
        .collect();
    let mut bytes = binfmt_tests::build::kast::store(&items);
    for edit in input.edits.iter().take(4) {
        let at = match edit.field {
            0 => 16,
            n => {
                let n = usize::from(n - 1);
                64 + 64 * (n / 4) + 8 + 8 * (n % 4)
            }
        };
        if let Some(field) = bytes.get_mut(at..at + 8) {
            field.copy_from_slice(&edit.value.to_le_bytes());
        }
    }
    if let (Some(count), Some(field)) = (input.num_items, bytes.get_mut(12..16)) {
        field.copy_from_slice(&count.to_le_bytes());
    }
    let _ = exercise::read_kast(bytes);
});
