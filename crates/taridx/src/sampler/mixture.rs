//! Deterministic weighted interleavings of several datasets
//! (spec/mixture.md): position `i` of a [`Mixture`] is one draw of one
//! source, and the `k`-th draw of a source is one of its samples.
//!
//! Layout and algorithm:
//!
//! - **Quotas.** The weights (finite, `>= 0`, at least one positive) are
//!   normalised and quantised to integer quotas `q_s` summing to
//!   [`PERIOD`] `= 2^16` by largest remainder (ties to the lower source
//!   number); a positive weight whose quota would be 0 is refused.
//!   Everything after is integer arithmetic.
//! - **Schedule.** One period of `2^16` slots says which source each
//!   position belongs to: source `s` holds `q_s` slots, placed by
//!   Tijdeman's earliest-deadline rule for the chairman assignment
//!   problem, so that after any `t` slots source `s` has `c_s(t)` slots
//!   with `|c_s(t) - t·q_s/2^16| <= 1 - 1/(2m - 2)` (`m` the sources of
//!   positive weight). Building it checks every slot against that bound
//!   ([`MixtureError::Schedule`] otherwise: never seen). The schedule
//!   repeats every period, so any window of `L` consecutive positions
//!   holds `L·q_s/2^16` draws of `s` give or take less than 2. The table
//!   keeps, per slot, its source and how many slots of that source come
//!   before it in the period: 4 bytes a slot, 256 KiB whatever the budget.
//! - **Draws.** Position `i` (period `i / 2^16`, slot `j = i mod 2^16`,
//!   holding source `s`, rank `r`) is draw `k = (i / 2^16)·q_s + r` of
//!   `s`. Draw `k` of a source of `n_s` samples is position `k mod n_s` of
//!   the sampler's shuffled [`EpochOrder`] of `n_s` samples, seed
//!   [`source_seed`]`(seed, epoch, s)` and epoch `k / n_s` (the cycle), so
//!   a source drawn fewer than `n_s` times gives distinct samples, and one
//!   drawn more wraps around in a fresh order each cycle.
//!
//! `locate` is O(1): a table lookup and one keyed permutation.
//!
//! ```
//! use binfmt_taridx::sampler::mixture::Mixture;
//!
//! let mix = Mixture::new(&[0.75, 0.25], &[1000, 10], 4000, 7)?;
//! assert_eq!(mix.quotas(), &[49152, 16384]);
//! let (source, sample) = mix.locate(0, 5).unwrap();
//! assert!(sample < [1000, 10][source]);
//! # Ok::<(), binfmt_taridx::sampler::mixture::MixtureError>(())
//! ```

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use binfmt_core::alloc;

use super::{EpochOrder, MAX_LEN, Shuffle, epoch_key, order_key};

#[cfg(test)]
mod tests;

/// The schedule's period: quotas sum to it, and positions `i` and
/// `i + PERIOD` belong to the same source.
pub const PERIOD: u64 = 1 << 16;

/// The most sources a mixture holds.
pub const MAX_SOURCES: usize = 1 << 16;

