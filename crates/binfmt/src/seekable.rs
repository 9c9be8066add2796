//! Entries read at any offset ([`crate::EntrySource::open_seekable`]): what
//! a mounted file or an fsspec file object asks for. Every format's main
//! reader seeks by itself (a TARIDX member and a kastore array are byte
//! ranges of their file; a PAR4 value streams from its offset; an ARCX
//! file decompresses only the chunk a position lands in); [`Reopening`] is
//! the fallback for a source whose entry streams only go forward.

use std::io::{self, Read, Seek, SeekFrom};

use crate::error::Result;

/// A readable, seekable entry stream that can move between threads.
pub trait ReadSeek: Read + Seek + Send {}

impl<T: Read + Seek + Send> ReadSeek for T {}

/// Opens an entry's stream from its start.
type Open<'a> = Box<dyn Fn() -> Result<Box<dyn Read + Send + 'a>> + Send + 'a>;

/// A forward-only entry stream made seekable: forward seeks read and drop
/// the bytes between, backward ones open the entry again and read up to
/// the position; a seek from the end learns the size by reading to it
/// once. Correct for every source; costs what those reads cost.
pub struct Reopening<'a> {
    open: Open<'a>,
    reader: Box<dyn Read + Send + 'a>,
    /// Where `reader` is.
    at: u64,
    /// Where the next read starts.
    position: u64,
    size: Option<u64>,
}

impl std::fmt::Debug for Reopening<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reopening")
            .field("position", &self.position)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl<'a> Reopening<'a> {
    /// The entry `open` opens, of `size` bytes when known.
    pub fn new(
        open: impl Fn() -> Result<Box<dyn Read + Send + 'a>> + Send + 'a,
        size: Option<u64>,
    ) -> Result<Self> {
        let reader = open()?;
        Ok(Self {
            open: Box::new(open),
            reader,
            at: 0,
            position: 0,
            size,
        })
    }

    /// Brings the stream to `position`.
    fn catch_up(&mut self) -> io::Result<()> {
        if self.position < self.at {
            self.reader = (self.open)().map_err(io::Error::other)?;
            self.at = 0;
        }
        let gap = self.position - self.at;
        let skipped = io::copy(&mut (&mut self.reader).take(gap), &mut io::sink())?;
        self.at += skipped;
        // Past the end: reads return end-of-file from `at`.
        Ok(())
    }
}

impl Read for Reopening<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.position != self.at {
            self.catch_up()?;
            if self.position != self.at {
                return Ok(0);
            }
        }
        let n = self.reader.read(buf)?;
        self.at += n as u64;
        self.position = self.at;
        Ok(n)
    }
}

impl Seek for Reopening<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
            SeekFrom::End(delta) => {
                let size = match self.size {
                    Some(size) => size,
                    None => {
                        self.position = u64::MAX;
                        self.catch_up()?;
                        self.size = Some(self.at);
                        self.at
                    }
                };
                size.checked_add_signed(delta)
            }
        }
        .ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "seek before the entry's start")
        })?;
        self.position = target;
        Ok(target)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn seeks_anywhere_by_reading_forward_or_again() {
        let bytes: Vec<u8> = (0..=255).collect();
        let opened = std::sync::atomic::AtomicUsize::new(0);
        let mut entry = Reopening::new(
            || {
                opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(Box::new(bytes.as_slice()) as Box<dyn Read + Send>)
            },
            None,
        )
        .unwrap();
        let mut two = [0u8; 2];
        for (to, at) in [
            (SeekFrom::Start(100), 100u8),
            (SeekFrom::Current(-50), 52),
            (SeekFrom::End(-2), 254),
            (SeekFrom::Start(3), 3),
        ] {
            entry.seek(to).unwrap();
            entry.read_exact(&mut two).unwrap();
            assert_eq!(two, [at, at + 1]);
        }
        entry.seek(SeekFrom::Start(1000)).unwrap();
        assert_eq!(entry.read(&mut two).ok(), Some(0));
        assert!(entry.seek(SeekFrom::Current(-2000)).is_err());
        assert!(opened.load(std::sync::atomic::Ordering::Relaxed) >= 3);
    }
}
