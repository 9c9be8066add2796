//! Writing: the bytes `kastore.dump` writes for the same mapping.
//!
//! Keys are sorted by their bytes, packed right after the descriptors; each
//! array starts at the next multiple of 8 after the previous key or array,
//! with zero bytes in between; nothing follows the last array. The header's
//! reserved bytes and the descriptors' reserved bytes are zero.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::io::Write;
use std::path::Path;

use binfmt_core::layout::{IntoBytes, U16, U32, U64};
use binfmt_core::{AtomicFile, IoResultExt};

use crate::element::Element;
use crate::error::{KastError, Result, show_key};
use crate::format::{
    DESCRIPTOR_SIZE, HEADER_SIZE, Header, ItemDescriptor, ItemType, SIGNATURE, VERSION_MAJOR,
    VERSION_MINOR, align_up,
};

/// Collects keys and arrays, then writes them as one kastore file.
///
/// Arrays passed by reference are borrowed, not copied, until written.
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
}

#[derive(Debug)]
struct Array<'a> {
    item_type: ItemType,
    le_bytes: Cow<'a, [u8]>,
}

impl Array<'_> {
    fn len(&self) -> u64 {
        self.le_bytes.len() as u64 / self.item_type.size()
    }
}

impl<'a> Writer<'a> {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
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
        self.insert_array(key.as_ref(), T::TYPE, le_bytes)
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
        if le_bytes.len() as u64 % item_type.size() != 0 {
            return Err(KastError::RaggedArray {
                key: show_key(key),
                item_type,
                len: le_bytes.len(),
            });
        }
        self.insert_array(key, item_type, le_bytes)
    }

    fn insert_array(
        &mut self,
        key: &[u8],
        item_type: ItemType,
        le_bytes: Cow<'a, [u8]>,
    ) -> Result<()> {
        if key.is_empty() {
            return Err(KastError::EmptyKeyInput);
        }
        match self.items.entry(key.to_vec()) {
            Entry::Occupied(_) => Err(KastError::DuplicateKeyInput { key: show_key(key) }),
            Entry::Vacant(slot) => {
                slot.insert(Array {
                    item_type,
                    le_bytes,
                });
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
            offset += array.le_bytes.len() as u64;
        }
        (array_starts, offset)
    }

    /// The size of the file [`Writer::write_to`] will write.
    pub fn file_size(&self) -> u64 {
        self.layout().1
    }

    /// Writes the file to `out`.
    pub fn write_to(&self, out: &mut impl Write) -> Result<u64> {
        let num_items =
            u32::try_from(self.items.len()).map_err(|_| KastError::TooManyItemsToWrite {
                count: self.items.len(),
            })?;
        let (array_starts, file_size) = self.layout();
        let io = KastError::Output;

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
        for (array, &array_start) in self.items.values().zip(&array_starts) {
            let padding = [0u8; 8];
            let gap = (array_start - offset) as usize;
            out.write_all(padding.get(..gap).unwrap_or_default())
                .map_err(io)?;
            out.write_all(&array.le_bytes).map_err(io)?;
            offset = array_start + array.le_bytes.len() as u64;
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
        let path = path.as_ref();
        let mut file = AtomicFile::create(path)?;
        let size = self.write_to(&mut file).map_err(|error| match error {
            KastError::Output(source) => binfmt_core::Error::io(path, source).into(),
            other => other,
        })?;
        file.flush().with_path(path)?;
        file.commit()?;
        Ok(size)
    }
}
