//! Blocks: read through the source, checked by CRC32, decompressed.
//!
//! A block of at most `max_shared_block` bytes (every block small files
//! share, and the 1 MiB chunks of large files) is decoded whole: its stored
//! bytes and size prefix in one read, the CRC32 checked before
//! decompressing, the output exactly its declared size. A larger block
//! holds one chunk of one file and is streamed: the stored bytes pass
//! through the CRC32 and a zstd stream decoder in pieces, and the checks
//! happen when the block ends, so memory stays bounded whatever its size.

use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{self, BufReader, Read};
use std::sync::{Arc, Mutex};

use binfmt_core::{RangeReader, Source, SourceExt};

use crate::error::{ArcxError, Result};
use crate::format::{Codec, crc32};
use crate::manifest::BlockRecord;

/// The largest zstd window a streamed block may ask for (2^25 = 32 MiB);
/// zstd's own levels 1–19 stay within 2^23.
pub(crate) const MAX_WINDOW_LOG: u32 = 25;

/// The largest decompression context kept for the next use: a fresh one
/// (tables and a literal buffer) takes a small part of this; one that
/// decoded a frame in pieces holds that frame's window besides.
const MAX_KEPT_CONTEXT: usize = 1 << 20;

/// How many decoded shared blocks the cache keeps. Readers going through
/// files in order need one; a few more serve threads reading side by side.
const CACHED_BLOCKS: usize = 4;

/// Decoded block bytes: borrowed from a source in memory (a stored block),
/// or a buffer shared with the cache.
#[derive(Debug, Clone)]
pub(crate) enum Decoded<'a> {
    Borrowed(&'a [u8]),
    Shared(Arc<Vec<u8>>),
}

impl std::ops::Deref for Decoded<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Borrowed(bytes) => bytes,
            Self::Shared(bytes) => bytes,
        }
    }
}

/// What one call of zstd's streaming decoder did.
pub(crate) struct ZstdStep {
    /// Input bytes consumed.
    pub(crate) read: usize,
    /// Output bytes written.
    pub(crate) written: usize,
    /// Whether the frame ended (the decoder's hint was 0).
    pub(crate) frame_done: bool,
}

/// Decodes what `input` holds into `out` with `context`, block `id`'s
/// errors named as such.
pub(crate) fn zstd_step(
    context: &mut zstd::zstd_safe::DCtx<'static>,
    input: &[u8],
    out: &mut [u8],
    id: u32,
) -> Result<ZstdStep> {
    let mut in_buffer = zstd::zstd_safe::InBuffer::around(input);
    let mut out_buffer = zstd::zstd_safe::OutBuffer::around(out);
    let hint = context
        .decompress_stream(&mut out_buffer, &mut in_buffer)
        .map_err(|code| {
            data_error(
                id,
                format!("zstd: {}", zstd::zstd_safe::get_error_name(code)),
            )
        })?;
    Ok(ZstdStep {
        read: in_buffer.pos(),
        written: out_buffer.pos(),
        frame_done: hint == 0,
    })
}

pub(crate) fn data_error(block: u32, why: impl Into<String>) -> ArcxError {
    ArcxError::BlockData {
        block,
        why: why.into(),
    }
}

/// Decodes block `id` whole.
pub(crate) fn decode<'a, S: Source + ?Sized>(
    source: &'a S,
    id: u32,
    block: &BlockRecord,
) -> Result<Decoded<'a>> {
    decode_into(source, id, block, Vec::new())
}

