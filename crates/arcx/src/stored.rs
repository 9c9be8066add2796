//! The stored manifest: the footer and the manifest region before it, read
//! in one piece, checked (sizes, CRC32 or the tool's copy) and
//! decompressed within bounds. Opening an archive, finding one file and
//! listing all share it; what the rows mean is left to them.

use std::borrow::Cow;
use std::io;

use binfmt_core::{Region, Source, SourceExt};
use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer};

use crate::block;
use crate::error::{ArcxError, Result};
use crate::format::{
    Dialect, FOOTER_MAGIC, FOOTER_SIZE, Footer, HEADER_SIZE, MANIFEST_MAGIC, crc32,
};
use crate::limits::Limits;

/// Decompresses the zstd frames in `stored`, failing once the output passes
/// `limit` bytes: the output grows as it is produced, never by a declared
/// size. zstd writes straight into the output's spare room; the first room
/// is a multiple of the bytes present ([`FIRST_ROOM_PER_STORED_BYTE`], within
/// `limit`), and when a frame's stated size fits in it zstd decodes the frame
/// in one pass, with no window buffer and no copy (a frame whose content is
/// not its stated size is refused by zstd either way).
fn decompress_bounded(stored: &[u8], limit: u64) -> io::Result<Vec<u8>> {
    block::with_context(|context| decompress_bounded_with(context, stored, limit))
}

/// [`decompress_bounded`] with a decompression context in its initial
/// state.
fn decompress_bounded_with(
    context: &mut DCtx<'_>,
    stored: &[u8],
    limit: u64,
) -> io::Result<Vec<u8>> {
    let zstd_error = |code| io::Error::other(zstd::zstd_safe::get_error_name(code));
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut input = InBuffer::around(stored);
    let mut out = Vec::new();
    let mut room = stored
        .len()
        .saturating_mul(FIRST_ROOM_PER_STORED_BYTE)
        .max(MIN_ROOM);
    loop {
        // At the limit, one byte more (into a byte of its own, not the
        // output) tells "exactly the limit" from "beyond".
        let mut probe = [0u8; 1];
        let full = out.len() == out.capacity() && out.len() >= cap;
        if out.len() == out.capacity() && !full {
            room = room.min(cap);
            out.try_reserve_exact(room - out.len())
                .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
            room = room.saturating_mul(2);
        }
        let (hint, room_left) = if full {
            let mut output = OutBuffer::around(&mut probe[..]);
            let hint = context
                .decompress_stream(&mut output, &mut input)
                .map_err(zstd_error)?;
            if output.pos() > 0 {
                return Err(beyond(stored.len(), limit));
            }
            (hint, true)
        } else {
            let at = out.len();
            let mut output = OutBuffer::around_pos(&mut out, at);
            let hint = context
                .decompress_stream(&mut output, &mut input)
                .map_err(zstd_error)?;
            (hint, output.pos() < output.capacity())
        };
        if out.len() > cap {
            return Err(beyond(stored.len(), limit));
        }
        let consumed = input.pos() == stored.len();
        if hint == 0 && consumed {
            return Ok(out);
        }
        // A frame ended with bytes left: zstd starts the next frame on the
        // next call. No input left, room left, and the frame not done: the
        // input ends inside a frame.
        if hint != 0 && consumed && room_left {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "incomplete frame",
            ));
        }
    }
}

/// The output's first room per stored byte: real manifests decompress to
/// 1.5–20 times their stored size, and room that is never written costs no
/// memory (it is address space until touched).
const FIRST_ROOM_PER_STORED_BYTE: usize = 8;
/// The smallest first room.
const MIN_ROOM: usize = 64 << 10;

fn beyond(stored: usize, limit: u64) -> io::Error {
    io::Error::other(format!(
        "{stored} stored bytes decompress beyond {limit} bytes (limits: max_manifest_size, max_manifest_ratio)"
    ))
}

pub(crate) fn manifest_error(error: binfmt_core::Error) -> ArcxError {
    ArcxError::Manifest(error)
}

fn zstd_manifest(error: io::Error) -> ArcxError {
    manifest_error(binfmt_core::Error::corrupt("zstd frame", error.to_string()))
}

fn too_large(what: &'static str, value: u64, limit: u64) -> ArcxError {
    ArcxError::Core(binfmt_core::Error::LimitExceeded {
        what: what.into(),
        value,
        limit,
    })
}

/// What opening reads before walking the manifest: the footer, and the
/// manifest region before it (one read: both dialects put the manifest,
/// the tool's with its copy, right before the footer), checked and
/// decompressed.
pub(crate) struct Stored<'s> {
    pub(crate) dialect: Dialect,
    pub(crate) footer: Footer,
    pub(crate) manifest_offset: u64,
    /// Bytes from the manifest offset to the footer.
    pub(crate) region_len: u64,
    pub(crate) region: Region<'s>,
    /// The manifest decompressed, or (an uncompressed arcx-cli manifest)
    /// where it lies in `region`.
    pub(crate) decompressed: Option<Vec<u8>>,
    raw: std::ops::Range<usize>,
}

