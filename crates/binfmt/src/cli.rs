//! The `binfmt` command, as a library function: the binary
//! (`src/main.rs`) and the Python package's `binfmt` script and
//! `python -m binfmt` run this same code.
//!
//! Exit status: 0 when everything succeeded, 1 when a file could not be read
//! or is bad, 2 for a usage error. Data goes to stdout; messages to stderr,
//! one line each, naming the file.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::{cmd, output};

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Read, check and convert TARIDX, ARCX, PAR4 and KAST files.
#[derive(Debug, Parser)]
#[command(
    name = "binfmt",
    version,
    after_help = "Examples:\n  binfmt tour fixtures/\n  binfmt list data.arcx\n  binfmt convert data.arcx -o data.kas --to kast\n  binfmt get shards/train.taridx s/000123.jpg -o 000123.jpg\n  binfmt extract tables.trees -o arrays/\n  binfmt sniff fixtures/reference/*.*\n  binfmt sniff --json data/train.taridx data/train_0000.tar\n  binfmt kast ls -l tables.trees\n  binfmt kast dump tables.trees nodes/time\n  binfmt taridx index shards/ --fold train\n  binfmt taridx get shards/train.taridx 000123 --ext jpg > 000123.jpg\n  binfmt par4 inspect data.par4\n  binfmt arcx pack src/ -o src.arcx && binfmt arcx get src.arcx lib.rs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum Command {
    Sniff(cmd::sniff::Args),
    Info(cmd::args::InfoArgs),
    List(cmd::args::ListArgs),
    Get(cmd::args::GetArgs),
    Extract(cmd::args::ExtractArgs),
    Verify(cmd::args::VerifyArgs),
    Convert(cmd::generic::ConvertArgs),
    Completions(CompletionsArgs),
    Tour(cmd::tour::Args),
    Mount(cmd::mount::Args),
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
    after_help = "Examples:\n  binfmt completions bash > ~/.local/share/bash-completion/completions/binfmt\n  binfmt completions zsh > ~/.zfunc/_binfmt\n  binfmt completions fish > ~/.config/fish/completions/binfmt.fish"
)]
struct CompletionsArgs {
    /// The shell.
    shell: clap_complete::Shell,
}

fn completions(shell: clap_complete::Shell) -> output::CommandResult {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut described(Cli::command()), "binfmt", &mut script);
    output::to_stdout(|out| out.write_all(&script))?;
    Ok(output::Status::Success)
}

/// `command` with every subcommand's one-line description set up front.
///
/// Subcommands add their arguments, and with them their descriptions, only
/// when built (`#[command(defer = true)]`), so a start builds the invoked
/// subcommand alone. What lists subcommands (help, the `help` subcommand,
/// completion scripts) needs the descriptions of all of them: each is
/// learnt from a built copy of its subcommand.
fn described(command: clap::Command) -> clap::Command {
    command.mut_subcommands(|subcommand| {
        let mut built = subcommand.clone();
        built.build();
        let subcommand = described(subcommand);
        match built.get_about() {
            Some(about) => subcommand.about(about.clone()),
            None => subcommand,
        }
    })
}

/// The parsed command line. Anything clap prints itself (help, version, a
/// usage error) comes from the described tree, so it reads the same as
/// from a tree built whole.
fn parse(args: &[OsString]) -> Cli {
    Cli::command()
        .try_get_matches_from(args)
        .and_then(|matches| Cli::from_arg_matches(&matches))
        .unwrap_or_else(|_| {
            let mut command = described(Cli::command());
            command
                .try_get_matches_from_mut(args)
                .and_then(|matches| Cli::from_arg_matches(&matches))
                .unwrap_or_else(|error| error.format(&mut command).exit())
        })
}

/// Runs the command on this process's arguments.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    // `mount` answers signals itself (it unmounts first). Others install
    // the handler when they first open an S3 output: a command that writes
    // nothing to S3 starts no signal thread (0.15 ms of every start).
    if args.get(1).is_none_or(|command| command != "mount") {
        binfmt_remote::before_first_output(abort_uploads_on_signals);
    }
    ExitCode::from(run(&args))
}

/// On SIGINT, SIGTERM or SIGHUP, aborts the S3 uploads in progress before
/// the signal takes its default course: what a killed writer wrote never
/// appears, and no incomplete upload is left behind.
fn abort_uploads_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("binfmt-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                binfmt_remote::abort_uploads();
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        });
}

/// Runs the command on `args` (the program's name first) and returns its
/// exit status. Help, version and usage errors exit the process, as from
/// the binary.
pub fn run(args: &[OsString]) -> u8 {
    let cli = parse(args);
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
        Command::Mount(args) => cmd::mount::run(&args),
        Command::Kast(command) => cmd::kast::run(&command),
        Command::Taridx(command) => cmd::taridx::run(&command),
        Command::Par4(command) => cmd::par4::run(&command),
        Command::Arcx(command) => cmd::arcx::run(&command),
    };
    match outcome {
        Ok(status) => status.code(),
        Err(error) => {
            // The printer gate: whatever the message holds (a path from the
            // command line, a server's text), one escaped line without
            // secrets; never a panic when stderr is gone.
            output::note(format_args!("binfmt: {error}"));
            output::Status::Failed.code()
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Checks that each subcommand of `command` has the description it has
    /// when built, and that the copies of it under `help` subcommands
    /// (`mirrors`, what completion scripts list) carry it too.
    fn check_described(command: &clap::Command, mirrors: &[&clap::Command]) {
        let help = command.find_subcommand("help");
        for subcommand in command.get_subcommands() {
            let name = subcommand.get_name();
            if name == "help" {
                continue;
            }
            let mut built = subcommand.clone();
            built.build();
            let about = built.get_about().map(ToString::to_string);
            assert!(about.is_some(), "{name} has no description");
            assert_eq!(subcommand.get_about().map(ToString::to_string), about);
            let copies: Vec<&clap::Command> = mirrors
                .iter()
                .copied()
                .chain(help)
                .map(|mirror| {
                    mirror
                        .find_subcommand(name)
                        .unwrap_or_else(|| panic!("{name} missing under help"))
                })
                .collect();
            for copy in &copies {
                assert_eq!(copy.get_about().map(ToString::to_string), about, "{name}");
            }
            check_described(subcommand, &copies);
        }
    }

    #[test]
    fn the_tree_completions_come_from_describes_every_subcommand() {
        let mut command = super::described(super::Cli::command());
        command.build();
        assert!(command.find_subcommand("help").is_some());
        check_described(&command, &[]);
    }

    #[test]
    fn a_tree_not_described_would_lose_descriptions() {
        let mut command = super::Cli::command();
        command.build();
        let help = command.find_subcommand("help").expect("a help subcommand");
        let sniff = help.find_subcommand("sniff").expect("sniff under help");
        assert!(sniff.get_about().is_none());
    }
}
