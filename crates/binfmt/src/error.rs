//! The umbrella library's one error type.
//!
//! Every failure names the file it is about (a path or a URL) exactly once,
//! and keeps the format's own error as its [`std::error::Error::source`], so
//! a caller can match on it; the command line prints the `Display` form as
//! its one-line message.

use std::fmt;
use std::path::Path;

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the umbrella library can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An ARCX archive is bad or could not be read.
    #[error("{}", About(file, source))]
    Arcx {
        /// The file.
        file: String,
        /// What the ARCX reader said.
        #[source]
        source: binfmt_arcx::ArcxError,
    },

    /// A kastore file is bad or could not be read.
    #[error("{}", About(file, source))]
    Kast {
        /// The file.
        file: String,
        /// What the kastore reader said.
        #[source]
        source: binfmt_kastore::KastError,
    },

    /// A PAR4 file is bad or could not be read.
    #[error("{}", About(file, source))]
    Par4 {
        /// The file.
        file: String,
        /// What the PAR4 reader said.
        #[source]
        source: binfmt_parcode::ParError,
    },

    /// A TARIDX index or one of its shards is bad or could not be read.
    #[error("{}", About(file, source))]
    Taridx {
        /// The file.
        file: String,
        /// What the TARIDX reader said.
        #[source]
        source: binfmt_taridx::TaridxError,
    },

    /// A failure every format shares, or I/O.
    #[error("{}", About(file, source))]
    Core {
        /// The file.
        file: String,
        /// What went wrong.
        #[source]
        source: binfmt_core::Error,
    },

    /// No entry has this name.
    #[error("{file}: no entry {name:?}")]
    NotFound {
        /// The file.
        file: String,
        /// The name asked for.
        name: String,
    },

    /// Reading one entry failed.
    #[error("{file}: entry {name:?}: {}", EntryCause(source))]
    Entry {
        /// The file.
        file: String,
        /// The entry.
        name: String,
        /// Why.
        #[source]
        source: Box<Error>,
    },

    /// An entry the target cannot hold, or that would not survive the trip
    /// unchanged (a name repeated, not UTF-8, unsafe to extract).
    #[error("{file}: entry {name:?}: {why}")]
    CannotHold {
        /// The source or target file.
        file: String,
        /// The entry.
        name: String,
        /// Why, and what to do instead.
        why: String,
    },

    /// The file is not something this operation reads (a tar shard that
    /// needs an index, a PAR4 file without named entries, an unknown
    /// format).
    #[error("{file}: {why}")]
    Unsupported {
        /// The file.
        file: String,
        /// Why, and what to do instead.
        why: String,
    },
}

/// Shows `error` after `file`, unless the error already starts by naming it
/// ([`LeadingPath`]: I/O errors name their path).
struct About<'a, E>(&'a String, &'a E);

impl<E: fmt::Display + LeadingPath> fmt::Display for About<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1.names(self.0) {
            self.1.fmt(f)
        } else {
            write!(f, "{}: {}", self.0, self.1)
        }
    }
}

/// The path an error's message starts with, when it starts with one
/// (`PATH: what went wrong`): decided by the error's type and variant, so a
/// message about a file names it once, whoever adds the file.
pub trait LeadingPath {
    /// The path the message starts with, if it starts with one.
    fn leading_path(&self) -> Option<&Path>;

    /// Whether the message already starts by naming `file`.
    fn names(&self, file: &str) -> bool {
        self.leading_path()
            .is_some_and(|path| path.display().to_string() == file)
    }
}

impl<T: LeadingPath + ?Sized> LeadingPath for &T {
    fn leading_path(&self) -> Option<&Path> {
        (**self).leading_path()
    }
}

/// A message written out names no path of its own.
impl LeadingPath for str {
    fn leading_path(&self) -> Option<&Path> {
        None
    }
}

impl LeadingPath for String {
    fn leading_path(&self) -> Option<&Path> {
        None
    }
}

/// An `io::Error` says what failed, not where.
impl LeadingPath for std::io::Error {
    fn leading_path(&self) -> Option<&Path> {
        None
    }
}

