//! Shards given as patterns, the way WebDataset users write shard lists:
//! brace ranges and lists (`train-{000000..000099}.tar`, `{train,val}_0.tar`,
//! as webdataset's `braceexpand` and bash read them) and globs (`*.tar`,
//! `shard-??????.tar`, `[ab]_*.tar`).
//!
//! ```text
//! "data/train-{000000..000002}.tar" → data/train-000000.tar
//!                                     data/train-000001.tar
//!                                     data/train-000002.tar
//! "data/*.tar"                      → every .tar in data/, sorted by name
//! ```

use std::path::{Path, PathBuf};

use crate::error::{Result, TaridxError};

/// The most shards a TARIDX index numbers (its fid is 16 bits).
const MAX_SHARDS: usize = 1 << 16;

/// The shards `patterns` name, in order: an argument that names an
/// existing file is taken as it is (a file may hold `{` or `*`); any other
/// has its braces expanded, then each result that holds `*`, `?` or `[`
/// is matched as a glob (matches sorted by name; `*` never crosses a `/`
/// nor matches a leading `.`), the rest taken as they are. A glob that
/// matches nothing and more shards than an index can number (65,536) are
/// errors; an argument that is not UTF-8 is taken as it is.
///
/// # Examples
///
/// ```
/// use std::path::PathBuf;
///
/// let shards = binfmt_taridx::expand_shard_patterns(["data/t-{0..2}.tar"])?;
/// assert_eq!(shards, ["data/t-0.tar", "data/t-1.tar", "data/t-2.tar"].map(PathBuf::from));
/// # Ok::<(), binfmt_taridx::TaridxError>(())
/// ```
pub fn expand_shard_patterns<P: AsRef<Path>>(
    patterns: impl IntoIterator<Item = P>,
) -> Result<Vec<PathBuf>> {
    let mut shards = Vec::new();
    for pattern in patterns {
        let pattern = pattern.as_ref();
        let text = match pattern.to_str() {
            Some(text) if std::fs::symlink_metadata(pattern).is_err() => text,
            _ => {
                shards.push(pattern.to_owned());
                continue;
            }
        };
        // One more than allowed, so that a cut expansion is seen as too many.
        for name in brace_expansion::expand_with_max(text, MAX_SHARDS + 1) {
            if name.contains(['*', '?', '[']) {
                expand_glob(&name, &mut shards)?;
            } else {
                shards.push(PathBuf::from(name));
            }
            if shards.len() > MAX_SHARDS {
                return Err(TaridxError::TooManyShards {
                    count: shards.len(),
                });
            }
        }
    }
    Ok(shards)
}

/// Appends the files `pattern` matches, sorted by name.
fn expand_glob(pattern: &str, shards: &mut Vec<PathBuf>) -> Result<()> {
    let bad = |why: String| TaridxError::Pattern {
        pattern: pattern.to_owned(),
        why,
    };
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: true,
    };
    let matches = glob::glob_with(pattern, options).map_err(|error| bad(error.to_string()))?;
    let before = shards.len();
    for found in matches.take(MAX_SHARDS + 1) {
        shards.push(found.map_err(|error| bad(error.to_string()))?);
    }
    if shards.len() == before {
        return Err(bad("no file matches it".into()));
    }
    Ok(())
}
