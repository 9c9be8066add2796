//! Reading an archive of either dialect through one API.
//!
//! Opening reads the footer, then the manifest, and checks every reference
//! in it (work proportional to the number of files, never to the data).
//! Reading a file decompresses only the blocks that hold it, checks each
//! block's CRC32 before decompressing it, bounds the output by the block's
//! declared size, and checks the file's SHA-256.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

use binfmt_core::extract::safe_target;
use binfmt_core::layout::Record;
use binfmt_core::{AtomicFile, ByteSource, IoResultExt};
use sha2::{Digest, Sha256};

use crate::error::{ArcxError, Result};
use crate::format::{
    Codec, Dialect, FOOTER_MAGIC, FOOTER_SIZE, Footer, HEADER_MAGIC, HEADER_SIZE, Header,
    MANIFEST_MAGIC, crc32,
};
use crate::manifest::{BlockRecord, FileRecord, Manifest};

/// Bounds a reader enforces against hostile archives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest manifest, as stored (default 256 MiB).
    pub max_manifest_stored: u64,
    /// The largest manifest once decompressed (default 1 GiB).
    pub max_manifest_size: u64,
    /// The largest block once decompressed (default 256 MiB).
    pub max_block_size: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_manifest_stored: 256 << 20,
            max_manifest_size: 1 << 30,
            max_block_size: 256 << 20,
        }
    }
}

/// An archive whose footer, manifest and references have been checked.
#[derive(Debug)]
pub struct Archive<S = ByteSource> {
    source: S,
    dialect: Dialect,
    manifest: Manifest,
    by_path: HashMap<String, usize>,
    limits: Limits,
}

impl Archive<ByteSource> {
    /// Opens the archive at `path`, memory-mapped when possible.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::new(ByteSource::open(path)?)
    }
}

fn ascii(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

fn manifest_error(error: binfmt_core::Error) -> ArcxError {
    ArcxError::Manifest(error)
}

/// Decompresses one zstd frame, failing once the output passes `limit`
/// bytes: the output grows as it is produced, never by a declared size.
fn decompress_bounded(stored: &[u8], limit: u64) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    zstd::stream::read::Decoder::new(stored)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "decompresses beyond {limit} bytes"
        )));
    }
    Ok(out)
}

impl<S: AsRef<[u8]>> Archive<S> {
    /// Checks the archive held in `source` with the default [`Limits`].
    pub fn new(source: S) -> Result<Self> {
        Self::with_limits(source, Limits::default())
    }

    /// Checks the archive held in `source`.
    pub fn with_limits(source: S, limits: Limits) -> Result<Self> {
        let bytes = source.as_ref();
        let len = bytes.len() as u64;
        if len < (HEADER_SIZE + FOOTER_SIZE) as u64 {
            return Err(ArcxError::TooShort { len });
        }
        let header = Header::ref_at(bytes, 0)?;
        if header.magic != HEADER_MAGIC {
            return Err(ArcxError::BadHeaderMagic {
                found: ascii(&header.magic),
            });
        }
        let (major, minor) = (header.version_major.get(), header.version_minor.get());
        if major != 0 {
            return Err(ArcxError::UnsupportedVersion { major, minor });
        }
        let footer_at = len - FOOTER_SIZE as u64;
        let footer = Footer::ref_at(bytes, footer_at)?;
        if footer.magic != FOOTER_MAGIC {
            return Err(ArcxError::BadFooterMagic {
                found: ascii(&footer.magic),
            });
        }
        let manifest_offset = footer.manifest_offset.get();
        if manifest_offset < HEADER_SIZE as u64 || manifest_offset >= footer_at {
            return Err(ArcxError::Manifest(binfmt_core::Error::OutOfBounds {
                what: "manifest offset".into(),
                offset: manifest_offset,
                len: 0,
                file_size: footer_at,
            }));
        }
        // What sits at the manifest offset tells the dialects apart: the
        // spec's manifest starts with its magic, the tool's with a length.
        let region_start = bytes
            .get(manifest_offset as usize..footer_at as usize)
            .unwrap_or_default();
        let (dialect, manifest) = if region_start.starts_with(&MANIFEST_MAGIC) {
            (
                Dialect::Spec,
                Self::spec_manifest(bytes, footer, footer_at, &limits)?,
            )
        } else {
            (
                Dialect::ArcxCli,
                Self::cli_manifest(bytes, header, footer, footer_at, &limits)?,
            )
        };
        if dialect == Dialect::Spec
            && u64::from(footer.field_24.get()) != manifest.files.len() as u64
        {
            return Err(manifest_error(binfmt_core::Error::corrupt(
                "footer",
                format!(
                    "total_files is {} but the manifest lists {} files",
                    footer.field_24.get(),
                    manifest.files.len()
                ),
            )));
        }
        let by_path = check_references(&manifest, manifest_offset, &limits)?;
        Ok(Self {
            source,
            dialect,
            manifest,
            by_path,
            limits,
        })
    }

