//! The umbrella library's one error type.
//!
//! Every failure names the file it is about (a path or a URL) exactly once,
//! and keeps the format's own error as its [`std::error::Error::source`], so
//! a caller can match on it; the command line prints the `Display` form as
//! its one-line message.

use std::fmt;

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

/// Shows `error` after `file`, unless the message already starts with it
/// (I/O errors name their path).
struct About<'a, E>(&'a String, &'a E);

impl<E: fmt::Display> fmt::Display for About<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = self.1.to_string();
        if message.starts_with(self.0.as_str()) {
            f.write_str(&message)
        } else {
            write!(f, "{}: {message}", self.0)
        }
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

macro_rules! in_file {
    ($($source:ty => $variant:ident),*) => {$(
        impl<T> InFile<T> for std::result::Result<T, $source> {
            fn in_file(self, file: &str) -> Result<T> {
                self.map_err(|source| Error::$variant {
                    file: file.to_owned(),
                    source,
                })
            }
        }
    )*};
}

in_file!(
    binfmt_arcx::ArcxError => Arcx,
    binfmt_kastore::KastError => Kast,
    binfmt_parcode::ParError => Par4,
    binfmt_taridx::TaridxError => Taridx,
    binfmt_core::Error => Core
);

impl<T> InFile<T> for std::io::Result<T> {
    fn in_file(self, file: &str) -> Result<T> {
        self.map_err(|error| from_io(error, file))
    }
}

/// An I/O error from an entry reader: the format error inside it when there
/// is one (readers report checksum failures that way), plain I/O otherwise.
pub(crate) fn from_io(error: std::io::Error, file: &str) -> Error {
    let file = file.to_owned();
    // A reader of this crate's own (one opening its entry lazily) reports
    // an error that already names its file and entry.
    if error.get_ref().is_some_and(|inner| inner.is::<Error>()) {
        return match error.into_inner().map(|inner| inner.downcast::<Error>()) {
            Some(Ok(ours)) => *ours,
            _ => lost(file),
        };
    }
    let wraps_ours = error.get_ref().is_some_and(|inner| {
        inner.is::<binfmt_arcx::ArcxError>()
            || inner.is::<binfmt_kastore::KastError>()
            || inner.is::<binfmt_parcode::ParError>()
            || inner.is::<binfmt_taridx::TaridxError>()
            || inner.is::<binfmt_core::Error>()
    });
    if !wraps_ours {
        return Error::Core {
            source: binfmt_core::Error::io(&file, error),
            file,
        };
    }
    let Some(inner) = error.into_inner() else {
        return lost(file);
    };
    let inner = match inner.downcast::<binfmt_arcx::ArcxError>() {
        Ok(source) => {
            return Error::Arcx {
                file,
                source: *source,
            };
        }
        Err(other) => other,
    };
    let inner = match inner.downcast::<binfmt_kastore::KastError>() {
        Ok(source) => {
            return Error::Kast {
                file,
                source: *source,
            };
        }
        Err(other) => other,
    };
    let inner = match inner.downcast::<binfmt_parcode::ParError>() {
        Ok(source) => {
            return Error::Par4 {
                file,
                source: *source,
            };
        }
        Err(other) => other,
    };
    let inner = match inner.downcast::<binfmt_taridx::TaridxError>() {
        Ok(source) => {
            return Error::Taridx {
                file,
                source: *source,
            };
        }
        Err(other) => other,
    };
    match inner.downcast::<binfmt_core::Error>() {
        Ok(source) => Error::Core {
            file,
            source: *source,
        },
        Err(_) => lost(file),
    }
}

fn lost(file: String) -> Error {
    Error::Core {
        file,
        source: binfmt_core::Error::corrupt("entry reader", "an error was lost"),
    }
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
}
