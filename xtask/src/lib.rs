//! The parts of `cargo xtask` that tests run too.

#![deny(missing_docs)]

pub mod bench_page;
pub mod fixtures;
