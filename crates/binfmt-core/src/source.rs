//! Where readers get bytes: one positional source.
//!
//! Every reader in the workspace asks for "the `len` bytes at `offset`" and
//! nothing else, through [`Source`]. A source whose bytes already sit in
//! memory (a map, a `Vec`) says so with [`Source::in_memory`], and readers
//! borrow from it: zero-copy stays zero-copy. Any other source (a file read
//! by `pread`, any `Read + Seek`, a remote object) copies the range into a
//! buffer, so opening a file reads only the few bytes a format locates
//! itself with, and nothing needs a map or the whole file in memory.
//!
//! | source | bytes come from | borrowable |
//! |---|---|---|
//! | `[u8]`, `Vec<u8>` | memory | yes |
//! | [`ByteSource`] | a read-only map of a regular file, or a buffer | yes |
//! | [`FileSource`] | `pread` on a regular file; with [`FileSource::map_regions`], a read-only map for each large region a reader holds whole ([`SourceExt::region_at`]) | no |
//! | [`MapOnDemand`] | `pread` for small ranges; a map of the file, made on the first large range | ranges of at least [`MapOnDemand::MAP_FROM`] bytes, and every range once mapped |
//! | [`SeekSource`] | any `Read + Seek`, behind a lock | no |
//!
//! A source that can lend some ranges but not all says so per range with
//! [`Source::borrow_at`].
//!
//! [`SourceExt`] adds the checked helpers readers use: [`SourceExt::bytes_at`]
//! (borrowed or copied, the range checked against the source's size before
//! anything is allocated), [`SourceExt::region_at`] for a large range a reader
//! holds whole (borrowed, mapped or copied), [`SourceExt::record_at`] for fixed layouts, and
//! [`SourceExt::reader`], a [`RangeReader`] that streams a range through
//! `std::io::Read` in the caller's buffer, for entries too large to hold.
//!
//! Files that are not regular (FIFOs, devices, sockets) are refused by
//! [`FileSource::open`] and [`ByteSource::open`] before they are opened for
//! reading: a FIFO would block the open, a device such as `/dev/zero` would
//! never end.
//!
//! ```
//! use binfmt_core::source::{Source, SourceExt};
//!
//! let bytes = b"header|payload".to_vec();
//! let head = bytes.bytes_at(0, 6, "header")?;            // borrowed: Vec is in memory
//! assert_eq!(&*head, b"header");
//! let mut payload = String::new();
//! std::io::Read::read_to_string(&mut bytes.reader(7, 7, "payload")?, &mut payload)?;
//! assert_eq!(payload, "payload");
//! assert!(bytes.bytes_at(10, 8, "past the end").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The parts, each below this facade: `positional.rs` (the trait), `ext.rs`
//! (the checked reads and [`RangeReader`]), and one file per source
//! (`bytes.rs`, `file.rs`, `on_demand.rs`, `seek.rs`); maps are made in
//! `sys.rs`, the crate's one module allowed `unsafe` code.

mod bytes;
mod ext;
mod file;
mod on_demand;
mod positional;
mod seek;
#[cfg(test)]
mod tests;

pub use bytes::ByteSource;
pub use ext::{Region, SourceExt, read_vec_at};
pub use file::FileSource;
pub use on_demand::MapOnDemand;
pub use positional::{MappedRange, Source};
pub use seek::SeekSource;