impl LeadingPath for binfmt_core::Error {
    fn leading_path(&self) -> Option<&Path> {
        match self {
            Self::Io { path, .. } | Self::NotRegularFile { path, .. } => Some(path),
            Self::OutputIsInput { output, .. } => Some(output),
            _ => None,
        }
    }
}

impl LeadingPath for binfmt_arcx::ArcxError {
    fn leading_path(&self) -> Option<&Path> {
        match self {
            Self::Core(core) => core.leading_path(),
            _ => None,
        }
    }
}

impl LeadingPath for binfmt_kastore::KastError {
    fn leading_path(&self) -> Option<&Path> {
        match self {
            Self::Core(core) => core.leading_path(),
            Self::Npy { path, .. } => Some(Path::new(path)),
            _ => None,
        }
    }
}

impl LeadingPath for binfmt_parcode::ParError {
    fn leading_path(&self) -> Option<&Path> {
        match self {
            Self::Core(core) => core.leading_path(),
            _ => None,
        }
    }
}

impl LeadingPath for binfmt_taridx::TaridxError {
    fn leading_path(&self) -> Option<&Path> {
        match self {
            Self::Core(core) => core.leading_path(),
            Self::CompressedShard { shard, .. } => Some(shard),
            Self::OutputIsInput { output, .. } => Some(output),
            Self::Foreign { file, .. } => Some(file),
            _ => None,
        }
    }
}

/// Every message of this crate starts with its file.
impl LeadingPath for Error {
    fn leading_path(&self) -> Option<&Path> {
        Some(Path::new(self.file()))
    }
}

/// An entry's failure without its file, which the outer message names.
struct EntryCause<'a>(&'a Error);

impl fmt::Display for EntryCause<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Error::Arcx { source, .. } => source.fmt(f),
            Error::Kast { source, .. } => source.fmt(f),
            Error::Par4 { source, .. } => source.fmt(f),
            Error::Taridx { source, .. } => source.fmt(f),
            Error::Core { source, .. } => source.fmt(f),
            other => other.fmt(f),
        }
    }
}

impl Error {
    /// The file the error is about.
    pub fn file(&self) -> &str {
        match self {
            Self::Arcx { file, .. }
            | Self::Kast { file, .. }
            | Self::Par4 { file, .. }
            | Self::Taridx { file, .. }
            | Self::Core { file, .. }
            | Self::NotFound { file, .. }
            | Self::Entry { file, .. }
            | Self::CannotHold { file, .. }
            | Self::Unsupported { file, .. } => file,
        }
    }

    /// This error as a failure of entry `name`.
    pub(crate) fn in_entry(self, name: &str) -> Self {
        match self {
            Self::Entry { .. } | Self::NotFound { .. } | Self::CannotHold { .. } => self,
            other => Self::Entry {
                file: other.file().to_owned(),
                name: name.to_owned(),
                source: Box::new(other),
            },
        }
    }
}

/// Attaches the file an error is about.
pub(crate) trait InFile<T> {
    /// The error, naming `file`.
    fn in_file(self, file: &str) -> Result<T>;
}

