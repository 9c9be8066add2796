//! One module per subcommand.

pub mod kast;
pub mod sniff;
pub mod taridx;
