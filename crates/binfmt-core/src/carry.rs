//! Carrying a typed error through `std::io::Error`, and finding it again.
//!
//! A `Read` implementation can only fail with an `io::Error`, so a format's
//! entry reader that finds a checksum mismatch puts its typed error inside
//! one ([`into_io`]); whoever called `read` takes it back out ([`take`]) or
//! looks for it ([`find`]), instead of reporting a bare I/O failure.
//!
//! ```text
//! io::Error { kind, payload: Box<dyn Error + Send + Sync> }
//!                   └─ the typed error (ArcxError, TaridxError, ...)
//!                       └─ source() ... (its causes)
//! ```
//!
//! `io::Error::source` skips its payload (it returns the payload's own
//! source), so [`chain`] and [`find`] step into an `io::Error` through its
//! payload (`get_ref`) and into anything else through `source()`.
//!
//! ```
//! use binfmt_core::{Error, carry};
//!
//! let io = carry::into_io(Error::corrupt("block 3", "bad frame"));
//! assert!(carry::find::<Error>(&io).is_some());
//! let back: Error = carry::take(io).unwrap();
//! assert_eq!(back.to_string(), "corrupt block 3: bad frame");
//! ```

use std::error::Error as StdError;
use std::io;

/// `error` inside an `io::Error` of kind [`io::ErrorKind::Other`], for a
/// `Read` or `Write` implementation to return.
pub fn into_io<E>(error: E) -> io::Error
where
    E: StdError + Send + Sync + 'static,
{
    io::Error::other(error)
}

/// `error` inside an `io::Error` of kind `kind` (so that callers matching
/// on the kind, `NotFound`, `TimedOut`, ..., still see it).
pub fn into_io_as<E>(kind: io::ErrorKind, error: E) -> io::Error
where
    E: StdError + Send + Sync + 'static,
{
    io::Error::new(kind, error)
}

/// The `E` that `error` carries as its payload, taken out; `error` itself,
/// unchanged, when its payload is not an `E` (or it has none).
pub fn take<E>(error: io::Error) -> Result<E, io::Error>
where
    E: StdError + Send + Sync + 'static,
{
    error.downcast::<E>()
}

/// The first `E` in `error` or under it ([`chain`]).
pub fn find<'a, E>(error: &'a (dyn StdError + 'static)) -> Option<&'a E>
where
    E: StdError + 'static,
{
    chain(error).find_map(|layer| layer.downcast_ref::<E>())
}

/// `error` and everything under it, outermost first: an `io::Error` is
/// looked into through its payload (`get_ref`), anything else through
/// `source()`.
pub fn chain<'a>(
    error: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(error), |&current| under(current))
}

/// The layer under `current`: an `io::Error`'s payload, anything else's
/// `source()`.
fn under<'a>(current: &'a (dyn StdError + 'static)) -> Option<&'a (dyn StdError + 'static)> {
    match current.downcast_ref::<io::Error>() {
        Some(io_error) => io_error.get_ref().map(|inner| inner as _),
        None => current.source(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn a_carried_error_comes_back_and_a_plain_one_stays_plain() {
        let io = into_io_as(io::ErrorKind::NotFound, Error::corrupt("x", "y"));
        assert_eq!(io.kind(), io::ErrorKind::NotFound);
        assert!(matches!(take::<Error>(io), Ok(Error::Corrupt { .. })));
        let plain = io::Error::from(io::ErrorKind::BrokenPipe);
        let back = take::<Error>(plain).unwrap_err();
        assert_eq!(back.kind(), io::ErrorKind::BrokenPipe);
        assert!(find::<Error>(&back).is_none());
    }

    #[test]
    fn find_looks_through_payloads_and_sources() {
        // An io::Error inside a core error inside an io::Error.
        let inner = into_io(Error::corrupt("block", "bad"));
        let outer = into_io(Error::io("a.arcx", inner));
        let found = find::<Error>(&outer);
        assert!(matches!(found, Some(Error::Io { .. })));
        // Under the Io error: its source, and that source's payload.
        let Some(Error::Io { source, .. }) = found else {
            unreachable!()
        };
        assert!(matches!(find::<Error>(source), Some(Error::Corrupt { .. })));
    }
}
