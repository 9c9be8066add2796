//! Text-heavy corpora of `cargo xtask bench arcx`, generated from a seed
//! (no downloads, the same bytes on every machine): prose drawn from a
//! Zipf vocabulary of generated words, JSON-lines logs, CSV tables and
//! source-like text, as many small files (1 KiB to 256 KiB, log-uniform)
//! so that archives share blocks between files.
//!
//! - `mixed`: the four kinds in their own directories (`docs/`, `logs/`,
//!   `tables/`, `src/`), words from a vocabulary of 20,000;
//! - `vocab`: prose only, words from a vocabulary of 200,000 (the case where
//!   a small block sees few repeats of the rarer words a solid stream
//!   would).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// splitmix64: small, seeded, and the same everywhere.
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// A number in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One of `items`, uniformly.
    pub fn pick<T: Copy + Default>(&mut self, items: &[T]) -> T {
        let index = self.below(items.len() as u64) as usize;
        items.get(index).copied().unwrap_or_default()
    }
}

/// Generated words, drawn with Zipf frequencies (exponent 1): the word of
/// rank r with weight 1 / r.
#[derive(Debug)]
pub struct Vocabulary {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

const SYLLABLES: [&str; 48] = [
    "ka", "lo", "mi", "ren", "sa", "tor", "vi", "ul", "be", "dan", "fe", "gor", "hi", "jus", "ke",
    "lan", "mo", "ne", "op", "pra", "qui", "ro", "ste", "ta", "un", "ver", "wi", "xa", "yo", "zel",
    "ar", "bri", "cal", "do", "el", "fin", "gra", "hol", "in", "jo", "kri", "lu", "mar", "nor",
    "os", "pel", "ras", "sen",
];

impl Vocabulary {
    /// `size` words from `seed`; frequent words are shorter.
    pub fn new(seed: u64, size: usize) -> Self {
        let mut rng = Rng::new(seed);
        let mut words = Vec::with_capacity(size);
        let mut cumulative = Vec::with_capacity(size);
        let mut total = 0.0;
        for rank in 0..size {
            // 1 syllable for the top ~50 words, up to 5 for the rarest.
            let syllables = 1 + (rank + 1).ilog(8).min(4) as usize;
            let mut word = String::new();
            for _ in 0..syllables {
                word.push_str(rng.pick(&SYLLABLES));
            }
            words.push(word);
            total += 1.0 / (rank as f64 + 1.0);
            cumulative.push(total);
        }
        Self { words, cumulative }
    }

    /// One word, by its frequency.
    pub fn word(&self, rng: &mut Rng) -> &str {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let target = rng.unit() * total;
        let index = self.cumulative.partition_point(|&c| c < target);
        self.words
            .get(index.min(self.words.len().saturating_sub(1)))
            .map_or("", String::as_str)
    }

    /// `least` to `least + spread - 1` words separated by spaces.
    fn phrase(&self, rng: &mut Rng, least: u64, spread: u64, out: &mut String) {
        let count = least + rng.below(spread);
        for k in 0..count {
            if k > 0 {
                out.push(' ');
            }
            out.push_str(self.word(rng));
        }
    }
}

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Prose,
    Logs,
    Csv,
    Source,
}

impl Kind {
    fn place(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Kind::Prose => ("docs", "chapter", "md"),
            Kind::Logs => ("logs", "service", "jsonl"),
            Kind::Csv => ("tables", "export", "csv"),
            Kind::Source => ("src", "module", "rs"),
        }
    }
}

/// One text corpus: its name, the kinds of its files (in turn) and the
/// size of its vocabulary.
#[derive(Debug, Clone, Copy)]
pub struct TextCorpus {
    pub name: &'static str,
    pub kinds: &'static [Kind],
    pub vocabulary: usize,
    pub seed: u64,
}

pub const CORPORA: [TextCorpus; 2] = [
    TextCorpus {
        name: "mixed",
        kinds: &[Kind::Prose, Kind::Logs, Kind::Csv, Kind::Source],
        vocabulary: 20_000,
        seed: 1,
    },
    TextCorpus {
        name: "vocab",
        kinds: &[Kind::Prose],
        vocabulary: 200_000,
        seed: 2,
    },
];

