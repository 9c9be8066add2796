//! Writing to local paths and `s3://` alike, for Python: the pieces
//! `binfmt.ray` builds on.
//!
//! - [`ShardWriter`]: samples into tar shards named `PREFIX000000.tar`,
//!   ... under a directory or an S3 prefix, cut as `taridx pack` cuts them;
//!   `finish` reports each shard's members instead of indexing.
//! - `taridx_write_index`: the index of reported shards (no shard read
//!   again), written last, with its shard list when the names need one.
//! - `rename`, `remove`, `list_prefix`: moving, removing and listing files
//!   or objects.
//!
//! Every output goes through the output gate of `binfmt::outputs`: atomic
//! locally, a multipart upload that appears only when complete on S3.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use binfmt_taridx::{SampleWriter, SampleWriterOptions, WrittenShard};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::{errors, remote};

/// Adds the writers to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<ShardWriter>()?;
    module.add_function(wrap_pyfunction!(taridx_write_index, module)?)?;
    module.add_function(wrap_pyfunction!(rename, module)?)?;
    module.add_function(wrap_pyfunction!(remove, module)?)?;
    module.add_function(wrap_pyfunction!(list_prefix, module)?)?;
    Ok(())
}

/// One shard's report: its name, its members (name, header offset, size) and
/// its size.
type Report = (String, Vec<(String, u64, u64)>, u64);

fn remote_options() -> binfmt_remote::RemoteOptions {
    remote::open_options().remote
}

/// Tar shards written sample by sample under a directory or S3 prefix.
#[pyclass(module = "binfmt.taridx", name = "_NativeShardWriter")]
#[derive(Debug)]
pub struct ShardWriter {
    writer: Arc<Mutex<Option<SampleWriter>>>,
    directory: String,
}

impl ShardWriter {
    fn with_writer<T: Send>(
        &self,
        py: Python<'_>,
        work: impl Send + FnOnce(&mut SampleWriter) -> binfmt_taridx::Result<T>,
    ) -> PyResult<T> {
        let writer = Arc::clone(&self.writer);
        let directory = self.directory.clone();
        remote::detach(py, move || {
            let mut guard = writer.lock().unwrap_or_else(PoisonError::into_inner);
            match guard.as_mut() {
                Some(writer) => work(writer).map_err(|error| errors::binfmt(&error)),
                None => Err(PyValueError::new_err(format!(
                    "{directory}: the shard writer is finished"
                ))),
            }
        })?
    }
}

#[pymethods]
impl ShardWriter {
    /// Starts shards `PREFIX000000.tar`, ... under `directory` (a path,
    /// `file://` or `s3://` URL).
    #[new]
    #[pyo3(signature = (directory, prefix, *, shard_bytes = None, shard_samples = None, key_rule = "webdataset"))]
    fn new(
        py: Python<'_>,
        directory: String,
        prefix: &str,
        shard_bytes: Option<u64>,
        shard_samples: Option<u64>,
        key_rule: &str,
    ) -> PyResult<Self> {
        let mut options = SampleWriterOptions::new().key_rule(crate::taridx::key_rule(key_rule)?);
        if let Some(bytes) = shard_bytes {
            options = options.max_bytes(bytes);
        }
        if let Some(samples) = shard_samples {
            options = options.max_samples(samples);
        }
        let shown = binfmt_core::print::redact(&directory).into_owned();
        let writer = remote::detach(py, || -> Result<SampleWriter, remote::BoxError> {
            let out = binfmt::outputs::output_dir(&directory, Arc::default(), &remote_options())?;
            Ok(SampleWriter::shards_only(out, prefix, options)?)
        })?
        .map_err(|error| errors::binfmt(error.as_ref()))?;
        Ok(Self {
            writer: Arc::new(Mutex::new(Some(writer))),
            directory: shown,
        })
    }

    /// Writes one sample: members `KEY.EXT` for each `(ext, bytes)`, in
    /// order, all in one shard.
    fn write(&self, py: Python<'_>, key: String, members: Vec<(String, Vec<u8>)>) -> PyResult<()> {
        self.with_writer(py, move |writer| {
            let members: Vec<(&str, &[u8])> = members
                .iter()
                .map(|(ext, bytes)| (ext.as_str(), bytes.as_slice()))
                .collect();
            writer.write(&key, &members)
        })
    }

