//! Reading an archive of either dialect through one API.
//!
//! Opening reads the footer and the manifest region before it through the
//! [`Source`] (two reads, the manifest region mapped when the source maps
//! regions: [`binfmt_core::SourceExt::region_at`]; no block is touched), checks every reference and
//! what it means (`check.rs`), then the header (a third read, which
//! [`OpenOptions::check_header`] can leave to [`Archive::verify`]: reading
//! needs only the footer and the manifest). Reading a file is a [`FileReader`]: it
//! decompresses only that file's blocks, checks each block's CRC32 and size,
//! and the file's SHA-256 when its last byte has been read.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use binfmt_core::layout::IntoBytes;
use binfmt_core::{FileSource, Source, SourceExt};
use sha2::{Digest, Sha256};

use crate::block::{self, BlockCache, BlockCursor, BlockStream, Decoded};
use crate::check::{PathIndex, check};
use crate::error::{ArcxError, Result};
use crate::format::{Codec, Dialect, HEADER_MAGIC, HEADER_SIZE, Header, crc32};
use crate::limits::{Limits, OpenOptions};
use crate::lookup;
use crate::manifest::{ChunkRecord, FileEntry, Manifest};
use crate::stored::{Stored, check_total_files, manifest_error};

/// An archive whose footer, manifest and references have been checked.
///
/// # Examples
///
/// ```
/// use std::io::Read;
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("hello.txt"), b"hello")?;
/// let out = dir.path().join("out.arcx");
/// binfmt_arcx::pack_dir(dir.path(), &out, binfmt_arcx::PackOptions::default(), |_| {})?;
///
/// let archive = binfmt_arcx::Archive::open(&out)?;         // footer, then manifest
/// let mut text = String::new();
/// archive.reader("hello.txt")?.read_to_string(&mut text)?; // only that file's block
/// assert_eq!(text, "hello");
/// archive.verify()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Archive<S = FileSource> {
    source: S,
    dialect: Dialect,
    manifest: Manifest,
    paths: PathIndex,
    limits: Limits,
    manifest_offset: u64,
    manifest_stored: u64,
    /// The footer's field after the manifest offset: the manifest's size
    /// (spec) or its copy's offset (arcx-cli).
    index_offset: u64,
    cache: BlockCache,
    /// Large shared blocks being streamed, put down between the files
    /// that share them ([`BlockCursor`]).
    cursors: std::sync::Mutex<Vec<BlockCursor>>,
}

impl Archive<FileSource> {
    /// Opens the archive at `path`, read by offset (no map: memory holds
    /// only the manifest and the blocks being read).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::new(FileSource::open(path)?)
    }
}

impl<S: Source> Archive<S> {
    /// Checks the archive held in `source` with the default [`Limits`].
    pub fn new(source: S) -> Result<Self> {
        Self::with_options(source, OpenOptions::default())
    }

    /// Checks the archive held in `source` with `limits`.
    pub fn with_limits(source: S, limits: Limits) -> Result<Self> {
        Self::with_options(source, OpenOptions::default().limits(limits))
    }

    /// Checks the archive held in `source`: the footer, then the manifest
    /// region before it (one read each), then, unless `options` defers it
    /// to [`Archive::verify`], the header.
    pub fn with_options(source: S, options: OpenOptions) -> Result<Self> {
        Self::load(source, options, None)
    }

