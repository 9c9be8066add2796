//! `binfmt._binfmt`, the native half of the `binfmt` Python package.
//!
//! The Python package (`python/binfmt/`) holds the public API, its
//! docstrings and the argument handling kastore users rely on; this module
//! holds everything that touches bytes, built on the workspace's libraries:
//!
//! - [`kastore`]: kastore stores as numpy arrays, read-only views of a map
//!   (no copy) or arrays that own their memory, and the writer;
//! - [`arcx`]: ARCX archives, entries streamed as Python file objects;
//! - [`taridx`]: TARIDX datasets for training loops, and their sampler;
//! - [`par4`]: PAR4 files: the chunk tree, a `HashMap<String, Vec<u8>>` root
//!   read lazily;
//! - [`cli`]: the `binfmt` command, as the wheel's script and
//!   `python -m binfmt` run it;
//! - [`entries`]: the umbrella library (`binfmt.open`, `convert`, `sniff`);
//! - [`errors`]: every Rust error as a Python exception carrying its message;
//! - [`pyio`]: Python file objects and handed-over descriptors as Rust I/O;
//! - [`sampler`]: the deterministic epoch orders of the TARIDX sampler;
//! - [`remote`]: `http://`, `https://` and `s3://` locations, their warnings
//!   issued as Python warnings.
//!
//! No call panics: failures are `PyResult` errors. Work on bytes runs with
//! the GIL released (`Python::detach`).

#![deny(missing_docs)]

#[cfg(not(target_endian = "little"))]
compile_error!(
    "kastore arrays are little-endian and are handed to numpy in place: this module supports little-endian hosts only"
);

use pyo3::prelude::*;

pub mod arcx;
pub mod cli;
mod direct;
pub mod entries;
pub mod errors;
pub mod kastore;
pub mod par4;
pub mod pyio;
pub mod remote;
pub mod sampler;
pub mod taridx;
pub mod writers;

/// The module `binfmt._binfmt`.
#[pymodule]
#[pyo3(name = "_binfmt")]
fn binfmt_python(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(module)?;
    cli::register(module)?;
    kastore::register(module)?;
    arcx::register(module)?;
    entries::register(module)?;
    taridx::register(module)?;
    par4::register(module)?;
    remote::register(module)?;
    writers::register(module)?;
    Ok(())
}
