//! The one table every benchmark reports into: one row per measurement,
//! this project's figure next to the reference's, and their ratio.

use std::time::Duration;

/// One measurement: binfmt and the reference on the same data in the same run.
#[derive(Debug, Clone)]
pub struct Row {
    pub format: &'static str,
    pub operation: String,
    pub reference: &'static str,
    pub ours: String,
    pub theirs: String,
    /// Reference / binfmt: above 1 binfmt is faster (or smaller).
    pub ratio: Option<f64>,
}

/// The measurements of a run, in the order they were taken.
#[derive(Debug, Default)]
pub struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Report {
    /// A timing: `ours` and `theirs` are medians.
    pub fn time(
        &mut self,
        format: &'static str,
        reference: &'static str,
        operation: impl Into<String>,
        ours: Duration,
        theirs: Duration,
    ) {
        self.rows.push(Row {
            format,
            operation: operation.into(),
            reference,
            ours: show(ours),
            theirs: show(theirs),
            ratio: Some(theirs.as_secs_f64() / ours.as_secs_f64().max(1e-9)),
        });
    }

    /// A quantity that is better smaller (bytes, memory), shown in MB.
    pub fn megabytes(
        &mut self,
        format: &'static str,
        reference: &'static str,
        operation: impl Into<String>,
        ours: u64,
        theirs: u64,
    ) {
        self.rows.push(Row {
            format,
            operation: operation.into(),
            reference,
            ours: format!("{:.1} MB", ours as f64 / 1e6),
            theirs: format!("{:.1} MB", theirs as f64 / 1e6),
            ratio: Some(theirs as f64 / (ours as f64).max(1.0)),
        });
    }

    /// A measurement the reference could not make.
    pub fn only_ours(
        &mut self,
        format: &'static str,
        reference: &'static str,
        operation: impl Into<String>,
        ours: Duration,
        theirs: &str,
    ) {
        self.rows.push(Row {
            format,
            operation: operation.into(),
            reference,
            ours: show(ours),
            theirs: theirs.to_owned(),
            ratio: None,
        });
    }

    /// Figures already shown (counts, rates): `ratio` is reference /
    /// binfmt where one is faster, none where they do not compare.
    pub fn figures(
        &mut self,
        format: &'static str,
        reference: &'static str,
        operation: impl Into<String>,
        ours: String,
        theirs: String,
        ratio: Option<f64>,
    ) {
        self.rows.push(Row {
            format,
            operation: operation.into(),
            reference,
            ours,
            theirs,
            ratio,
        });
    }

    /// A line printed under the table.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The table, as Markdown.
    pub fn markdown(&self) -> String {
        let mut text = String::from(
            "| format | operation | reference | binfmt | reference's | reference / binfmt |\n\
             |---|---|---|---:|---:|---:|\n",
        );
        for row in &self.rows {
            let ratio = row
                .ratio
                .map_or_else(|| "-".to_owned(), |ratio| format!("{ratio:.2}x"));
            text.push_str(&format!(
                "| {} | {} | {} | {} | {} | {ratio} |\n",
                row.format, row.operation, row.reference, row.ours, row.theirs
            ));
        }
        for note in &self.notes {
            text.push_str(&format!("\n{note}\n"));
        }
        text
    }
}

/// The median of some timings (zero for none).
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// A duration in the unit that reads best.
pub fn show(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.1} ms", seconds * 1e3)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}
