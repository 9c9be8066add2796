//! Everything reading or writing a kastore file can fail with.
//!
//! Each check of the reader has its own variant, so a caller (and a test)
//! can tell exactly which rule a file broke. Items are numbered from 0 in
//! descriptor order.

use crate::format::ItemType;

/// `Result` with [`KastError`].
pub type Result<T, E = KastError> = std::result::Result<T, E>;

/// A kastore failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KastError {
    /// The input has no bytes at all (the C library's `KAS_ERR_EOF`).
    #[error("empty file: a kastore file has at least a 64-byte header")]
    Empty,

    /// The major version is older than 1.
    #[error(
        "unsupported kastore version {major}.{minor}: too old, this reader reads major version 1"
    )]
    VersionTooOld {
        /// The file's major version.
        major: u16,
        /// The file's minor version.
        minor: u16,
    },

    /// The major version is newer than 1.
    #[error(
        "unsupported kastore version {major}.{minor}: too new, this reader reads major version 1"
    )]
    VersionTooNew {
        /// The file's major version.
        major: u16,
        /// The file's minor version.
        minor: u16,
    },

    /// The header's `file_size` is not the size of the file.
    #[error("header file_size is {header} but the file has {actual} bytes")]
    FileSizeMismatch {
        /// The header's value.
        header: u64,
        /// The file's real size.
        actual: u64,
    },

    /// `num_items` descriptors do not fit between the header and the end.
    #[error(
        "num_items {num_items}: {num_items} 64-byte descriptors do not fit in a {file_size}-byte file"
    )]
    TooManyItems {
        /// The header's item count.
        num_items: u32,
        /// The file's size.
        file_size: u64,
    },

    /// A descriptor's type id is not 0..=9.
    #[error("item {item}: unknown type id {type_id} (valid ids are 0..=9)")]
    BadType {
        /// The item, numbered from 0 in descriptor order.
        item: usize,
        /// The type id found.
        type_id: u8,
    },

    /// A descriptor has a zero-length key.
    #[error("item {item}: empty key")]
    EmptyKey {
        /// The item, numbered from 0 in descriptor order.
        item: usize,
    },

    /// A key's range reaches past the end of the file.
    #[error(
        "item {item}: key at offset {start} with length {len} is outside the {file_size}-byte file"
    )]
    KeyOutOfBounds {
        /// The item, numbered from 0 in descriptor order.
        item: usize,
        /// Where it starts.
        start: u64,
        /// Its length.
        len: u64,
        /// The file's size.
        file_size: u64,
    },

    /// An array's range reaches past the end of the file.
    #[error(
        "item {item}: {len} {item_type} elements at offset {start} are outside the {file_size}-byte file"
    )]
    ArrayOutOfBounds {
        /// The item, numbered from 0 in descriptor order.
        item: usize,
        /// Where it starts.
        start: u64,
        /// Its length.
        len: u64,
        /// The element type.
        item_type: ItemType,
        /// The file's size.
        file_size: u64,
    },

    /// A key does not start right after the previous key (or the descriptors).
    #[error("item {item}: key starts at {found}, keys are packed so it must start at {expected}")]
    KeyNotPacked {
        /// The item, numbered from 0 in descriptor order.
        item: usize,
        /// Where it must start.
        expected: u64,
        /// Where it starts.
        found: u64,
    },

    /// An array does not start on an 8-byte boundary.
    #[error("item {item}: array starts at {start}, which is not a multiple of 8")]
    ArrayMisaligned {
        /// The item, numbered from 0 in descriptor order.
        item: usize,
        /// Where it starts.
        start: u64,
    },

    /// An array does not start at the first 8-byte boundary after the previous one.
    #[error(
        "item {item}: array starts at {found}, arrays are packed so it must start at {expected}"
    )]
    ArrayNotPacked {
        /// The item, numbered from 0 in descriptor order.
        item: usize,
        /// Where it must start.
        expected: u64,
        /// Where it starts.
        found: u64,
    },

    /// The last array does not end where the file does.
    #[error("the arrays end at {end} but the file has {file_size} bytes")]
    ArraysEndEarly {
        /// Where the arrays end.
        end: u64,
        /// The file's size.
        file_size: u64,
    },

    /// Keys are not in ascending byte order.
    #[error(
        "item {item}: key {key:?} sorts before the previous key {previous:?}; keys must be sorted"
    )]
    KeysNotSorted {
        /// The item, numbered from 0 in descriptor order.
        item: usize,
        /// The key.
        key: String,
        /// The key before it.
        previous: String,
    },

    /// The same key appears twice in a file.
    #[error("item {item}: key {key:?} appears twice")]
    DuplicateKey {
        /// The item, numbered from 0 in descriptor order.
        item: usize,
        /// The key.
        key: String,
    },

    /// No item has this key.
    #[error("key {key:?} not found")]
    KeyNotFound {
        /// The key.
        key: String,
    },

    /// An array was asked for as a type it does not have.
    #[error("key {key:?} holds {found} values, not {requested}")]
    TypeMismatch {
        /// The key.
        key: String,
        /// The type asked for.
        requested: ItemType,
        /// Where it starts.
        found: ItemType,
    },

    /// Writing: an empty key.
    #[error("cannot store an empty key")]
    EmptyKeyInput,

    /// Writing: a key given twice.
    #[error("key {key:?} given twice")]
    DuplicateKeyInput {
        /// The key.
        key: String,
    },

    /// Writing, with [`Writer::with_path_keys`](crate::Writer::with_path_keys):
    /// a key no extractor would write as a file name (absolute, `..`, `.`
    /// or empty components, NUL, backslash, not UTF-8).
    #[error(
        "key {key:?}: {why}: keys are named like relative paths, as every extractor writes them"
    )]
    KeyNotAPath {
        /// The key.
        key: String,
        /// The rule it breaks.
        why: &'static str,
    },

    /// Writing: reading an array given as a reader failed (an input file
    /// cut short or unreadable while the store was written).
    #[error("key {key:?}: reading its array: {source}")]
    ReadArray {
        /// The key.
        key: String,
        /// What the read failed with.
        source: std::io::Error,
    },

    /// Writing: raw bytes that are not a whole number of elements.
    #[error("key {key:?}: {len} bytes is not a whole number of {item_type} elements")]
    RaggedArray {
        /// The key.
        key: String,
        /// The element type.
        item_type: ItemType,
        /// The number of bytes given.
        len: u64,
    },

    /// Writing: more items than the header's u32 count holds.
    #[error("{count} items do not fit in the header's 32-bit item count")]
    TooManyItemsToWrite {
        /// The number of items.
        count: usize,
    },

    /// Writing: a streamed array delivered a different number of bytes
    /// than announced.
    #[error("key {key:?}: the array's reader gave {found} bytes, {expected} were announced")]
    ShortArray {
        /// The key.
        key: String,
        /// The bytes announced.
        expected: u64,
        /// The bytes the reader gave.
        found: u64,
    },

    /// An `.npy` file that is not a 1-D array of a kastore type.
    #[error("{path}: {why}")]
    Npy {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },

    /// A failure every format shares (bad signature, truncation, I/O on a
    /// named file).
    #[error(transparent)]
    Core(#[from] binfmt_core::Error),
}

/// Shows a key for messages: as text when it is UTF-8, escaped otherwise.
pub(crate) fn show_key(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(text) => text.to_owned(),
        Err(_) => key.escape_ascii().to_string(),
    }
}
