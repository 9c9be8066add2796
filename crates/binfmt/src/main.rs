//! The `binfmt` command: [`binfmt::cli`] does the work, so the Python
//! package runs the same code.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    binfmt::cli::main()
}
