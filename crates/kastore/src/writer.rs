//! Writing: the bytes `kastore.dump` writes for the same mapping.
//!
//! Keys are sorted by their bytes, packed right after the descriptors; each
//! array starts at the next multiple of 8 after the previous key or array,
//! with zero bytes in between; nothing follows the last array. The header's
//! reserved bytes and the descriptors' reserved bytes are zero.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::io::{Read, Write};
use std::path::Path;

use binfmt_core::layout::{IntoBytes, U16, U32, U64};
use binfmt_core::{AtomicFile, IoResultExt, Source};

use crate::element::Element;
use crate::error::{KastError, Result, show_key};
use crate::format::{
    DESCRIPTOR_SIZE, HEADER_SIZE, Header, ItemDescriptor, ItemType, SIGNATURE, VERSION_MAJOR,
    VERSION_MINOR, align_up,
};

/// Collects keys and arrays, then writes them as one kastore file.
///
/// Arrays passed by reference are borrowed, not copied, until written;
/// arrays given as readers ([`Writer::insert_reader`]) are streamed into the
/// output when it is written, so a store of any size is written through
/// bounded buffers. [`Writer::from_store`] starts from an existing store
/// (kastore's append mode): add, replace or remove keys, then write.
///
/// ```
/// let mut writer = binfmt_kastore::Writer::new();
/// writer.insert("positions", &[0.5f64, 1.5][..])?;
/// writer.insert("ids", vec![7u32, 8, 9])?;
/// let bytes = writer.to_bytes()?;
/// let store = binfmt_kastore::Store::new(bytes)?;
/// assert_eq!(&*store.array::<u32>("ids")?, &[7, 8, 9]);
/// # Ok::<(), binfmt_kastore::KastError>(())
/// ```
#[derive(Debug, Default)]
pub struct Writer<'a> {
    items: BTreeMap<Vec<u8>, Array<'a>>,
    /// Every key must be a relative path ([`Writer::with_path_keys`]).
    path_keys: bool,
}

struct Array<'a> {
    item_type: ItemType,
    bytes: Bytes<'a>,
}

/// An array's little-endian bytes: in memory, or a reader that will give
/// exactly `len` of them.
enum Bytes<'a> {
    Memory(Cow<'a, [u8]>),
    Reader {
        reader: std::cell::RefCell<Box<dyn Read + 'a>>,
        len: u64,
    },
}

impl std::fmt::Debug for Array<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Array")
            .field("item_type", &self.item_type)
            .field("byte_len", &self.byte_len())
            .finish()
    }
}

impl Array<'_> {
    fn byte_len(&self) -> u64 {
        match &self.bytes {
            Bytes::Memory(bytes) => bytes.len() as u64,
            Bytes::Reader { len, .. } => *len,
        }
    }

    fn len(&self) -> u64 {
        self.byte_len() / self.item_type.size()
    }
}

impl<'a> Writer<'a> {
    /// An empty writer. Keys are any non-empty bytes, as the C library
    /// allows.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty writer whose keys must all be relative paths, named as
    /// every extractor writes files ([`binfmt_core::extract::check_relative_name`],
    /// and UTF-8): the rule of `binfmt kast pack` and `binfmt convert`.
    /// Every way a key enters the writer goes through it, the items
    /// [`Writer::append_store`] carries over included, so a store written
    /// here can always be extracted whole.
    pub fn with_path_keys() -> Self {
        Self {
            path_keys: true,
            ..Self::default()
        }
    }

