//! One module per subcommand.

pub mod sniff;
