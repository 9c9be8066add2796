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
    /// (size factor, binfmt's median, the machine limit's median from the
    /// same interleaved rounds if there is a limit) from the smallest size up.
    pub points: Vec<(u32, Duration, Option<Duration>)>,
    /// Why a larger size was not run, if one was not.
    pub skipped: Option<String>,
}

/// Growth beyond this factor over linear between two sizes is flagged
/// (beyond the limit's own growth, when there is a limit).
pub const SUPERLINEAR: f64 = 1.3;

/// The measurements of a run, in the order they were taken.
#[derive(Debug, Default)]
pub struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
    scaling: Vec<Scaling>,
    /// Tables of their own (Markdown, with a line above saying what they
    /// are), printed after the main table.
    tables: Vec<String>,
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

    /// A table of its own (Markdown), printed after the main table.
    pub fn table(&mut self, markdown: String) {
        self.tables.push(markdown);
    }

    /// The line of `format`'s 1→`threads` speed-up: binfmt's (its
    /// one-thread median over its `threads`-thread median) next to the
    /// machine limit's own, then `more` (empty for nothing). Returns
    /// binfmt's speed-up.
    pub fn speedup(
        &mut self,
        format: &str,
        threads: usize,
        ours: (&Stats, &Stats),
        limit: (&Stats, &Stats),
        more: &str,
    ) -> f64 {
        let ours = speedup(ours.0, ours.1);
        let line = format!(
            "{format}: 1→{threads} threads: binfmt {ours:.2}x, limit {:.2}x{more}",
            speedup(limit.0, limit.1)
        );
        eprintln!("{line}");
        self.notes.push(line);
        ours
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
        for table in &self.tables {
            text.push_str(&format!("\n{}\n", table.trim_end()));
        }
        for note in &self.notes {
            text.push_str(&format!("\n{note}\n"));
        }
        text
    }

    /// The scaling runs: each size's time and its growth over the size
    /// before, per unit of size (1.00 is linear), next to the machine
    /// limit's growth between the same sizes. The sizes are measured
    /// minutes apart, so a change in the machine's load between them moves
    /// binfmt and its limit alike: binfmt is flagged when its growth is
    /// above [`SUPERLINEAR`] and, with a limit, also that far above the
    /// limit's growth.
    fn scaling_markdown(&self) -> String {
        let mut text = String::from(
            "\n| format | operation | size | binfmt | machine limit | growth per unit of size | limit's growth per unit |\n\
             |---|---|---:|---:|---:|---:|---:|\n",
        );
        let per_unit = |time: Duration, before: Duration, factor: u32, before_factor: u32| {
            (time.as_secs_f64() / before.as_secs_f64().max(1e-9))
                / (f64::from(factor) / f64::from(before_factor))
        };
        for scaling in &self.scaling {
            let mut previous: Option<(u32, Duration, Option<Duration>)> = None;
            for &(factor, time, limit) in &scaling.points {
                let (growth, limit_growth) = match previous {
                    None => ("-".to_owned(), "-".to_owned()),
                    Some((before, before_time, before_limit)) => {
                        let ours = per_unit(time, before_time, factor, before);
                        let theirs = limit
                            .zip(before_limit)
                            .map(|(now, then)| per_unit(now, then, factor, before));
                        let beyond_limit = theirs.is_none_or(|theirs| ours / theirs > SUPERLINEAR);
                        let flag = match (ours > SUPERLINEAR, beyond_limit) {
                            (true, true) => " **super-linear**",
                            (true, false) => " (as the limit's)",
                            _ => "",
                        };
                        (
                            format!("{ours:.2}{flag}"),
                            theirs.map_or_else(|| "-".to_owned(), |theirs| format!("{theirs:.2}")),
                        )
                    }
                };
                text.push_str(&format!(
                    "| {} | {} | {factor}x | {} | {} | {growth} | {limit_growth} |\n",
                    scaling.format,
                    scaling.operation,
                    show(time),
                    limit.map_or_else(|| "-".to_owned(), show)
                ));
                previous = Some((factor, time, limit));
            }
            if let Some(why) = &scaling.skipped {
                text.push_str(&format!(
                    "| {} | {} | larger | not run | - | {why} | - |\n",
                    scaling.format, scaling.operation
                ));
            }
        }
        text
    }
}

/// How many times faster the median of `many` is than that of `one`.
pub fn speedup(one: &Stats, many: &Stats) -> f64 {
    one.median().as_secs_f64() / many.median().as_secs_f64().max(1e-9)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scaling(limit_at_10x: Option<f64>) -> String {
        let ms = |ms: f64| Duration::from_secs_f64(ms / 1e3);
        let mut report = Report::default();
        report.scaling(Scaling {
            format: "arcx",
            operation: "extract".to_owned(),
            points: vec![
                (1, ms(500.0), limit_at_10x.map(|_| ms(400.0))),
                (10, ms(8_000.0), limit_at_10x.map(ms)),
            ],
            skipped: None,
        });
        report.scaling_markdown()
    }

    #[test]
    fn growth_is_judged_against_the_limits_growth() {
        // binfmt 16x for 10x the size, the limit too: the machine's.
        let same = scaling(Some(6_400.0));
        assert!(same.contains("| 10x | 8.00 s | 6.40 s | 1.60 (as the limit's) | 1.60 |"));
        // The limit grew linearly: binfmt's own.
        let ours = scaling(Some(4_000.0));
        assert!(ours.contains("| 1.60 **super-linear** | 1.00 |"));
        // No limit to compare with.
        assert!(scaling(None).contains("| - | 1.60 **super-linear** | - |"));
    }

    #[test]
    fn speedup_line_shows_both_speedups() {
        let ms = |ms: u64| Stats::new(vec![Duration::from_millis(ms)]);
        let mut report = Report::default();
        let ours = report.speedup(
            "taridx index",
            2,
            (&ms(200), &ms(105)),
            (&ms(100), &ms(50)),
            "; more",
        );
        assert!((ours - 200.0 / 105.0).abs() < 1e-9);
        assert!(
            report
                .markdown()
                .contains("taridx index: 1→2 threads: binfmt 1.90x, limit 2.00x; more")
        );
    }
}
