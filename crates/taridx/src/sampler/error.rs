//! What an epoch order or share refuses.

/// What building or reading an order can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SamplerError {
    /// More samples than `MAX_LEN`.
    #[error("length {n}: sample indices are int64, so at most 2**63 - 1 samples")]
    TooLong {
        /// The length asked for.
        n: u64,
    },
    /// A chunk size of 0.
    #[error("chunk_size must be at least 1")]
    ZeroChunkSize,
    /// A rank outside its world, or a world larger than `MAX_LEN`.
    #[error("rank {rank} of world_size {world_size}: need 0 <= rank < world_size <= 2**63 - 1")]
    Rank {
        /// The rank.
        rank: u64,
        /// The world size.
        world_size: u64,
    },
    /// A share starting past the epoch's end.
    #[error("start {start}: the epoch has {n} samples")]
    Start {
        /// The position asked for.
        start: u64,
        /// The epoch's samples.
        n: u64,
    },
    /// Positions asked of an order of no samples.
    #[error("an order of no samples has no positions")]
    Empty,
    /// Memory refused for a table of the layout.
    #[error(transparent)]
    Core(#[from] binfmt_core::Error),
}