/// [`decode`], a zstd block decompressed into `spare`'s memory when it
/// holds the block (cut to exactly its size first, so zstd sees the same
/// room as in a fresh buffer): memory already written once is not
/// faulted in again.
pub(crate) fn decode_into<'a, S: Source + ?Sized>(
    source: &'a S,
    id: u32,
    block: &BlockRecord,
    spare: Vec<u8>,
) -> Result<Decoded<'a>> {
    let stored_size = u64::from(block.stored_size);
    let framed = source.bytes_at(block.offset, 4 + stored_size, "block")?;
    let (prefix, stored) = framed.split_first_chunk::<4>().unwrap_or((&[0; 4], &[]));
    let prefix = u32::from_le_bytes(*prefix);
    if prefix != block.stored_size {
        return Err(data_error(
            id,
            format!(
                "size prefix {prefix} disagrees with the manifest's {}",
                block.stored_size
            ),
        ));
    }
    let found = crc32(stored);
    if found != block.checksum {
        return Err(ArcxError::BlockChecksum {
            block: id,
            expected: block.checksum,
            found,
        });
    }
    match (block.codec, framed) {
        (Codec::Store, Cow::Borrowed(framed)) => {
            Ok(Decoded::Borrowed(framed.get(4..).unwrap_or_default()))
        }
        (Codec::Store, Cow::Owned(mut framed)) => {
            framed.drain(..4);
            Ok(Decoded::Shared(Arc::new(framed)))
        }
        (Codec::Zstd, framed) => Ok(Decoded::Shared(Arc::new(decompress(
            id,
            framed.get(4..).unwrap_or_default(),
            block.size as usize,
            spare,
        )?))),
    }
}

