//! Format detection from magic bytes alone.
//!
//! Only the first 512 and the last 40 bytes of a file are read. The checks,
//! in the order they are tried (the first match wins):
//!
//! | format   | evidence                                                      |
//! |----------|---------------------------------------------------------------|
//! | `kast`   | `89 4B 41 53 0D 0A 1A 0A` at byte 0                           |
//! | `taridx` | `TARIDX` + two NUL bytes at byte 0                            |
//! | `arcx`   | `ARCX0001` at byte 0 and `ARCXEND1` within the last 40 bytes  |
//! | `par4`   | `PAR4` at the start of the last 26 bytes                      |
//! | `tar`    | `ustar` at byte 257, or a valid checksum in the first block   |
//!
//! PAR4 is tried before tar because its evidence is structural (a PAR4 file
//! whose first chunk holds a tar file starts like a tar file), while a
//! well-formed tar file ends with zero blocks, never with `PAR4`.

use std::fmt;
use std::path::Path;

use binfmt_core::{FileSource, Result, Source, SourceExt};
use binfmt_taridx::tar;

/// How many bytes from the start of a file sniffing looks at.
pub const HEAD_LEN: usize = tar::BLOCK_SIZE;

/// How many bytes from the end of a file sniffing looks at.
pub const TAIL_LEN: usize = binfmt_arcx::FOOTER_SIZE;

/// A file format `binfmt` recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// A TARIDX index of tar shards.
    Taridx,
    /// An ARCX archive, either dialect.
    Arcx,
    /// A Parcode V4 file.
    Par4,
    /// A kastore file.
    Kast,
    /// A tar archive (ustar, GNU, pax or v7).
    Tar,
    /// None of the above.
    Unknown,
}

impl Format {
    /// The format a file to write is named for, by its extension: `.arcx`,
    /// `.kas` or `.trees`, `.par4`, `.taridx` (what `convert` writes when
    /// no format is given).
    ///
    /// ```
    /// use binfmt::Format;
    ///
    /// assert_eq!(Format::of_extension("out/tables.trees".as_ref()), Some(Format::Kast));
    /// assert_eq!(Format::of_extension("data.zip".as_ref()), None);
    /// ```
    pub fn of_extension(path: &std::path::Path) -> Option<Format> {
        match path.extension()?.to_str()? {
            "arcx" => Some(Format::Arcx),
            "kas" | "trees" => Some(Format::Kast),
            "par4" => Some(Format::Par4),
            "taridx" => Some(Format::Taridx),
            _ => None,
        }
    }

