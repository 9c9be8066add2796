//! Writing results to stdout, and the exit status they lead to.

use std::io::{self, BufWriter, IsTerminal, Read, Write};

/// A message that names `path` exactly once: `PATH: message`, or the
/// message as it is when the error already starts by naming the path
/// ([`binfmt::LeadingPath`]).
pub fn about(
    path: &std::path::Path,
    error: impl std::fmt::Display + binfmt::LeadingPath,
) -> String {
    let name = path.display().to_string();
    if error.names(&name) {
        error.to_string()
    } else {
        format!("{name}: {error}")
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
    // Never a panic when stderr is gone (a `mount --daemon` whose parent
    // has exited): the note is lost, the command goes on.
    let _ = writeln!(io::stderr(), "{}", binfmt_core::print::line(text));
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Everything asked for was done.
    Success,
    /// A file could not be read, is bad, or lacks an entry.
    Failed,
}

impl Status {
    /// The process exit status: 0 or 1.
    pub fn code(self) -> u8 {
        match self {
            Status::Success => 0,
            Status::Failed => 1,
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

/// Where `get -o PATH` writes: `-` is standard output, said explicitly
/// (written even to a terminal); anything else a file.
pub fn is_stdout(path: &std::path::Path) -> bool {
    path.as_os_str() == "-"
}

/// How much of an entry is looked at before it goes to a terminal.
const SNIFF: usize = 8192;

/// Writes an entry to stdout for `get`. Unless asked for with `-o -`,
/// bytes that are not text (a NUL, or not UTF-8) never go to a terminal,
/// where they would garble it (as curl refuses): the first piece is read
/// and checked before anything is written.
pub fn entry_to_stdout(
    reader: &mut dyn io::Read,
    explicit: bool,
    read_error: impl Fn(io::Error) -> String,
) -> Result<(), String> {
    if explicit || !io::stdout().is_terminal() {
        return stream_to_stdout(reader, read_error);
    }
    let mut first = Vec::with_capacity(SNIFF);
    (&mut *reader)
        .take(SNIFF as u64)
        .read_to_end(&mut first)
        .map_err(&read_error)?;
    if !looks_like_text(&first) {
        return Err(
            "the entry is binary and stdout is a terminal: give -o FILE, \
                    or -o - to print it anyway"
                .to_owned(),
        );
    }
    stream_to_stdout(&mut first.as_slice().chain(reader), read_error)
}

/// No NUL and valid UTF-8, but for a sequence cut at the end of the piece.
fn looks_like_text(piece: &[u8]) -> bool {
    if piece.contains(&0) {
        return false;
    }
    match std::str::from_utf8(piece) {
        Ok(_) => true,
        Err(error) => error.error_len().is_none(),
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

/// Writes the text lines `text` to stdout, without secrets.
pub fn print(text: &str) -> Result<(), String> {
    // The printer gate's redaction: a secret's value never reaches stdout
    // either (names are escaped where the lines are made).
    let text = binfmt_core::print::redact(text);
    to_stdout(|out| out.write_all(text.as_bytes()))
}

/// Prints `value` as pretty JSON and a newline, through [`SafeJson`].
pub fn print_json(value: &impl serde::Serialize) -> Result<(), String> {
    let mut text = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut text, SafeJson::default());
    value
        .serialize(&mut serializer)
        .map_err(|error| error.to_string())?;
    text.push(b'\n');
    print(&String::from_utf8_lossy(&text))
}

/// serde_json's pretty formatter that also writes the characters the
/// printer gate escapes ([`binfmt_core::print::hides`]: C1 controls, DEL,
/// bidirectional controls, line and paragraph separators) as `\uXXXX`:
/// JSON itself escapes only U+0000 to U+001F, so a name holding U+009B or
/// U+202E would otherwise reach a terminal that shows the JSON raw. The
/// output is the same JSON value.
#[derive(Debug, Default)]
pub struct SafeJson(serde_json::ser::PrettyFormatter<'static>);

impl serde_json::ser::Formatter for SafeJson {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some((at, c)) = rest
            .char_indices()
            .find(|&(_, c)| binfmt_core::print::hides(c))
        {
            writer.write_all(rest.get(..at).unwrap_or_default().as_bytes())?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            rest = rest.get(at + c.len_utf8()..).unwrap_or_default();
        }
        writer.write_all(rest.as_bytes())
    }

    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }
    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }
    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
}

/// What a progress bar counts.
#[derive(Debug, Clone, Copy)]
pub enum Steps {
    /// Bytes: shown in binary units (KiB, MiB, GiB) with a rate per second.
    Bytes,
    /// Things of a kind, named in the plural ("entries", "shards").
    Items(&'static str),
    /// Bytes with no total known (an entry fetched without listing its
    /// archive first): how many so far, the rate and the time taken.
    BytesSoFar,
}

/// A progress bar on stderr, drawn only when stderr is a terminal (never
/// into logs or pipes): what it does, how far in human units, the rate and
/// the time left. Its length is set by the caller when known.
pub fn progress(steps: Steps, what: &'static str) -> indicatif::ProgressBar {
    if !io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    styled(indicatif::ProgressBar::new(0), steps, what)
}

/// `bar` with the style for `steps` and the message `what`.
fn styled(bar: indicatif::ProgressBar, steps: Steps, what: &'static str) -> indicatif::ProgressBar {
    let template = match steps {
        Steps::Bytes => {
            "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}, {eta} left"
                .to_owned()
        }
        Steps::BytesSoFar => {
            "{spinner} {msg} {binary_bytes}, {binary_bytes_per_sec}, {elapsed} so far".to_owned()
        }
        Steps::Items(unit) => {
            format!("{{msg}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit}, {{per_sec}}, {{eta}} left")
        }
    };
    if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    /// What a bar shows on a terminal, drawn at `done` of `all`.
    fn drawn(steps: Steps, all: u64, done: u64) -> String {
        let term = indicatif::InMemoryTerm::new(4, 120);
        let target = indicatif::ProgressDrawTarget::term_like(Box::new(term.clone()));
        let bar = styled(
            indicatif::ProgressBar::with_draw_target(Some(all), target),
            steps,
            "packing",
        );
        bar.set_position(done);
        bar.tick();
        term.contents()
    }

    #[test]
    fn text_is_what_has_no_nul_and_is_utf8_up_to_a_cut_sequence() {
        assert!(looks_like_text(b"hello\n"));
        assert!(looks_like_text("caf\u{e9}".as_bytes()));
        assert!(looks_like_text(&"caf\u{e9}".as_bytes()[..4]));
        assert!(!looks_like_text(b"a\0b"));
        assert!(!looks_like_text(&[0xff, b'a']));
        assert!(!looks_like_text(&1.5f64.to_le_bytes()));
    }

    /// Issue 28: bars showed raw byte counts and no time left.
    #[test]
    fn bars_show_human_units_a_rate_and_the_time_left() {
        let bytes = drawn(Steps::Bytes, 3 << 30, 512 << 20);
        assert!(bytes.contains("512.00 MiB/3.00 GiB"), "{bytes}");
        assert!(bytes.contains("/s") && bytes.contains("left"), "{bytes}");
        let items = drawn(Steps::Items("entries"), 12_000, 3_000);
        assert!(items.contains("3,000/12,000 entries"), "{items}");
        assert!(items.contains("/s") && items.contains("left"), "{items}");
        // A remote `get` knows no total until it is done.
        let fetched = drawn(Steps::BytesSoFar, 0, 48 << 20);
        assert!(
            fetched.contains("48.00 MiB, ") && fetched.contains("/s"),
            "{fetched}"
        );
        assert!(
            fetched.contains("so far") && !fetched.contains("left"),
            "{fetched}"
        );
    }

    /// Found from outside: `--json` printed U+009B (an 8-bit CSI) and
    /// U+202E raw, since JSON escapes only U+0000 to U+001F.
    #[test]
    fn json_escapes_what_the_printer_escapes_and_means_the_same() {
        let name = "a\u{9b}31m\u{202e}gpj.exe\u{2028}\u{e9}\n";
        let mut text = Vec::new();
        let mut serializer = serde_json::Serializer::with_formatter(&mut text, SafeJson::default());
        vec![name].serialize(&mut serializer).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(!text.contains(['\u{9b}', '\u{202e}', '\u{2028}']), "{text}");
        assert!(text.contains("\\u009b") && text.contains("\\u202e") && text.contains("\u{e9}"));
        let back: Vec<String> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, [name]);
        // Laid out as serde_json's pretty printer lays it out.
        let value = serde_json::json!({"a": [1, "b"], "c": {}});
        let mut safe = Vec::new();
        let mut serializer = serde_json::Serializer::with_formatter(&mut safe, SafeJson::default());
        value.serialize(&mut serializer).unwrap();
        assert_eq!(
            String::from_utf8(safe).unwrap(),
            serde_json::to_string_pretty(&value).unwrap()
        );
    }
}
