//! Writing results to stdout, and the exit status they lead to.

use std::io::{self, Write};
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

/// Writes `text` to stdout. A closed pipe (`binfmt ... | head`) is not an
/// error worth reporting: the reader has what it wanted.
pub fn print(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
