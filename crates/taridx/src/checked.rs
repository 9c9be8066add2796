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
