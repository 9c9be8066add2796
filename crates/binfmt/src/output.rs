//! Writing results to stdout, and the exit status they lead to.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::process::ExitCode;

/// A message that names `path` exactly once: `PATH: message`, or the
/// message as it is when it already starts with the path.
pub fn about(path: &std::path::Path, error: impl std::fmt::Display) -> String {
    let message = error.to_string();
    let name = path.display().to_string();
    if message.starts_with(&name) {
        message
    } else {
        format!("{name}: {message}")
    }
}

/// A name as a text listing shows it: the printer gate's escape
/// ([`binfmt_core::print::escape`]).
pub use binfmt_core::print::escape;

/// A path as a text line shows it: [`escape`]d.
pub fn shown(path: &std::path::Path) -> String {
    escape(&path.display().to_string()).into_owned()
}

/// Prints `text` as one line on stderr through the printer gate
/// ([`binfmt_core::print::line`]): escaped, without secrets.
pub fn note(text: std::fmt::Arguments<'_>) {
    eprintln!("{}", binfmt_core::print::line(text));
}

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

/// A library error as the command's one-line failure.
pub fn failed(error: binfmt::Error) -> String {
    error.to_string()
}

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

/// Streams `reader` to stdout in pieces; a read failure (a failed check
/// at the end of an entry) becomes `read_error`'s message, a closed pipe
/// ends quietly.
pub fn stream_to_stdout(
    reader: &mut dyn io::Read,
    read_error: impl Fn(io::Error) -> String,
) -> Result<(), String> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut buffer = vec![0u8; 256 << 10];
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(read_error(error)),
        };
        match out.write_all(buffer.get(..n).unwrap_or_default()) {
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(error) => return Err(format!("writing to stdout: {error}")),
            Ok(()) => {}
        }
    }
    match out.flush() {
        Err(error) if error.kind() != io::ErrorKind::BrokenPipe => {
            Err(format!("writing to stdout: {error}"))
        }
        _ => Ok(()),
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

/// A progress bar of `len` steps on stderr, drawn only when stderr is a
/// terminal (never into logs or pipes).
pub fn progress(len: u64, what: &'static str) -> indicatif::ProgressBar {
    if !io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what);
    bar
}

/// Ends the program with a usage error (exit status 2), as clap does for
/// the errors it finds itself.
pub fn usage_error(message: impl std::fmt::Display) -> ! {
    clap::Error::raw(
        clap::error::ErrorKind::ArgumentConflict,
        format!("{message}\n"),
    )
    .exit()
}
