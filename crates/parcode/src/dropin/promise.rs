//! Lazy mirrors and promises (`parcode::rt`).
//!
//! `file.root::<T>()` returns `T`'s mirror: for a derived struct, its plain
//! fields as values and its chunkable fields as promises, which read
//! nothing until asked:
//!
//! ```text
//! ParcodePromise<T>             .load()                 the chunk's value
//! ParcodeCollectionPromise<T>   .len() .get(i) .get_lazy(i) .first() .last() .iter() .iter_lazy() .load()
//! ParcodeMapPromise<K, V>       .get(&k) .get_lazy(&k) .contains_key(&k) .len() .load()
//! ```
//!
//! Every read is checked as in the rest of the crate, and every failure is
//! a typed error: the reference panics on an empty `#[parcode(map)]` map's
//! `get`, and its promise over a plain `HashMap` chunk loads as empty; here
//! both layouts read correctly.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::io::Cursor;
use std::marker::PhantomData;
use std::vec::IntoIter;

use serde::de::DeserializeOwned;

use crate::dropin::error::ParcodeError;
use crate::dropin::fields::{check_count, next_child, read_local};
use crate::dropin::native::{ParcodeItem, skip_items};
use crate::raw::error::ParError;
use crate::raw::reader::Chunk;
use crate::typed::map::LazyMap;

type Result<T, E = ParcodeError> = std::result::Result<T, E>;

/// A type with a lazy view: what `ParcodeFile::root::<T>()` and chunkable
/// fields of mirrors hold.
pub trait ParcodeLazyRef<'a>: Sized {
    /// The view: a promise, or a derived struct's `…Lazy` mirror.
    type Lazy;

    /// The view of the value in `node`.
    fn create_lazy(node: Chunk<'a>) -> Result<Self::Lazy>;

    /// The view of a value inside a shard: plain fields from `reader`,
    /// chunkable fields from `children`.
    fn read_lazy_from_stream(
        reader: &mut Cursor<&[u8]>,
        children: &mut IntoIter<Chunk<'a>>,
    ) -> Result<Self::Lazy>;

    /// The view of a map value, decoded whole from its bucket entry (which
    /// holds every field in full), its chunkable fields taken from
    /// `children`. Only derived structs have one.
    #[doc(hidden)]
    fn lazy_from_value(value: Self, children: &mut IntoIter<Chunk<'a>>) -> Result<Self::Lazy> {
        let _ = (value, children);
        Err(ParError::Field {
            field: "map value",
            at: 0,
            why: "a lazy view of a map value needs #[derive(ParcodeObject)] on the value type"
                .into(),
        }
        .into())
    }
}

/// A value in a chunk of its own, read on `load`.
pub struct ParcodePromise<'a, T> {
    node: Chunk<'a>,
    _value: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for ParcodePromise<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParcodePromise")
            .field("offset", &self.node.offset())
            .finish()
    }
}

impl<T> Clone for ParcodePromise<'_, T> {
    fn clone(&self) -> Self {
        Self {
            node: self.node.clone(),
            _value: PhantomData,
        }
    }
}

impl<'a, T: DeserializeOwned> ParcodePromise<'a, T> {
    /// The promise of the value in `node`.
    pub fn new(node: Chunk<'a>) -> Self {
        Self {
            node,
            _value: PhantomData,
        }
    }

    /// Reads the value.
    pub fn load(&self) -> Result<T> {
        Ok(self.node.decode()?)
    }
}

/// A `Vec<T>` read on demand: its length without reading a shard, one
/// shard per item, all shards in parallel for `load`.
pub struct ParcodeCollectionPromise<'a, T> {
    node: Chunk<'a>,
    _items: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for ParcodeCollectionPromise<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParcodeCollectionPromise")
            .field("offset", &self.node.offset())
            .field("len", &self.node.len())
            .finish()
    }
}

impl<T> Clone for ParcodeCollectionPromise<'_, T> {
    fn clone(&self) -> Self {
        Self {
            node: self.node.clone(),
            _items: PhantomData,
        }
    }
}

impl<'a, T: ParcodeItem> ParcodeCollectionPromise<'a, T> {
    /// The vector in the container `node`.
    pub fn new(node: Chunk<'a>) -> Self {
        Self {
            node,
            _items: PhantomData,
        }
    }

    /// Every item, the shards decoded in parallel.
    pub fn load(&self) -> Result<Vec<T>> {
        self.node.decode_parallel_collection()
    }

    /// Item `index` (one shard read).
    pub fn get(&self, index: usize) -> Result<T> {
        self.node.get(index)
    }

    /// The number of items, from the container alone.
    pub fn len(&self) -> usize {
        usize::try_from(self.node.len()).unwrap_or(usize::MAX)
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every item, one shard at a time.
    pub fn iter(&self) -> Result<impl Iterator<Item = Result<T>> + 'a> {
        self.node.clone().iter()
    }
}