    /// Opens the archive in `source` for the file at `path` alone: the
    /// manifest is read and walked as by [`Archive::with_options`], but only
    /// that file's rows are kept and checked, with no path index
    /// (`spec/arcx.md`, "Reading one file"): the cost of a lookup grows with
    /// the manifest's bytes, not with building every row. Rules about other
    /// files are left to the full open and to [`Archive::verify`].
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("hello.txt"), b"hello")?;
    /// std::fs::write(dir.path().join("other.txt"), b"other")?;
    /// let out = dir.path().join("out.arcx");
    /// binfmt_arcx::pack_dir(dir.path(), &out, binfmt_arcx::PackOptions::default(), |_| {})?;
    ///
    /// let source = binfmt_core::FileSource::open(&out)?;
    /// let one = binfmt_arcx::Archive::open_one(source, "hello.txt", Default::default())?;
    /// assert_eq!(one.read()?, b"hello");
    /// assert_eq!(one.file().size(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_one(source: S, path: &str, options: OpenOptions) -> Result<OneFile<S>> {
        Ok(OneFile {
            archive: Self::load(source, options, Some(path))?,
        })
    }

    /// Opens the archive: every file, or (`one`) only the file at that path.
    fn load(source: S, options: OpenOptions, one: Option<&str>) -> Result<Self> {
        let limits = options
            .limits
            .with_max_block_size(options.limits.max_block_size);
        let stored = Stored::read(&source, &limits)?;
        let (dialect, manifest_offset, region_len) =
            (stored.dialect, stored.manifest_offset, stored.region_len);
        let index_offset = stored.footer.field_16.get();
        let body = stored.body();
        let manifest =
            match one {
                None => match dialect {
                    Dialect::Spec => Manifest::decode_spec_body(body),
                    _ => Manifest::decode_cli_raw(body),
                }
                .map_err(manifest_error)?,
                Some(path) => lookup::find(dialect, body, path, manifest_offset, &limits)?
                    .ok_or_else(|| ArcxError::NotFound {
                        path: path.to_owned(),
                    })?,
            };
        // One file's rows are copied out of the decompressed manifest: its
        // buffer, written once already, takes the file's first block when
        // that block is decompressed whole into no more room than it has.
        let fits = |buffer: &Vec<u8>| {
            manifest.blocks().first().is_some_and(|block| {
                block.codec == Codec::Zstd
                    && u64::from(block.size) <= limits.max_shared_block
                    && block.size as usize <= buffer.capacity()
            })
        };
        let spare = match (one, stored.decompressed) {
            (Some(_), Some(body)) if fits(&body) => body,
            _ => Vec::new(),
        };
        drop(stored.region);
        let manifest_stored = match dialect {
            Dialect::Spec => region_len,
            Dialect::ArcxCli => region_len / 2,
        };
        check_total_files(dialect, &stored.footer, manifest.archive_files() as u64)?;
        let paths = match one {
            None => check(&manifest, manifest_offset, &limits)?,
            // `lookup::find` checked what the file depends on.
            Some(_) => PathIndex::one(&manifest),
        };
        let archive = Self {
            source,
            dialect,
            manifest,
            paths,
            limits,
            manifest_offset,
            manifest_stored,
            index_offset,
            cache: BlockCache::default(),
            cursors: std::sync::Mutex::default(),
        };
        archive.cache.keep_spare(spare);
        if options.check_header {
            archive.check_header()?;
        }
        Ok(archive)
    }

    /// Checks the header: its magic and major version, the fields that
    /// repeat the footer's, and (arcx-cli) its CRC32. Reading needs none of
    /// it (the footer and the manifest locate everything), so a source that
    /// pays per request may leave it to [`Archive::verify`].
    pub fn check_header(&self) -> Result<()> {
        check_header_fields(
            &self.source,
            self.dialect,
            self.manifest_offset,
            self.index_offset,
        )
    }

    /// Which dialect the archive is in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The whole manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The limits the archive was opened with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Where the manifest starts, and its stored size (one copy).
    pub fn manifest_region(&self) -> (u64, u64) {
        (self.manifest_offset, self.manifest_stored)
    }

    /// The archive's size in bytes.
    pub fn size(&self) -> u64 {
        self.source.len()
    }

    /// The source the archive is read from.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The number of files.
    pub fn len(&self) -> usize {
        self.manifest.len()
    }

    /// Whether the archive holds no files.
    pub fn is_empty(&self) -> bool {
        self.manifest.is_empty()
    }

    /// The files, in archive order.
    pub fn files(&self) -> impl ExactSizeIterator<Item = FileEntry<'_>> + '_ {
        self.manifest.files()
    }

    /// The file at `path`.
    pub fn find(&self, path: &str) -> Option<FileEntry<'_>> {
        self.paths
            .find(&self.manifest, path)
            .and_then(|index| self.manifest.file(index))
    }

    /// The total size of every file, or an error if it overflows 64 bits.
    pub fn total_size(&self) -> Result<u64> {
        self.files().try_fold(0u64, |total, file| {
            total.checked_add(file.size()).ok_or_else(|| {
                manifest_error(binfmt_core::Error::corrupt(
                    "file table",
                    "file sizes add up to more than 2^64 bytes",
                ))
            })
        })
    }

    /// A reader of the file at `path`.
    pub fn reader(&self, path: &str) -> Result<FileReader<'_, S>> {
        let file = self.find(path).ok_or_else(|| ArcxError::NotFound {
            path: path.to_owned(),
        })?;
        Ok(self.reader_for(file))
    }

    /// Announces that `files` will be read next: their blocks are handed
    /// to the source's [`Source::will_read`] together, so a remote archive
    /// fetches them in a few merged requests, several at once, instead of
    /// one request per block as each is reached. Does nothing for a local
    /// file.
    pub fn prefetch<'a>(&'a self, files: impl IntoIterator<Item = FileEntry<'a>>) {
        let ranges: Vec<std::ops::Range<u64>> = files
            .into_iter()
            .flat_map(|file| file.chunks())
            .filter_map(|chunk| self.manifest.block(chunk.block))
            .map(|block| block.offset..block.end())
            .collect();
        self.source.will_read(&ranges);
    }

    /// A reader of `file`, one of this archive's files.
    pub fn reader_for<'a>(&'a self, file: FileEntry<'a>) -> FileReader<'a, S> {
        let ids = file.chunk_ids();
        self.prefetch([file]);
        FileReader {
            archive: self,
            file,
            chunks: ids.iter(),
            current: Piece::Idle,
            hasher: Sha256::new(),
            done: false,
            position: 0,
            whole: true,
            broken: false,
        }
    }

    /// The bytes of the file at `path`; memory grows as they are read.
    pub fn read(&self, path: &str) -> Result<Vec<u8>> {
        let file = self.find(path).ok_or_else(|| ArcxError::NotFound {
            path: path.to_owned(),
        })?;
        self.read_file(file)
    }

    /// The bytes of `file`, one of this archive's files.
    fn read_file(&self, file: FileEntry<'_>) -> Result<Vec<u8>> {
        let mut reader = self.reader_for(file);
        let mut out = Vec::with_capacity(reader.file.size().min(16 << 20) as usize);
        reader
            .read_to_end(&mut out)
            .map_err(|error| ArcxError::from_io(error, self.source.name()))?;
        Ok(out)
    }

    /// Writes the file at `path` to `out` and returns its size; on a
    /// checksum mismatch the bytes have already been written (write to a
    /// temporary first, as extraction does).
    pub fn copy_to(&self, path: &str, out: &mut impl Write) -> Result<u64> {
        let mut reader = self.reader(path)?;
        io::copy(&mut reader, out).map_err(|error| ArcxError::from_io(error, Path::new(path)))
    }

    /// Checks the header, every block (CRC32, decompression) and every
    /// file (SHA-256), decoding each block once.
    pub fn verify(&self) -> Result<VerifySummary> {
        self.check_header()?;
        let mut summary = VerifySummary::default();
        let mut used = vec![false; self.manifest.blocks().len()];
        for file in self.files() {
            for chunk in file.chunks() {
                if let Some(flag) = used.get_mut(chunk.block as usize) {
                    *flag = true;
                }
            }
            let mut reader = self.reader_for(file);
            summary.bytes += io::copy(&mut reader, &mut io::sink())
                .map_err(|error| ArcxError::from_io(error, self.source.name()))?;
            summary.files += 1;
        }
        // Large shared blocks read part way: their rest and their checks.
        self.finish_cursors()?;
        // Blocks no file uses are still part of the archive.
        for (id, _) in used.iter().enumerate().filter(|(_, used)| !**used) {
            let id = id as u32;
            io::copy(&mut self.block_reader(id)?, &mut io::sink())
                .map_err(|error| ArcxError::from_io(error, self.source.name()))?;
        }
        summary.blocks = self.manifest.blocks().len() as u64;
        Ok(summary)
    }

    /// Block `id` as a reader of its decompressed bytes.
    fn block_reader(&self, id: u32) -> Result<Box<dyn Read + '_>> {
        let block = self.block_record(id)?;
        if u64::from(block.size) <= self.limits.max_shared_block {
            let decoded = block::decode(&self.source, id, &block)?;
            Ok(Box::new(io::Cursor::new(decoded.to_vec())))
        } else {
            Ok(Box::new(BlockStream::open(&self.source, id, &block)?))
        }
    }

    fn block_record(&self, id: u32) -> Result<crate::manifest::BlockRecord> {
        self.manifest
            .block(id)
            .copied()
            .ok_or_else(|| ArcxError::BlockData {
                block: id,
                why: "no such block".into(),
            })
    }

    /// The cursor of block `id` put down at or before `offset`, if any.
    fn take_cursor(&self, id: u32, offset: u64) -> Option<BlockCursor> {
        let mut cursors = self
            .cursors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let at = cursors
            .iter()
            .position(|cursor| cursor.block() == id && cursor.position() <= offset)?;
        Some(cursors.swap_remove(at))
    }

    /// Puts `cursor` down for the next file of its block; the oldest goes
    /// when more than [`KEPT_CURSORS`] are down.
    fn put_cursor(&self, cursor: BlockCursor) {
        let mut cursors = self
            .cursors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cursors.push(cursor);
        if cursors.len() > KEPT_CURSORS {
            cursors.remove(0);
        }
    }

    /// Reads the rest of every block left part read and runs its checks.
    pub(crate) fn finish_cursors(&self) -> Result<()> {
        let cursors = std::mem::take(
            &mut *self
                .cursors
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for cursor in cursors {
            cursor.finish(&self.source)?;
        }
        Ok(())
    }

    /// The piece of a file that `chunk` is: a slice of a decoded block, or
    /// a stream of a large block.
    fn piece(&self, chunk: ChunkRecord) -> Result<Piece<'_, S>> {
        let id = chunk.block;
        let block = self.block_record(id)?;
        if u64::from(block.size) > self.limits.max_shared_block {
            if chunk.offset == 0 && chunk.size == block.size {
                return Ok(Piece::Stream(Box::new(BlockStream::open(
                    &self.source,
                    id,
                    &block,
                )?)));
            }
            // A large block several files share: streamed once as they are
            // read in order (`check` proved their chunks follow file order),
            // from its start when a reader asks for it out of order.
            let offset = u64::from(chunk.offset);
            let mut cursor = match self.take_cursor(id, offset) {
                Some(cursor) => cursor,
                None => BlockCursor::open(&self.source, id, &block)?,
            };
            cursor.skip_to(&self.source, offset)?;
            return Ok(Piece::Cursor {
                cursor: Some(cursor),
                remaining: u64::from(chunk.size),
            });
        }
        let start = chunk.offset as usize;
        let end = start + chunk.size as usize;
        if chunk.size == block.size {
            // A block of its own: nothing else will read it, do not cache it.
            let bytes = block::decode_into(&self.source, id, &block, self.cache.take_spare())?;
            return Ok(Piece::Memory { bytes, start, end });
        }
        let bytes = match self.cache.get(id) {
            Some(bytes) => Decoded::Shared(bytes),
            None => match block::decode_into(&self.source, id, &block, self.cache.take_spare())? {
                Decoded::Shared(bytes) => {
                    self.cache.put(id, std::sync::Arc::clone(&bytes));
                    Decoded::Shared(bytes)
                }
                borrowed => borrowed,
            },
        };
        Ok(Piece::Memory { bytes, start, end })
    }
}

