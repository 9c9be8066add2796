//! Reading: a validated view of a kastore file through any
//! [`Source`].
//!
//! [`Store::open`] maps the file; [`Store::new`] takes any source. Opening
//! reads the header, then the descriptors and the keys (two more reads;
//! borrowed in place when the source is in memory) and checks every
//! descriptor: work proportional to the number of items, never to the size
//! of the arrays. Arrays are read when asked for: borrowed from a map,
//! copied from anything else, or streamed with [`Item::reader`].
//!
//! A stream (a pipe, stdin, a socket) can hold several stores back to
//! back, as the Python package reads and writes them: [`Store::read_one`]
//! reads exactly one store and leaves the stream right after it, checking
//! the signature before it reads anything else and growing its buffer only
//! with the bytes the stream actually delivers.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use binfmt_core::layout::{FromBytes, IntoBytes, Record};
use binfmt_core::{ByteSource, RangeReader, Source, SourceExt};

use crate::element::Element;
use crate::error::{KastError, Result, show_key};
use crate::format::{
    ARRAY_ALIGN, DESCRIPTOR_SIZE, HEADER_SIZE, Header, ItemDescriptor, ItemType, SIGNATURE,
    VERSION_MAJOR, align_up,
};

/// A kastore file whose structure has been checked.
///
/// # Examples
///
/// ```
/// use binfmt_kastore::{Store, Writer};
///
/// let mut writer = Writer::new();
/// writer.insert("nodes/time", &[0.0f64, 1.5][..])?;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("tables.kas");
/// writer.write_file(&path)?;
///
/// let store = Store::open(&path)?;                        // header, descriptors, keys
/// let times = store.array::<f64>("nodes/time")?;          // borrowed from the map
/// assert_eq!(&*times, &[0.0, 1.5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Store<S = ByteSource> {
    source: S,
    num_items: usize,
    version: (u16, u16),
    /// Descriptors and keys (file bytes 64 .. keys end), when the source is
    /// not in memory.
    meta: Option<Vec<u8>>,
}

impl Store<ByteSource> {
    /// Opens and validates the file at `path`, memory-mapped: arrays are
    /// borrowed in place. The caveat of every map: another process
    /// truncating the file while the store (or an array borrowed from it)
    /// is in use can end this process with `SIGBUS`. Where that matters,
    /// read by offset instead: `Store::new(binfmt_core::FileSource::open(path)?)`,
    /// whose reads of a file cut short are errors (spec/limits.md).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::new(ByteSource::open(path)?)
    }
}

impl Store<Vec<u8>> {
    /// Reads one store from a stream and validates it, leaving the stream
    /// right after the store; `Ok(None)` when the stream ends before its
    /// first byte. The signature and version are checked before anything
    /// past the header is read, and memory grows only with bytes delivered.
    pub fn read_one(reader: &mut impl Read, name: impl AsRef<Path>) -> Result<Option<Self>> {
        let name = name.as_ref();
        let mut header = Vec::with_capacity(HEADER_SIZE);
        reader
            .by_ref()
            .take(HEADER_SIZE as u64)
            .read_to_end(&mut header)
            .map_err(|error| binfmt_core::Error::io(name, error))?;
        if header.is_empty() {
            return Ok(None);
        }
        let file_size = check_header(&header, None)?.file_size;
        let mut bytes = header;
        reader
            .by_ref()
            .take(file_size - HEADER_SIZE as u64)
            .read_to_end(&mut bytes)
            .map_err(|error| binfmt_core::Error::io(name, error))?;
        if (bytes.len() as u64) < file_size {
            return Err(binfmt_core::Error::Truncated {
                what: "kastore store in a stream".into(),
                offset: bytes.len() as u64,
                needed: file_size,
                available: bytes.len() as u64,
            }
            .into());
        }
        Self::new(bytes).map(Some)
    }

