//! One module per subcommand.

pub mod arcx;
pub mod generic;
pub mod kast;
pub mod par4;
pub mod remote;
pub mod sniff;
pub mod taridx;
pub mod tour;
