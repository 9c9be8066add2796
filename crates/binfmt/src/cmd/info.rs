//! What `info` reports, for every format: one report type, printed as
//! JSON or as the format's text lines.
//!
//! The JSON object's keys, in order:
//!
//! ```text
//! {"path", ["format", "entries", "bytes",] <the format's own keys>}
//! ```
//!
//! `binfmt info` stops after the counts; `binfmt arcx info` adds the
//! dialect, blocks and configuration; `binfmt kast info` the version and
//! file size; `binfmt taridx info` has no counts (an index's rows are not
//! its entries) and gives the index's own fields.

use binfmt::Format;

use crate::output::{self, CommandResult, Status};

/// A file's `info` report: its path, its entries when counted, and what
/// only its format has (`D`, a struct of named fields).
#[derive(Debug, serde::Serialize)]
pub struct Info<D> {
    /// The file as given.
    pub path: String,
    /// The format and its entries, where the command counts them.
    #[serde(flatten)]
    pub counts: Option<Counts>,
    /// The format's own fields.
    #[serde(flatten)]
    pub details: D,
}

/// A file's format, how many entries it has and their bytes.
#[derive(Debug, serde::Serialize)]
pub struct Counts {
    /// The format.
    pub format: Format,
    /// The number of entries.
    pub entries: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// No fields beyond the counts.
#[derive(Debug, serde::Serialize)]
pub struct Nothing {}

impl<D: serde::Serialize> Info<D> {
    /// Prints the report: JSON with `json`, else the lines `text` makes.
    pub fn print(&self, json: bool, text: impl FnOnce(&Self) -> String) -> CommandResult {
        if json {
            output::print_json(self)?;
        } else {
            output::print(&text(self))?;
        }
        Ok(Status::Success)
    }

    /// The path, as a text line shows it.
    pub fn shown_path(&self) -> String {
        output::escape(&self.path).into_owned()
    }
}