/// One zstd frame into exactly `size` bytes (in `spare` when it has the
/// room), with the thread's decompression context ([`with_context`]).
fn decompress(id: u32, stored: &[u8], size: usize, spare: Vec<u8>) -> Result<Vec<u8>> {
    let mut out = spare;
    out.clear();
    if out.capacity() >= size {
        out.shrink_to(size);
    }
    if out.capacity() != size {
        out = Vec::with_capacity(size);
    }
    with_context(|context| {
        context
            .decompress(&mut out, stored)
            .map_err(|code| io::Error::other(zstd::zstd_safe::get_error_name(code)))
    })
    .map_err(|error| data_error(id, format!("zstd: {error}")))?;
    if out.len() != size {
        return Err(data_error(
            id,
            format!(
                "decompressed to {} bytes, the manifest says {size}",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// Runs `work` with a zstd decompression context kept per thread, so the
/// manifest and the blocks a thread reads share one (its tables and
/// buffers set up once). The context is reset before `work`, so a frame a
/// previous use left unfinished is never continued; one that grew stream
/// buffers (a frame decoded in pieces) is dropped afterwards, so a thread
/// does not hold that memory.
pub(crate) fn with_context<T>(
    work: impl FnOnce(&mut zstd::zstd_safe::DCtx<'static>) -> io::Result<T>,
) -> io::Result<T> {
    thread_local! {
        static CONTEXT: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
    }
    CONTEXT.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = Some(zstd::zstd_safe::DCtx::try_create().ok_or(io::ErrorKind::OutOfMemory)?);
        }
        let context = cell
            .as_mut()
            .ok_or_else(|| io::Error::other("no zstd context"))?;
        context
            .reset(zstd::zstd_safe::ResetDirective::SessionOnly)
            .map_err(|code| io::Error::other(zstd::zstd_safe::get_error_name(code)))?;
        let done = work(context);
        if context.sizeof() > MAX_KEPT_CONTEXT {
            *cell = None;
        }
        done
    })
}

/// A few decoded shared blocks, most recently used first.
#[derive(Debug, Default)]
pub(crate) struct BlockCache {
    blocks: Mutex<Vec<(u32, Arc<Vec<u8>>)>>,
    /// A buffer the archive is done with (a one-file open's decompressed
    /// manifest), for the next block decoded.
    spare: Mutex<Vec<u8>>,
}

impl BlockCache {
    /// Keeps `buffer` for the next block decoded ([`BlockCache::take_spare`]).
    pub(crate) fn keep_spare(&self, buffer: Vec<u8>) {
        *self
            .spare
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = buffer;
    }

    /// The buffer kept by [`BlockCache::keep_spare`], if still there (else
    /// an empty one).
    pub(crate) fn take_spare(&self) -> Vec<u8> {
        std::mem::take(
            &mut *self
                .spare
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    pub(crate) fn get(&self, id: u32) -> Option<Arc<Vec<u8>>> {
        let mut blocks = self
            .blocks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let position = blocks.iter().position(|(cached, _)| *cached == id)?;
        let entry = blocks.remove(position);
        let bytes = Arc::clone(&entry.1);
        blocks.insert(0, entry);
        Some(bytes)
    }

    pub(crate) fn put(&self, id: u32, bytes: Arc<Vec<u8>>) {
        let mut blocks = self
            .blocks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        blocks.retain(|(cached, _)| *cached != id);
        blocks.insert(0, (id, bytes));
        blocks.truncate(CACHED_BLOCKS);
    }
}

/// Bytes read through a running CRC32.
#[derive(Debug)]
struct Crc<R> {
    inner: R,
    hasher: crc32fast::Hasher,
}

impl<R: Read> Read for Crc<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
}

type StoredReader<'a, S> = Crc<RangeReader<'a, S>>;

enum StreamInner<'a, S: Source + ?Sized> {
    Store(StoredReader<'a, S>),
    Zstd(Box<zstd::stream::read::Decoder<'static, BufReader<StoredReader<'a, S>>>>),
}

/// A large block read as a stream: its checks run when it ends.
pub(crate) struct BlockStream<'a, S: Source + ?Sized> {
    id: u32,
    block: BlockRecord,
    inner: Option<StreamInner<'a, S>>,
    remaining: u64,
}

impl<S: Source + ?Sized> std::fmt::Debug for BlockStream<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockStream")
            .field("id", &self.id)
            .field("remaining", &self.remaining)
            .finish()
    }
}

impl<'a, S: Source + ?Sized> BlockStream<'a, S> {
    pub(crate) fn open(source: &'a S, id: u32, block: &BlockRecord) -> Result<Self> {
        let prefix = u32::from_le_bytes(source.array_at::<4>(block.offset, "block size prefix")?);
        if prefix != block.stored_size {
            return Err(data_error(
                id,
                format!(
                    "size prefix {prefix} disagrees with the manifest's {}",
                    block.stored_size
                ),
            ));
        }
        let stored = Crc {
            inner: source.reader(block.offset + 4, u64::from(block.stored_size), "block")?,
            hasher: crc32fast::Hasher::new(),
        };
        let inner = match block.codec {
            Codec::Store => StreamInner::Store(stored),
            Codec::Zstd => {
                let mut decoder = zstd::stream::read::Decoder::with_buffer(
                    BufReader::with_capacity(256 << 10, stored),
                )
                .map_err(|error| data_error(id, format!("zstd: {error}")))?
                .single_frame();
                decoder
                    .window_log_max(MAX_WINDOW_LOG)
                    .map_err(|error| data_error(id, format!("zstd: {error}")))?;
                StreamInner::Zstd(Box::new(decoder))
            }
        };
        Ok(Self {
            id,
            block: *block,
            inner: Some(inner),
            remaining: u64::from(block.size),
        })
    }

    /// The end-of-block checks: no output past the declared size, every
    /// stored byte consumed, the CRC32 right.
    fn finish(&mut self) -> Result<()> {
        let id = self.id;
        let stored = match self.inner.take() {
            None => return Ok(()),
            Some(StreamInner::Store(stored)) => stored,
            Some(StreamInner::Zstd(mut decoder)) => {
                let mut extra = [0u8; 1];
                let more = decoder
                    .read(&mut extra)
                    .map_err(|error| data_error(id, format!("zstd: {error}")))?;
                if more != 0 {
                    return Err(data_error(
                        id,
                        format!(
                            "decompresses beyond the {} bytes the manifest says",
                            self.block.size
                        ),
                    ));
                }
                let buffered = decoder.finish();
                if !buffered.buffer().is_empty() {
                    return Err(data_error(id, "bytes after the zstd frame"));
                }
                buffered.into_inner()
            }
        };
        let Crc { mut inner, hasher } = stored;
        if inner.remaining() != 0 {
            // Read the rest through the CRC too, so the message can say both.
            let mut rest = Vec::new();
            inner.read_to_end(&mut rest).map_err(|error| {
                ArcxError::Core(binfmt_core::Error::corrupt(
                    format!("block {id}"),
                    error.to_string(),
                ))
            })?;
            return Err(data_error(
                id,
                format!("{} bytes after the zstd frame", rest.len()),
            ));
        }
        let found = hasher.finalize();
        if found != self.block.checksum {
            return Err(ArcxError::BlockChecksum {
                block: id,
                expected: self.block.checksum,
                found,
            });
        }
        Ok(())
    }
}

impl<S: Source + ?Sized> Read for BlockStream<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            self.finish().map_err(ArcxError::into_io)?;
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let Some(buf) = buf.get_mut(..want) else {
            return Ok(0);
        };
        let id = self.id;
        let n = match &mut self.inner {
            Some(StreamInner::Store(stored)) => stored.read(buf),
            Some(StreamInner::Zstd(decoder)) => decoder.read(buf),
            None => Ok(0),
        }
        .map_err(|error| data_error(id, format!("zstd: {error}")).into_io())?;
        if n == 0 && want > 0 {
            return Err(data_error(
                id,
                format!(
                    "ends {} bytes short of the {} the manifest says",
                    self.remaining, self.block.size
                ),
            )
            .into_io());
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// A large block read as a stream that can be put down between files and
/// picked up again: it owns its decoder and reads its stored bytes through
/// the source handed to each call, so a block shared by many files (larger
/// than `max_shared_block`, never decoded whole) is decoded once as they
/// are read in order. Its checks run when its end is reached
/// ([`BlockCursor::finish`]).
pub(crate) struct BlockCursor {
    id: u32,
    block: BlockRecord,
    /// `None` for a stored block.
    context: Option<zstd::zstd_safe::DCtx<'static>>,
    crc: crc32fast::Hasher,
    input: Vec<u8>,
    in_pos: usize,
    /// Stored bytes fetched so far.
    fetched: u64,
    /// Decompressed bytes produced so far.
    position: u64,
    frame_done: bool,
}

impl std::fmt::Debug for BlockCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCursor")
            .field("id", &self.id)
            .field("position", &self.position)
            .finish()
    }
}