/// One file of an archive, found by [`Archive::open_one`]: the archive's
/// source and that file's rows, nothing else of the manifest.
#[derive(Debug)]
pub struct OneFile<S = FileSource> {
    /// An archive whose manifest holds the one file.
    archive: Archive<S>,
}

impl<S: Source> OneFile<S> {
    /// The file.
    pub fn file(&self) -> FileEntry<'_> {
        // `open_one` fails unless the manifest holds the file.
        self.archive
            .files()
            .next()
            .unwrap_or_else(|| unreachable!())
    }

    /// Which dialect the archive is in.
    pub fn dialect(&self) -> Dialect {
        self.archive.dialect
    }

    /// The source the archive is read from.
    pub fn source(&self) -> &S {
        &self.archive.source
    }

    /// A reader of the file's bytes, checked as [`Archive::reader`]'s are.
    pub fn reader(&self) -> FileReader<'_, S> {
        self.archive.reader_for(self.file())
    }

    /// The file's bytes; memory grows as they are read.
    pub fn read(&self) -> Result<Vec<u8>> {
        self.archive.read_file(self.file())
    }
}

/// The header's checks ([`Archive::check_header`]) for an archive of
/// `dialect` whose footer gives `manifest_offset` and `index_offset`.
pub(crate) fn check_header_fields<S: Source + ?Sized>(
    source: &S,
    dialect: Dialect,
    manifest_offset: u64,
    index_offset: u64,
) -> Result<()> {
    let header: Header = source.record_at(0)?;
    if header.magic != HEADER_MAGIC {
        return Err(
            binfmt_core::Error::bad_magic("ARCX header", 0, &HEADER_MAGIC, &header.magic).into(),
        );
    }
    let (major, minor) = (header.version_major.get(), header.version_minor.get());
    if major != 0 {
        return Err(binfmt_core::Error::UnsupportedVersion {
            what: "ARCX".into(),
            found: format!("{major}.{minor}"),
            supported: "major version 0".into(),
        }
        .into());
    }
    agree(
        "manifest_offset",
        header.manifest_offset.get(),
        manifest_offset,
    )?;
    agree("data_offset", header.data_offset.get(), HEADER_SIZE as u64)?;
    match dialect {
        Dialect::Spec => agree("index_offset", header.index_offset.get(), 0),
        _ => {
            agree("index_offset", header.index_offset.get(), index_offset)?;
            let found = u64::from(crc32(header.as_bytes().get(..72).unwrap_or_default()));
            let expected = header.tail_2.get();
            if expected == found {
                Ok(())
            } else {
                Err(ArcxError::HeaderChecksum { expected, found })
            }
        }
    }
}