    /// Adds `values` under `key`. Refuses an empty key and a key already added.
    pub fn insert<T: Element + 'a>(
        &mut self,
        key: impl AsRef<[u8]>,
        values: impl Into<Cow<'a, [T]>>,
    ) -> Result<()> {
        let le_bytes = match values.into() {
            Cow::Borrowed(values) if cfg!(target_endian = "little") => {
                Cow::Borrowed(values.as_bytes())
            }
            values => Cow::Owned(
                values
                    .iter()
                    .map(|value| value.swap_le())
                    .collect::<Vec<T>>()
                    .as_bytes()
                    .to_vec(),
            ),
        };
        self.insert_array(key.as_ref(), T::TYPE, Bytes::Memory(le_bytes))
    }

    /// Adds an array given as its type and little-endian bytes, which must
    /// be a whole number of elements.
    pub fn insert_raw(
        &mut self,
        key: impl AsRef<[u8]>,
        item_type: ItemType,
        le_bytes: impl Into<Cow<'a, [u8]>>,
    ) -> Result<()> {
        let key = key.as_ref();
        let le_bytes = le_bytes.into();
        check_whole(key, item_type, le_bytes.len() as u64)?;
        self.insert_array(key, item_type, Bytes::Memory(le_bytes))
    }

    /// Adds an array of `byte_len` little-endian bytes that `reader` will
    /// give when the file is written (a short or long reader is an error
    /// then).
    pub fn insert_reader(
        &mut self,
        key: impl AsRef<[u8]>,
        item_type: ItemType,
        byte_len: u64,
        reader: impl Read + 'a,
    ) -> Result<()> {
        let key = key.as_ref();
        check_whole(key, item_type, byte_len)?;
        let reader: Box<dyn Read + 'a> = Box::new(reader);
        self.insert_array(
            key,
            item_type,
            Bytes::Reader {
                reader: std::cell::RefCell::new(reader),
                len: byte_len,
            },
        )
    }

    /// Every item of `store`, borrowed from it (copied when it is not in
    /// memory), to add to, replace in or remove from before writing: the
    /// kastore library's append mode.
    pub fn from_store<S: Source>(store: &'a crate::Store<S>) -> Result<Self> {
        let mut writer = Self::new();
        writer.append_store(store)?;
        Ok(writer)
    }

    /// Adds every item of `store` under this writer's key rules: borrowed
    /// when the store is in memory (a map), otherwise read from the store's
    /// source when the file is written (`pread` for a
    /// [`binfmt_core::FileSource`]: memory does not grow with the arrays,
    /// and a store truncated underneath fails the write with an error).
    pub fn append_store<S: Source>(&mut self, store: &'a crate::Store<S>) -> Result<()> {
        let in_memory = store.source().in_memory().is_some();
        for item in store.items() {
            let bytes = if in_memory {
                Bytes::Memory(item.le_bytes()?)
            } else {
                Bytes::Reader {
                    reader: std::cell::RefCell::new(Box::new(item.reader()?)),
                    len: item.byte_len(),
                }
            };
            self.insert_array(item.key(), item.item_type(), bytes)?;
        }
        Ok(())
    }

    /// The keys added so far, in the order they will be written.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.items.keys().map(Vec::as_slice)
    }

    /// Removes `key`; returns whether it was there.
    pub fn remove(&mut self, key: impl AsRef<[u8]>) -> bool {
        self.items.remove(key.as_ref()).is_some()
    }

    /// Whether `key` has been added.
    pub fn contains(&self, key: impl AsRef<[u8]>) -> bool {
        self.items.contains_key(key.as_ref())
    }

    fn insert_array(&mut self, key: &[u8], item_type: ItemType, bytes: Bytes<'a>) -> Result<()> {
        if key.is_empty() {
            return Err(KastError::EmptyKeyInput);
        }
        if self.path_keys {
            check_path_key(key)?;
        }
        match self.items.entry(key.to_vec()) {
            Entry::Occupied(_) => Err(KastError::DuplicateKeyInput { key: show_key(key) }),
            Entry::Vacant(slot) => {
                slot.insert(Array { item_type, bytes });
                Ok(())
            }
        }
    }

    /// The number of items added.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing has been added.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Where each array will start, and the size of the file.
    fn layout(&self) -> (Vec<u64>, u64) {
        let keys_start = (HEADER_SIZE + self.items.len() * DESCRIPTOR_SIZE) as u64;
        let mut offset = keys_start + self.items.keys().map(|key| key.len() as u64).sum::<u64>();
        let mut array_starts = Vec::with_capacity(self.items.len());
        for array in self.items.values() {
            offset = align_up(offset).unwrap_or(offset);
            array_starts.push(offset);
            offset += array.byte_len();
        }
        (array_starts, offset)
    }

    /// The size of the file [`Writer::write_to`] will write.
    pub fn file_size(&self) -> u64 {
        self.layout().1
    }

    /// Writes the file to `out` and returns its size. Arrays given as
    /// readers are read now (a writer with readers writes once).
    pub fn write_to(&self, out: &mut impl Write) -> Result<u64> {
        let num_items =
            u32::try_from(self.items.len()).map_err(|_| KastError::TooManyItemsToWrite {
                count: self.items.len(),
            })?;
        let (array_starts, file_size) = self.layout();
        let io = |error| KastError::Core(binfmt_core::Error::io("kastore output", error));

        let header = Header {
            signature: SIGNATURE,
            version_major: U16::new(VERSION_MAJOR),
            version_minor: U16::new(VERSION_MINOR),
            num_items: U32::new(num_items),
            file_size: U64::new(file_size),
            reserved: [0; 40],
        };
        out.write_all(header.as_bytes()).map_err(io)?;

        let mut key_start = (HEADER_SIZE + self.items.len() * DESCRIPTOR_SIZE) as u64;
        for ((key, array), &array_start) in self.items.iter().zip(&array_starts) {
            let descriptor = ItemDescriptor {
                item_type: array.item_type.id(),
                reserved: [0; 7],
                key_start: U64::new(key_start),
                key_len: U64::new(key.len() as u64),
                array_start: U64::new(array_start),
                array_len: U64::new(array.len()),
                reserved_tail: [0; 24],
            };
            out.write_all(descriptor.as_bytes()).map_err(io)?;
            key_start += key.len() as u64;
        }
        for key in self.items.keys() {
            out.write_all(key).map_err(io)?;
        }
        let mut offset = key_start;
        for ((key, array), &array_start) in self.items.iter().zip(&array_starts) {
            let padding = [0u8; 8];
            let gap = (array_start - offset) as usize;
            out.write_all(padding.get(..gap).unwrap_or_default())
                .map_err(io)?;
            match &array.bytes {
                Bytes::Memory(bytes) => out.write_all(bytes).map_err(io)?,
                Bytes::Reader { reader, len } => {
                    let mut reader = reader.borrow_mut();
                    let found = copy_array(key, reader.as_mut(), *len, out)?;
                    let mut extra = [0u8; 1];
                    let more = reader
                        .read(&mut extra)
                        .map_err(|source| KastError::ReadArray {
                            key: show_key(key),
                            source,
                        })?;
                    if found != *len || more != 0 {
                        return Err(KastError::ShortArray {
                            key: show_key(key),
                            expected: *len,
                            found: found + more as u64,
                        });
                    }
                }
            }
            offset = array_start + array.byte_len();
        }
        Ok(file_size)
    }

    /// The file as bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(usize::try_from(self.file_size()).unwrap_or(0));
        self.write_to(&mut bytes)?;
        Ok(bytes)
    }

    /// Writes the file to `path` atomically: the file appears complete or
    /// not at all.
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<u64> {
        self.write_destination(Box::new(AtomicFile::create(path)?))
    }

    /// Writes the file to `out` (a local file, an S3 upload) and commits
    /// it: it appears complete or not at all.
    pub fn write_destination(&self, mut out: Box<dyn binfmt_core::Destination>) -> Result<u64> {
        let location = out.location();
        let size = self.write_to(&mut out).map_err(|error| match error {
            KastError::Core(binfmt_core::Error::Io { source, .. }) => {
                binfmt_core::Error::io(&location, source).into()
            }
            other => other,
        })?;
        out.flush().with_path(Path::new(&location))?;
        out.commit()?;
        Ok(size)
    }
}