/// What building a mixture can fail with; each names the source at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MixtureError {
    /// No sources.
    #[error("a mixture needs at least one source")]
    NoSources,
    /// More than [`MAX_SOURCES`] sources.
    #[error("{count} sources: a mixture holds at most 65536")]
    TooManySources {
        /// The sources given.
        count: usize,
    },
    /// Not one weight a source.
    #[error("{weights} weights for {sources} sources: give one weight a source")]
    Count {
        /// The weights given.
        weights: usize,
        /// The sources given.
        sources: usize,
    },
    /// A weight that is negative, infinite or NaN.
    #[error("weight {weight} of source {number}: weights are finite and >= 0")]
    Weight {
        /// The source's number.
        number: usize,
        /// Its weight.
        weight: f64,
    },
    /// No positive weight.
    #[error("every weight is 0: at least one source needs a positive weight")]
    NoWeight,
    /// A positive weight too small to get a slot of the period.
    #[error(
        "weight {weight} of source {number} is {share:e} of the total, below the schedule's \
         resolution of 1/65536: it would never be drawn (give it 0, or more)"
    )]
    TooLight {
        /// The source's number.
        number: usize,
        /// Its weight.
        weight: f64,
        /// Its share of the total.
        share: f64,
    },
    /// A source of positive weight and no samples.
    #[error("source {number} has no samples and weight {weight}: it cannot be drawn")]
    EmptySource {
        /// The source's number.
        number: usize,
        /// Its weight.
        weight: f64,
    },
    /// A source longer than [`MAX_LEN`].
    #[error("source {number} has {n} samples: indices are int64, so at most 2**63 - 1")]
    SourceTooLong {
        /// The source's number.
        number: usize,
        /// Its length.
        n: u64,
    },
    /// A budget over [`MAX_LEN`].
    #[error("samples = {samples}: positions are int64, so at most 2**63 - 1")]
    BudgetTooLong {
        /// The budget asked for.
        samples: u64,
    },
    /// The schedule broke its bound at a slot (a bug: never seen).
    #[error("internal error: the schedule's slot {slot} (source {number}) breaks its bound")]
    Schedule {
        /// The slot.
        slot: u64,
        /// The number of the source placed there.
        number: usize,
    },
    /// Memory refused for the schedule.
    #[error(transparent)]
    Core(#[from] binfmt_core::Error),
}

/// One slot of the schedule: its source, and how many slots of that
/// source precede it in the period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    source: u16,
    rank: u16,
}

/// A weighted interleaving of sources, the sample budget of an epoch.
#[derive(Clone, Debug)]
pub struct Mixture {
    lengths: Vec<u64>,
    quotas: Vec<u32>,
    table: Vec<Slot>,
    samples: u64,
    seed: u64,
}

/// The seed of source `s`'s orders in epoch `epoch` of a mixture under
/// `seed`: `order_key(epoch_key(seed, epoch), s)`.
pub fn source_seed(seed: u64, epoch: u64, source: u64) -> u64 {
    order_key(epoch_key(seed, epoch), source)
}

/// The quotas of `weights` over [`PERIOD`]: `q_s` proportional to
/// `w_s`, summing to `PERIOD`, by largest remainder (ties to the lower
/// source); 0 exactly for a weight of 0.
pub fn quotas(weights: &[f64]) -> Result<Vec<u32>, MixtureError> {
    if weights.is_empty() {
        return Err(MixtureError::NoSources);
    }
    if weights.len() > MAX_SOURCES {
        return Err(MixtureError::TooManySources {
            count: weights.len(),
        });
    }
    if let Some((source, &weight)) = weights
        .iter()
        .enumerate()
        .find(|(_, w)| !w.is_finite() || **w < 0.0)
    {
        return Err(MixtureError::Weight {
            number: source,
            weight,
        });
    }
    // Scaled by the largest weight first, so the sum (at most 2^16) is
    // finite; IEEE-754 division and sums in source order are the same on
    // every platform.
    let largest = weights.iter().copied().fold(0.0, f64::max);
    if largest <= 0.0 {
        return Err(MixtureError::NoWeight);
    }
    let total: f64 = weights.iter().map(|w| w / largest).sum();
    let exact: Vec<f64> = weights
        .iter()
        .map(|w| w / largest / total * PERIOD as f64)
        .collect();
    let mut quotas: Vec<u32> = exact.iter().map(|e| e.floor() as u32).collect();
    let given: u64 = quotas.iter().map(|&q| u64::from(q)).sum();
    // The sources of positive weight by decreasing remainder, then number.
    let mut order: Vec<(f64, usize)> = exact
        .iter()
        .zip(weights)
        .enumerate()
        .filter(|(_, (_, w))| **w > 0.0)
        .map(|(s, (e, _))| (e - e.floor(), s))
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let left = PERIOD
        .checked_sub(given)
        .and_then(|l| usize::try_from(l).ok());
    match left {
        Some(left) if left <= order.len() => {
            for &(_, s) in order.iter().take(left) {
                if let Some(q) = quotas.get_mut(s) {
                    *q += 1;
                }
            }
        }
        // Floors of shares summing to 2^16 cannot: a bug.
        _ => return Err(MixtureError::Schedule { slot: 0, number: 0 }),
    }
    let light = weights
        .iter()
        .zip(&quotas)
        .position(|(&w, &q)| w > 0.0 && q == 0);
    if let Some((source, &weight)) = light.and_then(|s| Some((s, weights.get(s)?))) {
        return Err(MixtureError::TooLight {
            number: source,
            weight,
            share: weight / largest / total,
        });
    }
    Ok(quotas)
}

