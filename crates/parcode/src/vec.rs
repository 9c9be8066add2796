//! `Vec<T>` as the reference lays it out: a container chunk and one child
//! per shard.
//!
//! ```text
//! container payload: total items u64 LE | bincode Vec<ShardRun { item_count: u32, repeat: u32 }>
//! shard payload:     bincode &[T] (varint length, then the items)
//! ```
//!
//! `repeat` consecutive shards hold `item_count` items each; the runs cover
//! the children in order.

use std::marker::PhantomData;

use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::codec::{decode, encode, encode_into};
use crate::error::{ParError, Result};
use crate::reader::Chunk;
use crate::writer::{ChunkGraph, NodeId};

/// A run of shards holding the same number of items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct ShardRun {
    item_count: u32,
    repeat: u32,
}

/// The shard size this writer aims for, as the reference does (128 KiB of
/// encoded items). Unlike the reference, which also divides by the number
/// of cores, the shard size depends only on the data, so the file does not
/// depend on the machine.
const TARGET_SHARD_BYTES: usize = 128 * 1024;

impl ChunkGraph {
    /// Adds `items` as a container with shards of about 128 KiB, encoded in
    /// parallel.
    pub fn vec<T: Serialize + Sync>(&mut self, items: &[T]) -> Result<NodeId> {
        let sample = items.get(..items.len().min(8)).unwrap_or_default();
        let sample_bytes = encode(sample, "Vec sample")?.len().saturating_sub(1).max(1);
        let per_item = (sample_bytes / sample.len().max(1)).max(1);
        self.vec_with_shard_len(items, (TARGET_SHARD_BYTES / per_item).max(1))
    }

    /// Adds `items` as a container with `shard_len` items per shard (the
    /// last shard may hold fewer).
    pub fn vec_with_shard_len<T: Serialize + Sync>(
        &mut self,
        items: &[T],
        shard_len: usize,
    ) -> Result<NodeId> {
        let shard_len = shard_len.max(1);
        let shards: Vec<Vec<u8>> = items
            .par_chunks(shard_len)
            .map(|shard| encode(shard, "Vec shard"))
            .collect::<Result<_>>()?;
        let mut runs: Vec<ShardRun> = Vec::new();
        for shard in items.chunks(shard_len) {
            let count = u32::try_from(shard.len()).map_err(|_| ParError::Encode {
                what: "Vec shard",
                why: "more than 2^32 items in one shard".into(),
            })?;
            match runs.last_mut() {
                Some(run) if run.item_count == count => run.repeat += 1,
                _ => runs.push(ShardRun {
                    item_count: count,
                    repeat: 1,
                }),
            }
        }
        let mut payload = (items.len() as u64).to_le_bytes().to_vec();
        encode_into(&runs, &mut payload, "Vec shard runs")?;
        let children = shards
            .into_iter()
            .map(|shard| self.add(shard, Vec::new()))
            .collect::<Result<Vec<_>>>()?;
        self.add(payload, children)
    }
}

/// A `Vec<T>` in a PAR4 file, read on demand: the length without touching
/// a shard, one shard per `get`, all shards in parallel for `load`.
#[derive(Debug, Clone)]
pub struct LazyVec<'a, T> {
    container: Chunk<'a>,
    len: u64,
    runs: Vec<ShardRun>,
    /// An odd container (payload under 8 bytes) holds its items inline.
    inline: bool,
    _items: PhantomData<fn() -> T>,
}

impl<'a, T: DeserializeOwned + Send> LazyVec<'a, T> {
    /// Reads the container chunk: its item count and shard runs, which must
    /// cover exactly its children and its count.
    pub fn new(container: Chunk<'a>) -> Result<Self> {
        let offset = container.offset();
        let payload = container.payload()?;
        let bad = |why: String| ParError::Payload {
            offset,
            what: "Vec container",
            why,
        };
        let Some((count, runs_bytes)) = payload.split_first_chunk::<8>() else {
            let (items, _): (Vec<T>, usize) = if payload.is_empty() {
                (Vec::new(), 0)
            } else {
                decode(&payload, offset, "inline Vec")?
            };
            return Ok(Self {
                container,
                len: items.len() as u64,
                runs: Vec::new(),
                inline: true,
                _items: PhantomData,
            });
        };
        let len = u64::from_le_bytes(*count);
        let (runs, _): (Vec<ShardRun>, usize) = decode(runs_bytes, offset, "Vec shard runs")?;
        let shards: u64 = runs.iter().map(|run| u64::from(run.repeat)).sum();
        if shards != u64::from(container.child_count()) {
            return Err(bad(format!(
                "shard runs cover {shards} shards but the chunk has {} children",
                container.child_count()
            )));
        }
        let items: u64 = runs
            .iter()
            .map(|run| u64::from(run.item_count) * u64::from(run.repeat))
            .sum();
        if items != len {
            return Err(bad(format!(
                "shard runs hold {items} items but the container says {len}"
            )));
        }
        Ok(Self {
            container,
            len,
            runs,
            inline: false,
            _items: PhantomData,
        })
    }

