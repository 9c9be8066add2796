//! The rows of an index in shard order: where each member sits in its
//! shard, sorted by `(fid, offset)`, built once on first need.
//!
//! ```text
//! one place per row, 32 bytes, sorted by (fid, offset):
//!   fid (u16) | offset (u64): the member's header | end (u64): header + payload | row (u64)
//!
//! shard fid, in file order:
//!   0 ... [records][header|payload]  gap  [records][header|payload]  gap ...
//!          ^ row a               ^ end(a) ^ read forward up to row b's offset
//! ```
//!
//! A row's member check reads the bytes between the end of the row before
//! it in the same shard (its *predecessor*; offset 0 for the first) and its
//! own header forward, as tar reads them (spec/taridx.md §4.2), so the
//! predecessor must be known. Building the view also refuses rows that
//! alias one member or whose members overlap, on every path that reads a
//! member, not only `verify`: an index of `n` rows can then never make a
//! reader parse more than its shards hold.

use crate::error::TaridxError;
use crate::format::Row;
use crate::tar::BLOCK;

/// Where one row's member sits in its shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Place {
    /// The shard id.
    pub fid: u16,
    /// The member's header offset.
    pub offset: u64,
    /// Where the member's payload ends (unpadded; saturated on overflow).
    pub end: u64,
    /// The row's number in the index.
    pub row: u64,
}

impl Place {
    /// Where the member's padded payload ends: the next tar block.
    pub fn padded_end(&self) -> u64 {
        self.end.checked_next_multiple_of(BLOCK).unwrap_or(u64::MAX)
    }

    /// The member's payload size, as its row says.
    pub fn size(&self) -> u64 {
        self.end.saturating_sub(self.offset.saturating_add(BLOCK))
    }
}

/// Two rows that cannot both be right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conflict {
    Share {
        first: u64,
        second: u64,
        fid: u16,
        offset: u64,
    },
    Overlap {
        first: u64,
        second: u64,
        fid: u16,
        first_offset: u64,
        second_offset: u64,
    },
}

impl Conflict {
    fn error(self) -> TaridxError {
        match self {
            Self::Share {
                first,
                second,
                fid,
                offset,
            } => TaridxError::RowsShareMember {
                first,
                second,
                fid,
                offset,
            },
            Self::Overlap {
                first,
                second,
                fid,
                first_offset,
                second_offset,
            } => TaridxError::MembersOverlap {
                first,
                second,
                fid,
                first_offset,
                second_offset,
            },
        }
    }
}

/// The sorted view, or the first two rows that conflict.
#[derive(Debug)]
pub(crate) struct Places {
    places: Vec<Place>,
    conflict: Option<Conflict>,
    /// Whether row `n` is place `n` (the rows are in shard order).
    identity: bool,
}

impl Places {
    /// Sorts `rows` by shard and offset and finds the first pair of rows
    /// that point at one member or at overlapping members. Memory: 32
    /// bytes per row, reserved by the number of rows the index holds.
    pub fn new(rows: &[Row]) -> crate::Result<Self> {
        let mut places: Vec<Place> = Vec::new();
        places.try_reserve_exact(rows.len()).map_err(|_| {
            binfmt_core::Error::corrupt(
                "taridx rows",
                format!(
                    "cannot allocate the sorted view of {} rows (32 bytes each)",
                    rows.len()
                ),
            )
        })?;
        places.extend((0u64..).zip(rows).map(|(number, row)| {
            let offset = row.offset.get();
            Place {
                fid: row.fid.get(),
                offset,
                end: offset.saturating_add(BLOCK).saturating_add(row.size.get()),
                row: number,
            }
        }));
        places.sort_unstable();
        let conflict = places.windows(2).find_map(|pair| {
            let [a, b] = pair else { return None };
            if a.fid != b.fid {
                None
            } else if a.offset == b.offset {
                Some(Conflict::Share {
                    first: a.row.min(b.row),
                    second: a.row.max(b.row),
                    fid: a.fid,
                    offset: a.offset,
                })
            } else if b.offset < a.end {
                Some(Conflict::Overlap {
                    first: a.row,
                    second: b.row,
                    fid: a.fid,
                    first_offset: a.offset,
                    second_offset: b.offset,
                })
            } else {
                None
            }
        });
        // Rows written in shard order (every writer's, glzn's too) make
        // the sorted view the rows themselves: a row's number is then its
        // place, and `locate_row` needs no search.
        let identity = (0u64..)
            .zip(&places)
            .all(|(number, place)| place.row == number);
        Ok(Self {
            places,
            conflict,
            identity,
        })
    }

    /// The places in shard order, or the error for the first conflict.
    pub fn sorted(&self) -> crate::Result<&[Place]> {
        match self.conflict {
            Some(conflict) => Err(conflict.error()),
            None => Ok(&self.places),
        }
    }

    /// The row before offset `offset` in shard `fid`: the one whose
    /// member ends where the records of a member at `offset` may start.
    pub fn before(&self, fid: u16, offset: u64) -> crate::Result<Option<Place>> {
        Ok(self.locate(fid, offset)?.before)
    }

    /// Where a member at `offset` in shard `fid` sits in the sorted view:
    /// its position when a row of the index points there, and the row
    /// before it in that shard (one search).
    pub fn locate(&self, fid: u16, offset: u64) -> crate::Result<Located> {
        let places = self.sorted()?;
        let at = places.partition_point(|place| (place.fid, place.offset) < (fid, offset));
        let before = at
            .checked_sub(1)
            .and_then(|before| places.get(before))
            .filter(|before| before.fid == fid)
            .copied();
        let own = places
            .get(at)
            .is_some_and(|place| (place.fid, place.offset) == (fid, offset));
        Ok(Located {
            at: own.then_some(at),
            before,
        })
    }

    /// [`Places::locate`] for the row numbered `number` (when known), at
    /// `offset` in shard `fid`: without a search when the rows are in shard
    /// order and that place is this row's; by the search otherwise.
    pub fn locate_row(
        &self,
        number: Option<usize>,
        fid: u16,
        offset: u64,
    ) -> crate::Result<Located> {
        let places = self.sorted()?;
        if let Some(at) = number.filter(|_| self.identity)
            && places
                .get(at)
                .is_some_and(|place| (place.fid, place.offset) == (fid, offset))
        {
            let before = at
                .checked_sub(1)
                .and_then(|before| places.get(before))
                .filter(|before| before.fid == fid)
                .copied();
            return Ok(Located {
                at: Some(at),
                before,
            });
        }
        self.locate(fid, offset)
    }

    /// The positions of shard `fid`'s rows in the sorted view.
    pub fn shard_range(&self, fid: u16) -> crate::Result<std::ops::Range<usize>> {
        let places = self.sorted()?;
        let start = places.partition_point(|place| place.fid < fid);
        let end = places.partition_point(|place| place.fid <= fid);
        Ok(start..end)
    }
}

/// A member's place in the sorted view ([`Places::locate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Located {
    /// Its position, when a row points at its offset.
    pub at: Option<usize>,
    /// The row before it in its shard.
    pub before: Option<Place>,
}