/// Requires a header field to repeat its footer field.
fn agree(field: &'static str, header: u64, footer: u64) -> Result<()> {
    if header == footer {
        Ok(())
    } else {
        Err(ArcxError::HeaderFooterMismatch {
            field,
            header,
            footer,
        })
    }
}

/// What [`Archive::verify`] checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifySummary {
    /// Files whose SHA-256 matched.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Blocks whose CRC32 and size matched.
    pub blocks: u64,
}

/// How many large shared blocks an archive keeps part read (one per
/// extraction thread working through one).
const KEPT_CURSORS: usize = 16;

/// Where the next bytes of a file come from.
enum Piece<'a, S: Source> {
    /// A chunk of a large shared block: `remaining` bytes from the cursor.
    Cursor {
        cursor: Option<BlockCursor>,
        remaining: u64,
    },
    Idle,
    Memory {
        bytes: Decoded<'a>,
        start: usize,
        end: usize,
    },
    Stream(Box<BlockStream<'a, S>>),
}

/// One file's bytes as `std::io::Read`, decompressed block by block as they
/// are read. The SHA-256 is checked when the last byte has been read: the
/// read that would return end-of-file fails instead on a mismatch. Errors
/// are I/O errors wrapping an [`ArcxError`] ([`ArcxError::from_io`] gets it
/// back).
pub struct FileReader<'a, S: Source> {
    archive: &'a Archive<S>,
    file: FileEntry<'a>,
    chunks: std::slice::Iter<'a, u32>,
    current: Piece<'a, S>,
    hasher: Sha256,
    done: bool,
    /// Where the next byte read is, from the file's start.
    position: u64,
    /// Whether every byte so far was read in order from the start, so the
    /// SHA-256 can be checked at the end (a seek gives that up; each
    /// block's CRC32 is still checked as it is decompressed).
    whole: bool,
    /// A read failed (a corrupt block): the next bytes would not be those
    /// at `position`, so every read fails until a seek places the reader
    /// again.
    broken: bool,
}

