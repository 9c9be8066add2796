//! NVIDIA DALI `wds2idx` index files: one text file per shard, one line per
//! sample, each component `ext offset size [name]`.

use std::path::Path;

use binfmt_core::Source;

use super::shared::{foreign, shard_samples};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::format::Row;
use crate::member::check_member;
use crate::tar::{BLOCK, Member};

/// Where `wds2idx` puts the index of `shard` by default: the basename cut
/// at its first `.` that is not its first character, plus `.idx`
/// (`train_0000.tar` → `train_0000.idx`). (A basename with no such dot
/// keeps its whole name, where `wds2idx` drops its last character.)
pub fn dali_index_name(shard: impl AsRef<Path>) -> String {
    let shard = shard.as_ref();
    let base = shard
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cut = base
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '.')
        .map_or(base.len(), |(at, _)| at);
    format!("{}.idx", base.get(..cut).unwrap_or(&base))
}

fn dali_token<'a>(token: &'a str, what: &str, shard: &Path) -> Result<&'a str> {
    if token.is_empty() || token.chars().any(char::is_whitespace) {
        return Err(foreign(
            shard,
            format!("{what} {token:?} cannot be a DALI index token (empty or with whitespace)"),
        ));
    }
    Ok(token)
}

/// The DALI `.idx` text of shard `fid`: `v1.1` from the index alone (no
/// shard read), or `v1.2` with each member's full name when `names` gives
/// them (one header read per member). Offsets are payload offsets
/// (`row offset + 512`), components in row order.
pub fn dali_index<S: Source>(dataset: &Dataset<S>, fid: u16, with_names: bool) -> Result<String> {
    let shard = dataset.shards().set().name(fid);
    let samples = shard_samples(dataset.rows(), fid);
    if samples.is_empty() {
        return Err(foreign(
            &shard,
            "the shard has no members, and a DALI index needs at least one sample",
        ));
    }
    let mut text = format!(
        "{} {}\n",
        if with_names { "v1.2" } else { "v1.1" },
        samples.len()
    );
    for sample in samples {
        let mut line = Vec::with_capacity(sample.len());
        for row in &sample {
            let ext = dali_token(
                dataset.extension(row).unwrap_or_default(),
                "extension",
                &shard,
            )?;
            let mut component = format!("{ext} {} {}", row.payload_offset(), row.size.get());
            if with_names {
                let name = dataset.member_info(row)?.name;
                component.push(' ');
                component.push_str(dali_token(&name, "member name", &shard)?);
            }
            line.push(component);
        }
        text.push_str(&line.join(" "));
        text.push('\n');
    }
    Ok(text)
}

