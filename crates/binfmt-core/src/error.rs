//! The one error type of the binfmt crates.
//!
//! Every variant says *what* went wrong and *where*: the structure or field
//! (`what`), the byte offset, and the sizes involved. Format crates add the
//! outer location (shard, member, key) with [`Error::context`], which keeps the
//! original variant reachable through [`Error::innermost`].

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A short description of the structure or field an error is about, such as
/// `"row 17 extid"`: static in the common case, owned when it carries data.
pub type What = Cow<'static, str>;

/// `Result` with [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a binfmt reader or writer can reject or fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes that identify a format are not there.
    #[error(
        "bad magic in {what} at offset {offset}: expected {}, found {}",
        Hex(expected),
        Hex(found)
    )]
    BadMagic {
        /// The structure.
        what: What,
        /// Where the magic should be.
        offset: u64,
        /// The magic bytes.
        expected: Box<[u8]>,
        /// The bytes there.
        found: Box<[u8]>,
    },

    /// A version this crate does not read.
    #[error("unsupported {what} version {found}: {supported}")]
    UnsupportedVersion {
        /// The format or structure.
        what: What,
        /// The version found.
        found: String,
        /// What this crate reads.
        supported: What,
    },

    /// The input ends before a structure does.
    #[error("truncated {what} at offset {offset}: need {needed} bytes, have {available}")]
    Truncated {
        /// The structure.
        what: What,
        /// Where it starts.
        offset: u64,
        /// The bytes it needs.
        needed: u64,
        /// The bytes there are.
        available: u64,
    },

    /// A declared range reaches past the end of the file.
    #[error(
        "{what} out of bounds: offset {offset} + length {len} is past the end of the {file_size}-byte file"
    )]
    OutOfBounds {
        /// The structure.
        what: What,
        /// Where the range starts.
        offset: u64,
        /// Its length.
        len: u64,
        /// The size of the file (or region) it must lie in.
        file_size: u64,
    },

    /// A declared offset plus length does not fit in 64 bits.
    #[error("{what}: offset {offset} + length {len} overflows 64 bits")]
    Overflow {
        /// The structure.
        what: What,
        /// The offset.
        offset: u64,
        /// The length.
        len: u64,
    },

    /// A structure that must start on an alignment boundary does not.
    #[error("{what} at offset {offset} is not aligned to {align} bytes")]
    Misaligned {
        /// The structure.
        what: What,
        /// Where it starts.
        offset: u64,
        /// The alignment it needs.
        align: u64,
    },

    /// A declared count of fixed-size items cannot fit in the bytes present.
    #[error(
        "{what}: {count} items of at least {item_size} bytes cannot fit in the {available} bytes that remain"
    )]
    CountTooLarge {
        /// The table.
        what: What,
        /// The count declared.
        count: u64,
        /// The least bytes one item takes.
        item_size: u64,
        /// The bytes that remain.
        available: u64,
    },

    /// A LEB128 varint runs past 10 bytes or sets bits beyond 64.
    #[error("{what}: varint at offset {offset} overflows 64 bits")]
    VarintOverflow {
        /// The field.
        what: What,
        /// Where the varint starts.
        offset: u64,
    },

    /// The bytes are structurally present but inconsistent.
    #[error("corrupt {what}: {why}")]
    Corrupt {
        /// The structure.
        what: What,
        /// What is inconsistent.
        why: String,
    },

    /// A stored checksum or digest disagrees with the data.
    #[error(
        "{what} checksum mismatch: expected {}, found {}",
        Hex(expected),
        Hex(found)
    )]
    ChecksumMismatch {
        /// What was checked.
        what: What,
        /// The stored checksum.
        expected: Box<[u8]>,
        /// The checksum of the data.
        found: Box<[u8]>,
    },

    /// An entry name that would write outside the extraction directory.
    #[error("refused to extract {name:?}: {why}")]
    UnsafePath {
        /// The name.
        name: String,
        /// Why it is refused.
        why: &'static str,
    },

    /// A path that must be a regular file (read by offset) is something else.
    #[error("{}: {kind}, not a regular file (this needs a file it can read by offset)", path.display())]
    NotRegularFile {
        /// The path.
        path: PathBuf,
        /// What it is (`a FIFO`, `a directory`, ...).
        kind: &'static str,
    },

    /// An output that would replace one of the files the command reads.
    #[error("{}: {}binfmt never writes its output over what it reads", output.display(), OutputIsInput::describe(output, input))]
    OutputIsInput {
        /// The output named.
        output: PathBuf,
        /// The input it is (the same file by device and inode).
        input: PathBuf,
    },

    /// A size or count from the input exceeds a configured limit.
    #[error("{what}: {value} exceeds the limit of {limit}")]
    LimitExceeded {
        /// What is too large.
        what: What,
        /// Its size or count.
        value: u64,
        /// The limit.
        limit: u64,
    },

    /// Memory for a table the input describes could not be reserved: the
    /// input is within its limits, but this process cannot hold it.
    #[error("{what}: cannot allocate {bytes} bytes for it")]
    OutOfMemory {
        /// The table.
        what: What,
        /// The bytes asked for.
        bytes: u64,
    },

    /// An I/O operation on a named file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file (or URL, or stream name).
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },

    /// Another error, located inside a larger unit (a shard, a member, a key).
    #[error("{context}: {source}")]
    Context {
        /// The unit.
        context: What,
        /// The error inside it.
        source: Box<Error>,
    },
}

