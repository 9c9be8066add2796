//! The drop-in API's error, [`ParcodeError`], with the reference's
//! variants. It wraps the raw and typed layers' [`ParError`]: every
//! `ParError` converts into a `ParcodeError` (the header failures keeping
//! the reference's words), and [`ParcodeError::typed`] gives the
//! `ParError` back. The dependency goes one way: the lower layers never
//! name `ParcodeError` (a failed drop-in job travels through them as a
//! boxed error, [`ParError::Job`], and comes back out unchanged).

use std::io;
use std::sync::Arc;

use crate::raw::error::ParError;

/// The drop-in error type (`parcode::ParcodeError`), with the reference's
/// variants. Everything a reader rejects arrives as [`ParcodeError::Format`]
/// or [`ParcodeError::Compression`] carrying the typed [`ParError`]
/// ([`Detail::typed`], and `source()`); I/O failures as
/// [`ParcodeError::Io`], naming the path where there is one.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ParcodeError {
    /// An I/O failure.
    #[error("I/O Error: {0}")]
    Io(Arc<io::Error>),
    /// A value that could not be encoded (or a job that failed).
    #[error("Serialization Error: {0}")]
    Serialization(String),
    /// A payload that does not decompress (or an unknown compression id).
    #[error("Compression Error: {0}")]
    Compression(Detail),
    /// A file that is not what it should be.
    #[error("Format Error: {0}")]
    Format(Detail),
    /// A failure that is a bug of this crate.
    #[error("Internal Logic Error: {0}")]
    Internal(String),
}

/// The message of a [`ParcodeError::Format`] or
/// [`ParcodeError::Compression`], with the typed error it came from. It
/// reads as a `str` (`msg.contains("...")`, `msg == "..."`).
#[derive(Debug, Clone)]
pub struct Detail {
    message: String,
    typed: Option<Arc<ParError>>,
}

impl Detail {
    /// The typed error, when a reader of this crate raised it.
    pub fn typed(&self) -> Option<&ParError> {
        self.typed.as_deref()
    }

    /// The message.
    pub fn as_str(&self) -> &str {
        &self.message
    }
}

impl std::ops::Deref for Detail {
    type Target = str;

    fn deref(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for Detail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Detail {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.typed
            .as_deref()
            .map(|typed| typed as &(dyn std::error::Error + 'static))
    }
}

impl From<String> for Detail {
    fn from(message: String) -> Self {
        Self {
            message,
            typed: None,
        }
    }
}

impl From<&str> for Detail {
    fn from(message: &str) -> Self {
        message.to_owned().into()
    }
}

impl PartialEq<str> for Detail {
    fn eq(&self, other: &str) -> bool {
        self.message == other
    }
}

impl PartialEq<&str> for Detail {
    fn eq(&self, other: &&str) -> bool {
        self.message == *other
    }
}

impl From<ParError> for Detail {
    fn from(error: ParError) -> Self {
        // The header failures start with the reference's words, which
        // users of the drop-in API may look for.
        let reference = match &error {
            ParError::Core(binfmt_core::Error::Truncated { .. }) => {
                Some("File smaller than header")
            }
            ParError::Core(binfmt_core::Error::BadMagic { .. }) => Some("Invalid Magic Bytes"),
            ParError::Core(binfmt_core::Error::UnsupportedVersion { .. }) => {
                Some("Unsupported version")
            }
            _ => None,
        };
        Self {
            message: match reference {
                Some(words) => format!("{words}: {error}"),
                None => error.to_string(),
            },
            typed: Some(Arc::new(error)),
        }
    }
}

impl From<ParError> for ParcodeError {
    fn from(error: ParError) -> Self {
        match error {
            ParError::Job(error) => match error.downcast::<Self>() {
                Ok(error) => *error,
                Err(other) => Self::Serialization(other.to_string()),
            },
            ParError::Encode { .. } | ParError::ValueLength { .. } => {
                Self::Serialization(error.to_string())
            }
            ParError::Io { ref source, .. } | ParError::ValueRead { ref source, .. } => {
                Self::Io(Arc::new(io::Error::new(source.kind(), Detail::from(error))))
            }
            ParError::Core(binfmt_core::Error::Io { ref source, .. }) => {
                Self::Io(Arc::new(io::Error::new(source.kind(), Detail::from(error))))
            }
            ParError::Lz4 { .. } | ParError::UnknownCompression { .. } => {
                Self::Compression(error.into())
            }
            other => Self::Format(other.into()),
        }
    }
}

impl From<binfmt_core::Error> for ParcodeError {
    fn from(error: binfmt_core::Error) -> Self {
        ParError::Core(error).into()
    }
}

impl From<io::Error> for ParcodeError {
    fn from(error: io::Error) -> Self {
        Self::Io(Arc::new(error))
    }
}

impl ParcodeError {
    /// The typed error behind this one, when a reader or writer of this
    /// crate raised it.
    pub fn typed(&self) -> Option<&ParError> {
        match self {
            Self::Format(detail) | Self::Compression(detail) => detail.typed(),
            Self::Io(error) => error
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<Detail>())
                .and_then(Detail::typed),
            _ => None,
        }
    }
}