/// Writes `corpus` under `root` until it holds at least `bytes`; returns
/// the bytes written.
pub fn write(root: &Path, corpus: &TextCorpus, bytes: u64) -> Result<u64, String> {
    let io = |e: std::io::Error| e.to_string();
    let words = Vocabulary::new(corpus.seed, corpus.vocabulary);
    let mut rng = Rng::new(corpus.seed ^ 0xA5A5);
    let mut total = 0u64;
    let mut i = 0u64;
    while total < bytes {
        let kind = corpus
            .kinds
            .get((i % corpus.kinds.len() as u64) as usize)
            .copied()
            .unwrap_or(Kind::Prose);
        let serial = i / corpus.kinds.len() as u64;
        let (top, group, ext) = kind.place();
        // Log-uniform between 1 KiB and 256 KiB.
        let target = (1024.0 * 256f64.powf(rng.unit())) as usize;
        let text = match kind {
            Kind::Prose => prose(&words, &mut rng, target),
            Kind::Logs => logs(&words, &mut rng, target, serial),
            Kind::Csv => csv(&words, &mut rng, target, serial),
            Kind::Source => source(&words, &mut rng, target),
        };
        let dir = root.join(top).join(format!("{group}_{:03}", serial / 40));
        fs::create_dir_all(&dir).map_err(io)?;
        fs::write(dir.join(format!("part_{serial:05}.{ext}")), &text).map_err(io)?;
        total += text.len() as u64;
        i += 1;
    }
    Ok(total)
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

fn prose(words: &Vocabulary, rng: &mut Rng, target: usize) -> String {
    let mut text = String::with_capacity(target + 256);
    while text.len() < target {
        if rng.below(6) == 0 {
            text.push_str("## ");
            text.push_str(&capitalized(words.word(rng)));
            text.push(' ');
            words.phrase(rng, 1, 4, &mut text);
            text.push_str("\n\n");
        }
        for _ in 0..3 + rng.below(6) {
            text.push_str(&capitalized(words.word(rng)));
            text.push(' ');
            words.phrase(rng, 4, 20, &mut text);
            text.push_str(if rng.below(8) == 0 { "? " } else { ". " });
        }
        text.push_str("\n\n");
    }
    text
}

const LEVELS: [&str; 4] = ["INFO", "INFO", "WARN", "ERROR"];
const METHODS: [&str; 3] = ["GET", "POST", "PUT"];

fn logs(words: &Vocabulary, rng: &mut Rng, target: usize, serial: u64) -> String {
    let mut text = String::with_capacity(target + 512);
    let mut ms = 1_795_000_000_000 + serial * 3_600_000;
    while text.len() < target {
        ms += rng.below(400);
        let (secs, milli) = (ms / 1000, ms % 1000);
        let _ = write!(
            text,
            "{{\"ts\":\"2026-11-{:02}T{:02}:{:02}:{:02}.{milli:03}Z\",\"level\":\"{}\",\"service\":\"svc-{:02}\",\"host\":\"node-{:03}\",\"req\":\"{:016x}\",\"user\":\"user_{}\",\"method\":\"{}\",\"path\":\"/api/v2/{}/{}\",\"status\":{},\"ms\":{}.{},\"msg\":\"",
            1 + (secs / 86_400) % 28,
            (secs / 3600) % 24,
            (secs / 60) % 60,
            secs % 60,
            rng.pick(&LEVELS),
            serial % 37,
            rng.below(200),
            rng.next(),
            rng.below(50_000),
            rng.pick(&METHODS),
            words.word(rng),
            rng.below(1_000_000),
            rng.pick(&[200, 200, 200, 201, 204, 404, 500]),
            rng.below(900),
            rng.below(10),
        );
        words.phrase(rng, 3, 10, &mut text);
        text.push_str("\"}\n");
    }
    text
}

const COUNTRIES: [&str; 12] = [
    "DE", "FR", "US", "NO", "JP", "BR", "IN", "NG", "CA", "ES", "IT", "SE",
];

fn csv(words: &Vocabulary, rng: &mut Rng, target: usize, serial: u64) -> String {
    let mut text = String::with_capacity(target + 256);
    text.push_str("id,date,customer,country,amount,quantity,sku,description\n");
    let mut id = serial * 1_000_000;
    while text.len() < target {
        id += 1 + rng.below(3);
        let _ = write!(
            text,
            "{id},2026-{:02}-{:02},cust_{},{},{}.{:02},{},SKU-{:06},\"",
            1 + rng.below(12),
            1 + rng.below(28),
            rng.below(50_000),
            rng.pick(&COUNTRIES),
            rng.below(5000),
            rng.below(100),
            1 + rng.below(20),
            rng.below(20_000),
        );
        words.phrase(rng, 2, 7, &mut text);
        text.push_str("\"\n");
    }
    text
}

fn source(words: &Vocabulary, rng: &mut Rng, target: usize) -> String {
    let mut text = String::with_capacity(target + 512);
    text.push_str("use std::collections::HashMap;\nuse crate::error::Error;\n\n");
    while text.len() < target {
        let ty = capitalized(words.word(rng));
        let (f1, f2, arg, local, method) = (
            words.word(rng),
            words.word(rng),
            words.word(rng),
            words.word(rng),
            words.word(rng),
        );
        text.push_str("/// ");
        words.phrase(rng, 5, 12, &mut text);
        let _ = write!(
            text,
            ".\npub fn {f1}_{f2}({arg}: &{ty}, limit: u64) -> Result<{ty}, Error> {{\n    \
             let {local} = {arg}.{method}(limit)?;\n    \
             if {local}.len() > {} {{\n        \
             return Err(Error::TooLong({local}.len()));\n    }}\n    \
             let mut seen: HashMap<u64, usize> = HashMap::new();\n    \
             for (i, item) in {local}.iter().enumerate() {{\n        \
             seen.insert(item.key(), i);\n    }}\n    \
             Ok({ty}::from({local}))\n}}\n\n",
            rng.below(10_000)
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: &Path) -> Vec<(String, Vec<u8>)> {
        let mut files = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let name = path.strip_prefix(root).unwrap().display().to_string();
                    files.push((name, fs::read(&path).unwrap()));
                }
            }
        }
        files.sort();
        files
    }

    #[test]
    fn corpora_are_the_same_bytes_from_the_same_seed() {
        let dir = tempfile::tempdir().unwrap();
        for corpus in &CORPORA {
            let (a, b) = (dir.path().join("a"), dir.path().join("b"));
            let written = write(&a, corpus, 300_000).unwrap();
            assert!(written >= 300_000);
            write(&b, corpus, 300_000).unwrap();
            let (first, second) = (tree(&a), tree(&b));
            assert_eq!(first, second);
            let tops: std::collections::BTreeSet<_> = first
                .iter()
                .filter_map(|(name, _)| name.split('/').next().map(str::to_owned))
                .collect();
            assert_eq!(tops.len(), corpus.kinds.len(), "{tops:?}");
            fs::remove_dir_all(&a).unwrap();
            fs::remove_dir_all(&b).unwrap();
        }
    }
}
