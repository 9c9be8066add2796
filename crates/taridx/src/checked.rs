//! What the member checks of one open shard have already established.
//!
//! A row's full check (spec/taridx.md §4.2) reads its predecessor's header
//! and the gap before its own header; neither depends on the row's own
//! fields, only on where the row and its predecessor sit. Once that part
//! has passed for a member with no records in its gap (its name and size
//! come from its own header), it is remembered here, one bit per member of
//! the shard in shard order, for as long as the shard stays open: later
//! reads of that member check only its own header against the row (one
//! 512-byte block, no gap, no predecessor). A shard closed and opened
//! again starts with nothing remembered.
//!
//! ```text
//! places (all rows, sorted by (fid, offset)):  ... | fid 3: p0 p1 p2 p3 ... | fid 4 ...
//! Checked of shard 3: first = position of p0;  bits: 1 0 1 1 ...
//!                                               p0 p1 p2 p3
//! ```

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use binfmt_core::Source;

use crate::error::Result;
use crate::format::Row;
use crate::index::{Gap, Index};
use crate::member::MemberInfo;
use crate::places::Located;

/// One bit per member of an open shard: set once its gap and predecessor
/// were checked and found to leave its own header as its only source of
/// name and size.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// The position in the sorted places of the shard's first member.
    first: usize,
    /// How many members the shard has.
    len: usize,
    bits: Box<[AtomicU64]>,
}

impl Checked {
    /// Nothing remembered yet for the members at `places` (positions in
    /// the sorted places). When the bits cannot be allocated, nothing is
    /// ever remembered: every read then makes the full check.
    pub fn new(places: Range<usize>) -> Self {
        let len = places.end.saturating_sub(places.start);
        let words = len.div_ceil(64);
        let mut bits = Vec::new();
        if bits.try_reserve_exact(words).is_err() {
            return Self::default();
        }
        bits.extend((0..words).map(|_| AtomicU64::new(0)));
        Self {
            first: places.start,
            len,
            bits: bits.into_boxed_slice(),
        }
    }

    /// Whether it has room for no member.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The word and mask of the member at sorted position `at`, when it
    /// belongs to this shard.
    fn slot(&self, at: usize) -> Option<(&AtomicU64, u64)> {
        let bit = at.checked_sub(self.first).filter(|&bit| bit < self.len)?;
        Some((self.bits.get(bit / 64)?, 1u64 << (bit % 64)))
    }

    /// Whether the member at sorted position `at` was checked.
    pub fn get(&self, at: usize) -> bool {
        self.slot(at)
            .is_some_and(|(word, mask)| word.load(Ordering::Relaxed) & mask != 0)
    }

    /// Remembers that the member at sorted position `at` was checked.
    pub fn set(&self, at: usize) {
        if let Some((word, mask)) = self.slot(at) {
            word.fetch_or(mask, Ordering::Relaxed);
        }
    }
}

/// A row found among the rows ([`Index::look_up`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lookup {
    /// Its place, and the row before it in its shard.
    pub located: Located,
    /// Whether its gap and predecessor were checked while its shard is
    /// open.
    pub known: bool,
    /// Whether the row before it passed its full check while its shard is
    /// open.
    pub trust_before: bool,
}

impl<S: Source> Index<S> {
    /// Where `row`'s member sits among the rows, and what `checked` (its
    /// open shard's memory, [`crate::checked`]) says is known of it.
    pub(crate) fn look_up(&self, row: &Row, checked: &Checked) -> Result<Lookup> {
        let located = self.places()?.locate(row.fid.get(), row.offset.get())?;
        let known = located.at.is_some_and(|at| checked.get(at));
        // The predecessor's full check implies the one its successor makes
        // of it: the bit is only set for a member whose size is its own
        // header's size field.
        let trust_before = located.at.is_some_and(|at| at > 0 && checked.get(at - 1));
        Ok(Lookup {
            located,
            known,
            trust_before,
        })
    }

    /// The bytes of its shard that checking `row` as `lookup` found it
    /// reads, up to `end`, as hints for a source that pays per request.
    pub(crate) fn lookup_ranges(&self, row: &Row, lookup: &Lookup, end: u64) -> [Range<u64>; 2] {
        let offset = row.offset.get();
        let end = end.max(offset.saturating_add(crate::tar::BLOCK));
        match (lookup.known, lookup.located.before) {
            (true, _) => [0..0, offset..end],
            (false, Some(before)) if lookup.trust_before => {
                [0..0, before.padded_end().min(offset)..end]
            }
            (false, Some(before)) => [
                before.offset..before.offset.saturating_add(crate::tar::BLOCK),
                before.padded_end().min(offset)..end,
            ],
            (false, None) => [0..0, 0..end],
        }
    }

    /// [`Index::check_row`] of a row found by [`Index::look_up`]: a member
    /// whose gap and predecessor its open shard has already checked has
    /// only its own header checked against the row; any other gets the
    /// full check, remembered in `checked` when it passes and its name
    /// and size come from its own header.
    pub(crate) fn check_looked_up<T: Source + ?Sized>(
        &self,
        shard: &T,
        row: &Row,
        lookup: &Lookup,
        checked: &Checked,
    ) -> Result<MemberInfo> {
        if lookup.known {
            return self.check_against(shard, u64::MAX, row, Gap::Checked);
        }
        let gap = Gap::After(lookup.located.before, lookup.trust_before);
        let info = self.check_against(shard, u64::MAX, row, gap)?;
        if let Some(at) = lookup.located.at
            && info.first_block == row.offset.get()
        {
            checked.set(at);
        }
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::Checked;

    #[test]
    fn bits_are_per_member_of_the_shard() {
        let checked = Checked::new(100..230);
        assert!(!checked.get(100) && !checked.get(229));
        checked.set(100);
        checked.set(229);
        checked.set(99);
        checked.set(230);
        assert!(checked.get(100) && checked.get(229));
        assert!(!checked.get(99) && !checked.get(230) && !checked.get(101));
        let empty = Checked::default();
        empty.set(0);
        assert!(!empty.get(0));
    }
}
