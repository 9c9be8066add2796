//! The native half of `binfmt.taridx.Sampler`: one epoch's order
//! ([`binfmt_taridx::sampler::EpochOrder`], spec/sampler.md), read a block
//! of positions at a time with the GIL released, and the shares a rank
//! takes of it; and of `binfmt.taridx.Mixture`: which source's sample each
//! position of a mixture is ([`binfmt_taridx::sampler::mixture::Mixture`],
//! spec/mixture.md).
//!
//! Nothing is sized by the epoch: an order is O(1) memory (O(runs) by
//! chunks), and a block is what the caller asks for, reserved fallibly, so
//! a block memory cannot hold is `MemoryError`, never an abort.

use binfmt_core::alloc;
use binfmt_taridx::sampler::mixture::{Mixture, MixtureError};
use binfmt_taridx::sampler::{EpochOrder, SamplerError, Share, Shuffle};
use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyOverflowError, PyValueError};
use pyo3::prelude::*;

use crate::{errors, remote};

/// Adds `_EpochOrder`, `_Mixture` and `sample_share` to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyEpochOrder>()?;
    module.add_class::<PyMixture>()?;
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

/// A mixture error as a Python exception: a length past int64 is
/// `OverflowError`, memory refused `MemoryError`, the rest `ValueError`.
fn mixture_to_py(error: MixtureError) -> PyErr {
    match error {
        MixtureError::SourceTooLong { .. } | MixtureError::BudgetTooLong { .. } => {
            PyOverflowError::new_err(error.to_string())
        }
        MixtureError::Core(core) => errors::binfmt(&core),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// A weighted interleaving of sources: `(source, sample)` for each
/// position of an epoch.
#[pyclass(frozen, module = "binfmt.taridx", name = "_Mixture")]
struct PyMixture {
    mixture: Mixture,
}

#[pymethods]
impl PyMixture {
    /// The mixture of sources of `lengths` samples drawn by `weights`,
    /// `samples` positions an epoch, keyed by `seed`.
    #[new]
    #[pyo3(signature = (weights, lengths, samples, seed))]
    fn new(
        py: Python<'_>,
        weights: Vec<f64>,
        lengths: Vec<u64>,
        samples: u64,
        seed: u64,
    ) -> PyResult<Self> {
        let mixture = remote::detach(py, || Mixture::new(&weights, &lengths, samples, seed))?
            .map_err(mixture_to_py)?;
        Ok(Self { mixture })
    }

    /// The positions of an epoch.
    #[getter]
    fn samples(&self) -> u64 {
        self.mixture.len()
    }

    /// The sources' quotas of each period of 65,536 positions.
    #[getter]
    fn quotas(&self) -> Vec<u32> {
        self.mixture.quotas().to_vec()
    }

    /// `(source, sample)` at `position` of epoch `epoch`; `IndexError`
    /// past the budget.
    fn locate(&self, epoch: u64, position: u64) -> PyResult<(usize, u64)> {
        self.mixture.locate(epoch, position).ok_or_else(|| {
            PyIndexError::new_err(format!(
                "position {position} of a mixture of {} samples",
                self.mixture.len()
            ))
        })
    }

    /// Sources and samples of positions `first..first + count` of epoch
    /// `epoch`: two `int64` arrays; `IndexError` past the budget.
    #[allow(clippy::type_complexity)]
    fn take<'py>(
        &self,
        py: Python<'py>,
        epoch: u64,
        first: u64,
        count: u64,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
        let past = || {
            PyIndexError::new_err(format!(
                "positions {first} to {first} + {count} of a mixture of {} samples",
                self.mixture.len()
            ))
        };
        if first
            .checked_add(count)
            .is_none_or(|end| end > self.mixture.len())
        {
            return Err(past());
        }
        let size = usize::try_from(count).map_err(|_| {
            PyMemoryError::new_err(format!("{count} positions do not fit in memory"))
        })?;
        let filled = remote::detach(py, || -> Result<_, binfmt_core::Error> {
            let mut sources: Vec<u32> = alloc::vec_with_capacity(size, "mixture sources")?;
            let mut samples: Vec<u64> = alloc::vec_with_capacity(size, "sample indices")?;
            sources.resize(size, 0);
            samples.resize(size, 0);
            Ok(self
                .mixture
                .fill(epoch, first, &mut sources, &mut samples)
                .map(|()| {
                    (
                        sources.into_iter().map(i64::from).collect::<Vec<i64>>(),
                        // Below a source's length <= 2^63 - 1: int64s.
                        samples.into_iter().map(|v| v as i64).collect::<Vec<i64>>(),
                    )
                }))
        })?
        .map_err(|error| errors::binfmt(&error))?;
        let (sources, samples) = filled.ok_or_else(past)?;
        Ok((sources.into_pyarray(py), samples.into_pyarray(py)))
    }
}