    /// Closes the last shard; returns `(name, [(member, offset, size)],
    /// size)` per shard written.
    fn finish(&self, py: Python<'_>) -> PyResult<Vec<Report>> {
        let writer = Arc::clone(&self.writer);
        let directory = self.directory.clone();
        remote::detach(py, move || {
            let taken = writer.lock().unwrap_or_else(PoisonError::into_inner).take();
            match taken {
                Some(writer) => writer
                    .finish_shards()
                    .map(|shards| shards.into_iter().map(report).collect())
                    .map_err(|error| errors::binfmt(&error)),
                None => Err(PyValueError::new_err(format!(
                    "{directory}: the shard writer is finished"
                ))),
            }
        })?
    }

    /// Drops what was written: the shards committed so far are removed.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        let writer = Arc::clone(&self.writer);
        remote::detach(py, move || {
            drop(writer.lock().unwrap_or_else(PoisonError::into_inner).take());
        })
    }
}

fn report(shard: WrittenShard) -> Report {
    (shard.name, shard.members, shard.size)
}

/// Writes the index at `location` (`DIR/FOLD.taridx`, a path or `s3://`
/// URL) of `shards` as their writers reported them, in fid order; returns
/// the number of rows.
#[pyfunction]
#[pyo3(signature = (location, shards, key_rule = "webdataset"))]
fn taridx_write_index(
    py: Python<'_>,
    location: PathBuf,
    shards: Vec<Report>,
    key_rule: &str,
) -> PyResult<u64> {
    let rule = crate::taridx::key_rule(key_rule)?;
    let shards: Vec<WrittenShard> = shards
        .into_iter()
        .map(|(name, members, size)| WrittenShard {
            name,
            members,
            size,
        })
        .collect();
    remote::detach(py, || -> Result<u64, remote::BoxError> {
        let index_name = location
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default();
        let local = !binfmt::is_remote(&location);
        let dir = location.parent().unwrap_or(std::path::Path::new(""));
        // Local shards are inputs: the index may not replace one.
        let mut gate = binfmt_core::Inputs::default();
        if local {
            for shard in &shards {
                gate.add(dir.join(&shard.name));
            }
        }
        let out = binfmt::outputs::Output::open(&location, Arc::new(gate), &remote_options())?;
        out.dir.check(&out.name)?;
        binfmt_taridx::check_reports(index_name, &shards)?;
        if local {
            // Each must be the regular file of the size reported (checked
            // on its descriptor, no byte read).
            for shard in &shards {
                let path = dir.join(&shard.name);
                let (_, size) = binfmt_core::input::open(&path)?;
                if size != shard.size {
                    return Err(format!(
                        "{}: {size} bytes, reported as {}: the shard changed after it was written",
                        binfmt_core::print::line(format_args!("{}", path.display())),
                        shard.size
                    )
                    .into());
                }
            }
        }
        Ok(binfmt_taridx::write_index_of_reports(
            out.dir.as_ref(),
            &out.name,
            &shards,
            rule,
        )?)
    })?
    .map_err(|error| errors::binfmt(error.as_ref()))
}

/// Moves a file or object (local to local, or within one S3 bucket).
#[pyfunction]
fn rename(py: Python<'_>, src: String, dst: String) -> PyResult<()> {
    remote::detach(py, || {
        binfmt::outputs::rename(&src, &dst, &remote_options())
    })?
    .map_err(|error| errors::binfmt(&error))
}

/// Removes a file or object; a missing one is not an error.
#[pyfunction]
fn remove(py: Python<'_>, location: String) -> PyResult<()> {
    remote::detach(py, || binfmt::outputs::remove(&location, &remote_options()))?
        .map_err(|error| errors::binfmt(&error))
}

/// The names of the files or objects directly under a directory or S3
/// prefix, sorted.
#[pyfunction]
fn list_prefix(py: Python<'_>, location: String) -> PyResult<Vec<String>> {
    remote::detach(py, || {
        binfmt::outputs::list_dir(&location, &remote_options())
    })?
    .map_err(|error| errors::binfmt(&error))
}
