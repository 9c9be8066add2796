//! The parts of `cargo xtask` that tests run too.

pub mod fixtures;
