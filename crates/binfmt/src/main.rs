//! The `binfmt` command.
//!
//! Exit status: 0 when everything succeeded, 1 when a file could not be read
//! or is bad, 2 for a usage error. Data goes to stdout; messages to stderr,
//! one line each, naming the file.

mod cmd;
mod output;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Read, check and convert TARIDX, ARCX, PAR4 and KAST files.
#[derive(Debug, Parser)]
#[command(
    name = "binfmt",
    version,
    after_help = "Examples:\n  binfmt tour fixtures/\n  binfmt list data.arcx\n  binfmt convert data.arcx -o data.kas --to kast\n  binfmt get shards/train.taridx s/000123.jpg -o 000123.jpg\n  binfmt extract tables.trees -o arrays/\n  binfmt sniff fixtures/reference/*\n  binfmt sniff --json data/train.taridx data/train_0000.tar\n  binfmt kast ls -l tables.trees\n  binfmt kast dump tables.trees nodes/time\n  binfmt taridx index shards/ --fold train\n  binfmt taridx get shards/train.taridx 000123 --ext jpg > 000123.jpg\n  binfmt par4 inspect data.par4\n  binfmt arcx pack src/ -o src.arcx && binfmt arcx get src.arcx src/lib.rs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Sniff(cmd::sniff::Args),
    Info(cmd::generic::InfoArgs),
    List(cmd::generic::ListArgs),
    Get(cmd::generic::GetArgs),
    Extract(cmd::generic::ExtractArgs),
    Verify(cmd::generic::VerifyArgs),
    Convert(cmd::generic::ConvertArgs),
    Completions(CompletionsArgs),
    Tour(cmd::tour::Args),
    #[command(subcommand)]
    Kast(cmd::kast::Command),
    #[command(subcommand)]
    Taridx(cmd::taridx::Command),
    #[command(subcommand)]
    Par4(cmd::par4::Command),
    #[command(subcommand)]
    Arcx(cmd::arcx::Command),
}

/// Print a shell completion script for binfmt.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  binfmt completions bash > /etc/bash_completion.d/binfmt\n  binfmt completions zsh > ~/.zfunc/_binfmt\n  binfmt completions fish > ~/.config/fish/completions/binfmt.fish"
)]
struct CompletionsArgs {
    /// The shell.
    shell: clap_complete::Shell,
}

fn completions(shell: clap_complete::Shell) -> output::CommandResult {
    let mut script = Vec::new();
    clap_complete::generate(
        shell,
        &mut <Cli as clap::CommandFactory>::command(),
        "binfmt",
        &mut script,
    );
    output::to_stdout(|out| out.write_all(&script))?;
    Ok(output::Status::Success)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Sniff(args) => cmd::sniff::run(&args),
        Command::Info(args) => cmd::generic::info(&args, None),
        Command::List(args) => cmd::generic::list(&args, None),
        Command::Get(args) => cmd::generic::get(&args, None),
        Command::Extract(args) => cmd::generic::extract(&args, None),
        Command::Verify(args) => cmd::generic::verify(&args, None),
        Command::Convert(args) => cmd::generic::convert(&args),
        Command::Completions(args) => completions(args.shell),
        Command::Tour(args) => cmd::tour::run(&args),
        Command::Kast(command) => cmd::kast::run(&command),
        Command::Taridx(command) => cmd::taridx::run(&command),
        Command::Par4(command) => cmd::par4::run(&command),
        Command::Arcx(command) => cmd::arcx::run(&command),
    };
    match outcome {
        Ok(status) => status.into(),
        Err(error) => {
            eprintln!("binfmt: {error}");
            output::Status::Failed.into()
        }
    }
}