impl<S: Source> std::fmt::Debug for FileReader<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader")
            .field("path", &self.file.path().to_string())
            .field("done", &self.done)
            .finish()
    }
}

impl<'a, S: Source> FileReader<'a, S> {
    /// The file being read.
    pub fn file(&self) -> FileEntry<'a> {
        self.file
    }

    /// The file's chunk `id`, from the manifest.
    fn chunk(&self, id: u32) -> Result<ChunkRecord> {
        self.archive
            .manifest
            .chunks()
            .get(id as usize)
            .copied()
            .ok_or_else(|| ArcxError::NotFound {
                path: self.file.path().to_string(),
            })
    }

    /// Moves to the next chunk, or checks the SHA-256 after the last one;
    /// returns whether there is more to read.
    fn advance(&mut self) -> Result<bool> {
        match self.chunks.next() {
            Some(&id) => {
                let chunk = self.chunk(id)?;
                self.current = self.archive.piece(chunk)?;
                Ok(true)
            }
            None => {
                self.done = true;
                let digest = std::mem::take(&mut self.hasher).finalize();
                if self.whole && digest.as_slice() != self.file.sha256() {
                    return Err(ArcxError::FileChecksum {
                        path: self.file.path().to_string(),
                    });
                }
                Ok(false)
            }
        }
    }
}

