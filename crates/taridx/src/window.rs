//! A sample's bytes read in one request: a window of a shard held in
//! memory, reads inside it answered from memory and any other read passed
//! to the shard.
//!
//! ```text
//! shard:  ... | header a | payload a | pad | header b | payload b | ...
//!               ^ start                                          ^ start + bytes.len()
//!               └──────────── one read of the shard ─────────────┘
//! ```
//!
//! The member checks read a sample's headers and the payload readers its
//! payloads through the window: one read of the shard instead of one per
//! header and one per payload.

use std::cell::RefCell;
use std::io;
use std::path::Path;
use std::sync::Arc;

use binfmt_core::Source;

/// At most this many bytes are read into a window: a sample spanning more
/// is read member by member (each payload read once, straight into where it
/// goes), since copying a large payload a second time costs more than the
/// requests a window saves.
pub(crate) const WINDOW_LIMIT: u64 = 64 * 1024;

/// How many window buffers a thread keeps for its next windows.
const SPARE_BUFFERS: usize = 8;

thread_local! {
    /// Buffers of [`WINDOW_LIMIT`] bytes, zeroed once when made, that this
    /// thread's windows reuse: a window costs no allocation, no zeroing
    /// and no fresh pages (at most 512 KiB kept per thread).
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of at least `len` bytes: a spare one, or a new one of `len`.
fn buffer(len: usize) -> Vec<u8> {
    SPARE
        .try_with(|spare| spare.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| vec![0; len])
}

/// A read of a source that holds some of a shard's bytes in memory: from
/// `held` (what its `borrow_at` lent for the range), else from `shard`.
pub(crate) fn read_held(
    held: Option<&[u8]>,
    shard: &dyn Source,
    offset: u64,
    buf: &mut [u8],
) -> io::Result<()> {
    match held {
        Some(bytes) => {
            buf.copy_from_slice(bytes);
            Ok(())
        }
        None => shard.read_exact_at(offset, buf),
    }
}

/// `len` bytes of `shard` from `start`, held in memory.
#[derive(Debug)]
pub(crate) struct Window {
    shard: Arc<dyn Source>,
    start: u64,
    /// At least `len` bytes, the first `len` the window's.
    bytes: Vec<u8>,
    len: usize,
}

impl Drop for Window {
    /// Keeps the buffer for this thread's next window (grown to
    /// [`WINDOW_LIMIT`] once) while fewer than [`SPARE_BUFFERS`] are kept.
    fn drop(&mut self) {
        let mut bytes = std::mem::take(&mut self.bytes);
        let _ = SPARE.try_with(|spare| {
            if let Ok(mut spare) = spare.try_borrow_mut()
                && spare.len() < SPARE_BUFFERS
            {
                bytes.resize(WINDOW_LIMIT as usize, 0);
                spare.push(bytes);
            }
        });
    }
}

impl Window {
    /// The bytes `start..end` of `shard` read in one request, when the
    /// shard is not in memory already and they are at most
    /// [`WINDOW_LIMIT`] bytes inside it; `None` otherwise, or when the read
    /// fails (the reads made without the window then report it).
    pub fn read(shard: &Arc<dyn Source>, start: u64, end: u64) -> Option<Self> {
        if shard.in_memory().is_some() || end > shard.len() {
            return None;
        }
        let len = end.checked_sub(start).filter(|&len| len <= WINDOW_LIMIT)?;
        let len = usize::try_from(len).ok()?;
        let mut bytes = buffer(len);
        shard.read_exact_at(start, bytes.get_mut(..len)?).ok()?;
        Some(Self {
            shard: Arc::clone(shard),
            start,
            bytes,
            len,
        })
    }
}

impl Source for Window {
    fn len(&self) -> u64 {
        self.shard.len()
    }

    fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let from = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        let to = from.checked_add(usize::try_from(len).ok()?)?;
        self.bytes.get(..self.len)?.get(from..to)
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        read_held(
            self.borrow_at(offset, buf.len() as u64),
            &*self.shard,
            offset,
            buf,
        )
    }

    fn name(&self) -> &Path {
        self.shard.name()
    }

    fn will_read(&self, ranges: &[std::ops::Range<u64>]) {
        self.shard.will_read(ranges);
    }
}

#[cfg(test)]
mod tests {
    // Test code: a panic here is a failed test.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use binfmt_core::{ByteSource, Source};

    use super::{WINDOW_LIMIT, Window};

    /// A shard that is not in memory: reads go through `read_exact_at`.
    #[derive(Debug)]
    struct Plain(ByteSource);

    impl Source for Plain {
        fn len(&self) -> u64 {
            self.0.len()
        }
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            self.0.read_exact_at(offset, buf)
        }
        fn name(&self) -> &std::path::Path {
            self.0.name()
        }
    }

    #[test]
    fn reads_inside_come_from_memory_and_others_from_the_shard() {
        let data: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        let shard: Arc<dyn Source> = Arc::new(Plain(ByteSource::from_vec(data.clone(), "s")));
        let window = Window::read(&shard, 1000, 2000).expect("a window");
        assert_eq!(window.borrow_at(1000, 1000).unwrap(), &data[1000..2000]);
        assert!(window.borrow_at(999, 2).is_none() && window.borrow_at(1999, 2).is_none());
        let mut buf = [0; 16];
        window.read_exact_at(3000, &mut buf).unwrap();
        assert_eq!(&buf, &data[3000..3016]);
        assert!(Window::read(&shard, 0, 4097).is_none(), "past the end");
        assert!(Window::read(&shard, 0, WINDOW_LIMIT + 1).is_none());
        let mapped: Arc<dyn Source> = Arc::new(ByteSource::from_vec(data, "m"));
        assert!(Window::read(&mapped, 0, 10).is_none(), "already in memory");
    }
}