    /// Reads one store from a stream that must hold exactly one (stdin
    /// given as a file).
    pub fn read_from(reader: &mut impl Read, name: impl AsRef<Path>) -> Result<Self> {
        Self::read_one(reader, name)?.ok_or(KastError::Empty)
    }
}

/// What the 64-byte header says, checked in the C library's order.
struct HeaderFields {
    num_items: u32,
    file_size: u64,
    version: (u16, u16),
}

/// Checks the header; against the source's size when `actual` is given.
fn check_header(bytes: &[u8], actual: Option<u64>) -> Result<HeaderFields> {
    if bytes.is_empty() {
        return Err(KastError::Empty);
    }
    let header = Header::ref_at(bytes, 0).map_err(|_| binfmt_core::Error::Truncated {
        what: "kastore header".into(),
        offset: 0,
        needed: HEADER_SIZE as u64,
        available: bytes.len() as u64,
    })?;
    if header.signature != SIGNATURE {
        return Err(binfmt_core::Error::bad_magic(
            "kastore signature",
            0,
            &SIGNATURE,
            &header.signature,
        )
        .into());
    }
    let (major, minor) = (header.version_major.get(), header.version_minor.get());
    if major < VERSION_MAJOR {
        return Err(KastError::VersionTooOld { major, minor });
    }
    if major > VERSION_MAJOR {
        return Err(KastError::VersionTooNew { major, minor });
    }
    let file_size = header.file_size.get();
    match actual {
        Some(actual) if file_size != actual => {
            return Err(KastError::FileSizeMismatch {
                header: file_size,
                actual,
            });
        }
        None if file_size < HEADER_SIZE as u64 => {
            return Err(KastError::FileSizeMismatch {
                header: file_size,
                actual: HEADER_SIZE as u64,
            });
        }
        _ => {}
    }
    Ok(HeaderFields {
        num_items: header.num_items.get(),
        file_size,
        version: (major, minor),
    })
}

impl<S: Source> Store<S> {
    /// Validates the kastore file held in `source`.
    pub fn new(source: S) -> Result<Self> {
        let actual = source.len();
        if actual == 0 {
            return Err(KastError::Empty);
        }
        let head = source.bytes_at(0, actual.min(HEADER_SIZE as u64), "kastore header")?;
        let HeaderFields {
            num_items,
            file_size,
            version,
        } = check_header(&head, Some(actual))?;
        drop(head);
        let descriptors_len = u64::from(num_items) * DESCRIPTOR_SIZE as u64;
        if descriptors_len > file_size - HEADER_SIZE as u64 {
            return Err(KastError::TooManyItems {
                num_items,
                file_size,
            });
        }
        let descriptors_end = HEADER_SIZE as u64 + descriptors_len;
        let in_memory = source.in_memory().is_some();
        // Announced, so that a remote source fetches the descriptors and
        // reads ahead no further (the keys' length is known only from them).
        source.will_read(std::slice::from_ref(&(HEADER_SIZE as u64..descriptors_end)));
        let descriptor_bytes =
            source.bytes_at(HEADER_SIZE as u64, descriptors_len, "descriptors")?;
        let descriptors = ItemDescriptor::slice_at(&descriptor_bytes, 0, u64::from(num_items))?;
        for (item, descriptor) in descriptors.iter().enumerate() {
            check_descriptor(item, descriptor, file_size)?;
        }
        // Keys must follow the descriptors back to back (checked below), so
        // they are one range. Keys that add up to more than the file holds
        // cannot all be packed: `check_layout` reports the first that is not.
        let keys_len = descriptors
            .iter()
            .fold(0u64, |total, d| total.saturating_add(d.key_len.get()))
            .min(file_size - descriptors_end);
        let meta = if in_memory {
            None
        } else {
            let mut meta = descriptor_bytes.into_owned();
            let keys = descriptors_end..descriptors_end.saturating_add(keys_len);
            source.will_read(std::slice::from_ref(&keys));
            meta.extend_from_slice(&source.bytes_at(descriptors_end, keys_len, "keys")?);
            Some(meta)
        };
        let store = Self {
            source,
            num_items: num_items as usize,
            version,
            meta,
        };
        store.check_layout(file_size)?;
        Ok(store)
    }