/// Stored bytes fetched at once by a cursor.
const CURSOR_INPUT: u64 = 256 << 10;

impl BlockCursor {
    /// Block `id` from its start; checks its size prefix.
    pub(crate) fn open<S: Source + ?Sized>(
        source: &S,
        id: u32,
        block: &BlockRecord,
    ) -> Result<Self> {
        let prefix = u32::from_le_bytes(source.array_at::<4>(block.offset, "block size prefix")?);
        if prefix != block.stored_size {
            return Err(data_error(
                id,
                format!(
                    "size prefix {prefix} disagrees with the manifest's {}",
                    block.stored_size
                ),
            ));
        }
        let context = match block.codec {
            Codec::Store => None,
            Codec::Zstd => {
                let zstd = |code| {
                    data_error(
                        id,
                        format!("zstd: {}", zstd::zstd_safe::get_error_name(code)),
                    )
                };
                let mut context = zstd::zstd_safe::DCtx::try_create()
                    .ok_or_else(|| data_error(id, "zstd: no memory for a decoder"))?;
                context
                    .set_parameter(zstd::zstd_safe::DParameter::WindowLogMax(MAX_WINDOW_LOG))
                    .map_err(zstd)?;
                Some(context)
            }
        };
        Ok(Self {
            id,
            block: *block,
            context,
            crc: crc32fast::Hasher::new(),
            input: Vec::new(),
            in_pos: 0,
            fetched: 0,
            position: 0,
            frame_done: false,
        })
    }

    /// The block this cursor reads.
    pub(crate) fn block(&self) -> u32 {
        self.id
    }

    /// Decompressed bytes read so far.
    pub(crate) fn position(&self) -> u64 {
        self.position
    }

