//! What the three foreign readers share, below all of them: the error a
//! foreign index that does not fit gives, and a shard's rows grouped into
//! samples (runs of one key), the unit wids and DALI count.

use std::path::Path;

use crate::error::TaridxError;
use crate::format::Row;

/// A [`TaridxError::Foreign`]: `file` does not fit its format or the
/// shards, `why`.
pub(super) fn foreign(file: &Path, why: impl Into<String>) -> TaridxError {
    TaridxError::Foreign {
        file: file.to_owned(),
        why: why.into(),
    }
}

/// The rows of shard `fid`, in row order, grouped into samples (runs of one
/// key).
pub fn shard_samples(rows: &[Row], fid: u16) -> Vec<Vec<Row>> {
    let mut samples: Vec<Vec<Row>> = Vec::new();
    for row in rows.iter().filter(|row| row.fid.get() == fid) {
        match samples.last_mut() {
            Some(sample) if sample.last().map(Row::key) == Some(row.key()) => sample.push(*row),
            _ => samples.push(vec![*row]),
        }
    }
    samples
}
