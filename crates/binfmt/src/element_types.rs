//! Kastore element types carried through formats without a type field.
//!
//! Converting a kastore to ARCX, PAR4 or TARIDX adds one entry,
//! [`TYPES_ENTRY`], a small JSON record of the type of each key that is not
//! uint8; converting back to KAST reads it (`spec/conversion.md`):
//!
//! ```json
//! {
//!   "format": "binfmt kastore types",
//!   "items": { "edges/left": "float64", "nodes/flags": "uint32" },
//!   "version": 1
//! }
//! ```

use std::collections::{BTreeMap, HashMap};

use binfmt_kastore::ItemType;

use crate::entries::{Entry, EntrySource};
use crate::error::{Error, Result};
use crate::sniff::Format;

/// The entry that carries kastore element types through formats without a
/// type field.
pub const TYPES_ENTRY: &str = "__kastore__.json";

/// The record's format marker, so a file of that name that is not ours is
/// recognised as not ours.
const TYPES_MARKER: &str = "binfmt kastore types";

/// The element type of every entry: from a kastore input, or from a types
/// record in the input; uint8 for anything else.
#[derive(Debug, Default)]
pub(crate) struct Types {
    by_name: HashMap<String, ItemType>,
    /// The types came from a [`TYPES_ENTRY`] record, which is metadata, not
    /// an entry to carry on.
    pub(crate) from_record: bool,
    /// The input was a kastore: the record must be added to non-KAST targets.
    pub(crate) from_kastore: bool,
}

impl Types {
    /// The types of `entries`, the regular entries of `source`.
    pub(crate) fn of(source: &dyn EntrySource, entries: &[Entry]) -> Result<Self> {
        if source.format() == Format::Kast {
            let by_name = entries
                .iter()
                .filter_map(|entry| {
                    entry
                        .kind
                        .and_then(ItemType::from_name)
                        .map(|item_type| (entry.name.clone(), item_type))
                })
                .collect();
            return Ok(Self {
                by_name,
                from_record: false,
                from_kastore: true,
            });
        }
        let Some(record) = entries.iter().find(|entry| entry.name == TYPES_ENTRY) else {
            return Ok(Self::default());
        };
        // A record is a few dozen bytes per key; refuse an absurd one
        // before reading it.
        if record.size > 64 << 20 {
            return Ok(Self::default());
        }
        let bytes = source.read(TYPES_ENTRY)?;
        let Some(by_name) = parse_record(&bytes) else {
            // Not our record: an ordinary file of that name.
            return Ok(Self::default());
        };
        let sizes: HashMap<&str, u64> = entries
            .iter()
            .map(|entry| (entry.name.as_str(), entry.size))
            .collect();
        for (name, item_type) in &by_name {
            let fits = sizes
                .get(name.as_str())
                .is_some_and(|size| size % item_type.size() == 0);
            if !fits {
                return Err(Error::CannotHold {
                    file: source.file().to_owned(),
                    name: name.clone(),
                    why: format!(
                        "{TYPES_ENTRY} says it holds {item_type} values, but it is missing or not a whole number of them"
                    ),
                });
            }
        }
        Ok(Self {
            by_name,
            from_record: true,
            from_kastore: false,
        })
    }

    /// The element type of the entry called `name`.
    pub(crate) fn get(&self, name: &str) -> ItemType {
        self.by_name.get(name).copied().unwrap_or(ItemType::Uint8)
    }

    /// The entries to write: every regular entry but a types record the
    /// types came from (non-KAST targets from a kastore add a record of
    /// their own).
    pub(crate) fn kept<'e>(&'e self, entries: &'e [Entry]) -> impl Iterator<Item = &'e Entry> {
        entries
            .iter()
            .filter(|entry| !(self.from_record && entry.name == TYPES_ENTRY))
    }

    /// The names of [`Types::kept`] entries.
    pub(crate) fn names<'e>(&'e self, entries: &'e [Entry]) -> Vec<&'e str> {
        self.kept(entries)
            .map(|entry| entry.name.as_str())
            .collect()
    }

    /// The record to write for a non-KAST target, when the input was a
    /// kastore with arrays of other types than uint8 (uint8 is what a key
    /// without a record gets, so a store of bytes round-trips without one).
    pub(crate) fn record(&self) -> Option<Vec<u8>> {
        let items: BTreeMap<&str, &str> = self
            .by_name
            .iter()
            .filter(|(_, item_type)| **item_type != ItemType::Uint8)
            .map(|(name, item_type)| (name.as_str(), item_type.name()))
            .collect();
        if !self.from_kastore || items.is_empty() {
            return None;
        }
        serde_json::to_vec_pretty(&serde_json::json!({
            "format": TYPES_MARKER,
            "version": 1,
            "items": items,
        }))
        .ok()
    }
}

/// The types a record holds, or `None` when the bytes are not a record.
fn parse_record(bytes: &[u8]) -> Option<HashMap<String, ItemType>> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if value.get("format")?.as_str()? != TYPES_MARKER || value.get("version")?.as_u64()? != 1 {
        return None;
    }
    value
        .get("items")?
        .as_object()?
        .iter()
        .map(|(name, item_type)| {
            let item_type = ItemType::from_name(item_type.as_str()?)?;
            Some((name.clone(), item_type))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_recognised_only_with_its_marker() {
        let good = br#"{"format": "binfmt kastore types", "version": 1, "items": {"a": "float64", "b/c": "int8"}}"#;
        let types = parse_record(good).unwrap();
        assert_eq!(types.get("a"), Some(&ItemType::Float64));
        assert_eq!(types.get("b/c"), Some(&ItemType::Int8));
        for not_ours in [
            &br#"{"items": {"a": "float64"}}"#[..],
            br#"{"format": "binfmt kastore types", "version": 2, "items": {}}"#,
            br#"{"format": "binfmt kastore types", "version": 1, "items": {"a": "complex128"}}"#,
            b"not json",
        ] {
            assert!(parse_record(not_ours).is_none());
        }
    }
}