impl<'a, T: ParcodeItem + ParcodeLazyRef<'a>> ParcodeCollectionPromise<'a, T> {
    /// Item `index`'s lazy view: its plain fields read, its chunkable
    /// fields promised. Items before it in its shard are skipped without
    /// reading their chunkable fields.
    pub fn get_lazy(&self, index: usize) -> Result<T::Lazy> {
        let at = self.node.locate_item(index)?;
        let payload = at.shard.payload()?;
        let mut reader = Cursor::new(&*payload);
        check_count(&mut reader, at.expected)?;
        let mut children = skip_items::<T>(&at.shard, &mut reader, at.local)?;
        T::read_lazy_from_stream(&mut reader, &mut children)
    }

    /// The first item's lazy view, or `None` when empty.
    pub fn first(&self) -> Result<Option<T::Lazy>> {
        if self.is_empty() {
            return Ok(None);
        }
        self.get_lazy(0).map(Some)
    }

    /// The last item's lazy view, or `None` when empty.
    pub fn last(&self) -> Result<Option<T::Lazy>> {
        match self.len() {
            0 => Ok(None),
            len => self.get_lazy(len - 1).map(Some),
        }
    }

    /// Every item's lazy view, one shard at a time.
    pub fn iter_lazy(&self) -> Result<ParcodeLazyIterator<'a, T>> {
        ParcodeLazyIterator::new(self.node.clone())
    }
}

/// The lazy views of a vector's items, one shard at a time
/// ([`ParcodeCollectionPromise::iter_lazy`]); exact in length, it stops
/// after the first error.
pub struct ParcodeLazyIterator<'a, T: ParcodeLazyRef<'a>> {
    container: Chunk<'a>,
    shards: u32,
    next_shard: u32,
    payload: Cow<'a, [u8]>,
    position: u64,
    children: IntoIter<Chunk<'a>>,
    left_in_shard: u64,
    total: usize,
    yielded: usize,
    failed: bool,
    _items: PhantomData<fn() -> T>,
}

impl<'a, T: ParcodeLazyRef<'a>> fmt::Debug for ParcodeLazyIterator<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParcodeLazyIterator")
            .field("total", &self.total)
            .field("yielded", &self.yielded)
            .finish()
    }
}

impl<'a, T: ParcodeLazyRef<'a>> ParcodeLazyIterator<'a, T> {
    /// The views of the items of the vector in the container `node`.
    pub fn new(node: Chunk<'a>) -> Result<Self> {
        let plan = crate::typed::vec::Container::parse(&node)?;
        node.check_children_disjoint()?;
        let total = usize::try_from(plan.len).unwrap_or(usize::MAX);
        Ok(Self {
            shards: if plan.inline { 0 } else { node.child_count() },
            container: node,
            next_shard: 0,
            payload: Cow::Borrowed(&[]),
            position: 0,
            children: Vec::new().into_iter(),
            left_in_shard: 0,
            total,
            yielded: 0,
            failed: false,
            _items: PhantomData,
        })
    }

    fn next_shard(&mut self) -> Result<bool> {
        if self.next_shard >= self.shards {
            return Ok(false);
        }
        let shard = self.container.child(self.next_shard)?;
        self.next_shard += 1;
        self.payload = shard.payload()?;
        self.children = shard.children()?.into_iter();
        let mut reader = Cursor::new(&*self.payload);
        self.left_in_shard = read_local(&mut reader, "shard count")?;
        self.position = reader.position();
        Ok(true)
    }

    fn step(&mut self) -> Result<Option<T::Lazy>> {
        while self.left_in_shard == 0 {
            if !self.next_shard()? {
                return Ok(None);
            }
        }
        if self.yielded >= self.total {
            return Err(ParError::Payload {
                offset: self.container.offset(),
                what: "Vec container",
                why: format!("the shards hold more than the {} items it says", self.total),
            }
            .into());
        }
        let mut reader = Cursor::new(&*self.payload);
        reader.set_position(self.position);
        let item = T::read_lazy_from_stream(&mut reader, &mut self.children)?;
        self.position = reader.position();
        self.left_in_shard -= 1;
        self.yielded += 1;
        Ok(Some(item))
    }
}

impl<'a, T: ParcodeLazyRef<'a>> Iterator for ParcodeLazyIterator<'a, T> {
    type Item = Result<T::Lazy>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(item) => item.map(Ok),
            Err(error) => {
                self.failed = true;
                Some(Err(error))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.total.saturating_sub(self.yielded);
        (left, Some(left))
    }
}

impl<'a, T: ParcodeLazyRef<'a>> ExactSizeIterator for ParcodeLazyIterator<'a, T> {}

/// A `HashMap<K, V>` read on demand: one bucket per key.
pub struct ParcodeMapPromise<'a, K, V> {
    node: Chunk<'a>,
    _entries: PhantomData<fn() -> (K, V)>,
}