    /// Descriptors and keys: `(bytes, file offset of bytes[0])`.
    fn meta(&self) -> (&[u8], u64) {
        match (&self.meta, self.source.in_memory()) {
            (Some(meta), _) => (meta, HEADER_SIZE as u64),
            (None, Some(bytes)) => (bytes, 0),
            (None, None) => (&[], 0),
        }
    }

    fn descriptors(&self) -> &[ItemDescriptor] {
        let (bytes, base) = self.meta();
        // `new` proved these descriptors lie inside the file.
        ItemDescriptor::slice_at(bytes, HEADER_SIZE as u64 - base, self.num_items as u64)
            .unwrap_or_default()
    }

    fn key_of(&self, descriptor: &ItemDescriptor) -> &[u8] {
        let (bytes, base) = self.meta();
        let start = descriptor.key_start.get().saturating_sub(base);
        binfmt_core::range::slice_at(bytes, start, descriptor.key_len.get(), "key")
            .unwrap_or_default()
    }

    /// The checks of the C library that relate items to each other, plus
    /// the key order: keys packed after the descriptors, arrays packed on
    /// 8-byte boundaries after the keys and ending at the end of the file,
    /// keys sorted and unique.
    fn check_layout(&self, file_size: u64) -> Result<()> {
        let descriptors = self.descriptors();
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
            // The keys add up to at most the file's size (checked in `new`).
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
            let (previous, current) = (self.key_of(previous), self.key_of(current));
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
        Ok(())
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
        self.source.len()
    }

    /// The storage the store reads from.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The storage back.
    pub fn into_source(self) -> S {
        self.source
    }

    /// The item at `index` in key order.
    pub fn item(&self, index: usize) -> Option<Item<'_>> {
        let descriptor = self.descriptors().get(index)?;
        Some(self.item_of(descriptor))
    }

    fn item_of<'a>(&'a self, descriptor: &ItemDescriptor) -> Item<'a> {
        Item {
            source: &self.source,
            key: self.key_of(descriptor),
            item_type: ItemType::from_id(descriptor.item_type).unwrap_or(ItemType::Uint8),
            len: descriptor.array_len.get(),
            start: descriptor.array_start.get(),
        }
    }

    /// Every item, in key order.
    pub fn items(&self) -> impl ExactSizeIterator<Item = Item<'_>> + '_ {
        self.descriptors()
            .iter()
            .map(move |descriptor| self.item_of(descriptor))
    }

    /// The item with `key`, found by binary search.
    pub fn find(&self, key: impl AsRef<[u8]>) -> Option<Item<'_>> {
        let key = key.as_ref();
        let descriptors = self.descriptors();
        let index = descriptors
            .binary_search_by(|descriptor| self.key_of(descriptor).cmp(key))
            .ok()?;
        descriptors
            .get(index)
            .map(|descriptor| self.item_of(descriptor))
    }

    /// The item with `key`, or [`KastError::KeyNotFound`].
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Item<'_>> {
        let key = key.as_ref();
        self.find(key)
            .ok_or_else(|| KastError::KeyNotFound { key: show_key(key) })
    }

    /// The values under `key` as `T`: borrowed from the file when it is in
    /// memory (a map), the host is little-endian and the array is aligned
    /// for `T`; read or copied otherwise.
    pub fn array<T: Element>(&self, key: impl AsRef<[u8]>) -> Result<Cow<'_, [T]>> {
        self.get(key)?.values()
    }
}

/// One key and its array, in a [`Store`].
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    source: &'a dyn Source,
    key: &'a [u8],
    item_type: ItemType,
    len: u64,
    start: u64,
}

impl<'a> Item<'a> {
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

    /// The array's size in bytes.
    pub fn byte_len(&self) -> u64 {
        // Validation proved the array lies inside the file.
        self.len * self.item_type.size()
    }