    /// Fetches the next stored bytes when the last are used up; returns
    /// whether any are left.
    fn refill<S: Source + ?Sized>(&mut self, source: &S) -> Result<bool> {
        if self.in_pos < self.input.len() {
            return Ok(true);
        }
        let left = u64::from(self.block.stored_size) - self.fetched;
        if left == 0 {
            return Ok(false);
        }
        let n = left.min(CURSOR_INPUT) as usize;
        self.input.resize(n, 0);
        source.fill_at(
            self.block.offset + 4 + self.fetched,
            &mut self.input,
            "block",
        )?;
        self.crc.update(&self.input);
        self.fetched += n as u64;
        self.in_pos = 0;
        Ok(true)
    }

    /// Reads the next decompressed bytes into `buf` (none at the block's
    /// end).
    pub(crate) fn read<S: Source + ?Sized>(&mut self, source: &S, buf: &mut [u8]) -> Result<usize> {
        let left = u64::from(self.block.size) - self.position;
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let Some(out) = buf.get_mut(..want).filter(|out| !out.is_empty()) else {
            return Ok(0);
        };
        let id = self.id;
        loop {
            let more = self.refill(source)?;
            let input = self.input.get(self.in_pos..).unwrap_or_default();
            let produced = match &mut self.context {
                None => {
                    let n = input.len().min(out.len());
                    if let (Some(to), Some(from)) = (out.get_mut(..n), input.get(..n)) {
                        to.copy_from_slice(from);
                    }
                    self.in_pos += n;
                    n
                }
                Some(context) => {
                    let step = zstd_step(context, input, out, id)?;
                    self.in_pos += step.read;
                    self.frame_done = step.frame_done;
                    step.written
                }
            };
            if produced > 0 {
                self.position += produced as u64;
                return Ok(produced);
            }
            if !more || self.frame_done {
                return Err(data_error(
                    id,
                    format!(
                        "ends {} bytes short of the {} the manifest says",
                        left, self.block.size
                    ),
                ));
            }
        }
    }

    /// Reads on to `offset` in the block, discarding what lies before.
    pub(crate) fn skip_to<S: Source + ?Sized>(&mut self, source: &S, offset: u64) -> Result<()> {
        let mut scratch = vec![0u8; 64 << 10];
        while self.position < offset {
            let gap = usize::try_from(offset - self.position).unwrap_or(usize::MAX);
            let n = self.read(
                source,
                scratch.get_mut(..gap.min(64 << 10)).unwrap_or_default(),
            )?;
            if n == 0 {
                return Err(data_error(self.id, format!("ends before offset {offset}")));
            }
        }
        Ok(())
    }

    /// Reads the rest of the block and runs the end-of-block checks: no
    /// output past the declared size, nothing after the frame, every stored
    /// byte read, the CRC32 right.
    pub(crate) fn finish<S: Source + ?Sized>(mut self, source: &S) -> Result<()> {
        self.skip_to(source, u64::from(self.block.size))?;
        let id = self.id;
        if self.context.is_some() && !self.frame_done {
            // The frame may still hold an end mark, or more output.
            self.refill(source)?;
            if let Some(context) = &mut self.context {
                let mut probe = [0u8; 1];
                let input = self.input.get(self.in_pos..).unwrap_or_default();
                let step = zstd_step(context, input, &mut probe, id)?;
                self.in_pos += step.read;
                if step.written > 0 {
                    return Err(data_error(
                        id,
                        format!(
                            "decompresses beyond the {} bytes the manifest says",
                            self.block.size
                        ),
                    ));
                }
                if !step.frame_done {
                    return Err(data_error(id, "zstd: the frame is incomplete"));
                }
            }
        }
        if self.in_pos < self.input.len() || self.fetched < u64::from(self.block.stored_size) {
            return Err(data_error(id, "bytes after the zstd frame"));
        }
        let found = self.crc.finalize();
        if found != self.block.checksum {
            return Err(ArcxError::BlockChecksum {
                block: id,
                expected: self.block.checksum,
                found,
            });
        }
        Ok(())
    }
}