/// Copies at most `len` bytes of `key`'s array from `reader` to `out`;
/// returns how many there were. A failed read is the input's error
/// (`ReadArray`, naming the key), a failed write the output's.
fn copy_array(key: &[u8], reader: &mut dyn Read, len: u64, out: &mut impl Write) -> Result<u64> {
    let mut buf = vec![0u8; usize::try_from(len.min(256 << 10)).unwrap_or(256 << 10)];
    let mut copied = 0u64;
    while copied < len {
        let want = usize::try_from(len - copied)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let piece = buf.get_mut(..want).unwrap_or_default();
        let n = match reader.read(piece) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(KastError::ReadArray {
                    key: show_key(key),
                    source,
                });
            }
        };
        out.write_all(piece.get(..n).unwrap_or_default())
            .map_err(|error| binfmt_core::Error::io("kastore output", error))?;
        copied += n as u64;
    }
    Ok(copied)
}

/// The one rule for keys of a writer made by [`Writer::with_path_keys`].
fn check_path_key(key: &[u8]) -> Result<()> {
    let name = std::str::from_utf8(key).map_err(|_| KastError::KeyNotAPath {
        key: show_key(key),
        why: "not UTF-8",
    })?;
    binfmt_core::extract::check_relative_name(name).map_err(|why| KastError::KeyNotAPath {
        key: show_key(key),
        why,
    })
}

/// Refuses raw bytes that are not a whole number of elements.
fn check_whole(key: &[u8], item_type: ItemType, len: u64) -> Result<()> {
    if len % item_type.size() == 0 {
        Ok(())
    } else {
        Err(KastError::RaggedArray {
            key: show_key(key),
            item_type,
            len,
        })
    }
}
