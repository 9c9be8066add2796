//! The native half of `binfmt.taridx.Sampler`: one epoch's order
//! ([`binfmt_taridx::sampler::EpochOrder`], spec/sampler.md), read a block
//! of positions at a time with the GIL released, and the shares a rank
//! takes of it.
//!
//! Nothing is sized by the epoch: an order is O(1) memory (O(runs) by
//! chunks), and a block is what the caller asks for, reserved fallibly, so
//! a block memory cannot hold is `MemoryError`, never an abort.

use binfmt_core::alloc;
use binfmt_taridx::sampler::{EpochOrder, SamplerError, Share, Shuffle};
use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyOverflowError, PyValueError};
use pyo3::prelude::*;

use crate::{errors, remote};

/// Adds `_EpochOrder` and `sample_share` to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyEpochOrder>()?;
    module.add_function(wrap_pyfunction!(sample_share, module)?)
}

/// A sampler error as a Python exception: a length past int64 is
/// `OverflowError`, memory refused `MemoryError`, the rest `ValueError`.
fn to_py(error: SamplerError) -> PyErr {
    match error {
        SamplerError::TooLong { .. } => PyOverflowError::new_err(error.to_string()),
        SamplerError::Core(core) => errors::binfmt(&core),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// One epoch's order of `n` samples: `g(position)` for positions `0..n`.
#[pyclass(frozen, module = "binfmt.taridx", name = "_EpochOrder")]
struct PyEpochOrder {
    order: EpochOrder,
}

#[pymethods]
impl PyEpochOrder {
    /// The order of epoch `epoch` of `n` samples under `seed`: as is
    /// without `shuffle`; with it, by chunks of at most `chunk_size` when
    /// given, each within a run starting at 0 or at a `shard_starts` value.
    #[new]
    #[pyo3(signature = (n, seed, epoch, shuffle, chunk_size, shard_starts))]
    fn new(
        py: Python<'_>,
        n: u64,
        seed: u64,
        epoch: u64,
        shuffle: bool,
        chunk_size: Option<u64>,
        shard_starts: Option<Vec<u64>>,
    ) -> PyResult<Self> {
        let order = remote::detach(py, || {
            let starts = shard_starts.as_deref().unwrap_or(&[]);
            let shuffle = match (shuffle, chunk_size) {
                (false, _) => Shuffle::No,
                (true, None) => Shuffle::Samples,
                (true, Some(size)) => Shuffle::Chunks {
                    size,
                    shard_starts: starts,
                },
            };
            EpochOrder::new(n, seed, epoch, shuffle)
        })?
        .map_err(to_py)?;
        Ok(Self { order })
    }

    /// The epoch's samples.
    #[getter]
    fn n(&self) -> u64 {
        self.order.len()
    }

    /// The number of chunks of a chunked order, `None` otherwise.
    #[getter]
    fn chunk_count(&self) -> Option<u64> {
        self.order.chunk_count()
    }

    /// `g(first + k * stride mod n)` for `k` in `0..count`, an `int64`
    /// array.
    fn take<'py>(
        &self,
        py: Python<'py>,
        first: u64,
        stride: u64,
        count: u64,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let count = usize::try_from(count).map_err(|_| {
            PyMemoryError::new_err(format!("{count} sample indices do not fit in memory"))
        })?;
        let values = remote::detach(py, || -> Result<Vec<i64>, SamplerError> {
            let mut values: Vec<u64> = alloc::vec_with_capacity(count, "sample indices")?;
            values.resize(count, 0);
            self.order.fill(first, stride, &mut values)?;
            // Below n <= 2^63 - 1: every value is an int64.
            Ok(values.into_iter().map(|v| v as i64).collect())
        })?
        .map_err(to_py)?;
        Ok(values.into_pyarray(py))
    }

    /// `g(position)`; `IndexError` when `position >= n`.
    fn get(&self, position: u64) -> PyResult<u64> {
        self.order.get(position).ok_or_else(|| {
            PyIndexError::new_err(format!(
                "position {position} of {} samples",
                self.order.len()
            ))
        })
    }

    /// The position of `sample` in the order; `IndexError` when `sample >= n`.
    fn position_of(&self, sample: u64) -> PyResult<u64> {
        self.order.position_of(sample).ok_or_else(|| {
            PyIndexError::new_err(format!("sample {sample} of {} samples", self.order.len()))
        })
    }
}

/// Rank `rank`'s share of an epoch of `n` samples from position `start`
/// on: `(first, stride, len)`, positions `first + k * stride` (mod `n`).
#[pyfunction]
#[pyo3(signature = (n, start, rank, world_size, drop_last))]
fn sample_share(
    n: u64,
    start: u64,
    rank: u64,
    world_size: u64,
    drop_last: bool,
) -> PyResult<(u64, u64, u64)> {
    let share = Share::new(n, start, rank, world_size, drop_last).map_err(to_py)?;
    Ok((share.first, share.stride, share.len))
}