/// The members a DALI `.idx` file lists for `shard`: offsets and sizes from
/// the file, names from it (v1.2) or from each member's tar header (v1.1:
/// one header read per member). Follows DALI's reader: a version of `v1.1`
/// or `v1.2`, a sample count above 0, exactly that many lines of
/// components, payload offsets on 512-byte boundaries inside the shard.
pub fn read_dali_index(
    idx: impl AsRef<Path>,
    text: &str,
    shard: &dyn Source,
) -> Result<Vec<Member>> {
    let idx = idx.as_ref();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let mut head = first.split_whitespace();
    let version = head.next().unwrap_or_default();
    let fields = match version {
        "v1.1" => 3,
        "v1.2" => 4,
        _ => {
            return Err(foreign(
                idx,
                format!("unsupported DALI index version {version:?} (v1.1 and v1.2 are)"),
            ));
        }
    };
    let count: u64 = head
        .next()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| foreign(idx, "the sample count must be a positive number"))?;
    let mut members = Vec::new();
    // Where the previous member ends: the next one's records start there.
    let mut previous_end = 0u64;
    for number in 0..count {
        let line = lines
            .next()
            .ok_or_else(|| foreign(idx, format!("{count} samples declared, {number} present")))?;
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if tokens.is_empty() {
            return Err(foreign(
                idx,
                format!("sample {number}: no extensions provided"),
            ));
        }
        if tokens.len() % fields != 0 {
            return Err(foreign(
                idx,
                format!("sample {number}: could not find all necessary component parameters"),
            ));
        }
        for component in tokens.chunks(fields) {
            let number_at = |at: usize, what: &str| -> Result<u64> {
                component
                    .get(at)
                    .and_then(|token| token.parse().ok())
                    .ok_or_else(|| foreign(idx, format!("sample {number}: bad {what}")))
            };
            let (offset, size) = (number_at(1, "offset")?, number_at(2, "size")?);
            if offset % BLOCK != 0 || offset < BLOCK {
                return Err(foreign(
                    idx,
                    format!(
                        "sample {number}: offset {offset} is not a payload offset (a multiple of 512 after a header)"
                    ),
                ));
            }
            // Inside the shard, whichever version: a v1.2 name is taken
            // from the file, so nothing else would look at the range.
            if offset.checked_add(size).is_none_or(|end| end > shard.len()) {
                return Err(foreign(
                    idx,
                    format!(
                        "sample {number}: offset {offset} + size {size} is past the end of the {}-byte shard",
                        shard.len()
                    ),
                ));
            }
            let header = offset - BLOCK;
            let name = match component.get(3) {
                Some(name) => (*name).to_owned(),
                None => {
                    let mut row = <Row as zerocopy::FromZeros>::new_zeroed();
                    row.offset = header.into();
                    row.size = size.into();
                    check_member(shard, &row, previous_end)
                        .map_err(|failure| failure.at(shard, u64::MAX, &row))?
                        .name
                }
            };
            previous_end = offset
                .saturating_add(size)
                .checked_next_multiple_of(BLOCK)
                .unwrap_or(u64::MAX);
            members.push(Member {
                offset: header,
                size,
                name: name.into_bytes(),
            });
        }
    }
    Ok(members)
}

/// The largest `.idx` read for a shard of `shard_len` bytes: the shard's
/// length plus 1 MiB. A component (`ext offset size name`, at most twice
/// the name plus 44 bytes) is never longer than the tar bytes of its member
/// (a 512-byte header holding names up to 100 bytes, a record holding the
/// name beyond), so a true index never comes near it.
pub fn dali_index_limit(shard_len: u64) -> u64 {
    shard_len.saturating_add(1 << 20)
}

/// [`read_dali_index`] of the file `idx`, read through the input gate (a
/// regular file of at most [`dali_index_limit`] bytes of UTF-8).
pub fn read_dali_index_file(idx: impl AsRef<Path>, shard: &dyn Source) -> Result<Vec<Member>> {
    let idx = idx.as_ref();
    let text =
        binfmt_core::input::read_to_string(idx, dali_index_limit(shard.len()), "DALI index")?;
    read_dali_index(idx, &text, shard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dali_index_names_follow_wds2idx() {
        assert_eq!(
            dali_index_name(Path::new("a/shard-000.tar")),
            "shard-000.idx"
        );
        assert_eq!(dali_index_name(Path::new("data.train.tar")), "data.idx");
        assert_eq!(dali_index_name(Path::new(".hidden.tar")), ".hidden.idx");
    }

    /// Found by the `dali_idx` fuzz target (tests/regressions/dali_idx/):
    /// a v1.2 line names its member, so no header is read, and its range
    /// must still lie inside the shard.
    #[test]
    fn a_named_member_past_the_shard_is_refused() {
        let shard = binfmt_core::ByteSource::from_vec(vec![0; 1024], "s.tar");
        for text in [
            "v1.2 1\njpg 1000000000000000 0 a.jpg\n",
            "v1.2 1\njpg 512 513 a.jpg\n",
        ] {
            let error = read_dali_index("s.idx", text, &shard).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("past the end of the 1024-byte shard"),
                "{error}"
            );
        }
        assert!(read_dali_index("s.idx", "v1.2 1\njpg 512 512 a.jpg\n", &shard).is_ok());
        let root = env!("CARGO_MANIFEST_DIR");
        let found =
            format!("{root}/../../tests/regressions/dali_idx/v1.2-member-past-an-empty-shard.bin");
        let bytes = std::fs::read(found).unwrap();
        let (text, empty) = (
            String::from_utf8_lossy(&bytes),
            binfmt_core::ByteSource::from_vec(Vec::new(), "e.tar"),
        );
        assert!(read_dali_index("e.idx", &text, &empty).is_err());
    }
}
