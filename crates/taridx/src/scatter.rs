//! A sample read in one vectored request: the tar headers (and the padding
//! between members) into a scratch buffer, each payload straight into the
//! caller's buffer, so a payload is copied once, by the kernel.
//!
//! ```text
//! shard:  | header a | payload a | pad | header b | payload b |
//! read:     scratch    bufs[0]     scratch          bufs[1]
//!           └────────── one preadv from header a ───────────┘
//! ```
//!
//! Only for members whose gaps were checked already (the check bits of
//! spec/taridx.md §4.2): each header is then checked against its row from
//! the scratch buffer ([`Headers`]), and a failed check fails the read, so
//! the bytes already in the caller's buffers are never handed out as the
//! member's.

use std::io::{self, IoSliceMut};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use binfmt_core::Source;

use crate::format::Row;
use crate::window::{WINDOW_LIMIT, read_held};

/// The header regions of a scattered read, held in memory, and the shard
/// for anything else (as [`crate::window::Window`] does for a whole span).
#[derive(Debug)]
pub(crate) struct Headers {
    shard: Arc<dyn Source>,
    /// Where each region starts in the shard and where it lies in `bytes`.
    pieces: Vec<(u64, Range<usize>)>,
    bytes: Vec<u8>,
}

/// The span `rows` cover, from the first header to the last payload's end,
/// when they can be read in one scattered request: in ascending order,
/// none overlapping the next one's header, within the shard, at most
/// [`WINDOW_LIMIT`] bytes in all.
pub(crate) fn span(rows: &[Row], shard_len: u64) -> Option<Range<u64>> {
    let start = rows.first()?.offset.get();
    let mut cursor = start;
    for row in rows {
        if row.offset.get() < cursor {
            return None;
        }
        cursor = row.payload_offset().checked_add(row.size.get())?;
    }
    (cursor <= shard_len && cursor - start <= WINDOW_LIMIT).then_some(start..cursor)
}

impl Headers {
    /// Reads `span` (from [`span`]) of `shard` in one request: each row's
    /// payload into its buffer of `payloads` (as long as the row says), the
    /// rest into the headers kept here.
    pub(crate) fn read(
        shard: &Arc<dyn Source>,
        span: Range<u64>,
        rows: &[Row],
        payloads: &mut [&mut [u8]],
    ) -> io::Result<Self> {
        let total: u64 = rows.iter().map(|row| row.size.get()).sum();
        let scratch = span
            .end
            .checked_sub(span.start)
            .and_then(|len| len.checked_sub(total))
            .and_then(|len| usize::try_from(len).ok())
            .ok_or_else(|| io::Error::other("rows overlap"))?;
        let mut bytes = vec![0u8; scratch];
        let mut pieces = Vec::with_capacity(rows.len());
        {
            let mut slices: Vec<IoSliceMut<'_>> = Vec::with_capacity(2 * rows.len());
            let mut rest: &mut [u8] = &mut bytes;
            let (mut cursor, mut used) = (span.start, 0usize);
            for (row, payload) in rows.iter().zip(payloads.iter_mut()) {
                let gap = usize::try_from(row.payload_offset() - cursor)
                    .map_err(|_| io::Error::other("gap"))?;
                let (head, tail) = std::mem::take(&mut rest)
                    .split_at_mut_checked(gap)
                    .ok_or_else(|| io::Error::other("headers past the scratch buffer"))?;
                rest = tail;
                pieces.push((cursor, used..used + gap));
                used += gap;
                slices.push(IoSliceMut::new(head));
                slices.push(IoSliceMut::new(payload));
                cursor = row.payload_offset() + row.size.get();
            }
            shard.read_vectored_exact_at(span.start, &mut slices)?;
        }
        Ok(Self {
            shard: Arc::clone(shard),
            pieces,
            bytes,
        })
    }
}

impl Source for Headers {
    fn len(&self) -> u64 {
        self.shard.len()
    }

    fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let end = offset.checked_add(len)?;
        let (start, range) = self
            .pieces
            .iter()
            .find(|(start, range)| *start <= offset && end <= start + range.len() as u64)?;
        let from = range.start + usize::try_from(offset - start).ok()?;
        self.bytes.get(from..from + usize::try_from(len).ok()?)
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        read_held(
            self.borrow_at(offset, buf.len() as u64),
            &*self.shard,
            offset,
            buf,
        )
    }

    fn name(&self) -> &Path {
        self.shard.name()
    }
}

/// Whether a header region is at least one block (a row's own header).
#[cfg(test)]
fn holds_a_header(piece: &(u64, Range<usize>)) -> bool {
    piece.1.len() as u64 >= crate::tar::BLOCK
}

#[cfg(test)]
mod tests {
    // Test code: a panic here is a failed test.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use std::sync::Arc;

    use binfmt_core::{ByteSource, Source};
    use binfmt_tests::build::taridx::Tar;

    use super::{Headers, holds_a_header, span};
    use crate::IndexBuilder;
    use crate::KeyRule;

    #[test]
    fn payloads_land_in_their_buffers_and_headers_are_kept() {
        let mut tar = Tar::new();
        tar.file("s/a.jpg", &[1u8; 700]);
        tar.file("s/a.cls", b"7");
        tar.file("s/b.jpg", &[2u8; 3000]);
        let bytes = tar.finish();
        let mut builder = IndexBuilder::new(KeyRule::WebDataset);
        for member in crate::tar::scan(&bytes[..]).unwrap() {
            builder.add(0, member).unwrap();
        }
        let index = crate::Index::new(builder.to_bytes().unwrap()).unwrap();
        let rows = index.rows().unwrap();
        let rows: Vec<_> = rows.iter().copied().take(2).collect();
        let shard: Arc<dyn Source> = Arc::new(ByteSource::from_vec(bytes.clone(), "s.tar"));
        let span = span(&rows, shard.len()).unwrap();
        let (mut jpg, mut cls) = (vec![0u8; 700], vec![0u8; 1]);
        let headers = Headers::read(&shard, span, &rows, &mut [&mut jpg, &mut cls]).unwrap();
        assert_eq!(jpg, vec![1u8; 700]);
        assert_eq!(cls, b"7");
        assert!(headers.pieces.iter().all(holds_a_header));
        let offset = rows[1].offset.get();
        assert_eq!(
            headers.borrow_at(offset, 512).unwrap(),
            &bytes[offset as usize..offset as usize + 512]
        );
        // Out of order or overlapping rows are not one span.
        assert!(super::span(&[rows[1], rows[0]], shard.len()).is_none());
        assert!(super::span(&rows, 600).is_none(), "past the shard");
    }
}
