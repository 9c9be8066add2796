//! Listing an archive without building its model: the manifest is read and
//! decompressed as opening does (`stored.rs`), then its rows are walked
//! (`tables.rs`) and handed on one file at a time. Nothing is kept per file
//! but where each string lies, so memory is the decompressed manifest and
//! 8 bytes a string (`spec/limits.md`), against about three times that for
//! [`crate::Archive`] with its tables and path index.
//!
//! The walk runs twice over the same bytes: once to check every row's
//! layout and sum the totals, so nothing is handed on from a manifest that
//! turns out broken further on, then to hand each file on.

use binfmt_core::{Error, Source};

use crate::check::{check_block, corrupt};
use crate::error::{ArcxError, Result};
use crate::format::{Dialect, HEADER_SIZE};
use crate::limits::OpenOptions;
use crate::manifest::{Attributes, BlockRecord, Config, FileKind, PathRef};
use crate::stored::{Stored, check_total_files, manifest_error};
use crate::tables::{self, ChunkRow, ChunkRows, FileRecord, Visit};

/// What a listing found: the archive's totals and settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListSummary {
    /// Which dialect the archive is in.
    pub dialect: Dialect,
    /// How many entries it holds.
    pub files: u64,
    /// Their bytes (checked: at most 2^64 - 1).
    pub bytes: u64,
    /// How many blocks it holds.
    pub blocks: u64,
    /// Their stored bytes.
    pub stored_bytes: u64,
    /// The archive's size in bytes.
    pub archive_size: u64,
    /// Its settings.
    pub config: Config,
}

/// One entry as a listing hands it on.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Listed<'a> {
    /// Its position in the archive (the file id).
    pub index: u32,
    /// Its path.
    pub path: PathRef<'a>,
    /// Its size in bytes (for a symlink, the length of its target).
    pub size: u64,
    /// The SHA-256 of its bytes.
    pub sha256: &'a [u8; 32],
    /// Its metadata.
    pub attributes: Attributes,
}

/// An archive's manifest, decompressed and checked row by row, ready to
/// hand its files on one at a time ([`Listing::for_each`]).
///
/// What it checks: everything opening checks of the footer, the header
/// (unless [`OpenOptions::check_header`] is off) and the manifest's bytes
/// (sizes, CRC32, decompression bounds), every row's layout (counts, ids,
/// string indices, 32-bit fields, codecs, kinds, the attribute table),
/// every string a path uses is UTF-8, each entry's name is one non-empty
/// component, a directory holds no bytes, the sizes add up within 64
/// bits, and every block lies in the data region in order within the block
/// limit. Rules that relate files, chunks and blocks to each other
/// (`spec/arcx.md`, "What the manifest means") are left to
/// [`crate::Archive`] (get, extract, verify), which needs the tables they
/// relate.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("a.txt"), b"alpha")?;
/// let out = dir.path().join("a.arcx");
/// binfmt_arcx::pack_dir(dir.path(), &out, Default::default(), |_| {})?;
///
/// let source = binfmt_core::FileSource::open(&out)?;
/// let listing = binfmt_arcx::Listing::open(&source, Default::default())?;
/// assert_eq!((listing.summary().files, listing.summary().bytes), (1, 5));
/// let mut names = Vec::new();
/// listing.for_each(|file| {
///     names.push(file.path.to_string());
///     Ok::<(), binfmt_arcx::ArcxError>(())
/// })?;
/// assert_eq!(names, ["a.txt"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Listing {
    body: Vec<u8>,
    /// Where each string lies in `body`: start and end.
    strings: Vec<[u32; 2]>,
    summary: ListSummary,
}