    fn spec_manifest(
        bytes: &[u8],
        footer: &Footer,
        footer_at: u64,
        limits: &Limits,
    ) -> Result<Manifest> {
        let (offset, size) = (footer.manifest_offset.get(), footer.field_16.get());
        if size > limits.max_manifest_stored {
            return Err(ArcxError::ManifestTooLarge {
                size,
                limit: limits.max_manifest_stored,
            });
        }
        let region = binfmt_core::range::slice_at(
            bytes.get(..footer_at as usize).unwrap_or_default(),
            offset,
            size,
            "manifest",
        )
        .map_err(manifest_error)?;
        let found = crc32(region);
        let expected = footer.field_28.get();
        if found != expected {
            return Err(ArcxError::ManifestChecksum { expected, found });
        }
        let compressed = region.get(MANIFEST_MAGIC.len()..).unwrap_or_default();
        let body = decompress_bounded(compressed, limits.max_manifest_size).map_err(|error| {
            manifest_error(binfmt_core::Error::corrupt(
                "manifest",
                format!("zstd: {error}"),
            ))
        })?;
        Manifest::decode_spec_body(&body).map_err(manifest_error)
    }

    fn cli_manifest(
        bytes: &[u8],
        header: &Header,
        footer: &Footer,
        footer_at: u64,
        limits: &Limits,
    ) -> Result<Manifest> {
        let offset = footer.manifest_offset.get();
        let header_bytes = bytes.get(..72).unwrap_or_default();
        let expected = header.tail_2.get();
        let found = u64::from(crc32(header_bytes));
        if expected != found {
            return Err(ArcxError::HeaderChecksum { expected, found });
        }
        let before_footer = bytes.get(..footer_at as usize).unwrap_or_default();
        let length = binfmt_core::range::slice_at(before_footer, offset, 4, "manifest length")
            .map_err(manifest_error)?;
        let size = u64::from(u32::from_le_bytes(length.try_into().unwrap_or_default()));
        if size > limits.max_manifest_stored {
            return Err(ArcxError::ManifestTooLarge {
                size,
                limit: limits.max_manifest_stored,
            });
        }
        let region = binfmt_core::range::slice_at(before_footer, offset + 4, size, "manifest")
            .map_err(manifest_error)?;
        // Nothing checksums this manifest, but the tool writes it twice (the
        // second copy it calls the index): a byte flipped in either copy
        // shows as a difference.
        let index = footer.field_16.get();
        let copy = binfmt_core::range::slice_at(before_footer, index, 4, "manifest copy length")
            .and_then(|length| {
                let length = u32::from_le_bytes(length.try_into().unwrap_or_default());
                binfmt_core::range::slice_at(
                    before_footer,
                    index.saturating_add(4),
                    u64::from(length),
                    "manifest copy",
                )
            })
            .map_err(manifest_error)?;
        if copy != region {
            return Err(manifest_error(binfmt_core::Error::corrupt(
                "manifest",
                "the manifest and its copy (the index) differ",
            )));
        }
        let (&flags, payload) = region.split_first().ok_or_else(|| {
            manifest_error(binfmt_core::Error::corrupt(
                "manifest",
                "empty manifest region",
            ))
        })?;
        let raw = if flags & 0x01 != 0 {
            Cow::Owned(
                decompress_bounded(payload, limits.max_manifest_size).map_err(|error| {
                    manifest_error(binfmt_core::Error::corrupt(
                        "manifest",
                        format!("zstd: {error}"),
                    ))
                })?,
            )
        } else {
            Cow::Borrowed(payload)
        };
        Manifest::decode_cli_raw(&raw).map_err(manifest_error)
    }

