//! Deterministic epoch orders for distributed training (spec/sampler.md),
//! computed position by position in constant memory, so an epoch of
//! `10^12` samples costs nothing to set up.
//!
//! An [`EpochOrder`] is the epoch's global order `g(0), g(1), ...,
//! g(n - 1)`, a permutation of `0..n` fixed by `(seed, epoch, n)` and the
//! shuffle: none, the samples ([`Permutation`], a keyed Feistel network
//! cycle-walked into range), or a shard-local block shuffle (chunks of at
//! most `chunk_size` consecutive samples of one shard, the chunks in a
//! permuted order, the samples of each chunk in a permuted order; memory
//! O(shards)). A [`Share`] is what one rank of a world takes of it from a
//! position on: every `world_size`-th position, so a job that resumes
//! after `samples_seen` samples, with any world size, sees each of the
//! rest exactly once.
//!
//! A [`Mixture`](mixture::Mixture) (`mixture`, spec/mixture.md) interleaves several sources
//! by weight: a fixed, balanced schedule of `2^16` positions says which
//! source each position draws from, and each source's draws go through the
//! sampler's shuffled orders of its samples, one cycle at a time.
//!
//! ```
//! use binfmt_taridx::sampler::{EpochOrder, Shuffle};
//!
//! let order = EpochOrder::new(10u64.pow(12), 0, 0, Shuffle::Samples)?;
//! let share = order.share(0, 3, 8, false)?; // rank 3 of 8
//! let mut first = [0u64; 4];
//! order.fill(share.first, share.stride, &mut first)?;
//! assert_eq!(order.get(3), Some(first[0]));
//! # Ok::<(), binfmt_taridx::sampler::SamplerError>(())
//! ```

mod chunks;
mod error;
pub mod mixture;
mod permutation;
#[cfg(test)]
mod tests;

use chunks::{Chunks, Cursor};
pub use error::SamplerError;
pub use permutation::{Permutation, ROUNDS, epoch_key, mix, order_key, splitmix};

/// The most samples an order holds: indices are `int64` in Python.
pub const MAX_LEN: u64 = i64::MAX as u64;

/// How an epoch's samples are shuffled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shuffle<'a> {
    /// Not at all: `g(i) = i`.
    No,
    /// The samples: `g = Permutation(order_key(epoch_key(seed, epoch), 0), n)`.
    Samples,
    /// By shard-local chunks of at most `size` samples; a shard's run of
    /// samples starts at 0 and at each of `shard_starts` in `1..n`.
    Chunks {
        /// The most samples a chunk holds (at least 1).
        size: u64,
        /// Where shards' runs of samples start (any order, repeats and
        /// values outside `1..n` ignored).
        shard_starts: &'a [u64],
    },
}

/// One epoch's global order of `n` samples.
#[derive(Clone, Debug)]
pub struct EpochOrder {
    n: u64,
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Sequential,
    Samples(Permutation),
    Chunks(Box<Chunks>),
}

/// What one rank takes of an epoch: positions `first + k · stride` for
/// `k` in `0..len`, each taken modulo `n` (only padding reaches `n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// The rank's first position: `start + rank`.
    pub first: u64,
    /// The world size.
    pub stride: u64,
    /// How many positions it takes.
    pub len: u64,
}

impl EpochOrder {
    /// The order of epoch `epoch` of `n` samples under `seed`.
    pub fn new(n: u64, seed: u64, epoch: u64, shuffle: Shuffle<'_>) -> Result<Self, SamplerError> {
        if n > MAX_LEN {
            return Err(SamplerError::TooLong { n });
        }
        let key = epoch_key(seed, epoch);
        let kind = match shuffle {
            Shuffle::Chunks { size: 0, .. } => return Err(SamplerError::ZeroChunkSize),
            _ if n == 0 => Kind::Sequential,
            Shuffle::No => Kind::Sequential,
            Shuffle::Samples => Kind::Samples(Permutation::new(order_key(key, 0), n)),
            Shuffle::Chunks { size, shard_starts } => {
                Kind::Chunks(Box::new(Chunks::new(n, size, shard_starts, key)?))
            }
        };
        Ok(Self { n, kind })
    }

    /// The epoch's samples.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether the epoch has no samples.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The number of chunks of a chunked order, `None` otherwise.
    pub fn chunk_count(&self) -> Option<u64> {
        match &self.kind {
            Kind::Chunks(chunks) => Some(chunks.count()),
            _ => None,
        }
    }

    /// `g(position)`, `None` when `position >= n`.
    pub fn get(&self, position: u64) -> Option<u64> {
        (position < self.n).then(|| self.at(position, &mut None))
    }

    /// The position of `sample` in the order (`g`'s inverse), `None` when
    /// `sample >= n`.
    pub fn position_of(&self, sample: u64) -> Option<u64> {
        if sample >= self.n {
            return None;
        }
        match &self.kind {
            Kind::Sequential => Some(sample),
            Kind::Samples(permutation) => permutation.position_of(sample),
            Kind::Chunks(chunks) => chunks.position_of(sample),
        }
    }

    fn at(&self, position: u64, cursor: &mut Option<Cursor>) -> u64 {
        match &self.kind {
            Kind::Sequential => position,
            Kind::Samples(permutation) => permutation.get(position).unwrap_or(0),
            Kind::Chunks(chunks) => chunks.at(position, cursor),
        }
    }

    /// Fills `out` with `g(p_k)` for `p_k = (first + k · stride) mod n`.
    /// [`SamplerError::Empty`] when `n` is 0 and `out` is not empty.
    pub fn fill(&self, first: u64, stride: u64, out: &mut [u64]) -> Result<(), SamplerError> {
        if out.is_empty() {
            return Ok(());
        }
        if self.n == 0 {
            return Err(SamplerError::Empty);
        }
        let (mut position, step) = (first % self.n, stride % self.n);
        let mut cursor = None;
        for value in out {
            *value = self.at(position, &mut cursor);
            // Both below n <= 2^63: the sum fits.
            position = (position + step) % self.n;
        }
        Ok(())
    }

    /// Rank `rank`'s share of this order from `start` on: [`Share::new`].
    pub fn share(
        &self,
        start: u64,
        rank: u64,
        world_size: u64,
        drop_last: bool,
    ) -> Result<Share, SamplerError> {
        Share::new(self.n, start, rank, world_size, drop_last)
    }
}

impl Share {
    /// Rank `rank`'s share of the positions of an epoch of `n` samples
    /// from `start` on, dealt round-robin over `w = world_size` ranks:
    /// positions `start + rank + k·w`. With `m = n - start` remaining,
    /// each rank takes `⌈m / w⌉` (padded: positions past the end wrap to
    /// the epoch's start), or `⌊m / w⌋` with `drop_last` (the last
    /// `m mod w` left out).
    pub fn new(
        n: u64,
        start: u64,
        rank: u64,
        world_size: u64,
        drop_last: bool,
    ) -> Result<Self, SamplerError> {
        if n > MAX_LEN {
            return Err(SamplerError::TooLong { n });
        }
        if rank >= world_size || world_size > MAX_LEN {
            return Err(SamplerError::Rank { rank, world_size });
        }
        let remaining = n
            .checked_sub(start)
            .ok_or(SamplerError::Start { start, n })?;
        let len = match drop_last {
            true => remaining / world_size,
            false => remaining.div_ceil(world_size),
        };
        // start <= n <= 2^63 - 1 and rank < 2^63 - 1: the sum fits.
        Ok(Self {
            first: start + rank,
            stride: world_size,
            len,
        })
    }
}
