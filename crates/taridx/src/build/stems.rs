//! The stems of an index's rows: one entry per run of rows with one
//! stem, their order by hash (sorted runs merged as shards are merged), and
//! the crash ids given from that order.

use std::collections::HashMap;
use std::ops::Range;

use crate::error::{Result, TaridxError};

/// What [`Stems::crash_ids`] found.
#[derive(Debug)]
pub(super) struct CrashIds {
    /// Distinct stems.
    pub(super) distinct: u64,
    /// The crash stems, in id order (id 1 first).
    pub(super) crash_stems: Vec<String>,
    /// Rows (of all `n_rows`) whose crash id is not 0, with their id.
    pub(super) crash_rows: Vec<(Range<usize>, u32)>,
}

/// A run of consecutive rows with one stem.
#[derive(Debug, Clone, Copy)]
pub(super) struct StemRun {
    /// The stem's hash.
    pub(super) key: u64,
    /// The run's first row.
    pub(super) first_row: u64,
    /// Where the run's stem ends in [`Stems::text`] (it starts where the
    /// previous run's ends).
    pub(super) stem_end: u64,
}

/// The stems of a sequence of rows, one per run of rows with one stem:
/// 24 bytes per run plus the stem's text, far less than a map of stems
/// (a hash table of 1 million stems took 48 MB, 72 MB while it grew).
#[derive(Debug, Default)]
pub(super) struct Stems {
    pub(super) runs: Vec<StemRun>,
    pub(super) text: String,
    /// `(hash, run)` of the first runs, in sorted segments (one per scanned
    /// shard, sorted by the thread that scanned it), so that giving crash
    /// ids only merges them.
    pub(super) by_hash: Vec<(u64, u64)>,
    /// The lengths of the sorted runs [`Self::by_hash`] is made of, in
    /// order, each at most half the one before (merged as segments come,
    /// so a merge costs O(n log shards) in all and little is left at the
    /// end); empty when `by_hash` is not known to be made of sorted runs.
    pub(super) sorted_runs: Vec<usize>,
    /// Runs that continue the run before them (a stem whose rows go on
    /// from one shard into the next): the rows' runs of one stem are
    /// `runs.len() - continued`.
    pub(super) continued: u64,
    /// Where two runs of [`Self::by_hash`] are merged.
    pub(super) scratch: Vec<(u64, u64)>,
}

impl Stems {
    /// Notes that row `row` has stem `stem` (hashed to `key`): a new run
    /// unless the last run has that stem.
    pub(super) fn note(&mut self, key: u64, stem: &str, row: u64) {
        let same_as_last = self
            .runs
            .last()
            .is_some_and(|last| last.key == key && self.stem(self.runs.len() - 1) == stem);
        if !same_as_last {
            self.text.push_str(stem);
            self.runs.push(StemRun {
                key,
                first_row: row,
                stem_end: self.text.len() as u64,
            });
        }
    }

    /// The stem of run `run`.
    pub(super) fn stem(&self, run: usize) -> &str {
        let start = run
            .checked_sub(1)
            .and_then(|previous| self.runs.get(previous))
            .map_or(0, |previous| previous.stem_end as usize);
        let end = self
            .runs
            .get(run)
            .map_or(start, |run| run.stem_end as usize);
        self.text.get(start..end).unwrap_or_default()
    }

    /// Sorts every run by hash, into [`Self::by_hash`].
    pub(super) fn sort_by_hash(&mut self) -> Result<()> {
        let covered = self.by_hash.len();
        binfmt_core::alloc::reserve(
            &mut self.by_hash,
            self.runs.len().saturating_sub(covered),
            "taridx stem order",
        )?;
        let rest = self.runs.get(covered..).unwrap_or_default();
        self.by_hash
            .extend((covered as u64..).zip(rest).map(|(run, r)| (r.key, run)));
        let known: usize = self.sorted_runs.iter().sum();
        let runs_known = covered == self.by_hash.len() && known == covered;
        if runs_known && self.sorted_runs.len() <= 3 {
            while self.sorted_runs.len() > 1 {
                self.merge_last_two()?;
            }
        } else if runs_known {
            // Many runs left (merging deferred): sorted on every core.
            // Pairs are distinct, so any sort gives this order.
            use rayon::slice::ParallelSliceMut;
            self.by_hash.par_sort_unstable();
        } else {
            // One shard's stems, on the thread that scanned it.
            self.by_hash.sort_unstable();
        }
        self.sorted_runs = vec![self.by_hash.len()];
        self.scratch = Vec::new();
        Ok(())
    }

    /// Merges the last two sorted runs of [`Self::by_hash`] into one.
    fn merge_last_two(&mut self) -> Result<()> {
        let (Some(right), Some(left)) = (self.sorted_runs.pop(), self.sorted_runs.pop()) else {
            return Ok(());
        };
        let start = self.by_hash.len().saturating_sub(left + right);
        let Some(region) = self.by_hash.get_mut(start..) else {
            return Ok(());
        };
        let (a, b) = region.split_at(left.min(region.len()));
        // Reused from merge to merge: its memory is faulted in once.
        let merged = &mut self.scratch;
        merged.clear();
        binfmt_core::alloc::reserve(merged, region.len(), "taridx stem order")?;
        let (mut a, mut b) = (a.iter().peekable(), b.iter().peekable());
        while let (Some(&&x), Some(&&y)) = (a.peek(), b.peek()) {
            if y < x {
                merged.push(y);
                b.next();
            } else {
                merged.push(x);
                a.next();
            }
        }
        merged.extend(a.chain(b));
        region.copy_from_slice(merged);
        self.sorted_runs.push(left + right);
        Ok(())
    }