impl<'s> Stored<'s> {
    /// Reads and checks the footer and the manifest region of `source`.
    pub(crate) fn read<S: Source>(source: &'s S, limits: &Limits) -> Result<Self> {
        let len = source.len();
        if len < (HEADER_SIZE + FOOTER_SIZE) as u64 {
            return Err(binfmt_core::Error::Truncated {
                what: "ARCX archive (an 80-byte header and a 40-byte footer)".into(),
                offset: 0,
                needed: (HEADER_SIZE + FOOTER_SIZE) as u64,
                available: len,
            }
            .into());
        }
        let footer_at = len - FOOTER_SIZE as u64;
        let footer: Footer = source.record_at(footer_at)?;
        if footer.magic != FOOTER_MAGIC {
            return Err(binfmt_core::Error::bad_magic(
                "ARCX footer (the archive is truncated or not ARCX)",
                footer_at,
                &FOOTER_MAGIC,
                &footer.magic,
            )
            .into());
        }
        let manifest_offset = footer.manifest_offset.get();
        if manifest_offset < HEADER_SIZE as u64 || manifest_offset >= footer_at {
            return Err(manifest_error(binfmt_core::Error::OutOfBounds {
                what: "manifest offset".into(),
                offset: manifest_offset,
                len: 0,
                file_size: footer_at,
            }));
        }
        let region_len = footer_at - manifest_offset;
        let region_limit = 2 * (limits.max_manifest_stored + 4);
        if region_len > region_limit {
            return Err(too_large("stored manifest", region_len, region_limit));
        }
        let region = source.region_at(manifest_offset, region_len, "manifest")?;
        // What sits at the manifest offset tells the dialects apart: the
        // spec's manifest starts with its magic, the tool's with a length.
        let (dialect, decompressed, raw) = if region.starts_with(&MANIFEST_MAGIC) {
            if footer.field_16.get() != region_len {
                return Err(manifest_error(binfmt_core::Error::corrupt(
                    "footer",
                    format!(
                        "says the manifest is {} bytes, but {region_len} bytes lie between its start and the footer",
                        footer.field_16.get()
                    ),
                )));
            }
            let body = spec_manifest(&region, &footer, limits)?;
            (Dialect::Spec, Some(body), 0..0)
        } else {
            match cli_manifest(&region, &footer, manifest_offset, limits)? {
                Cow::Owned(body) => (Dialect::ArcxCli, Some(body), 0..0),
                Cow::Borrowed(raw) => {
                    let start = (raw.as_ptr() as usize).saturating_sub(region.as_ptr() as usize);
                    (Dialect::ArcxCli, None, start..start + raw.len())
                }
            }
        };
        Ok(Self {
            dialect,
            footer,
            manifest_offset,
            region_len,
            region,
            decompressed,
            raw,
        })
    }

    /// The manifest's rows: the spec body, or the arcx-cli raw manifest.
    pub(crate) fn body(&self) -> &[u8] {
        match &self.decompressed {
            Some(body) => body,
            None => self.region.get(self.raw.clone()).unwrap_or_default(),
        }
    }
}

/// The spec manifest's body, decompressed.
fn spec_manifest(region: &[u8], footer: &Footer, limits: &Limits) -> Result<Vec<u8>> {
    let size = region.len() as u64;
    if size > limits.max_manifest_stored {
        return Err(too_large(
            "stored manifest",
            size,
            limits.max_manifest_stored,
        ));
    }
    let found = crc32(region);
    let expected = footer.field_28.get();
    if found != expected {
        return Err(ArcxError::ManifestChecksum { expected, found });
    }
    let compressed = region.get(MANIFEST_MAGIC.len()..).unwrap_or_default();
    let budget = limits.manifest_budget(compressed.len() as u64);
    let body = decompress_bounded(compressed, budget).map_err(zstd_manifest)?;
    Ok(body)
}

/// The tool's region: u32 length, the manifest, then the same again
/// (the copy it calls the index), then the footer. Returns the raw
/// manifest (`MFv2` ...), decompressed when it is compressed.
fn cli_manifest<'r>(
    region: &'r [u8],
    footer: &Footer,
    manifest_offset: u64,
    limits: &Limits,
) -> Result<Cow<'r, [u8]>> {
    let length = region
        .first_chunk::<4>()
        .map_or(0, |bytes| u64::from(u32::from_le_bytes(*bytes)));
    if length > limits.max_manifest_stored {
        return Err(too_large(
            "stored manifest",
            length,
            limits.max_manifest_stored,
        ));
    }
    let framed = 4 + length;
    let index_offset = footer.field_16.get();
    if index_offset != manifest_offset + framed || region.len() as u64 != 2 * framed {
        return Err(manifest_error(binfmt_core::Error::corrupt(
            "manifest",
            format!(
                "{} bytes lie between the manifest and the footer, which puts the copy at {index_offset}; a {length}-byte manifest and its copy take {} with the copy at {}",
                region.len(),
                2 * framed,
                manifest_offset + framed
            ),
        )));
    }
    let (first, copy) = region.split_at(framed as usize);
    // Nothing checksums this manifest, but the tool writes it twice: a
    // byte flipped in either copy shows as a difference.
    if first != copy {
        return Err(manifest_error(binfmt_core::Error::corrupt(
            "manifest",
            "the manifest and its copy (the index) differ",
        )));
    }
    let (&flags, payload) = first
        .get(4..)
        .unwrap_or_default()
        .split_first()
        .ok_or_else(|| {
            manifest_error(binfmt_core::Error::corrupt(
                "manifest",
                "empty manifest region",
            ))
        })?;
    if flags & 0x01 != 0 {
        let budget = limits.manifest_budget(payload.len() as u64);
        let raw = decompress_bounded(payload, budget).map_err(zstd_manifest)?;
        Ok(Cow::Owned(raw))
    } else {
        Ok(Cow::Borrowed(payload))
    }
}