impl Listing {
    /// Reads, decompresses and checks the manifest of the archive in
    /// `source` (see [`Listing`] for what is checked).
    pub fn open<S: Source>(source: &S, options: OpenOptions) -> Result<Self> {
        let limits = options
            .limits
            .with_max_block_size(options.limits.max_block_size);
        let mut stored = Stored::read(source, &limits)?;
        let dialect = stored.dialect;
        let mut body = match stored.decompressed.take() {
            Some(body) => body,
            None => stored.body().to_vec(),
        };
        // The room decompression left unwritten is address space only;
        // give it back so what the listing holds is what it says.
        body.shrink_to_fit();
        let data_end = stored.manifest_offset;
        let Stored { footer, region, .. } = stored;
        // The stored bytes are done with once decompressed.
        drop(region);
        let index_offset = footer.field_16.get();
        let mut scan = Scan {
            body: &body,
            strings: Vec::new(),
            files: 0,
            bytes: 0,
            blocks: 0,
            stored_bytes: 0,
            previous_end: HEADER_SIZE as u64,
            data_end,
            limits,
            error: None,
        };
        let config = walk(dialect, &body, &mut scan).map_err(|error| match scan.error.take() {
            Some(error) => error,
            None => manifest_error(error),
        })?;
        let (strings, files, bytes, blocks, stored_bytes) = (
            scan.strings,
            scan.files,
            scan.bytes,
            scan.blocks,
            scan.stored_bytes,
        );
        check_total_files(dialect, &footer, files)?;
        if options.check_header {
            crate::reader::check_header_fields(source, dialect, data_end, index_offset)?;
        }
        Ok(Self {
            strings,
            summary: ListSummary {
                dialect,
                files,
                bytes,
                blocks,
                stored_bytes,
                archive_size: source.len(),
                config,
            },
            body,
        })
    }

    /// The archive's totals and settings.
    pub fn summary(&self) -> &ListSummary {
        &self.summary
    }

    /// Heap bytes the listing holds: the decompressed manifest and where
    /// each string lies.
    pub fn heap_size(&self) -> usize {
        self.body.capacity() + self.strings.capacity() * size_of::<[u32; 2]>()
    }

    /// Hands every file to `visit`, in archive order; stops at the first
    /// error `visit` returns, and returns it.
    pub fn for_each<E: From<ArcxError>>(
        &self,
        visit: impl FnMut(Listed<'_>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut hand = Hand {
            listing: self,
            visit,
            error: None,
        };
        match walk(self.summary.dialect, &self.body, &mut hand) {
            Ok(_) => Ok(()),
            Err(error) => Err(hand
                .error
                .take()
                .unwrap_or_else(|| E::from(manifest_error(error)))),
        }
    }

    /// String `id`, which the first walk proved UTF-8.
    fn string(&self, id: u32) -> &str {
        let [start, end] = self.strings.get(id as usize).copied().unwrap_or([0, 0]);
        self.body
            .get(start as usize..end as usize)
            .and_then(|bytes| std::str::from_utf8(bytes).ok())
            .unwrap_or_default()
    }
}

fn walk<'a>(dialect: Dialect, body: &'a [u8], visit: &mut impl Visit<'a>) -> Result<Config, Error> {
    match dialect {
        Dialect::Spec => tables::walk_spec(body, visit),
        _ => tables::walk_cli(body, visit),
    }
}

/// What stops a walk when a visitor fails for its own reason (the reason
/// is kept by the visitor).
fn stopped() -> Error {
    Error::corrupt("listing", "stopped")
}

/// The first walk: string positions, per-file rules, totals, block rules.
struct Scan<'a> {
    body: &'a [u8],
    strings: Vec<[u32; 2]>,
    files: u64,
    bytes: u64,
    blocks: u64,
    stored_bytes: u64,
    previous_end: u64,
    data_end: u64,
    limits: crate::limits::Limits,
    error: Option<ArcxError>,
}

impl<'a> Scan<'a> {
    fn fail(&mut self, error: ArcxError) -> Error {
        self.error = Some(error);
        stopped()
    }

    /// String `id` as text.
    fn text(&self, id: u32) -> Result<&'a str, Error> {
        let [start, end] = self.strings.get(id as usize).copied().unwrap_or([0, 0]);
        tables::utf8(
            self.body
                .get(start as usize..end as usize)
                .unwrap_or_default(),
        )
    }
}

