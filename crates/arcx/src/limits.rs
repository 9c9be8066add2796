//! What a reader allows: the [`Limits`] it holds hostile archives to, and
//! the [`OpenOptions`] an archive is opened with. A leaf: the reader, the
//! checks, the one-path lookup and the stored-manifest reader all take these.

/// Bounds a reader enforces against hostile archives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The largest manifest, as stored (default 256 MiB).
    pub max_manifest_stored: u64,
    /// The largest manifest once decompressed (default 1 GiB).
    pub max_manifest_size: u64,
    /// How many times its stored size a compressed manifest may grow
    /// (default 256; manifests of 16 MiB or less are not held to it). Real
    /// manifests compress 3-20x; zero padding compresses 30,000x.
    pub max_manifest_ratio: u64,
    /// The largest block once decompressed (default 256 MiB; at most 4 GiB).
    pub max_block_size: u64,
    /// The largest block that several chunks share, and the largest block
    /// decoded whole rather than streamed (default 16 MiB). Writers share
    /// blocks of about 1 MiB (this crate's default and `arcx` 0.3.0's).
    pub max_shared_block: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_manifest_stored: 256 << 20,
            max_manifest_size: 1 << 30,
            max_manifest_ratio: 256,
            max_block_size: 256 << 20,
            max_shared_block: 16 << 20,
        }
    }
}

/// How to open an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Bounds against hostile archives.
    pub limits: Limits,
    /// Check the header when opening (default true); `false` leaves it to
    /// [`Archive::verify`](crate::Archive::verify), saving a read where reads cost a request.
    pub check_header: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            check_header: true,
        }
    }
}

impl OpenOptions {
    /// These options with `limits`.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// These options checking the header on open or not.
    pub fn check_header(mut self, check: bool) -> Self {
        self.check_header = check;
        self
    }
}

impl Limits {
    /// These limits with `max_manifest_size` set.
    pub fn with_max_manifest_size(mut self, bytes: u64) -> Self {
        self.max_manifest_size = bytes;
        self
    }

    /// These limits with `max_manifest_ratio` set.
    pub fn with_max_manifest_ratio(mut self, ratio: u64) -> Self {
        self.max_manifest_ratio = ratio;
        self
    }

    /// The most bytes a manifest stored in `stored` bytes may decompress to.
    pub(crate) fn manifest_budget(&self, stored: u64) -> u64 {
        let by_ratio = stored.saturating_mul(self.max_manifest_ratio).max(16 << 20);
        self.max_manifest_size.min(by_ratio)
    }

    /// These limits with `max_block_size` set (capped at 4 GiB, what a
    /// block's size prefix can describe).
    pub fn with_max_block_size(mut self, bytes: u64) -> Self {
        self.max_block_size = bytes.min(u64::from(u32::MAX));
        self
    }
}
