//! `binfmt mount FILE|URL MOUNTPOINT`: a read-only FUSE mount of any file
//! (spec/mount.md), in the foreground until unmounted or signalled.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

use binfmt::mount::{Mount, MountOptions};

use crate::cmd::remote::RemoteArgs;
use crate::output::{self, CommandResult, Status};

/// The variable a `--daemon` parent sets for the child that mounts: the
/// child writes one line to stdout once the mount is ready.
const READY_ENV: &str = "BINFMT_MOUNT_REPORT_READY";

/// Mount a file (or URL) read-only at MOUNTPOINT, its entries as files.
///
/// The tree is what `binfmt list` lists: ARCX files, directories and
/// symlinks with their modes and times; a TARIDX fold's members; a
/// kastore's arrays as files of their little-endian bytes (keys with `/`
/// as directories); a PAR4 map's entries. Sizes and directories come from
/// the listing; a read fetches or decompresses only what it touches. Runs
/// until the mount point is unmounted (`umount MOUNTPOINT` or `fusermount3
/// -u MOUNTPOINT`) or binfmt gets SIGINT or SIGTERM, then unmounts and
/// exits 0. A read that fails is EIO for that read, logged once on stderr.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  mkdir -p mnt && binfmt mount --daemon data.arcx mnt && ls -R mnt && umount mnt\n  mkdir -p mnt && binfmt mount --daemon https://example.org/data/train.taridx mnt && ls mnt && umount mnt"
)]
pub struct Args {
    /// A TARIDX index (with its shards), ARCX, PAR4 or KAST file, or its
    /// http(s):// or s3:// URL.
    file: PathBuf,
    /// An existing empty directory to mount on.
    mountpoint: PathBuf,
    /// Mount options, comma-separated: allow_other (users other than you
    /// may read it), ro (always).
    #[arg(short = 'o', value_name = "OPTIONS")]
    options: Vec<String>,
    /// Return once the mount is ready, leaving it in the background.
    #[arg(long)]
    daemon: bool,
    /// Threads answering reads at once (1 to 64).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: u16,
    #[command(flatten)]
    remote: RemoteArgs,
}

pub fn run(args: &Args) -> CommandResult {
    let mut options = MountOptions::default().threads(usize::from(args.threads));
    for option in args.options.iter().flat_map(|list| list.split(',')) {
        match option {
            "allow_other" => options = options.allow_other(true),
            "ro" | "" => {}
            other => output::usage_error(format!(
                "unknown mount option {:?}: binfmt mount takes allow_other (and ro, always on)",
                output::escape(other)
            )),
        }
    }
    if args.daemon {
        return daemon();
    }
    args.remote.counted(|session| {
        let source = session.open(&args.file, None)?;
        let mut mount = Mount::new(Arc::from(source), &args.mountpoint, &options)
            .map_err(|error| error.to_string())?;
        let mut unmounter = mount.unmounter();
        let mut signals = signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ])
        .map_err(|error| format!("mount: cannot catch signals: {error}"))?;
        let handle = signals.handle();
        let mountpoint = args.mountpoint.clone();
        std::thread::spawn(move || {
            for _ in signals.forever() {
                // A busy mount (a reader's open file, a shell's current
                // directory) is detached lazily: it goes once unused.
                if let Err(error) = unmounter.unmount() {
                    if !lazily_unmounted(&mountpoint) {
                        output::note(format_args!(
                            "mount: cannot unmount {}: {error}",
                            output::escape(&mountpoint.display().to_string())
                        ));
                    }
                }
            }
        });
        if std::env::var_os(READY_ENV).is_some() {
            let mut stdout = std::io::stdout();
            let _ = writeln!(stdout, "ready").and_then(|()| stdout.flush());
        }
        let answered = mount.run().map_err(|error| error.to_string());
        handle.close();
        answered?;
        Ok(Status::Success)
    })
}

/// Detaches the mount at `mountpoint` lazily (`umount -l`, or
/// `fusermount3 -uz` as a user); whether one of them did.
fn lazily_unmounted(mountpoint: &std::path::Path) -> bool {
    [("umount", &["-l"][..]), ("fusermount3", &["-u", "-z"][..])]
        .iter()
        .any(|(program, flags)| {
            std::process::Command::new(program)
                .args(*flags)
                .arg(mountpoint)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        })
}

/// Runs this command again without `--daemon`, in its own process group
/// (so the terminal's Ctrl-C does not reach it), and returns once it says
/// the mount is ready, or with its error when it fails first. A daemon's
/// later notes (a read failing with EIO) are not shown: mount in the
/// foreground to see them.
fn daemon() -> CommandResult {
    let program = std::env::current_exe().map_err(|error| format!("mount --daemon: {error}"))?;
    let args: Vec<std::ffi::OsString> = std::env::args_os()
        .skip(1)
        .filter(|arg| arg != "--daemon")
        .collect();
    let mut child = std::process::Command::new(program);
    // Its stdout says when it is ready; its stderr comes here until then
    // (a failure to mount is shown), and goes nowhere after this process
    // exits: a daemon holds none of its caller's output open.
    child
        .args(args)
        .env(READY_ENV, "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut child, 0);
    let mut child = child
        .spawn()
        .map_err(|error| format!("mount --daemon: {error}"))?;
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
    }
    if line.trim() == "ready" {
        return Ok(Status::Success);
    }
    // The child failed before the mount was ready: its error, then its
    // status.
    if let Some(stderr) = child.stderr.take() {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            output::note(format_args!("{line}"));
        }
    }
    let status = child
        .wait()
        .map_err(|error| format!("mount --daemon: {error}"))?;
    Ok(if status.success() {
        Status::Success
    } else {
        Status::Failed
    })
}
