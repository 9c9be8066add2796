//! Shared mechanics of the binfmt format crates.
//!
//! Every format crate (`taridx`, `arcx`, `parcode`, `kastore`) parses and
//! writes with the same pieces, so a bounds check or a varint is written once:
//!
//! - [`layout`]: fixed-layout little-endian records viewed in place
//!   ([`layout::Record`], [`fixed_layout!`]), built on zerocopy's unaligned
//!   integer types;
//! - [`varint`]: LEB128 and zigzag varints with overflow detection;
//! - [`cursor`]: [`ByteReader`], a forward reader whose errors carry absolute
//!   file offsets;
//! - [`range`]: checked offset + length arithmetic, ranges inside a file,
//!   alignment, and counts bounded by the bytes present;
//! - [`source`]: [`Source`], bytes at (offset, length), the one way readers
//!   get bytes: from memory, a map ([`ByteSource`]), `pread`
//!   ([`FileSource`]) or any `Read + Seek` ([`SeekSource`]); and
//!   [`SourceExt`], the checked reads every source has;
//! - [`range_reader`]: [`SourceRange`], a range of a source as
//!   `Read + Seek` (a tar member, a PAR4 map value, an ARCX block);
//! - [`atomic`]: [`AtomicFile`], output that appears whole or not at all;
//! - [`extract`]: [`extract::safe_target`], the gate between an untrusted
//!   entry name and a path on disk;
//! - [`input`]: the input gate, [`input::open`]: every file a command reads
//!   is opened there (regular files only, checked on the descriptor);
//! - [`atomic`]'s [`Inputs`]: the output gate's check that an output is none
//!   of the command's inputs;
//! - `dir` (Unix): the untrusted-directory helper for caches: entries
//!   opened and deleted by name, never through a symlink, regular files
//!   only, in a directory no other user can write;
//! - [`print`]: the printer gate, [`print::line`]: every line shown to a
//!   person, escaped and without secrets;
//! - [`io`]: [`io::write_all_vectored`], a record's parts in one write;
//! - [`carry`]: a typed error carried through `std::io::Error` (out of a
//!   `Read` implementation) and found again;
//! - [`error`]: [`Error`], the one error type, whose variants say what is
//!   wrong and where.

#![deny(missing_docs)]
// Only `sys.rs` allows it: a map of a file and `geteuid`.
#![deny(unsafe_code)]

pub mod alloc;
pub mod atomic;
pub mod carry;
pub mod cursor;
#[cfg(unix)]
pub mod destination;
pub mod dir;
pub mod error;
pub mod extract;
pub mod input;
pub mod io;
pub mod layout;
pub mod print;
pub mod range;
pub mod range_reader;
pub mod source;
mod sys;
pub mod varint;

pub use atomic::{AtomicFile, Inputs, same_file};
pub use cursor::ByteReader;
pub use destination::{Destination, LocalDir, OutputDir};
pub use error::{Error, IoResultExt, Result, ResultExt, What};
pub use range_reader::{RangeReader, SourceRange};
pub use source::SourceExt;
pub use source::{ByteSource, FileSource, MapOnDemand, MappedRange, Region, SeekSource, Source};
