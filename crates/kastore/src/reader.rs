//! Reading: a validated view of a whole kastore file.
//!
//! [`Store::open`] maps the file and checks the header and every descriptor
//! (work proportional to the number of items, not to the size of the
//! arrays); after that, every lookup and array access is a bounds-free slice
//! of the map.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use binfmt_core::ByteSource;
use binfmt_core::layout::{FromBytes, Record};

use crate::element::Element;
use crate::error::{KastError, Result, show_key};
use crate::format::{
    ARRAY_ALIGN, DESCRIPTOR_SIZE, HEADER_SIZE, Header, ItemDescriptor, ItemType, SIGNATURE,
    VERSION_MAJOR, align_up,
};

/// A kastore file whose structure has been checked.
#[derive(Debug)]
pub struct Store<S = ByteSource> {
    source: S,
    num_items: usize,
    version: (u16, u16),
}

impl Store<ByteSource> {
    /// Opens and validates the file at `path`, memory-mapped when possible.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::new(ByteSource::open(path)?)
    }

    /// Reads a whole stream (stdin, a pipe) into memory and validates it.
    pub fn read_from(reader: &mut impl Read, name: impl AsRef<Path>) -> Result<Self> {
        Self::new(ByteSource::read_from(reader, name)?)
    }
}

impl<S: AsRef<[u8]>> Store<S> {
    /// Validates the kastore file held in `source`.
    pub fn new(source: S) -> Result<Self> {
        let (num_items, version) = validate(source.as_ref())?;
        Ok(Self {
            source,
            num_items,
            version,
        })
    }

    /// The number of items (keys).
    pub fn len(&self) -> usize {
        self.num_items
    }

    /// Whether the store has no items.
    pub fn is_empty(&self) -> bool {
        self.num_items == 0
    }

    /// The file format version, `(major, minor)`.
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// The size of the file in bytes.
    pub fn file_size(&self) -> u64 {
        self.bytes().len() as u64
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        self.source.as_ref()
    }

    /// The storage the store reads from.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The item at `index` in key order.
    pub fn item(&self, index: usize) -> Option<Item<'_>> {
        let descriptor = self.descriptors().get(index)?;
        Some(Item::new(self.bytes(), descriptor))
    }

    /// Every item, in key order.
    pub fn items(&self) -> impl ExactSizeIterator<Item = Item<'_>> + '_ {
        let bytes = self.bytes();
        self.descriptors()
            .iter()
            .map(move |descriptor| Item::new(bytes, descriptor))
    }

    /// The item with `key`, found by binary search.
    pub fn find(&self, key: impl AsRef<[u8]>) -> Option<Item<'_>> {
        let key = key.as_ref();
        let bytes = self.bytes();
        let descriptors = self.descriptors();
        let index = descriptors
            .binary_search_by(|descriptor| key_of(bytes, descriptor).cmp(key))
            .ok()?;
        descriptors
            .get(index)
            .map(|descriptor| Item::new(bytes, descriptor))
    }

    /// The item with `key`, or [`KastError::KeyNotFound`].
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Item<'_>> {
        let key = key.as_ref();
        self.find(key)
            .ok_or_else(|| KastError::KeyNotFound { key: show_key(key) })
    }

    /// The values under `key` as `T`: borrowed from the file when the host
    /// is little-endian and the array is aligned for `T`, copied otherwise.
    pub fn array<T: Element>(&self, key: impl AsRef<[u8]>) -> Result<Cow<'_, [T]>> {
        self.get(key)?.values()
    }

    fn descriptors(&self) -> &[ItemDescriptor] {
        // `validate` proved these descriptors lie inside the file.
        ItemDescriptor::slice_at(self.bytes(), HEADER_SIZE as u64, self.num_items as u64)
            .unwrap_or_default()
    }
}

/// One key and its array, borrowed from a [`Store`].
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    key: &'a [u8],
    item_type: ItemType,
    len: u64,
    data: &'a [u8],
}

impl<'a> Item<'a> {
    /// Builds the view of a descriptor that `validate` accepted.
    fn new(bytes: &'a [u8], descriptor: &ItemDescriptor) -> Self {
        let item_type = ItemType::from_id(descriptor.item_type).unwrap_or(ItemType::Uint8);
        let len = descriptor.array_len.get();
        let start = descriptor.array_start.get();
        let data = range(bytes, start, len.saturating_mul(item_type.size()));
        Self {
            key: key_of(bytes, descriptor),
            item_type,
            len,
            data,
        }
    }

    /// The key's bytes.
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// The key as text, when it is UTF-8 (kastore's Python package writes UTF-8).
    pub fn key_str(&self) -> Option<&'a str> {
        std::str::from_utf8(self.key).ok()
    }

    /// The element type.
    pub fn item_type(&self) -> ItemType {
        self.item_type
    }

    /// The number of elements.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The array's bytes as stored: little-endian elements.
    pub fn le_bytes(&self) -> &'a [u8] {
        self.data
    }

    /// The values as `T`, which must be the array's type: borrowed when the
    /// host is little-endian and the bytes are aligned for `T`, copied
    /// (and byte-swapped where needed) otherwise.
    pub fn values<T: Element>(&self) -> Result<Cow<'a, [T]>> {
        if T::TYPE != self.item_type {
            return Err(KastError::TypeMismatch {
                key: show_key(self.key),
                requested: T::TYPE,
                found: self.item_type,
            });
        }
        if cfg!(target_endian = "little")
            && let Ok(values) = <[T]>::ref_from_bytes(self.data)
        {
            return Ok(Cow::Borrowed(values));
        }
        Ok(Cow::Owned(
            self.data
                .chunks_exact(size_of::<T>())
                .filter_map(|chunk| T::read_from_bytes(chunk).ok())
                .map(T::swap_le)
                .collect(),
        ))
    }
}

