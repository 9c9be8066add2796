//! kastore files for conformance and hostile tests: the malformed set the
//! kastore project ships (`test-data/malformed`), made here by the same
//! documented mutations of a valid file (its `make_standard_files.py`),
//! each named after kastore's case, and the valid `all_types_N_elements`
//! layout.

/// A valid store of `num_items` keys `a`, `aa`, ... holding `0..j+1` as
/// uint32, written byte by byte (the bytes `kastore.dump` writes).
pub fn numbered_store(num_items: usize) -> Vec<u8> {
    let arrays: Vec<(Vec<u8>, u8, Vec<u8>)> = (0..num_items)
        .map(|j| {
            let values: Vec<u8> = (0..=j as u32).flat_map(u32::to_le_bytes).collect();
            (vec![b'a'; j + 1], 5, values)
        })
        .collect();
    store(&arrays)
}

/// A store of `(key, type id, little-endian bytes)`, keys sorted, arrays on
/// 8-byte boundaries, as kastore lays them out; the element size comes from
/// the type id.
pub fn store(items: &[(Vec<u8>, u8, Vec<u8>)]) -> Vec<u8> {
    let mut items: Vec<&(Vec<u8>, u8, Vec<u8>)> = items.iter().collect();
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let size = |type_id: u8| match type_id {
        0 | 1 => 1u64,
        2 | 3 => 2,
        4 | 5 | 8 => 4,
        _ => 8,
    };
    let keys_start = 64 + 64 * items.len() as u64;
    let mut offset = keys_start + items.iter().map(|i| i.0.len() as u64).sum::<u64>();
    let mut starts = Vec::new();
    for item in &items {
        offset = offset.next_multiple_of(8);
        starts.push(offset);
        offset += item.2.len() as u64;
    }
    let mut out = b"\x89KAS\r\n\x1a\n".to_vec();
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&[0; 40]);
    let mut key_start = keys_start;
    for (item, start) in items.iter().zip(&starts) {
        out.push(item.1);
        out.extend_from_slice(&[0; 7]);
        out.extend_from_slice(&key_start.to_le_bytes());
        out.extend_from_slice(&(item.0.len() as u64).to_le_bytes());
        out.extend_from_slice(&start.to_le_bytes());
        out.extend_from_slice(&(item.2.len() as u64 / size(item.1)).to_le_bytes());
        out.extend_from_slice(&[0; 24]);
        key_start += item.0.len() as u64;
    }
    for item in &items {
        out.extend_from_slice(&item.0);
    }
    for (item, start) in items.iter().zip(&starts) {
        out.resize(*start as usize, 0);
        out.extend_from_slice(&item.2);
    }
    out
}

/// `bytes` with the u64 at `at` replaced by `value`.
fn set_u64(mut bytes: Vec<u8>, at: usize, value: u64) -> Vec<u8> {
    if let Some(field) = bytes.get_mut(at..at + 8) {
        field.copy_from_slice(&value.to_le_bytes());
    }
    bytes
}

/// The 27 malformed files of kastore's `test-data/malformed`, by name.
pub fn malformed() -> Vec<(String, Vec<u8>)> {
    let mut cases = vec![("empty_file.kas".to_owned(), Vec::new())];
    for bad_type in [11u8, 20] {
        // An empty float64 array under "a", its type replaced.
        let mut bytes = store(&[(b"a".to_vec(), 9, Vec::new())]);
        if let Some(type_id) = bytes.get_mut(64) {
            *type_id = bad_type;
        }
        cases.push((format!("bad_type_{bad_type}.kas"), bytes));
    }
    for num_items in [0usize, 10] {
        for offset in [-1i64, 1, 1024] {
            let bytes = numbered_store(num_items);
            let size = (bytes.len() as i64 + offset) as u64;
            cases.push((
                format!("bad_filesize_{num_items}_{offset}.kas"),
                set_u64(bytes, 16, size),
            ));
        }
    }
    let mut zeroed = numbered_store(0);
    zeroed.iter_mut().take(8).for_each(|byte| *byte = 0);
    cases.push(("bad_magic_number.kas".into(), zeroed));
    for version in [0u16, 100] {
        let mut bytes = numbered_store(0);
        if let Some(field) = bytes.get_mut(8..10) {
            field.copy_from_slice(&version.to_le_bytes());
        }
        cases.push((format!("version_{version}.kas"), bytes));
    }
    let mut truncated = numbered_store(10);
    truncated.truncate(150);
    cases.push(("truncated_file.kas".into(), truncated));
    for (name, field) in [
        ("key_offset_outside_file.kas", 8),
        ("key_len_outside_file.kas", 16),
        ("array_offset_outside_file.kas", 24),
        ("array_len_outside_file.kas", 32),
    ] {
        cases.push((name.into(), set_u64(numbered_store(1), 64 + field, 1 << 32)));
    }
    for offset in [-1i64, 1] {
        cases.push((
            format!("bad_key_start_{offset}.kas"),
            set_u64(numbered_store(1), 64 + 8, (128 + offset) as u64),
        ));
    }
    for offset in [-1i64, 1, -8, 8] {
        cases.push((
            format!("bad_array_start_{offset}.kas"),
            set_u64(numbered_store(1), 64 + 24, (136 + offset) as u64),
        ));
    }
    for size in [100u64, 128, 129, 200] {
        let mut bytes = set_u64(numbered_store(5), 16, size);
        bytes.truncate(size as usize);
        cases.push((format!("truncated_file_correct_size_{size}.kas"), bytes));
    }
    cases
}
