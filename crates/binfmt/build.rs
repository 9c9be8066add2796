//! Link flags for the `binfmt` command.
//!
//! On Linux with glibc the command's relative relocations are packed
//! (`DT_RELR`, GNU ld 2.38+, glibc 2.36+): the loader then reads a few KB
//! at every start instead of about 800 KB of `RELA` entries, which was a
//! tenth of a one-file `get` (issue 18). The binary stays position
//! independent.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let var = |name| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
