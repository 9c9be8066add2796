//! Payload producers of the drop-in writer API (`parcode::graph`): a
//! [`SerializationJob`] makes one chunk's uncompressed payload when the file
//! is written; its [`JobConfig`] says how the chunk is compressed and, for a
//! `HashMap`, whether it is laid out in buckets.
//!
//! ```text
//! TaskGraph (= ChunkGraph): node ── job.execute() ──▶ payload ──▶ compress(config) ──▶ chunk
//! ```

use std::marker::PhantomData;

use crate::dropin::error::ParcodeError;
use crate::raw::compression::Compression;
use crate::raw::error::ParError;
use crate::raw::format::ChildRef;
use crate::raw::writer::{ChunkGraph, NodeId};

/// How a chunk is written: its compression id (0: the file's setting, 1:
/// LZ4, 2: "zstd", written as LZ4 — see spec/parcode.md) and, for a
/// `HashMap`, whether it goes into buckets (`#[parcode(map)]`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct JobConfig {
    /// The compression id the reference's attribute maps to.
    pub compression_id: u8,
    /// Whether a `HashMap` is written in the bucket layout.
    pub is_map: bool,
}

impl JobConfig {
    /// The chunk's compression, `None` meaning the file's.
    pub(crate) fn compression(self) -> Result<Option<Compression>, ParError> {
        match self.compression_id {
            0 => Ok(None),
            // No PAR4 reader decodes id 2 (parcode 0.6.1 registers no zstd
            // codec), so "zstd" is written with the compressor both read.
            1 | 2 => Ok(Some(Compression::Lz4)),
            id => Err(ParError::Encode {
                what: "job config",
                why: format!("unknown compression id {id}"),
            }),
        }
    }
}

/// Makes one chunk's payload.
pub trait SerializationJob<'a>: Send + Sync {
    /// The payload, uncompressed. `children_refs` is empty: payloads are
    /// produced in parallel before their children are placed (no job of
    /// this crate or of the reference reads them).
    fn execute(&self, children_refs: &[ChildRef]) -> Result<Vec<u8>, ParcodeError>;

    /// A size hint.
    fn estimated_size(&self) -> usize;

    /// How the chunk is written.
    fn config(&self) -> JobConfig {
        JobConfig::default()
    }
}

impl<'a, T: SerializationJob<'a> + ?Sized> SerializationJob<'a> for &T {
    fn execute(&self, children_refs: &[ChildRef]) -> Result<Vec<u8>, ParcodeError> {
        (**self).execute(children_refs)
    }

    fn estimated_size(&self) -> usize {
        (**self).estimated_size()
    }

    fn config(&self) -> JobConfig {
        (**self).config()
    }
}

impl std::fmt::Debug for dyn SerializationJob<'_> + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SerializationJob")
            .field("estimated_size", &self.estimated_size())
            .field("config", &self.config())
            .finish()
    }
}

/// A job with a [`JobConfig`] of its own.
#[derive(Debug)]
pub struct ConfiguredJob<'a, J: ?Sized> {
    config: JobConfig,
    inner: Box<J>,
    _marker: PhantomData<&'a ()>,
}

impl<'a, J: SerializationJob<'a> + ?Sized> ConfiguredJob<'a, J> {
    /// `inner`, written as `config` says.
    pub fn new(inner: Box<J>, config: JobConfig) -> Self {
        Self {
            config,
            inner,
            _marker: PhantomData,
        }
    }
}

impl<'a, J: SerializationJob<'a> + ?Sized> SerializationJob<'a> for ConfiguredJob<'a, J> {
    fn execute(&self, children_refs: &[ChildRef]) -> Result<Vec<u8>, ParcodeError> {
        self.inner.execute(children_refs)
    }

    fn estimated_size(&self) -> usize {
        self.inner.estimated_size()
    }

    fn config(&self) -> JobConfig {
        self.config
    }
}

/// The job writing `value`'s own chunk, configured when asked (what the
/// derive's generated `create_job` returns).
pub fn job_for<'a, T: SerializationJob<'a>>(
    value: &'a T,
    config: Option<JobConfig>,
) -> Box<dyn SerializationJob<'a> + 'a> {
    match config {
        Some(config) => Box::new(ConfiguredJob::new(Box::new(value), config)),
        None => Box::new(value),
    }
}

/// The payload `job` makes, its failure carried through the raw writer as
/// [`ParError::Job`] (which converts back into the same `ParcodeError`).
fn made_by<'g>(job: Box<dyn SerializationJob<'g> + 'g>) -> crate::raw::writer::Deferred<'g> {
    Box::new(move || {
        job.execute(&[])
            .map_err(|error| ParError::Job(Box::new(error)))
    })
}

/// The reference's `TaskGraph` methods, on the graph it names so.
impl<'g> ChunkGraph<'g> {
    /// Adds a chunk made by `job` when the file is written, compressed as
    /// its config says; its children are linked afterwards.
    pub fn add_node(&mut self, job: Box<dyn SerializationJob<'g> + 'g>) -> NodeId {
        let compression = job.config().compression().unwrap_or_else(|error| {
            self.fail(error);
            None
        });
        self.add_made(made_by(job), compression)
    }

    /// Replaces the job of `node`.
    pub fn replace_job(&mut self, node: NodeId, job: Box<dyn SerializationJob<'g> + 'g>) {
        let compression = match job.config().compression() {
            Ok(compression) => compression,
            Err(error) => return self.fail(error),
        };
        self.replace_made(node, made_by(job), compression);
    }
}
