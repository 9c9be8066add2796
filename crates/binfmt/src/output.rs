//! Writing results to stdout, and the exit status they lead to.

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Everything asked for was done.
    Success,
    /// A file could not be read, is bad, or lacks an entry.
    Failed,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        match status {
            Status::Success => ExitCode::SUCCESS,
            Status::Failed => ExitCode::from(1),
        }
    }
}

/// A command's failure: one line for stderr.
pub type CommandResult = Result<Status, String>;

/// Runs `write` against buffered stdout. A closed pipe (`binfmt ... | head`)
/// is not an error worth reporting: the reader has what it wanted.
pub fn to_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), String> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(error) => Err(format!("writing to stdout: {error}")),
        Ok(()) => Ok(()),
    }
}

/// Writes `text` to stdout.
pub fn print(text: &str) -> Result<(), String> {
    to_stdout(|out| out.write_all(text.as_bytes()))
}

/// Prints `value` as pretty JSON and a newline.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|error| error.to_string())?;
    print(&(text + "\n"))
}

/// An error message that names `path` exactly once.
pub fn about(path: &Path, error: impl std::fmt::Display) -> String {
    let message = error.to_string();
    let name = path.display().to_string();
    if message.starts_with(&name) {
        message
    } else {
        format!("{name}: {message}")
    }
}