/// The format crates' error types and the variant of [`Error`] each one
/// becomes: the one list that attaching a file ([`InFile`]), taking an
/// error back out of an `io::Error` ([`from_io`]) and finding the shared
/// error inside one ([`core_error`]) go by.
macro_rules! format_errors {
    ($($source:ty => $variant:ident),*) => {
        $(
            impl<T> InFile<T> for std::result::Result<T, $source> {
                fn in_file(self, file: &str) -> Result<T> {
                    self.map_err(|source| Error::$variant {
                        file: file.to_owned(),
                        source,
                    })
                }
            }
        )*

        impl<T> InFile<T> for std::result::Result<T, binfmt_core::Error> {
            fn in_file(self, file: &str) -> Result<T> {
                self.map_err(|source| Error::Core {
                    file: file.to_owned(),
                    source,
                })
            }
        }

        /// The error `carried` holds ([`binfmt_core::carry`]) as this
        /// crate's error about `file`; `carried` back when it holds none.
        fn take_carried(carried: std::io::Error, file: &str) -> Result<Error, std::io::Error> {
            use binfmt_core::carry::take;
            let carried = match take::<Error>(carried) {
                // A reader of this crate's own (one opening its entry
                // lazily) reports an error that already names its file and
                // entry.
                Ok(ours) => return Ok(ours),
                Err(other) => other,
            };
            $(
                let carried = match take::<$source>(carried) {
                    Ok(source) => return Ok(Error::$variant { file: file.to_owned(), source }),
                    Err(other) => other,
                };
            )*
            take::<binfmt_core::Error>(carried).map(|source| Error::Core {
                file: file.to_owned(),
                source,
            })
        }

        /// The error every format shares, when `error` is one or is a format
        /// error made of one (format errors show theirs transparently, so
        /// `source()` skips it).
        pub fn core_error<'a>(
            error: &'a (dyn std::error::Error + 'static),
        ) -> Option<&'a binfmt_core::Error> {
            if let Some(core) = error.downcast_ref::<binfmt_core::Error>() {
                return Some(core);
            }
            $({
                type Format = $source;
                if let Some(Format::Core(core)) = error.downcast_ref::<Format>() {
                    return Some(core);
                }
            })*
            None
        }
    };
}

format_errors!(
    binfmt_arcx::ArcxError => Arcx,
    binfmt_kastore::KastError => Kast,
    binfmt_parcode::ParError => Par4,
    binfmt_taridx::TaridxError => Taridx
);

impl<T> InFile<T> for std::io::Result<T> {
    fn in_file(self, file: &str) -> Result<T> {
        self.map_err(|error| from_io(error, file))
    }
}

/// An I/O error from an entry reader: the format error inside it when there
/// is one (readers report checksum failures that way), plain I/O otherwise.
pub(crate) fn from_io(error: std::io::Error, file: &str) -> Error {
    take_carried(error, file).unwrap_or_else(|plain| Error::Core {
        source: binfmt_core::Error::io(file, plain),
        file: file.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_named_once() {
        let missing = binfmt_core::Error::io(
            "/data/x.arcx",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        let error = Error::Core {
            file: "/data/x.arcx".into(),
            source: missing,
        };
        assert_eq!(error.to_string().matches("/data/x.arcx").count(), 1);
        let error = Error::Arcx {
            file: "a.arcx".into(),
            source: binfmt_arcx::ArcxError::FileChecksum { path: "f".into() },
        }
        .in_entry("f");
        assert_eq!(
            error.to_string(),
            "a.arcx: entry \"f\": file \"f\": SHA-256 mismatch"
        );
        assert!(std::error::Error::source(&error).is_some());
    }

    #[test]
    fn format_errors_come_back_out_of_io_errors() {
        let io = std::io::Error::other(binfmt_arcx::ArcxError::FileChecksum { path: "f".into() });
        assert!(matches!(
            from_io(io, "a.arcx"),
            Error::Arcx {
                source: binfmt_arcx::ArcxError::FileChecksum { .. },
                ..
            }
        ));
        let plain = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(matches!(from_io(plain, "a.arcx"), Error::Core { .. }));
    }

    #[test]
    fn who_names_the_file_is_decided_by_the_error_type() {
        let io = binfmt_core::Error::io("x.arcx", std::io::Error::other("gone"));
        assert!(io.names("x.arcx"));
        // A longer path that merely starts the same is another file.
        assert!(!io.names("x"));
        let arcx = binfmt_arcx::ArcxError::Core(io);
        assert!(arcx.names("x.arcx"));
        let checksum = binfmt_arcx::ArcxError::FileChecksum {
            path: "x.arcx".into(),
        };
        assert!(!checksum.names("x.arcx"));
        assert!(!"x.arcx: a message".names("x.arcx"));
        let error = Error::Arcx {
            file: "x.arcx".into(),
            source: arcx,
        };
        assert_eq!(error.to_string(), "x.arcx: gone");
        assert!(
            core_error(&binfmt_arcx::ArcxError::Core(binfmt_core::Error::corrupt(
                "a", "b"
            )))
            .is_some()
        );
    }
}