/// The next slot a source is due, for the earliest-deadline rule: its
/// `(c + 1)`-th slot must come by `t - 1 <= ((c + 1)·D - 1)·P / (q·D)`;
/// it compares by `((c + 1)·D - 1) / q`, then by source.
#[derive(Clone, Copy, Debug)]
struct Due {
    numerator: u64,
    quota: u64,
    source: usize,
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> Ordering {
        // Numerators below 2^34, quotas at most 2^16: products fit.
        (self.numerator * other.quota)
            .cmp(&(other.numerator * self.quota))
            .then(self.source.cmp(&other.source))
    }
}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Due {}

/// One period of slots for `quotas` (summing to [`PERIOD`]): Tijdeman's
/// rule with `δ = 1/D`, `D = 2m - 2`: at slot `t = 1, 2, ...`, among the
/// sources released (`t·q·D >= (c·D + 1)·P`: taking the slot keeps
/// `c_s(t) <= t·q/P + 1 - δ`), the one whose deadline (`(t - 1)·q·D <=
/// ((c + 1)·D - 1)·P`: taking a later slot breaks `c_s(t - 1) >=
/// (t - 1)·q/P - (1 - δ)`) comes first, ties to the lower source. Each
/// slot is checked against both bounds.
fn schedule(quotas: &[u32]) -> Result<Vec<Slot>, MixtureError> {
    let mut table: Vec<Slot> = alloc::vec_with_capacity(PERIOD as usize, "a mixture's schedule")?;
    // (source, quota) of the sources of positive quota.
    let active: Vec<(usize, u64)> = quotas
        .iter()
        .enumerate()
        .filter(|(_, q)| **q > 0)
        .map(|(s, &q)| (s, u64::from(q)))
        .collect();
    let mut counts = vec![0u64; quotas.len()];
    if let [(only, _)] = *active.as_slice() {
        // One source: every slot (its rank below 2^16).
        for rank in 0..PERIOD {
            table.push(Slot {
                source: only as u16,
                rank: rank as u16,
            });
        }
        return Ok(table);
    }
    let d = 2 * active.len() as u64 - 2;
    // The first slot t with t·q·D >= (c·D + 1)·P.
    let release = |c: u64, q: u64| ((c * d + 1) * PERIOD).div_ceil(q * d);
    // Waiting: (release slot, source, quota, slots held).
    let mut waiting: BinaryHeap<Reverse<(u64, usize, u64)>> = active
        .iter()
        .map(|&(s, q)| Reverse((release(0, q), s, q)))
        .collect();
    let mut ready: BinaryHeap<Reverse<Due>> = BinaryHeap::new();
    for t in 1..=PERIOD {
        while let Some(&Reverse((r, source, quota))) = waiting.peek() {
            if r > t {
                break;
            }
            waiting.pop();
            let held = counts.get(source).copied().unwrap_or(0);
            ready.push(Reverse(Due {
                numerator: (held + 1) * d - 1,
                quota,
                source,
            }));
        }
        let broken = MixtureError::Schedule {
            slot: t - 1,
            number: 0,
        };
        let Some(Reverse(chosen)) = ready.pop() else {
            return Err(broken);
        };
        let (s, q) = (chosen.source, chosen.quota);
        let Some(held) = counts.get_mut(s) else {
            return Err(broken);
        };
        // Below 2^16 · 2^16 · 2^17 and 2^34 · 2^16: the products fit.
        if (t - 1) * q * d > chosen.numerator * PERIOD || *held >= q {
            return Err(MixtureError::Schedule {
                slot: t - 1,
                number: s,
            });
        }
        table.push(Slot {
            source: s as u16,
            rank: *held as u16,
        });
        *held += 1;
        waiting.push(Reverse((release(*held, q), s, q)));
    }
    Ok(table)
}