impl<'a> Visit<'a> for Scan<'a> {
    fn strings(&mut self, count: usize, _bytes: usize) -> Result<(), Error> {
        self.strings = binfmt_core::alloc::vec_with_capacity(count, "string positions")?;
        Ok(())
    }

    fn string(&mut self, string: &'a [u8]) -> Result<(), Error> {
        // Strings are slices of the body, which is under 4 GiB
        // (`max_manifest_size`).
        let start = (string.as_ptr() as usize).saturating_sub(self.body.as_ptr() as usize);
        let start = u32::try_from(start)
            .map_err(|_| Error::corrupt("string table", "beyond 4 GiB of manifest"))?;
        let end = u32::try_from(string.len())
            .ok()
            .and_then(|len| start.checked_add(len))
            .ok_or_else(|| Error::corrupt("string table", "beyond 4 GiB of manifest"))?;
        self.strings.push([start, end]);
        Ok(())
    }

    fn files(&mut self, _count: usize) -> Result<(), Error> {
        Ok(())
    }

    fn file(&mut self, _id: u32, file: FileRecord<'a, '_>) -> Result<(), Error> {
        let path = PathRef::new(self.text(file.dir)?, self.text(file.name)?);
        if path.name().is_empty() || path.name().contains('/') {
            let error = corrupt(
                format!("file {path}"),
                "the name part is empty or holds a '/'".into(),
            );
            return Err(self.fail(error));
        }
        if file.attributes.kind == FileKind::Directory && file.size != 0 {
            let error = corrupt(
                format!("file {path}"),
                "a directory entry holds bytes".into(),
            );
            return Err(self.fail(error));
        }
        self.files += 1;
        self.bytes = self.bytes.checked_add(file.size).ok_or_else(|| {
            Error::corrupt("file table", "file sizes add up to more than 2^64 bytes")
        })?;
        Ok(())
    }

    fn chunks(&mut self, _rows: &ChunkRows<'a>) -> Result<(), Error> {
        Ok(())
    }

    fn chunk(&mut self, _id: u32, _row: ChunkRow) -> Result<(), Error> {
        Ok(())
    }

    fn blocks(&mut self, _count: usize) -> Result<(), Error> {
        Ok(())
    }

    fn block(&mut self, id: u32, block: BlockRecord) -> Result<(), Error> {
        if let Err(error) = check_block(
            id,
            &block,
            &mut self.previous_end,
            self.data_end,
            &self.limits,
        ) {
            return Err(self.fail(error));
        }
        self.blocks += 1;
        self.stored_bytes = self
            .stored_bytes
            .saturating_add(u64::from(block.stored_size));
        Ok(())
    }
}

/// The second walk: each file handed to the caller.
struct Hand<'l, F, E> {
    listing: &'l Listing,
    visit: F,
    error: Option<E>,
}

impl<'a, F, E> Visit<'a> for Hand<'_, F, E>
where
    F: FnMut(Listed<'_>) -> std::result::Result<(), E>,
{
    fn strings(&mut self, _count: usize, _bytes: usize) -> Result<(), Error> {
        Ok(())
    }

    fn string(&mut self, _string: &'a [u8]) -> Result<(), Error> {
        Ok(())
    }

    fn files(&mut self, _count: usize) -> Result<(), Error> {
        Ok(())
    }

    fn file(&mut self, id: u32, file: FileRecord<'a, '_>) -> Result<(), Error> {
        let listed = Listed {
            index: id,
            path: PathRef::new(
                self.listing.string(file.dir),
                self.listing.string(file.name),
            ),
            size: file.size,
            sha256: file.sha256,
            attributes: file.attributes,
        };
        (self.visit)(listed).map_err(|error| {
            self.error = Some(error);
            stopped()
        })
    }

    fn chunks(&mut self, _rows: &ChunkRows<'a>) -> Result<(), Error> {
        Ok(())
    }

    fn chunk(&mut self, _id: u32, _row: ChunkRow) -> Result<(), Error> {
        Ok(())
    }

    fn blocks(&mut self, _count: usize) -> Result<(), Error> {
        Ok(())
    }

    fn block(&mut self, _id: u32, _block: BlockRecord) -> Result<(), Error> {
        Ok(())
    }
}
