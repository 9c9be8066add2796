//! Looking a row up among the sorted rows of its shard, and checking it
//! with what its open shard already established ([`crate::checked`]):
//! the full check (spec/taridx.md §4.2) once, then only the member's own
//! header.

use std::ops::Range;

use binfmt_core::Source;

use crate::checked::Checked;
use crate::error::Result;
use crate::format::Row;
use crate::index::{Gap, Index};
use crate::member::MemberInfo;
use crate::places::Located;

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
        self.look_up_numbered(row, None, checked)
    }

    /// [`Index::look_up`] for the row numbered `number` in the index, when
    /// the caller knows it (a hint, checked: no search when the rows are in
    /// shard order).
    pub(crate) fn look_up_numbered(
        &self,
        row: &Row,
        number: Option<usize>,
        checked: &Checked,
    ) -> Result<Lookup> {
        let located = self
            .places()?
            .locate_row(number, row.fid.get(), row.offset.get())?;
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
