//! The crate's only `unsafe` code: the two calls into the operating system
//! that have no safe form, each with why it is sound. The crate denies
//! `unsafe_code` everywhere else (`lib.rs`); this module alone allows it.
//!
//! - [`map_range`]: a read-only map of a file (`memmap2`), behind every
//!   mapped source (`source/`);
//! - [`effective_uid`] (Unix): `geteuid`, which the cache directory helper
//!   (`dir.rs`) checks ownership with;
//! - [`preadv`] (Unix): one positional read into several buffers, behind
//!   [`FileSource`](crate::source::FileSource)'s vectored reads.

#![allow(unsafe_code)]

use std::fs::File;
use std::io::{self, IoSliceMut};

use memmap2::{Mmap, MmapOptions};

/// Maps the first `len` bytes of `file` (its size, which the caller took
/// from the open descriptor: the map does not ask again).
pub(crate) fn map_read_only(file: &File, len: u64) -> io::Result<Mmap> {
    map_range(file, 0, len, false)
}

/// Maps the `len` bytes of `file` at `offset`, read-only; `populate` faults
/// them all in at once (for a range about to be read whole).
pub(crate) fn map_range(file: &File, offset: u64, len: u64, populate: bool) -> io::Result<Mmap> {
    let len = usize::try_from(len).map_err(io::Error::other)?;
    let mut options = MmapOptions::new();
    options.offset(offset).len(len);
    if populate {
        options.populate();
    }
    // SAFETY: the map is read-only and private to this process; it stays
    // valid for as long as `Mmap` lives. Another process truncating or
    // rewriting the file while it is mapped can change or remove bytes under
    // us (SIGBUS on access past a truncation), the standing caveat of every
    // mmap-based reader; callers for whom that matters use `FileSource`
    // without `map_regions`.
    unsafe { options.map(file) }
}

/// The effective user id of this process.
#[cfg(unix)]
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions, touches no memory and cannot
    // fail (POSIX).
    unsafe { libc::geteuid() }
}

/// Reads into `bufs`, in order, from `file` at `offset`, in one `preadv`
/// call: how many bytes it read (fewer than asked at the end of the file or
/// when interrupted; the caller loops). At most `IOV_MAX` (1024) buffers
/// are passed; the rest wait for the next call.
#[cfg(unix)]
pub(crate) fn preadv(file: &File, bufs: &mut [IoSliceMut<'_>], offset: u64) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let count = libc::c_int::try_from(bufs.len().min(1024)).unwrap_or(1024);
    let offset = libc::off_t::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset past off_t"))?;
    // SAFETY: `IoSliceMut` is guaranteed ABI-compatible with `iovec` on Unix
    // (std's documentation); each points at a buffer borrowed mutably for
    // this call, and `count` is within `bufs`. The descriptor is open for
    // as long as `file` is borrowed.
    let read = unsafe {
        libc::preadv(
            file.as_raw_fd(),
            bufs.as_mut_ptr().cast::<libc::iovec>(),
            count,
            offset,
        )
    };
    usize::try_from(read).map_err(|_| io::Error::last_os_error())
}
