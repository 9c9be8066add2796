//! The in-memory cache: byte ranges of objects, bounded in bytes, least
//! recently used first out.
//!
//! Ranges are kept as they were fetched (extents), never overlapping within
//! one object, so a read finds the cached pieces of its range and fetches
//! exactly the gaps.

use std::collections::BTreeMap;
use std::ops::Range;

use bytes::Bytes;

/// A cached piece: where it starts in the object, and its bytes.
pub(crate) type Piece = (u64, Bytes);

#[derive(Debug)]
struct Extent {
    bytes: Bytes,
    tick: u64,
}

/// Extents of many objects (told apart by an id), within a byte budget.
#[derive(Debug)]
pub(crate) struct MemoryCache {
    capacity: u64,
    used: u64,
    tick: u64,
    extents: BTreeMap<(u64, u64), Extent>,
    by_age: BTreeMap<u64, (u64, u64)>,
}

impl MemoryCache {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            used: 0,
            tick: 0,
            extents: BTreeMap::new(),
            by_age: BTreeMap::new(),
        }
    }

    /// The cached pieces of `range` of object `id`, clipped to it and in
    /// order, and the gaps between them; the pieces count as used now when
    /// `touch` is set.
    pub fn lookup(
        &mut self,
        id: u64,
        range: Range<u64>,
        touch: bool,
    ) -> (Vec<Piece>, Vec<Range<u64>>) {
        let mut pieces = Vec::new();
        let mut gaps = Vec::new();
        let mut at = range.start;
        let first = self
            .extents
            .range(..=(id, range.start))
            .next_back()
            .filter(|((object, _), _)| *object == id)
            .map_or(range.start, |((_, start), _)| *start);
        let keys: Vec<(u64, u64)> = self
            .extents
            .range((id, first)..(id, range.end))
            .map(|(key, _)| *key)
            .collect();
        for key in keys {
            let Some(extent) = self.extents.get_mut(&key) else {
                continue;
            };
            let start = key.1;
            let end = start + extent.bytes.len() as u64;
            if end <= at {
                continue;
            }
            if start > at {
                gaps.push(at..start.min(range.end));
            }
            let from = at.max(start);
            let to = end.min(range.end);
            if from < to {
                let slice = extent
                    .bytes
                    .slice((from - start) as usize..(to - start) as usize);
                pieces.push((from, slice));
                if touch {
                    self.tick += 1;
                    self.by_age.remove(&extent.tick);
                    extent.tick = self.tick;
                    self.by_age.insert(self.tick, key);
                }
            }
            at = to;
            if at >= range.end {
                break;
            }
        }
        if at < range.end {
            gaps.push(at..range.end);
        }
        (pieces, gaps)
    }

    /// Keeps `bytes`, fetched from `start` of object `id`: the parts not
    /// cached already, then drops the least recently used extents until the
    /// cache fits its budget. A range larger than the whole budget is not
    /// kept.
    pub fn insert(&mut self, id: u64, start: u64, bytes: &Bytes) {
        let len = bytes.len() as u64;
        if len == 0 || len > self.capacity {
            return;
        }
        let (_, gaps) = self.lookup(id, start..start + len, false);
        for gap in gaps {
            let from = (gap.start - start) as usize;
            let to = (gap.end - start) as usize;
            // A part of a larger buffer is copied, so that an extent never
            // keeps more memory alive than it accounts for.
            let piece = if from == 0 && to == bytes.len() {
                bytes.clone()
            } else {
                Bytes::copy_from_slice(bytes.get(from..to).unwrap_or_default())
            };
            self.tick += 1;
            self.used += piece.len() as u64;
            self.by_age.insert(self.tick, (id, gap.start));
            self.extents.insert(
                (id, gap.start),
                Extent {
                    bytes: piece,
                    tick: self.tick,
                },
            );
        }
        while self.used > self.capacity {
            let Some((_, key)) = self.by_age.pop_first() else {
                break;
            };
            if let Some(extent) = self.extents.remove(&key) {
                self.used -= extent.bytes.len() as u64;
            }
        }
    }

    /// Bytes held.
    #[cfg(test)]
    pub fn used(&self) -> u64 {
        self.used
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // one gap is a list of gaps
mod tests {
    use super::*;

    fn bytes(range: Range<u64>) -> Bytes {
        range.map(|i| i as u8).collect::<Vec<u8>>().into()
    }

    #[test]
    fn lookups_return_pieces_and_exact_gaps() {
        let mut cache = MemoryCache::new(1 << 20);
        cache.insert(1, 10, &bytes(10..20));
        cache.insert(1, 30, &bytes(30..40));
        cache.insert(2, 0, &bytes(0..100));
        let (pieces, gaps) = cache.lookup(1, 5..35, true);
        assert_eq!(gaps, vec![5..10, 20..30]);
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0], (10, bytes(10..20)));
        assert_eq!(pieces[1], (30, bytes(30..35)));
        let (pieces, gaps) = cache.lookup(1, 12..15, true);
        assert!(gaps.is_empty());
        assert_eq!(pieces, vec![(12, bytes(12..15))]);
        let (pieces, gaps) = cache.lookup(3, 0..10, true);
        assert!(pieces.is_empty());
        assert_eq!(gaps, vec![0..10]);
    }

    #[test]
    fn overlapping_inserts_keep_one_copy() {
        let mut cache = MemoryCache::new(1 << 20);
        cache.insert(1, 10, &bytes(10..20));
        cache.insert(1, 0, &bytes(0..30));
        assert_eq!(cache.used(), 30);
        let (pieces, gaps) = cache.lookup(1, 0..30, true);
        assert!(gaps.is_empty());
        let joined: Vec<u8> = pieces.iter().flat_map(|(_, b)| b.to_vec()).collect();
        assert_eq!(Bytes::from(joined), bytes(0..30));
    }

    #[test]
    fn the_least_recently_used_go_first_and_the_budget_holds() {
        let mut cache = MemoryCache::new(100);
        cache.insert(1, 0, &bytes(0..40));
        cache.insert(1, 100, &bytes(100..140));
        cache.lookup(1, 0..10, true); // 0..40 is now the most recent
        cache.insert(1, 200, &bytes(200..240));
        assert!(cache.used() <= 100);
        assert_eq!(cache.lookup(1, 100..140, false).1, vec![100..140]);
        assert!(cache.lookup(1, 0..40, false).1.is_empty());
        cache.insert(1, 1000, &bytes(1000..1200)); // larger than the budget
        assert!(cache.lookup(1, 1000..1200, false).0.is_empty());
    }
}