    /// The number of items.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of shards.
    pub fn shard_count(&self) -> u32 {
        self.container.child_count()
    }

    /// Item `index`, decoding only the shard that holds it.
    pub fn get(&self, index: u64) -> Result<T> {
        if index >= self.len {
            return Err(ParError::IndexOutOfRange {
                index,
                len: self.len,
            });
        }
        if self.inline {
            return self.inline_items()?.into_iter().nth(index as usize).ok_or(
                ParError::IndexOutOfRange {
                    index,
                    len: self.len,
                },
            );
        }
        let (shard, local) = self.locate(index)?;
        self.shard(shard)?
            .into_iter()
            .nth(local)
            .ok_or(ParError::IndexOutOfRange {
                index,
                len: self.len,
            })
    }

    /// Shard and position in the shard of item `index` (< len).
    fn locate(&self, index: u64) -> Result<(u32, usize)> {
        let mut first_item = 0u64;
        let mut first_shard = 0u64;
        for run in &self.runs {
            let per_shard = u64::from(run.item_count);
            let items = per_shard * u64::from(run.repeat);
            if index < first_item + items {
                let within = index - first_item;
                return Ok((
                    (first_shard + within / per_shard) as u32,
                    (within % per_shard) as usize,
                ));
            }
            first_item += items;
            first_shard += u64::from(run.repeat);
        }
        Err(ParError::IndexOutOfRange {
            index,
            len: self.len,
        })
    }

    /// The items of shard `index`, checked against the run table.
    pub fn shard(&self, index: u32) -> Result<Vec<T>> {
        let chunk = self.container.child(index)?;
        let payload = chunk.payload()?;
        let (items, _): (Vec<T>, usize) = decode(&payload, chunk.offset(), "Vec shard")?;
        let expected = self.shard_len(index);
        if items.len() as u64 != expected {
            return Err(ParError::Payload {
                offset: chunk.offset(),
                what: "Vec shard",
                why: format!("{} items where the run table says {expected}", items.len()),
            });
        }
        Ok(items)
    }

    fn shard_len(&self, shard: u32) -> u64 {
        let mut first_shard = 0u64;
        for run in &self.runs {
            if u64::from(shard) < first_shard + u64::from(run.repeat) {
                return u64::from(run.item_count);
            }
            first_shard += u64::from(run.repeat);
        }
        0
    }

    fn inline_items(&self) -> Result<Vec<T>> {
        let payload = self.container.payload()?;
        if payload.is_empty() {
            return Ok(Vec::new());
        }
        Ok(decode(&payload, self.container.offset(), "inline Vec")?.0)
    }

    /// Every item, in order, decoding one shard at a time.
    pub fn iter(&self) -> impl Iterator<Item = Result<T>> + '_ {
        let shards: Box<dyn Iterator<Item = Result<Vec<T>>> + '_> = if self.inline {
            Box::new(std::iter::once(self.inline_items()))
        } else {
            Box::new((0..self.shard_count()).map(|shard| self.shard(shard)))
        };
        shards.flat_map(|shard| match shard {
            Ok(items) => items.into_iter().map(Ok).collect::<Vec<_>>(),
            Err(error) => vec![Err(error)],
        })
    }

    /// Every item, decoding the shards in parallel.
    pub fn load(&self) -> Result<Vec<T>>
    where
        T: Send,
    {
        if self.inline {
            return self.inline_items();
        }
        let shards: Vec<Vec<T>> = (0..self.shard_count())
            .into_par_iter()
            .map(|shard| self.shard(shard))
            .collect::<Result<_>>()?;
        let mut items = Vec::with_capacity(shards.iter().map(Vec::len).sum());
        for shard in shards {
            items.extend(shard);
        }
        Ok(items)
    }
}