    /// Appends `other`, whose rows start at row `first_row`; its run by
    /// hash is merged with the ones before unless `defer` (the merging
    /// thread is behind the scanners: the end sorts what is left on every
    /// core).
    pub(super) fn append(&mut self, other: &Self, first_row: u64, defer: bool) {
        let base_run = self.runs.len() as u64;
        let mine_sorted = self.sorted_runs.iter().sum::<usize>() == self.by_hash.len();
        let theirs_sorted = other.sorted_runs.len() <= 1
            && other.sorted_runs.iter().sum::<usize>() == other.by_hash.len();
        let covered =
            self.by_hash.len() as u64 == base_run && other.by_hash.len() == other.runs.len();
        if covered {
            self.by_hash.extend(
                other
                    .by_hash
                    .iter()
                    .map(|&(key, run)| (key, run + base_run)),
            );
        }
        if !(covered && mine_sorted && theirs_sorted) {
            // Not known to be sorted runs: the end sorts them all.
            self.sorted_runs.clear();
        } else if !other.by_hash.is_empty() {
            self.sorted_runs.push(other.by_hash.len());
        }
        // Merged while the later shards are scanned; each run at most half
        // the one before, so at most log2(shards) wait.
        while let [.., below, top] = self.sorted_runs[..]
            && top * 2 >= below
            && !defer
        {
            // A failed reservation leaves the runs unmerged (the end sorts
            // them all).
            if self.merge_last_two().is_err() {
                self.sorted_runs.clear();
                break;
            }
        }
        if let (Some(last), Some(first)) = (self.runs.last(), other.runs.first())
            && last.key == first.key
            && self.stem(self.runs.len() - 1) == other.stem(0)
        {
            self.continued += 1;
        }
        self.continued += other.continued;
        let base = self.text.len() as u64;
        self.text.push_str(&other.text);
        self.runs.extend(other.runs.iter().map(|run| StemRun {
            key: run.key,
            first_row: run.first_row + first_row,
            stem_end: run.stem_end + base,
        }));
    }

    /// Gives the crash ids of `n_rows` rows: the first stem seen with a
    /// hash is canonical (0); each other stem with that hash gets the next
    /// id in the order the stems were first seen. Returns the number of
    /// distinct stems, the crash stems in id order and the rows whose id
    /// is not 0. Work: a merge of what is left of the runs sorted by hash
    /// (16 bytes per run), then linear.
    pub(super) fn crash_ids(&mut self, n_rows: usize) -> Result<CrashIds> {
        let mut crash_rows = Vec::new();
        self.sort_by_hash()?;
        let order = &self.by_hash;
        let mut distinct = 0u64;
        // (the run where a crash stem first shows, a run with that stem)
        let mut crashing: Vec<(u64, u64)> = Vec::new();
        for group in order.chunk_by(|a, b| a.0 == b.0) {
            distinct += 1;
            let Some((&(_, canonical_run), rest)) = group.split_first() else {
                continue;
            };
            if rest.is_empty() {
                // One run under this hash (the common case): nothing to
                // compare, so its stem is not looked up.
                continue;
            }
            let canonical = self.stem(canonical_run as usize);
            // Built only when a second stem shows under one hash (rare).
            let mut first_seen: HashMap<&str, u64> = HashMap::new();
            for &(_, run) in rest {
                let stem = self.stem(run as usize);
                if stem == canonical {
                    continue;
                }
                let first = *first_seen.entry(stem).or_insert_with(|| {
                    distinct += 1;
                    run
                });
                crashing.push((first, run));
            }
        }
        crashing.sort_unstable();
        let mut crash_stems = Vec::new();
        let mut current: Option<(u64, u32)> = None;
        for (first, run) in crashing {
            let id = match current {
                Some((stem_run, id)) if stem_run == first => id,
                _ => {
                    let id = u32::try_from(crash_stems.len() + 1).map_err(|_| {
                        binfmt_core::Error::LimitExceeded {
                            what: "taridx crash stems (crashid is 32 bits)".into(),
                            value: crash_stems.len() as u64 + 1,
                            limit: u32::MAX.into(),
                        }
                    })?;
                    let stem = self.stem(first as usize);
                    if stem.contains('\n') {
                        return Err(TaridxError::BadName {
                            name: stem.to_owned(),
                            why: "this stem shares its hash with another, and the index's crash-stem block (one stem per line) cannot hold a newline",
                        });
                    }
                    crash_stems.push(stem.to_owned());
                    current = Some((first, id));
                    id
                }
            };
            let start = self
                .runs
                .get(run as usize)
                .map_or(0, |r| r.first_row as usize);
            let end = self
                .runs
                .get(run as usize + 1)
                .map_or(n_rows, |next| next.first_row as usize);
            crash_rows.push((start..end, id));
        }
        Ok(CrashIds {
            distinct,
            crash_stems,
            crash_rows,
        })
    }
}