    /// Which dialect the archive is in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The whole manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The files, in archive order.
    pub fn files(&self) -> &[FileRecord] {
        &self.manifest.files
    }

    /// The file at `path`.
    pub fn find(&self, path: &str) -> Option<&FileRecord> {
        self.by_path
            .get(path)
            .and_then(|&index| self.manifest.files.get(index))
    }

    /// The archive's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.source.as_ref()
    }

    /// Block `id`, checked against its CRC32 and decompressed (borrowed from
    /// the archive when stored as is).
    pub fn block(&self, id: u64) -> Result<Cow<'_, [u8]>> {
        let block: &BlockRecord =
            self.manifest
                .blocks
                .get(id as usize)
                .ok_or_else(|| ArcxError::BlockData {
                    block: id,
                    why: "no such block".into(),
                })?;
        let bytes = self.bytes();
        let prefix = binfmt_core::range::slice_at(bytes, block.offset, 4, "block size prefix")?;
        let stored_size = u64::from(u32::from_le_bytes(prefix.try_into().unwrap_or_default()));
        if stored_size != block.stored_size {
            return Err(ArcxError::BlockData {
                block: id,
                why: format!(
                    "size prefix {stored_size} disagrees with the manifest's {}",
                    block.stored_size
                ),
            });
        }
        let stored =
            binfmt_core::range::slice_at(bytes, block.offset + 4, block.stored_size, "block")?;
        let found = crc32(stored);
        if found != block.checksum {
            return Err(ArcxError::BlockChecksum {
                block: id,
                expected: block.checksum,
                found,
            });
        }
        let data = match block.codec {
            Codec::Store => Cow::Borrowed(stored),
            Codec::Zstd => Cow::Owned(
                decompress_bounded(stored, block.size.min(self.limits.max_block_size)).map_err(
                    |error| ArcxError::BlockData {
                        block: id,
                        why: format!("zstd: {error}"),
                    },
                )?,
            ),
        };
        if data.len() as u64 != block.size {
            return Err(ArcxError::BlockData {
                block: id,
                why: format!(
                    "decompressed to {} bytes, the manifest says {}",
                    data.len(),
                    block.size
                ),
            });
        }
        Ok(data)
    }

    /// Writes the file at `path` to `out`, decompressing only its blocks,
    /// and checks its SHA-256 (on a mismatch the bytes have been written;
    /// callers writing files should write to a temporary first, as
    /// [`Archive::extract`] does).
    pub fn copy_to(&self, path: &str, out: &mut impl Write) -> Result<u64> {
        let file = self.find(path).ok_or_else(|| ArcxError::NotFound {
            path: path.to_owned(),
        })?;
        self.copy_file(file, &mut None, out)
    }

    /// Writes `file` to `out` through `cache`, the last block decompressed,
    /// so that files sharing a block, read one after another, decompress it
    /// once.
    fn copy_file<'a>(
        &'a self,
        file: &FileRecord,
        cache: &mut Option<(u64, Cow<'a, [u8]>)>,
        out: &mut impl Write,
    ) -> Result<u64> {
        let mut hasher = Sha256::new();
        let mut written = 0u64;
        for &chunk_id in &file.chunks {
            let missing = || ArcxError::NotFound {
                path: file.path.clone(),
            };
            let chunk = self
                .manifest
                .chunks
                .get(chunk_id as usize)
                .ok_or_else(missing)?;
            if cache.as_ref().is_none_or(|(id, _)| *id != chunk.block_id) {
                *cache = Some((chunk.block_id, self.block(chunk.block_id)?));
            }
            let block = cache
                .as_ref()
                .map(|(_, data)| data.as_ref())
                .unwrap_or_default();
            // `check_references` proved the chunk lies inside its block.
            let piece =
                binfmt_core::range::slice_at(block, chunk.block_offset, chunk.size, "chunk")?;
            hasher.update(piece);
            out.write_all(piece).with_path(Path::new(&file.path))?;
            written += chunk.size;
        }
        if hasher.finalize().as_slice() != file.sha256 {
            return Err(ArcxError::FileChecksum {
                path: file.path.clone(),
            });
        }
        Ok(written)
    }

    /// The bytes of the file at `path`.
    pub fn read(&self, path: &str) -> Result<Vec<u8>> {
        let size = self.find(path).map_or(0, |file| file.size);
        let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        self.copy_to(path, &mut out)?;
        Ok(out)
    }

    /// Checks every block (CRC32, decompression) and every file (SHA-256).
    pub fn verify(&self) -> Result<()> {
        for id in 0..self.manifest.blocks.len() as u64 {
            self.block(id)?;
        }
        let mut cache = None;
        for file in &self.manifest.files {
            self.copy_file(file, &mut cache, &mut std::io::sink())?;
        }
        Ok(())
    }

    /// Extracts every file under `dir`, refusing paths that would land
    /// outside it. Each file is written to a temporary and renamed, so a
    /// corrupt file leaves nothing, and an existing symlink at a file's
    /// place is replaced, never followed.
    pub fn extract(&self, dir: &Path) -> Result<usize> {
        let mut cache = None;
        for file in &self.manifest.files {
            let target = safe_target(dir, &file.path)?;
            let mut out = AtomicFile::create(&target)?;
            self.copy_file(file, &mut cache, &mut out)?;
            out.commit()?;
        }
        Ok(self.manifest.files.len())
    }
}

