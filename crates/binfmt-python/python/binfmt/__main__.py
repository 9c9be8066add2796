"""``python -m binfmt``: the ``binfmt`` command, the same code as the Rust
binary (``binfmt --help``). The wheel also installs it as the ``binfmt``
script."""

import signal
import sys


def main() -> None:
    """Runs the ``binfmt`` command on this process's arguments."""
    from binfmt._binfmt import run_cli

    # As the native binary: Ctrl-C ends the command at once (Python's
    # handler would only run after the Rust code returns).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(run_cli(["binfmt", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
