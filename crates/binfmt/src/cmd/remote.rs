//! The options every reading command takes for a file given as a URL
//! (`http://`, `https://`, `s3://bucket/key`), and the `-v` cost line.
//!
//! Every source the command opens counts into one [`Tally`], so `-v`
//! reports the whole command: an index and its shards, a listing, retries.

use std::path::{Path, PathBuf};

use binfmt::{EntrySource, Format};
use binfmt_remote::{RemoteOptions, Tally};

use crate::output;

/// Remote reading: a URL in place of a file.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RemoteArgs {
    /// Print what reading cost to stderr at the end: `requests: N, bytes:
    /// M` (HTTP requests made, response-body bytes received; 0 for a local
    /// file).
    #[arg(short = 'v', long = "stats")]
    pub stats: bool,
    /// Keep fetched ranges of remote files under DIR, for later runs (only
    /// for servers that send strong ETags, so a replaced object is never
    /// served from the cache). DIR must be yours and writable by no one
    /// else: a cache directory is never shared between users.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The most bytes --cache-dir may hold (at least 1); the least recently
    /// used ranges are dropped first.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30, requires = "cache_dir",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub cache_size: u64,
}

impl RemoteArgs {
    /// The options remote sources open with, counting into `tally` and
    /// printing warnings (a server ignoring ranges, no ETag) to stderr.
    pub fn options(&self, tally: &Tally) -> binfmt::OpenOptions {
        // Each warning once per command, however many times a source of
        // the object is opened (a fold's coverage check, then its reads).
        let said = std::sync::Mutex::new(std::collections::HashSet::new());
        let mut remote = RemoteOptions::default()
            .with_tally(tally.clone())
            .on_warning(move |warning| {
                let text = warning.to_string();
                let first = said
                    .lock()
                    .map_or(true, |mut said| said.insert(text.clone()));
                if first {
                    output::note(format_args!("binfmt: warning: {text}"));
                }
            });
        if let Some(dir) = &self.cache_dir {
            remote = remote.with_cache_dir(dir, self.cache_size);
        }
        binfmt::OpenOptions::default().remote(remote)
    }

    /// Runs `command` with a tally of its requests, then prints the cost
    /// line when asked, whether the command succeeded or not.
    pub fn counted<T>(&self, command: impl FnOnce(&Session) -> T) -> T {
        let session = Session {
            options: self.options(&Tally::default()),
        };
        let outcome = command(&session);
        if self.stats {
            let stats = session.stats();
            output::note(format_args!(
                "requests: {}, bytes: {}",
                stats.requests, stats.bytes
            ));
        }
        outcome
    }
}

/// The sources one command opens, counted together.
#[derive(Debug)]
pub struct Session {
    options: binfmt::OpenOptions,
}

impl Session {
    /// The options to open files with.
    pub fn options(&self) -> &binfmt::OpenOptions {
        &self.options
    }

    /// Opens the output at `location` (a path, `file://` or `s3://` URL)
    /// behind the output gate of `inputs`, with this command's remote
    /// settings (credentials, retries): wrong credentials fail here, before
    /// any work.
    pub fn output(
        &self,
        location: &std::path::Path,
        inputs: binfmt_core::Inputs,
    ) -> Result<binfmt::outputs::Output, String> {
        binfmt::outputs::Output::open(location, std::sync::Arc::new(inputs), &self.options.remote)
            .map_err(|error| error.to_string())
    }

    /// What reading has cost so far.
    pub fn stats(&self) -> binfmt_remote::Stats {
        self.options
            .remote
            .tally()
            .map(Tally::stats)
            .unwrap_or_default()
    }

    /// Opens `location` (a path, a URL, or "-" for a kastore on stdin) as
    /// entries, requiring `expect` when a per-format command asks.
    pub fn open(
        &self,
        location: &Path,
        expect: Option<Format>,
    ) -> Result<Box<dyn EntrySource>, String> {
        self.open_with(location, expect, &self.options)
    }

    /// Opens `location` to list or count its entries alone (see
    /// [`binfmt::OpenOptions::listing`]).
    pub fn open_listing(
        &self,
        location: &Path,
        expect: Option<Format>,
    ) -> Result<Box<dyn EntrySource>, String> {
        self.open_with(location, expect, &self.options.clone().listing())
    }

    /// Opens `location` to read the entry called `name` alone (see
    /// [`binfmt::OpenOptions::only`]).
    pub fn open_only(
        &self,
        location: &Path,
        expect: Option<Format>,
        name: &str,
    ) -> Result<Box<dyn EntrySource>, String> {
        self.open_with(location, expect, &self.options.clone().only(name))
    }

    fn open_with(
        &self,
        location: &Path,
        expect: Option<Format>,
        options: &binfmt::OpenOptions,
    ) -> Result<Box<dyn EntrySource>, String> {
        let source = if location == Path::new("-") {
            binfmt::open_stream(&mut std::io::stdin().lock(), "<stdin>")
        } else {
            binfmt::open_with(location, options)
        }
        .map_err(output::failed)?;
        match expect {
            Some(expected) if source.format() != expected => Err(format!(
                "{}: a {} file, not {expected}: use `binfmt {} ...` or the generic commands",
                location.display(),
                source.format(),
                source.format()
            )),
            _ => Ok(source),
        }
    }

    /// The bytes at `location` (a path or a URL), for a format's own
    /// reader.
    pub fn source(&self, location: &Path) -> Result<binfmt::Opened, String> {
        binfmt::open_source(location, &self.options).map_err(output::failed)
    }
}