    /// The lower-case name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Taridx => "taridx",
            Self::Arcx => "arcx",
            Self::Par4 => "par4",
            Self::Kast => "kast",
            Self::Tar => "tar",
            Self::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Detects the format of the file at `path`, reading at most its first
/// [`HEAD_LEN`] and last [`TAIL_LEN`] bytes.
pub fn sniff(path: impl AsRef<Path>) -> Result<Format> {
    sniff_source(&FileSource::open(path)?)
}

/// Detects the format of any source, reading at most its first
/// [`HEAD_LEN`] and last [`TAIL_LEN`] bytes.
pub fn sniff_source(source: &(impl Source + ?Sized)) -> Result<Format> {
    let len = source.len();
    let head = source.bytes_at(0, len.min(HEAD_LEN as u64), "file head")?;
    let tail_len = len.min(TAIL_LEN as u64);
    let tail = source.bytes_at(len - tail_len, tail_len, "file tail")?;
    Ok(sniff_bytes(&head, &tail))
}

/// Detects the format of a source read by requests, from its end first: an
/// ARCX footer or a PAR4 header in the last bytes decides without reading
/// the head (a remote archive costs one request fewer); anything else reads
/// the head too, as [`sniff_source`] does.
pub fn sniff_tail_first(source: &(impl Source + ?Sized)) -> Result<Format> {
    let len = source.len();
    let tail_len = len.min(TAIL_LEN as u64);
    let tail = source.bytes_at(len - tail_len, tail_len, "file tail")?;
    if is_par4_tail(&tail) {
        return Ok(Format::Par4);
    }
    if tail.starts_with(&binfmt_arcx::FOOTER_MAGIC) && tail_len == TAIL_LEN as u64 {
        return Ok(Format::Arcx);
    }
    let head = source.bytes_at(0, len.min(HEAD_LEN as u64), "file head")?;
    Ok(sniff_bytes(&head, &tail))
}

/// Detects a format from a file's first bytes (`head`, up to [`HEAD_LEN`])
/// and last bytes (`tail`, up to [`TAIL_LEN`]). For a file shorter than
/// either window, pass the whole file as both.
pub fn sniff_bytes(head: &[u8], tail: &[u8]) -> Format {
    let tail = tail
        .get(tail.len().saturating_sub(TAIL_LEN)..)
        .unwrap_or(tail);
    if head.starts_with(&binfmt_kastore::SIGNATURE) {
        Format::Kast
    } else if head.starts_with(&binfmt_taridx::MAGIC) {
        Format::Taridx
    } else if head.starts_with(&binfmt_arcx::HEADER_MAGIC)
        && contains(tail, &binfmt_arcx::FOOTER_MAGIC)
    {
        Format::Arcx
    } else if is_par4_tail(tail) {
        Format::Par4
    } else if is_tar_head(head) {
        Format::Tar
    } else {
        Format::Unknown
    }
}

fn is_par4_tail(tail: &[u8]) -> bool {
    tail.len() >= binfmt_parcode::GLOBAL_HEADER_SIZE
        && tail
            .get(tail.len() - binfmt_parcode::GLOBAL_HEADER_SIZE..)
            .is_some_and(|header| header.starts_with(&binfmt_parcode::MAGIC))
}

fn is_tar_head(head: &[u8]) -> bool {
    let magic_end = tar::USTAR_MAGIC_OFFSET + tar::USTAR_MAGIC.len();
    if head.get(tar::USTAR_MAGIC_OFFSET..magic_end) == Some(&tar::USTAR_MAGIC[..]) {
        return true;
    }
    head.get(..tar::BLOCK_SIZE)
        .and_then(|block| <&[u8; tar::BLOCK_SIZE]>::try_from(block).ok())
        .is_some_and(tar::checksum_is_valid)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniff_whole(bytes: &[u8]) -> Format {
        let head = &bytes[..bytes.len().min(HEAD_LEN)];
        sniff_bytes(head, bytes)
    }

    #[test]
    fn every_prefix_of_every_magic_is_unknown_without_panicking() {
        let samples: [&[u8]; 4] = [
            &binfmt_kastore::SIGNATURE,
            &binfmt_taridx::MAGIC,
            &binfmt_arcx::HEADER_MAGIC,
            &binfmt_parcode::MAGIC,
        ];
        for sample in samples {
            for cut in 0..sample.len() {
                assert_eq!(
                    sniff_whole(&sample[..cut]),
                    Format::Unknown,
                    "{:?}",
                    &sample[..cut]
                );
            }
        }
    }

    #[test]
    fn arcx_needs_both_ends() {
        let mut bytes = binfmt_arcx::HEADER_MAGIC.to_vec();
        bytes.resize(200, 0);
        assert_eq!(sniff_whole(&bytes), Format::Unknown);
        bytes.extend_from_slice(&binfmt_arcx::FOOTER_MAGIC);
        bytes.resize(bytes.len() + 32, 0);
        assert_eq!(sniff_whole(&bytes), Format::Arcx);
    }

    #[test]
    fn par4_magic_must_start_the_last_26_bytes() {
        let mut bytes = vec![0u8; 10];
        bytes.extend_from_slice(&binfmt_parcode::MAGIC);
        bytes.resize(10 + binfmt_parcode::GLOBAL_HEADER_SIZE, 0);
        assert_eq!(sniff_whole(&bytes), Format::Par4);
        bytes.push(0);
        assert_eq!(sniff_whole(&bytes), Format::Unknown);
    }

    #[test]
    fn ustar_magic_alone_is_tar() {
        let mut bytes = vec![0u8; 300];
        bytes[257..262].copy_from_slice(b"ustar");
        assert_eq!(sniff_whole(&bytes), Format::Tar);
    }

    #[test]
    fn a_zero_block_is_not_tar() {
        assert_eq!(sniff_whole(&[0; 1024]), Format::Unknown);
    }
}
