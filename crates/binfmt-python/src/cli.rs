//! The `binfmt` command inside the package: `binfmt ARGS` (the wheel's
//! script) and `python -m binfmt ARGS` run [`binfmt::cli::run`], the code
//! the Rust binary runs, so the two cannot drift apart.

use std::ffi::OsString;

use pyo3::prelude::*;

pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(run_cli, module)?)?;
    Ok(())
}

/// Runs the `binfmt` command on `argv` (the program's name first) with the
/// GIL released and returns its exit status. Help, version and usage errors
/// end the process, as the binary does.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| binfmt::cli::run(&argv))
}
