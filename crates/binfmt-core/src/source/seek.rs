//! [`SeekSource`]: any `Read + Seek` as a source, behind a lock.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::positional::Source;
use crate::error::{IoResultExt, Result};

/// Any `Read + Seek` as a source: each read seeks, then reads, under a lock.
#[derive(Debug)]
pub struct SeekSource<R> {
    inner: Mutex<R>,
    len: u64,
    name: PathBuf,
}

impl<R: Read + Seek + Send + fmt::Debug> SeekSource<R> {
    /// Wraps `inner`, whose size is found by seeking to its end; `name` is
    /// used in error messages.
    pub fn new(mut inner: R, name: impl AsRef<Path>) -> Result<Self> {
        let name = name.as_ref().to_owned();
        let len = inner.seek(SeekFrom::End(0)).with_path(&name)?;
        Ok(Self {
            inner: Mutex::new(inner),
            len,
            name,
        })
    }

    /// The reader back.
    pub fn into_inner(self) -> R {
        self.inner
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<R: Read + Seek + Send + fmt::Debug> Source for SeekSource<R> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.seek(SeekFrom::Start(offset))?;
        inner.read_exact(buf)
    }

    /// One seek, then each buffer read in turn.
    fn read_vectored_exact_at(
        &self,
        offset: u64,
        bufs: &mut [io::IoSliceMut<'_>],
    ) -> io::Result<()> {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.seek(SeekFrom::Start(offset))?;
        bufs.iter_mut().try_for_each(|buf| inner.read_exact(buf))
    }

    fn name(&self) -> &Path {
        &self.name
    }
}