/// Checks that every id points inside its table, every block inside the
/// data region, every chunk inside its block, and every file's chunks add
/// up to its size; returns the path index.
fn check_references(
    manifest: &Manifest,
    data_end: u64,
    limits: &Limits,
) -> Result<HashMap<String, usize>> {
    let corrupt =
        |what: String, why: String| ArcxError::Manifest(binfmt_core::Error::corrupt(what, why));
    for (id, block) in manifest.blocks.iter().enumerate() {
        let end = block
            .offset
            .checked_add(4)
            .and_then(|start| start.checked_add(block.stored_size));
        if block.offset < HEADER_SIZE as u64 || end.is_none_or(|end| end > data_end) {
            return Err(corrupt(
                format!("block {id}"),
                format!(
                    "{} stored bytes at {} are outside the data region (80..{data_end})",
                    block.stored_size, block.offset
                ),
            ));
        }
        if block.size > limits.max_block_size {
            return Err(corrupt(
                format!("block {id}"),
                format!(
                    "{} bytes exceed the {}-byte block limit",
                    block.size, limits.max_block_size
                ),
            ));
        }
    }
    for (id, chunk) in manifest.chunks.iter().enumerate() {
        let block = manifest
            .blocks
            .get(chunk.block_id as usize)
            .ok_or_else(|| {
                corrupt(
                    format!("chunk {id}"),
                    format!("block {} does not exist", chunk.block_id),
                )
            })?;
        if chunk
            .block_offset
            .checked_add(chunk.size)
            .is_none_or(|end| end > block.size)
        {
            return Err(corrupt(
                format!("chunk {id}"),
                format!(
                    "{} bytes at {} are outside block {} ({} bytes)",
                    chunk.size, chunk.block_offset, chunk.block_id, block.size
                ),
            ));
        }
    }
    let mut by_path = HashMap::with_capacity(manifest.files.len());
    for (index, file) in manifest.files.iter().enumerate() {
        let mut total = 0u64;
        for &chunk_id in &file.chunks {
            let chunk = manifest.chunks.get(chunk_id as usize).ok_or_else(|| {
                corrupt(
                    format!("file {:?}", file.path),
                    format!("chunk {chunk_id} does not exist"),
                )
            })?;
            if chunk.file_id != index as u64 {
                return Err(corrupt(
                    format!("file {:?}", file.path),
                    format!("chunk {chunk_id} belongs to file {}", chunk.file_id),
                ));
            }
            total = total.saturating_add(chunk.size);
        }
        if total != file.size {
            return Err(corrupt(
                format!("file {:?}", file.path),
                format!("chunks hold {total} bytes, the file is {}", file.size),
            ));
        }
        if by_path.insert(file.path.clone(), index).is_some() {
            return Err(corrupt(
                format!("file {:?}", file.path),
                "appears twice".into(),
            ));
        }
    }
    Ok(by_path)
}