    /// Where the array starts in the file.
    pub fn offset(&self) -> u64 {
        self.start
    }

    /// The array's bytes as stored (little-endian elements): borrowed when
    /// the file is in memory, read otherwise.
    pub fn le_bytes(&self) -> Result<Cow<'a, [u8]>> {
        self.announce();
        Ok(self.source.bytes_at(self.start, self.byte_len(), "array")?)
    }

    /// Tells the source the array is read next: a remote one fetches it
    /// and reads ahead no further than its end.
    fn announce(&self) {
        if self.source.in_memory().is_none() && !self.is_empty() {
            let end = self.start.saturating_add(self.byte_len());
            self.source
                .will_read(std::slice::from_ref(&(self.start..end)));
        }
    }

    /// The array's bytes as `std::io::Read`, in the caller's buffer: memory
    /// does not grow with the array.
    pub fn reader(&self) -> Result<RangeReader<'a, dyn Source + 'a>> {
        self.announce();
        Ok(self.source.reader(self.start, self.byte_len(), "array")?)
    }

    /// The values as `T`, which must be the array's type, at most `piece`
    /// at a time, read through [`Item::reader`]: memory holds one piece
    /// whatever the array's size, and nothing is borrowed from a map, so a
    /// file read by offset ([`binfmt_core::FileSource`]) that is cut short
    /// underneath gives an error, never `SIGBUS`.
    pub fn pieces<T: Element>(&self, piece: usize) -> Result<Pieces<'a, T>> {
        self.check_type::<T>()?;
        Ok(Pieces {
            reader: self.reader()?,
            name: self.source.name(),
            piece: piece.max(1),
            values: std::marker::PhantomData,
        })
    }

    fn check_type<T: Element>(&self) -> Result<()> {
        if T::TYPE == self.item_type {
            return Ok(());
        }
        Err(KastError::TypeMismatch {
            key: show_key(self.key),
            requested: T::TYPE,
            found: self.item_type,
        })
    }

    /// The values as `T`, which must be the array's type: borrowed when the
    /// bytes are in memory, the host is little-endian and they are aligned
    /// for `T`; copied (and byte-swapped where needed) otherwise.
    pub fn values<T: Element>(&self) -> Result<Cow<'a, [T]>> {
        self.check_type::<T>()?;
        let bytes = self.le_bytes()?;
        if cfg!(target_endian = "little")
            && let Cow::Borrowed(bytes) = bytes
            && let Ok(values) = <[T]>::ref_from_bytes(bytes)
        {
            return Ok(Cow::Borrowed(values));
        }
        Ok(Cow::Owned(
            bytes
                .chunks_exact(size_of::<T>())
                .filter_map(|chunk| T::read_from_bytes(chunk).ok())
                .map(T::swap_le)
                .collect(),
        ))
    }
}

/// An array's values a piece at a time ([`Item::pieces`]).
#[derive(Debug)]
pub struct Pieces<'a, T> {
    reader: RangeReader<'a, dyn Source + 'a>,
    name: &'a Path,
    piece: usize,
    values: std::marker::PhantomData<T>,
}

impl<T: Element> Iterator for Pieces<'_, T> {
    type Item = Result<Vec<T>>;

    fn next(&mut self) -> Option<Self::Item> {
        let left = self.reader.remaining() / size_of::<T>() as u64;
        let count = usize::try_from(left).unwrap_or(usize::MAX).min(self.piece);
        if count == 0 {
            return None;
        }
        let mut values = vec![T::new_zeroed(); count];
        if let Err(error) = self.reader.read_exact(values.as_mut_slice().as_mut_bytes()) {
            // Nothing more after a failed read.
            self.piece = 0;
            return Some(Err(binfmt_core::Error::io(self.name, error).into()));
        }
        values.iter_mut().for_each(|value| *value = value.swap_le());
        Some(Ok(values))
    }
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