impl<K, V> fmt::Debug for ParcodeMapPromise<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParcodeMapPromise")
            .field("offset", &self.node.offset())
            .finish()
    }
}

impl<'a, K, V> ParcodeMapPromise<'a, K, V>
where
    K: Hash + Eq + DeserializeOwned + Send,
    V: DeserializeOwned + Send,
{
    /// The map in `node` (either layout).
    pub fn new(node: Chunk<'a>) -> Self {
        Self {
            node,
            _entries: PhantomData,
        }
    }

    fn lazy(&self) -> Result<LazyMap<'a, K, V>> {
        Ok(LazyMap::new(self.node.clone())?)
    }

    /// Every entry (buckets decoded in parallel; the subtree walked).
    pub fn load(&self) -> Result<HashMap<K, V>> {
        Ok(LazyMap::<K, V>::new(self.node.walking()?)?.load()?)
    }

    /// The value under `key`: one bucket read.
    pub fn get(&self, key: &K) -> Result<Option<V>> {
        Ok(self.lazy()?.take(key)?)
    }

    /// Whether the map holds `key` (keys decoded only).
    pub fn contains_key(&self, key: &K) -> Result<bool> {
        Ok(self.lazy()?.contains_key(key)?)
    }

    /// The number of entries (every bucket's header read).
    pub fn len(&self) -> Result<usize> {
        let len = self.lazy()?.len()?;
        Ok(usize::try_from(len).unwrap_or(usize::MAX))
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
}

impl<'a, K, V> ParcodeMapPromise<'a, K, V>
where
    K: Hash + Eq + DeserializeOwned + Send,
    V: DeserializeOwned + Send + ParcodeItem + ParcodeLazyRef<'a>,
{
    /// The lazy view of the value under `key`: its plain fields read from
    /// its bucket entry, its chunkable fields promised from the bucket's
    /// children (each entry's, in entry order).
    pub fn get_lazy(&self, key: &K) -> Result<Option<V::Lazy>> {
        let lazy = self.lazy()?;
        let Some((entry, value)) = lazy.find_entry(key)? else {
            return Ok(None);
        };
        let per_item = V::REMOTE_FIELDS.unwrap_or(0);
        let mut children = match entry {
            // An inline map stores no chunks for its values' fields.
            None if per_item > 0 => {
                return Err(ParError::Payload {
                    offset: self.node.offset(),
                    what: "map",
                    why: "an inline map has no chunks for its values' chunkable fields".into(),
                }
                .into());
            }
            None => Vec::new().into_iter(),
            Some((bucket, index)) => {
                let first = (index as usize).saturating_mul(per_item);
                (first..first.saturating_add(per_item))
                    .map(|child| bucket.get_child_by_index(child))
                    .collect::<Result<Vec<_>>>()?
                    .into_iter()
            }
        };
        V::lazy_from_value(value, &mut children).map(Some)
    }
}

macro_rules! primitive_lazy {
    ($($t:ty),*) => {$(
        impl<'a> ParcodeLazyRef<'a> for $t {
            type Lazy = ParcodePromise<'a, $t>;

            fn create_lazy(node: Chunk<'a>) -> Result<Self::Lazy> {
                Ok(ParcodePromise::new(node))
            }

            fn read_lazy_from_stream(
                _reader: &mut Cursor<&[u8]>,
                children: &mut IntoIter<Chunk<'a>>,
            ) -> Result<Self::Lazy> {
                next_child(children, stringify!($t)).map(ParcodePromise::new)
            }
        }
    )*};
}

primitive_lazy!(
    u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64, bool, String
);

impl<'a, T: ParcodeItem> ParcodeLazyRef<'a> for Vec<T> {
    type Lazy = ParcodeCollectionPromise<'a, T>;

    fn create_lazy(node: Chunk<'a>) -> Result<Self::Lazy> {
        Ok(ParcodeCollectionPromise::new(node))
    }

    fn read_lazy_from_stream(
        _reader: &mut Cursor<&[u8]>,
        children: &mut IntoIter<Chunk<'a>>,
    ) -> Result<Self::Lazy> {
        next_child(children, "Vec").map(ParcodeCollectionPromise::new)
    }
}

impl<'a, K, V> ParcodeLazyRef<'a> for HashMap<K, V>
where
    K: Hash + Eq + DeserializeOwned + Send,
    V: DeserializeOwned + Send,
{
    type Lazy = ParcodeMapPromise<'a, K, V>;

    fn create_lazy(node: Chunk<'a>) -> Result<Self::Lazy> {
        Ok(ParcodeMapPromise::new(node))
    }

    fn read_lazy_from_stream(
        _reader: &mut Cursor<&[u8]>,
        children: &mut IntoIter<Chunk<'a>>,
    ) -> Result<Self::Lazy> {
        next_child(children, "HashMap").map(ParcodeMapPromise::new)
    }
}