/// The spec footer's total_files must be the file table's count.
pub(crate) fn check_total_files(dialect: Dialect, footer: &Footer, files: u64) -> Result<()> {
    if dialect == Dialect::Spec && u64::from(footer.field_24.get()) != files {
        return Err(manifest_error(binfmt_core::Error::corrupt(
            "footer",
            format!(
                "total_files is {} but the manifest lists {files} files",
                footer.field_24.get(),
            ),
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::decompress_bounded;

    /// A frame whose header states `stated` bytes for 100 bytes of content
    /// (a one-byte content size field: single segment, no dictionary).
    fn frame_stating(stated: u8) -> Vec<u8> {
        let mut frame = zstd::bulk::compress(&[b'a'; 100], 3).unwrap();
        assert_eq!(frame[4], 0x20, "single-segment header with a 1-byte size");
        frame[5] = stated;
        frame
    }

    #[test]
    fn a_frame_whose_stated_size_is_not_its_content_is_refused() {
        assert_eq!(
            decompress_bounded(&frame_stating(100), 1 << 20).unwrap(),
            [b'a'; 100]
        );
        for lie in [0, 1, 50, 99, 101, 200] {
            assert!(
                decompress_bounded(&frame_stating(lie), 1 << 20).is_err(),
                "{lie}"
            );
        }
    }

    #[test]
    fn output_beyond_the_limit_is_refused_whatever_the_frame_states() {
        let frame = zstd::bulk::compress(&[0u8; 4096], 3).unwrap();
        assert!(decompress_bounded(&frame, 4095).is_err());
        assert_eq!(decompress_bounded(&frame, 4096).unwrap().len(), 4096);
        let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        encoder.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut encoder, &[0u8; 4096]).unwrap();
        let unstated = encoder.finish().unwrap();
        assert!(matches!(
            zstd::zstd_safe::get_frame_content_size(&unstated),
            Ok(None)
        ));
        assert!(decompress_bounded(&unstated, 4095).is_err());
        assert_eq!(decompress_bounded(&unstated, 4096).unwrap().len(), 4096);
    }

    /// What zstd's own streaming reader makes of `stored` (every frame,
    /// output capped at `limit` + 1 bytes).
    fn by_zstd_reader(stored: &[u8], limit: u64) -> Result<Vec<u8>, ()> {
        use std::io::Read;
        let decoder = zstd::stream::read::Decoder::new(stored).map_err(|_| ())?;
        let mut out = Vec::new();
        decoder
            .take(limit.saturating_add(1))
            .read_to_end(&mut out)
            .map_err(|_| ())?;
        if out.len() as u64 > limit {
            return Err(());
        }
        Ok(out)
    }

    #[test]
    fn every_truncation_and_byte_flip_ends_as_with_zstds_reader() {
        let text: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("line {} of {}\n", i % 977, i % 13).into_bytes())
            .collect();
        let mut unstated = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        unstated.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut unstated, &text[..5000]).unwrap();
        let small = zstd::bulk::compress(&text[..3000], 3).unwrap();
        // One frame decoded in one pass (it fits the first room), one far
        // larger than its stored size (streamed), one without a stated size.
        for stored in [
            small.clone(),
            zstd::bulk::compress(&text, 9).unwrap(),
            [small, unstated.finish().unwrap()].concat(),
        ] {
            for limit in [u64::MAX, text.len() as u64 - 1, 4000] {
                let check = |input: &[u8]| {
                    assert_eq!(
                        decompress_bounded(input, limit).map_err(|_| ()),
                        by_zstd_reader(input, limit),
                        "{} bytes, limit {limit}",
                        input.len()
                    );
                };
                for end in (0..stored.len()).step_by(7).chain([stored.len()]) {
                    check(&stored[..end]);
                }
                for at in (0..stored.len()).step_by(5) {
                    let mut flipped = stored.clone();
                    flipped[at] ^= 0x5a;
                    check(&flipped);
                }
            }
        }
    }
}
