//! The one table every benchmark reports into: one row per measurement,
//! this project's figure next to the reference's, and their ratio.

use std::time::Duration;

use crate::measure::Stats;

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
    /// What a minimal program takes for the same work on this machine.
    pub limit: Option<String>,
    /// binfmt / that limit: 1 is the machine's limit, above 1 the distance.
    pub to_limit: Option<f64>,
}

/// One operation timed at several sizes (`--scale`).
#[derive(Debug, Clone)]
pub struct Scaling {
    pub format: &'static str,
    pub operation: String,
    /// (size factor, binfmt's median) from the smallest size up.
    pub points: Vec<(u32, Duration)>,
    /// Why a larger size was not run, if one was not.
    pub skipped: Option<String>,
}

/// Growth beyond this factor over linear between two sizes is flagged.
pub const SUPERLINEAR: f64 = 1.3;

/// The measurements of a run, in the order they were taken.
#[derive(Debug, Default)]
pub struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
    scaling: Vec<Scaling>,
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
            limit: None,
            to_limit: None,
        });
    }

    /// A timing from interleaved runs: medians with their spread; then
    /// [`Report::limit`] may set its machine limit.
    pub fn compare(
        &mut self,
        format: &'static str,
        reference: &'static str,
        operation: impl Into<String>,
        ours: &Stats,
        theirs: &Stats,
    ) -> &mut Self {
        self.rows.push(Row {
            format,
            operation: operation.into(),
            reference,
            ours: ours.to_string(),
            theirs: theirs.to_string(),
            ratio: Some(theirs.median().as_secs_f64() / ours.median().as_secs_f64().max(1e-9)),
            limit: None,
            to_limit: None,
        });
        self
    }

    /// Sets the machine's limit for the last row's operation (a minimal
    /// program's median in the same run), against binfmt's `ours`.
    pub fn limit(&mut self, ours: &Stats, limit: &Stats) -> &mut Self {
        if let Some(row) = self.rows.last_mut() {
            row.limit = Some(limit.to_string());
            row.to_limit =
                Some(ours.median().as_secs_f64() / limit.median().as_secs_f64().max(1e-9));
        }
        self
    }

    /// An operation timed at growing sizes, flagged when it grows faster
    /// than its size.
    pub fn scaling(&mut self, scaling: Scaling) {
        self.scaling.push(scaling);
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
            limit: None,
            to_limit: None,
        });
    }

    /// A measurement the reference could not make, from interleaved runs;
    /// then [`Report::limit`] may set its machine limit.
    pub fn only_ours_stats(
        &mut self,
        format: &'static str,
        reference: &'static str,
        operation: impl Into<String>,
        ours: &Stats,
        theirs: &str,
    ) -> &mut Self {
        self.rows.push(Row {
            format,
            operation: operation.into(),
            reference,
            ours: ours.to_string(),
            theirs: theirs.to_owned(),
            ratio: None,
            limit: None,
            to_limit: None,
        });
        self
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
            limit: None,
            to_limit: None,
        });
    }

    /// A line printed under the table.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The table, as Markdown.
    pub fn markdown(&self) -> String {
        let mut text = String::new();
        if !self.rows.is_empty() {
            text.push_str(
                "| format | operation | reference | binfmt | reference's | reference / binfmt | machine limit | binfmt / limit |\n\
                 |---|---|---|---:|---:|---:|---:|---:|\n",
            );
        }
        let times =
            |value: Option<f64>| value.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}x"));
        for row in &self.rows {
            text.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                row.format,
                row.operation,
                row.reference,
                row.ours,
                row.theirs,
                times(row.ratio),
                row.limit.as_deref().unwrap_or("-"),
                times(row.to_limit),
            ));
        }
        if !self.scaling.is_empty() {
            text.push_str(&self.scaling_markdown());
        }
        for note in &self.notes {
            text.push_str(&format!("\n{note}\n"));
        }
        text
    }

    /// The scaling runs: each size's time and its growth over the size
    /// before, per unit of size (1.00 is linear), flagged above
    /// [`SUPERLINEAR`].
    fn scaling_markdown(&self) -> String {
        let mut text = String::from(
            "\n| format | operation | size | binfmt | growth per unit of size |\n\
             |---|---|---:|---:|---:|\n",
        );
        for scaling in &self.scaling {
            let mut previous: Option<(u32, Duration)> = None;
            for &(factor, time) in &scaling.points {
                let growth = previous.map_or_else(
                    || "-".to_owned(),
                    |(before, before_time)| {
                        let per_unit = (time.as_secs_f64() / before_time.as_secs_f64().max(1e-9))
                            / (f64::from(factor) / f64::from(before));
                        let flag = if per_unit > SUPERLINEAR {
                            " **super-linear**"
                        } else {
                            ""
                        };
                        format!("{per_unit:.2}{flag}")
                    },
                );
                text.push_str(&format!(
                    "| {} | {} | {factor}x | {} | {growth} |\n",
                    scaling.format,
                    scaling.operation,
                    show(time)
                ));
                previous = Some((factor, time));
            }
            if let Some(why) = &scaling.skipped {
                text.push_str(&format!(
                    "| {} | {} | larger | not run | {why} |\n",
                    scaling.format, scaling.operation
                ));
            }
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
