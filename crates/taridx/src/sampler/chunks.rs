//! Shard-local block shuffles (spec/sampler.md §3): the samples cut into
//! chunks of at most `size` consecutive samples of one shard, the chunks
//! in a permuted order, the samples of each chunk in a permuted order.
//!
//! Memory is O(shards), not O(chunks): every chunk but the last of each
//! shard's run is full, so where a chunk's slot begins in the epoch is
//! `slot · size` less the shortfall of the short chunks placed before it,
//! and only the short chunks (at most one a shard) are tabled.

use binfmt_core::alloc;

use super::error::SamplerError;
use super::permutation::{Permutation, order_key};

/// A chunk shorter than `size` (the last of a shard's run), where the
/// chunk order puts it.
#[derive(Clone, Copy, Debug)]
struct ShortChunk {
    /// Its slot in the chunk order.
    slot: u64,
    /// The epoch position its slot begins at.
    position: u64,
    /// Its samples.
    len: u64,
}

/// The chunk a position fell in last, kept by [`Chunks::at`] for the
/// positions after it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor {
    slot: u64,
    start: u64,
    inner: Permutation,
}

/// The chunk layout of one epoch of `n >= 1` samples.
#[derive(Clone, Debug)]
pub(crate) struct Chunks {
    size: u64,
    epoch_key: u64,
    /// Where each shard's run of samples begins, then `n`: increasing.
    bounds: Vec<u64>,
    /// The id of each run's first chunk, then the number of chunks.
    first_chunk: Vec<u64>,
    /// The chunk order: slot → chunk id.
    order: Permutation,
    /// The short chunks, by slot.
    short: Vec<ShortChunk>,
}

/// `values[i]`, or 0 past the end (callers index within bounds).
fn item(values: &[u64], i: usize) -> u64 {
    values.get(i).copied().unwrap_or(0)
}

impl Chunks {
    /// The layout of `n >= 1` samples in chunks of `size >= 1`, runs
    /// starting at 0 and at every `shard_starts` value in `1..n` (others
    /// are ignored, in any order, repeats allowed).
    pub(crate) fn new(
        n: u64,
        size: u64,
        shard_starts: &[u64],
        epoch_key: u64,
    ) -> Result<Self, SamplerError> {
        let mut bounds: Vec<u64> =
            alloc::vec_with_capacity(shard_starts.len().saturating_add(2), "shard starts")?;
        bounds.push(0);
        bounds.extend(shard_starts.iter().copied().filter(|&s| 0 < s && s < n));
        bounds.sort_unstable();
        bounds.dedup();
        bounds.push(n);
        let mut first_chunk: Vec<u64> = alloc::vec_with_capacity(bounds.len(), "chunk counts")?;
        let mut short: Vec<ShortChunk> = alloc::vec_with_capacity(bounds.len(), "short chunks")?;
        let mut count = 0u64;
        first_chunk.push(0);
        for pair in bounds.windows(2) {
            if let [start, end] = *pair {
                // At most one chunk a sample: the count stays below n.
                count = count.saturating_add((end - start).div_ceil(size));
                first_chunk.push(count);
            }
        }
        let order = Permutation::new(order_key(epoch_key, 0), count);
        for (run, pair) in bounds.windows(2).enumerate() {
            if let [start, end] = *pair {
                let len = (end - start) % size;
                if len > 0 {
                    let id = item(&first_chunk, run + 1).saturating_sub(1);
                    let slot = order.position_of(id).unwrap_or(0);
                    short.push(ShortChunk {
                        slot,
                        position: 0,
                        len,
                    });
                }
            }
        }
        short.sort_unstable_by_key(|s| s.slot);
        let mut shortfall = 0u128;
        for chunk in &mut short {
            let position = (u128::from(chunk.slot) * u128::from(size)).saturating_sub(shortfall);
            chunk.position = u64::try_from(position).unwrap_or(u64::MAX);
            shortfall += u128::from(size - chunk.len);
        }
        Ok(Self {
            size,
            epoch_key,
            bounds,
            first_chunk,
            order,
            short,
        })
    }

    /// The number of chunks.
    pub(crate) fn count(&self) -> u64 {
        self.order.len()
    }

    /// The slot and the offset in it of epoch position `i`.
    fn locate(&self, i: u64) -> (u64, u64) {
        let before = self.short.partition_point(|s| s.position <= i);
        match before.checked_sub(1).and_then(|j| self.short.get(j)) {
            None => (i / self.size, i % self.size),
            Some(s) => {
                let into = i - s.position;
                if into < s.len {
                    (s.slot, into)
                } else {
                    let past = into - s.len;
                    (s.slot + 1 + past / self.size, past % self.size)
                }
            }
        }
    }

    /// The epoch position slot `slot` begins at.
    fn slot_position(&self, slot: u64) -> u64 {
        let before = self.short.partition_point(|s| s.slot < slot);
        match before.checked_sub(1).and_then(|j| self.short.get(j)) {
            None => slot * self.size,
            Some(s) => s.position + s.len + (slot - s.slot - 1) * self.size,
        }
    }

    /// The first sample of chunk `id` and its length.
    fn chunk(&self, id: u64) -> (u64, u64) {
        let run = self
            .first_chunk
            .partition_point(|&f| f <= id)
            .saturating_sub(1);
        let start = item(&self.bounds, run) + (id - item(&self.first_chunk, run)) * self.size;
        let end = item(&self.bounds, run + 1);
        (start, self.size.min(end.saturating_sub(start)))
    }

    /// The order inside chunk `id` of `len` samples.
    fn inner(&self, id: u64, len: u64) -> Permutation {
        Permutation::new(order_key(self.epoch_key, id + 1), len)
    }

    /// The sample at epoch position `i < n`; `cursor` keeps the last chunk.
    pub(crate) fn at(&self, i: u64, cursor: &mut Option<Cursor>) -> u64 {
        let (slot, offset) = self.locate(i);
        let chunk = match *cursor {
            Some(chunk) if chunk.slot == slot => chunk,
            _ => {
                let id = self.order.get(slot).unwrap_or(0);
                let (start, len) = self.chunk(id);
                let chunk = Cursor {
                    slot,
                    start,
                    inner: self.inner(id, len),
                };
                *cursor = Some(chunk);
                chunk
            }
        };
        chunk.start + chunk.inner.get(offset).unwrap_or(0)
    }

    /// The epoch position of sample `sample < n`.
    pub(crate) fn position_of(&self, sample: u64) -> Option<u64> {
        let run = self
            .bounds
            .partition_point(|&b| b <= sample)
            .checked_sub(1)?;
        let run_start = self.bounds.get(run).copied()?;
        let id = self.first_chunk.get(run).copied()? + (sample - run_start) / self.size;
        let (start, len) = self.chunk(id);
        let offset = self.inner(id, len).position_of(sample - start)?;
        Some(self.slot_position(self.order.position_of(id)?) + offset)
    }
}