impl Mixture {
    /// The mixture of sources of `lengths` samples drawn by `weights`,
    /// `samples` positions an epoch, its orders keyed by `seed`.
    pub fn new(
        weights: &[f64],
        lengths: &[u64],
        samples: u64,
        seed: u64,
    ) -> Result<Self, MixtureError> {
        if weights.len() != lengths.len() {
            return Err(MixtureError::Count {
                weights: weights.len(),
                sources: lengths.len(),
            });
        }
        if samples > MAX_LEN {
            return Err(MixtureError::BudgetTooLong { samples });
        }
        let quotas = quotas(weights)?;
        for (source, (&n, &weight)) in lengths.iter().zip(weights).enumerate() {
            if n > MAX_LEN {
                return Err(MixtureError::SourceTooLong { number: source, n });
            }
            if n == 0 && weight > 0.0 {
                return Err(MixtureError::EmptySource {
                    number: source,
                    weight,
                });
            }
        }
        let table = schedule(&quotas)?;
        Ok(Self {
            lengths: lengths.to_vec(),
            quotas,
            table,
            samples,
            seed,
        })
    }

    /// The sources' quotas of each period of [`PERIOD`] positions.
    pub fn quotas(&self) -> &[u32] {
        &self.quotas
    }

    /// The sources' lengths.
    pub fn lengths(&self) -> &[u64] {
        &self.lengths
    }

    /// The positions of an epoch (its sample budget).
    pub fn len(&self) -> u64 {
        self.samples
    }

    /// Whether an epoch has no positions.
    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The source of `position` and which of its draws it is, for any
    /// position below 2^63 (the schedule repeats past the budget).
    pub fn draw(&self, position: u64) -> Option<(usize, u64)> {
        let slot = self.table.get(usize::try_from(position % PERIOD).ok()?)?;
        let source = usize::from(slot.source);
        let quota = u64::from(*self.quotas.get(source)?);
        let k = (position / PERIOD)
            .checked_mul(quota)?
            .checked_add(u64::from(slot.rank))?;
        Some((source, k))
    }

    /// The source's sample at draw `k` of epoch `epoch`.
    fn sample(&self, epoch: u64, source: usize, k: u64) -> Option<u64> {
        let n = *self.lengths.get(source)?;
        let seed = source_seed(self.seed, epoch, source as u64);
        // A drawn source has 1..=MAX_LEN samples: new never fails.
        EpochOrder::new(n, seed, k.checked_div(n)?, Shuffle::Samples)
            .ok()?
            .get(k % n)
    }

    /// `(source, sample)` at `position` of epoch `epoch`; `None` past the
    /// budget.
    pub fn locate(&self, epoch: u64, position: u64) -> Option<(usize, u64)> {
        if position >= self.samples {
            return None;
        }
        let (source, k) = self.draw(position)?;
        Some((source, self.sample(epoch, source, k)?))
    }

    /// Fills `sources` and `samples` (the same length) with what
    /// positions `first, first + 1, ...` of epoch `epoch` locate; `None`
    /// when they pass the budget or the lengths differ.
    pub fn fill(
        &self,
        epoch: u64,
        first: u64,
        sources: &mut [u32],
        samples: &mut [u64],
    ) -> Option<()> {
        let end = first.checked_add(samples.len() as u64)?;
        if sources.len() != samples.len() || end > self.samples {
            return None;
        }
        for (offset, (source, sample)) in sources.iter_mut().zip(samples).enumerate() {
            let (s, k) = self.draw(first + offset as u64)?;
            *source = s as u32;
            *sample = self.sample(epoch, s, k)?;
        }
        Some(())
    }
}
