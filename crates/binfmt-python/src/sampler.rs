//! The deterministic epoch orders of `binfmt.taridx.Sampler`.
//!
//! Every argument is checked against what it sizes before a byte is
//! reserved: the sample count is an `int64` index range, the rank's share
//! is what the returned array holds, and the full order (needed only to
//! shuffle) is reserved fallibly, so a count too large for memory is
//! `MemoryError`, never an abort. Without shuffling, only the rank's share
//! is computed, whatever the count. The work done without the GIL is
//! bounded by the memory reserved (one pass to fill, one to shuffle).

use binfmt_core::alloc;
use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::{PyMemoryError, PyOverflowError, PyValueError};
use pyo3::prelude::*;

use crate::remote;

/// Adds `sample_order` to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(sample_order, module)?)
}

/// SplitMix64: the generator behind [`sample_order`] (and the seeding of
/// its state), fixed here so orders never change with a dependency.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number below `bound` (Lemire's multiply-shift with
    /// rejection: no modulo bias).
    fn below(&mut self, bound: u64) -> u64 {
        loop {
            let product = u128::from(self.next()) * u128::from(bound);
            let low = product as u64;
            if low >= bound.wrapping_neg() % bound {
                return (product >> 64) as u64;
            }
        }
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// A reservation refused: `MemoryError` naming what it was for.
fn no_memory(error: binfmt_core::Error) -> PyErr {
    PyMemoryError::new_err(error.to_string())
}

/// The starts of the runs kept together when shuffling by chunks: every
/// `chunk_size`-th sample of each shard's run (`shard_starts`: where each
/// shard's samples begin), then `n`; sorted, without repeats.
fn chunk_bounds(n: u64, chunk_size: u64, shard_starts: &[u64]) -> Result<Vec<u64>, PyErr> {
    let mut segments: Vec<u64> =
        alloc::vec_with_capacity(shard_starts.len() + 2, "shard starts").map_err(no_memory)?;
    segments.push(0);
    segments.extend(shard_starts.iter().copied().filter(|&s| s < n));
    segments.push(n);
    segments.sort_unstable();
    segments.dedup();
    let count = segments
        .windows(2)
        .map(|pair| match pair {
            [start, end] => (end - start).div_ceil(chunk_size),
            _ => 0,
        })
        .fold(0u64, u64::saturating_add)
        .saturating_add(1);
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    let mut bounds: Vec<u64> =
        alloc::vec_with_capacity(count, "chunk starts").map_err(no_memory)?;
    for pair in segments.windows(2) {
        if let [start, end] = *pair {
            bounds.extend((start..end).step_by(usize::try_from(chunk_size).unwrap_or(usize::MAX)));
        }
    }
    bounds.push(n);
    bounds.dedup();
    Ok(bounds)
}

/// The whole order of `n` samples for one epoch, shuffled (by chunks when
/// `bounds` are given).
fn shuffled(n: usize, rng: &mut SplitMix64, bounds: Option<&[u64]>) -> Result<Vec<i64>, PyErr> {
    let mut order: Vec<i64> =
        alloc::vec_with_capacity(n, "the epoch's order").map_err(no_memory)?;
    match bounds {
        None => {
            order.extend(0..n as i64);
            rng.shuffle(&mut order);
        }
        Some(bounds) => {
            let mut runs: Vec<(u64, u64)> =
                alloc::vec_with_capacity(bounds.len(), "chunks").map_err(no_memory)?;
            runs.extend(bounds.windows(2).filter_map(|pair| match *pair {
                [start, end] => Some((start, end)),
                _ => None,
            }));
            // The chunks' order first, then the samples inside each chunk.
            rng.shuffle(&mut runs);
            for (start, end) in runs {
                let from = order.len();
                order.extend(start as i64..end as i64);
                if let Some(run) = order.get_mut(from..) {
                    rng.shuffle(run);
                }
            }
        }
    }
    Ok(order)
}

/// The order of `n` samples for one epoch: shuffled from `(seed, epoch)`
/// (the same order on every machine and run), optionally by chunks of at
/// most `chunk_size` samples that never cross a shard's start
/// (`shard_starts`): the chunks' order is shuffled, then the samples
/// inside each chunk — then split for `rank` of `world_size`: every rank
/// gets every `world_size`-th sample of the order, the order padded by its
/// own start (or cut, with `drop_last`) to a multiple of `world_size`.
#[pyfunction]
#[pyo3(signature = (n, seed, epoch, shuffle, chunk_size, shard_starts, rank, world_size, drop_last))]
#[allow(clippy::too_many_arguments)]
fn sample_order<'py>(
    py: Python<'py>,
    n: u64,
    seed: u64,
    epoch: u64,
    shuffle: bool,
    chunk_size: Option<u64>,
    shard_starts: Option<Vec<u64>>,
    rank: u64,
    world_size: u64,
    drop_last: bool,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    if i64::try_from(n).is_err() {
        return Err(PyOverflowError::new_err(format!(
            "length {n}: sample indices are int64, so at most 2**63 - 1 samples"
        )));
    }
    if world_size == 0 || rank >= world_size {
        return Err(PyValueError::new_err(format!(
            "rank {rank} of world_size {world_size}: need 0 <= rank < world_size"
        )));
    }
    if chunk_size == Some(0) {
        return Err(PyValueError::new_err("chunk_size must be at least 1"));
    }
    let total = if drop_last {
        n - n % world_size
    } else {
        // At most n + world_size - 1: counted in 128 bits.
        let padded = u128::from(n).div_ceil(u128::from(world_size)) * u128::from(world_size);
        u64::try_from(padded).unwrap_or(u64::MAX)
    };
    // Indices rank, rank + world_size, ... below total: total is a multiple
    // of world_size, so each rank gets total / world_size of them.
    let share = usize::try_from(total / world_size).unwrap_or(usize::MAX);
    let order = remote::detach(py, || -> PyResult<Vec<i64>> {
        let mut out: Vec<i64> =
            alloc::vec_with_capacity(share, "this rank's share").map_err(no_memory)?;
        let position = |k: usize| {
            let at = u128::from(rank) + k as u128 * u128::from(world_size);
            (at % u128::from(n.max(1))) as u64
        };
        if !shuffle {
            out.extend((0..share).map(|k| position(k) as i64));
            return Ok(out);
        }
        let bounds = match chunk_size {
            Some(size) => Some(chunk_bounds(
                n,
                size,
                shard_starts.as_deref().unwrap_or(&[]),
            )?),
            None => None,
        };
        let mut rng = SplitMix64(seed ^ epoch.wrapping_mul(0xD1B5_4A32_D192_ED03));
        let full = shuffled(n as usize, &mut rng, bounds.as_deref())?;
        out.extend((0..share).filter_map(|k| full.get(position(k) as usize).copied()));
        Ok(out)
    })??;
    Ok(order.into_pyarray(py))
}