fn key_of<'a>(bytes: &'a [u8], descriptor: &ItemDescriptor) -> &'a [u8] {
    range(bytes, descriptor.key_start.get(), descriptor.key_len.get())
}

/// A range that validation has already proved lies inside `bytes`.
fn range(bytes: &[u8], start: u64, len: u64) -> &[u8] {
    binfmt_core::range::slice_at(bytes, start, len, "validated range").unwrap_or_default()
}

/// Checks everything the kastore C library checks, plus the file size and
/// the key order, and returns the item count and version.
fn validate(bytes: &[u8]) -> Result<(usize, (u16, u16))> {
    let actual = bytes.len() as u64;
    if bytes.is_empty() {
        return Err(KastError::Empty);
    }
    let header =
        Header::ref_at(bytes, 0).map_err(|_| KastError::TruncatedHeader { len: actual })?;
    if header.signature != SIGNATURE {
        return Err(KastError::BadSignature {
            found: header.signature,
        });
    }
    let (major, minor) = (header.version_major.get(), header.version_minor.get());
    if major < VERSION_MAJOR {
        return Err(KastError::VersionTooOld { major, minor });
    }
    if major > VERSION_MAJOR {
        return Err(KastError::VersionTooNew { major, minor });
    }
    let file_size = header.file_size.get();
    if file_size != actual {
        return Err(KastError::FileSizeMismatch {
            header: file_size,
            actual,
        });
    }
    let num_items = header.num_items.get();
    let descriptors = ItemDescriptor::slice_at(bytes, HEADER_SIZE as u64, u64::from(num_items))
        .map_err(|_| KastError::TooManyItems {
            num_items,
            file_size,
        })?;

    for (item, descriptor) in descriptors.iter().enumerate() {
        check_descriptor(item, descriptor, file_size)?;
    }

    let mut offset = (HEADER_SIZE + descriptors.len() * DESCRIPTOR_SIZE) as u64;
    for (item, descriptor) in descriptors.iter().enumerate() {
        let found = descriptor.key_start.get();
        if found != offset {
            return Err(KastError::KeyNotPacked {
                item,
                expected: offset,
                found,
            });
        }
        // The key lies inside the file, so this stays at most `file_size`.
        offset += descriptor.key_len.get();
    }
    for (item, descriptor) in descriptors.iter().enumerate() {
        let start = descriptor.array_start.get();
        if start % ARRAY_ALIGN != 0 {
            return Err(KastError::ArrayMisaligned { item, start });
        }
        let expected = align_up(offset).unwrap_or(u64::MAX);
        if start != expected {
            return Err(KastError::ArrayNotPacked {
                item,
                expected,
                found: start,
            });
        }
        let item_type = ItemType::from_id(descriptor.item_type).unwrap_or(ItemType::Uint8);
        // The array lies inside the file, so neither step can overflow.
        offset = start + descriptor.array_len.get() * item_type.size();
    }
    if offset != file_size {
        return Err(KastError::ArraysEndEarly {
            end: offset,
            file_size,
        });
    }

    for (item, pair) in descriptors.windows(2).enumerate() {
        let [previous, current] = pair else { continue };
        let (previous, current) = (key_of(bytes, previous), key_of(bytes, current));
        match previous.cmp(current) {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal => {
                return Err(KastError::DuplicateKey {
                    item: item + 1,
                    key: show_key(current),
                });
            }
            std::cmp::Ordering::Greater => {
                return Err(KastError::KeysNotSorted {
                    item: item + 1,
                    key: show_key(current),
                    previous: show_key(previous),
                });
            }
        }
    }
    Ok((descriptors.len(), (major, minor)))
}

/// The per-descriptor checks, written with subtraction and division so that
/// hostile 64-bit values cannot overflow them.
fn check_descriptor(item: usize, descriptor: &ItemDescriptor, file_size: u64) -> Result<()> {
    let type_id = descriptor.item_type;
    let item_type = ItemType::from_id(type_id).ok_or(KastError::BadType { item, type_id })?;
    let (key_start, key_len) = (descriptor.key_start.get(), descriptor.key_len.get());
    if key_len == 0 {
        return Err(KastError::EmptyKey { item });
    }
    if key_start > file_size || key_len > file_size - key_start {
        return Err(KastError::KeyOutOfBounds {
            item,
            start: key_start,
            len: key_len,
            file_size,
        });
    }
    let (array_start, array_len) = (descriptor.array_start.get(), descriptor.array_len.get());
    if array_start > file_size || array_len > (file_size - array_start) / item_type.size() {
        return Err(KastError::ArrayOutOfBounds {
            item,
            start: array_start,
            len: array_len,
            item_type,
            file_size,
        });
    }
    Ok(())
}