impl<S: Source> FileReader<'_, S> {
    /// Moves to byte `target` of the file: only the chunk holding it is
    /// decompressed (and, in a large shared block, the block up to it);
    /// chunks before it are skipped unread.
    fn seek_to(&mut self, target: u64) -> Result<()> {
        if target == self.position && !self.broken {
            return Ok(());
        }
        self.whole = false;
        self.broken = true;
        self.position = target;
        self.current = Piece::Idle;
        let ids = self.file.chunk_ids();
        let mut start = 0u64;
        for (k, &id) in ids.iter().enumerate() {
            let chunk = self.chunk(id)?;
            let end = start + u64::from(chunk.size);
            if target < end {
                self.chunks = ids.get(k + 1..).unwrap_or_default().iter();
                self.done = false;
                self.current = self.archive.piece(chunk)?;
                self.skip_in_piece(target - start)?;
                self.broken = false;
                return Ok(());
            }
            start = end;
        }
        // At or past the end: reads return end-of-file.
        self.chunks = [].iter();
        self.done = true;
        self.broken = false;
        Ok(())
    }

    /// Skips `skip` bytes (fewer than the piece holds) of the current piece.
    fn skip_in_piece(&mut self, skip: u64) -> Result<()> {
        match &mut self.current {
            Piece::Memory { start, .. } => {
                *start += usize::try_from(skip).unwrap_or(usize::MAX);
            }
            Piece::Cursor { cursor, remaining } => {
                if let Some(cursor) = cursor.as_mut() {
                    let at = cursor.position() + skip;
                    cursor.skip_to(&self.archive.source, at)?;
                }
                *remaining = remaining.saturating_sub(skip);
            }
            Piece::Stream(stream) => {
                let path = self.file.path().to_string();
                let skipped = io::copy(&mut (&mut **stream).take(skip), &mut io::sink())
                    .map_err(|error| ArcxError::from_io(error, Path::new(&path)))?;
                if skipped != skip {
                    return Err(ArcxError::NotFound {
                        path: self.file.path().to_string(),
                    });
                }
            }
            Piece::Idle => {}
        }
        Ok(())
    }
}

/// Seeking reads only what the new position needs: the chunk that holds
/// it. A file read after a seek has each block's CRC32 checked, not the
/// file's SHA-256 (which needs every byte in order).
impl<S: Source> Seek for FileReader<'_, S> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => self.file.size().checked_add_signed(delta),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
        }
        .ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "seek before the file's start")
        })?;
        self.seek_to(target).map_err(ArcxError::into_io)?;
        Ok(target)
    }
}

impl<S: Source> Read for FileReader<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.broken {
            return Err(io::Error::other(format!(
                "{}: an earlier read failed; seek to read on",
                self.file.path()
            )));
        }
        let read = self.read_on(buf);
        if read.is_err() {
            self.broken = true;
        }
        read
    }
}

impl<S: Source> FileReader<'_, S> {
    fn read_on(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            let n = match &mut self.current {
                Piece::Idle => 0,
                Piece::Memory { bytes, start, end } => {
                    let available = bytes.get(*start..*end).unwrap_or_default();
                    let n = available.len().min(buf.len());
                    if let (Some(out), Some(piece)) = (buf.get_mut(..n), available.get(..n)) {
                        out.copy_from_slice(piece);
                    }
                    *start += n;
                    n
                }
                Piece::Stream(stream) => stream.read(buf)?,
                Piece::Cursor { cursor, remaining } => {
                    let want = buf
                        .len()
                        .min(usize::try_from(*remaining).unwrap_or(usize::MAX));
                    let n = match (cursor.as_mut(), buf.get_mut(..want)) {
                        (Some(cursor), Some(out)) if !out.is_empty() => cursor
                            .read(&self.archive.source, out)
                            .map_err(ArcxError::into_io)?,
                        _ => 0,
                    };
                    *remaining -= n as u64;
                    if *remaining == 0 {
                        if let Some(cursor) = cursor.take() {
                            self.archive.put_cursor(cursor);
                        }
                    }
                    n
                }
            };
            if n > 0 {
                if self.whole {
                    self.hasher.update(buf.get(..n).unwrap_or_default());
                }
                self.position += n as u64;
                return Ok(n);
            }
            self.current = Piece::Idle;
            if !self.advance().map_err(ArcxError::into_io)? {
                return Ok(0);
            }
        }
    }
}