/// How [`Error::OutputIsInput`] names the input.
struct OutputIsInput;

impl OutputIsInput {
    fn describe(output: &Path, input: &Path) -> String {
        if output == input {
            "is the input: ".to_owned()
        } else {
            format!("is {}, an input: ", input.display())
        }
    }
}

impl Error {
    /// A [`Error::Corrupt`] error.
    pub fn corrupt(what: impl Into<What>, why: impl Into<String>) -> Self {
        Self::Corrupt {
            what: what.into(),
            why: why.into(),
        }
    }

    /// A [`Error::BadMagic`] error.
    pub fn bad_magic(what: impl Into<What>, offset: u64, expected: &[u8], found: &[u8]) -> Self {
        Self::BadMagic {
            what: what.into(),
            offset,
            expected: expected.into(),
            found: found.into(),
        }
    }

    /// A [`Error::ChecksumMismatch`] error. Pass checksums as big-endian bytes
    /// (`crc.to_be_bytes()`) so they print the way tools show them.
    pub fn checksum(what: impl Into<What>, expected: &[u8], found: &[u8]) -> Self {
        Self::ChecksumMismatch {
            what: what.into(),
            expected: expected.into(),
            found: found.into(),
        }
    }

    /// An [`Error::Io`] error about `path`.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// Wraps this error in the unit it happened in, e.g. `"shard train_0003.tar"`.
    #[must_use]
    pub fn context(self, context: impl Into<What>) -> Self {
        Self::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// The error under every [`Error::Context`] layer: the variant that says
    /// what actually went wrong.
    pub fn innermost(&self) -> &Error {
        let mut error = self;
        while let Self::Context { source, .. } = error {
            error = source;
        }
        error
    }
}

/// Adds a path to `std::io` errors.
pub trait IoResultExt<T> {
    /// Turns an `io::Error` into [`Error::Io`] naming `path`.
    fn with_path(self, path: &Path) -> Result<T>;
}

impl<T> IoResultExt<T> for io::Result<T> {
    fn with_path(self, path: &Path) -> Result<T> {
        self.map_err(|source| Error::io(path, source))
    }
}

/// Adds an outer location to binfmt errors.
pub trait ResultExt<T> {
    /// Wraps an error with [`Error::context`]; the context is built only on failure.
    fn context<C: Into<What>>(self, context: impl FnOnce() -> C) -> Result<T>;
}

impl<T> ResultExt<T> for Result<T> {
    fn context<C: Into<What>>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|error| error.context(context()))
    }
}

/// Shows bytes as printable ASCII in quotes when they all are, as hex otherwise.
struct Hex<'a>(&'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.is_empty() && self.0.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
            write!(f, "\"{}\"", self.0.escape_ascii())
        } else {
            f.write_str("0x")?;
            self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_shows_ascii_or_hex() {
        let error = Error::bad_magic("header", 0, b"KAST", &[0x89, 0x4b]);
        assert_eq!(
            error.to_string(),
            "bad magic in header at offset 0: expected \"KAST\", found 0x894b"
        );
    }

    #[test]
    fn checksum_prints_big_endian_hex() {
        let error = Error::checksum(
            "block 3",
            &0xdead_beef_u32.to_be_bytes(),
            &1u32.to_be_bytes(),
        );
        assert_eq!(
            error.to_string(),
            "block 3 checksum mismatch: expected 0xdeadbeef, found 0x00000001"
        );
    }

    #[test]
    fn context_layers_keep_the_cause_reachable() {
        let cause = Error::Truncated {
            what: "tar header".into(),
            offset: 1024,
            needed: 512,
            available: 100,
        };
        let error = cause
            .context("member a.jpg")
            .context("shard train_0001.tar");
        assert_eq!(
            error.to_string(),
            "shard train_0001.tar: member a.jpg: truncated tar header at offset 1024: need 512 bytes, have 100"
        );
        assert!(matches!(
            error.innermost(),
            Error::Truncated { offset: 1024, .. }
        ));
    }

    #[test]
    fn io_errors_name_the_path() {
        let result: io::Result<()> = Err(io::Error::new(io::ErrorKind::NotFound, "gone"));
        let error = result.with_path(Path::new("/data/x.kas")).unwrap_err();
        assert_eq!(error.to_string(), "/data/x.kas: gone");
    }
}
