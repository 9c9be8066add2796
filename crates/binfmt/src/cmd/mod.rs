//! One module per subcommand.

pub mod arcx;
pub mod args;
pub mod generic;
pub mod info;
pub mod kast;
pub mod mount;
pub mod par4;
pub mod remote;
pub mod sniff;
pub mod taridx;
pub mod tour;
