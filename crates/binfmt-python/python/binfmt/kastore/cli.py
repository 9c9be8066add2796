"""``python -m binfmt.kastore``: the ``kastore`` command line (``ls``, ``dump``).

The same arguments and output as ``python -m kastore``: ``ls STORE [-l] [-H]``
lists the keys (sorted), ``-l`` with type, length and size in columns,
``-H`` with sizes in the GNU style (``195.3K``); ``dump STORE ARRAY``
prints one element per line. Errors are not caught (an empty file raises
``EOFError``), as in kastore.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
from typing import Optional, Sequence

from .. import kastore


def setup_logging(args: argparse.Namespace) -> None:
    """Logging at WARNING, INFO (``-v``) or DEBUG (``-vv``)."""
    level = logging.WARNING
    if args.verbose == 1:
        level = logging.INFO
    elif args.verbose >= 2:
        level = logging.DEBUG
    logging.basicConfig(format="%(asctime)s %(message)s", level=level)


def human_size(size: int) -> str:
    """A size in the GNU style of ``ls -h``: ``800B``, ``1.0K``, ``195.3K``."""
    if size < 1024:
        return f"{size}B"
    value = float(size)
    for suffix in "KMGTPEZY":
        value /= 1024
        if value < 1024 or suffix == "Y":
            return f"{value:.1f}{suffix}"
    raise AssertionError("unreachable")


def _list(store: kastore.Store, args: argparse.Namespace) -> None:
    keys = sorted(store.keys())
    if not args.long:
        for key in keys:
            print(key)
        return
    rows = []
    for key in keys:
        info = store.info(key)
        size = human_size(info.size) if args.human_readable else str(info.size)
        rows.append((info.dtype, str(info.shape[0]), size, key))
    if not rows:
        return
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    for dtype, length, size, key in rows:
        print(
            f"{dtype:<{widths[0]}} {length:>{widths[1]}} {size:>{widths[2]}} {key}"
        )


def _dump(store: kastore.Store, args: argparse.Namespace) -> None:
    for value in store[args.array]:
        print(f"{value}")


def run_list(args: argparse.Namespace) -> None:
    """``ls``: the keys of a store."""
    setup_logging(args)
    with kastore.load(args.store) as store:
        _list(store, args)


def run_dump(args: argparse.Namespace) -> None:
    """``dump``: one array, an element per line."""
    setup_logging(args)
    with kastore.load(args.store) as store:
        _dump(store, args)


def get_kastore_parser() -> argparse.ArgumentParser:
    """The argument parser of the command."""
    parser = argparse.ArgumentParser(
        description="Command line utility for kastore files."
    )
    parser.add_argument(
        "-V", "--version", action="version", version=f"%(prog)s {kastore.__version__}"
    )
    parser.add_argument(
        "--verbose", "-v", action="count", default=0, help="Increase verbosity."
    )
    commands = parser.add_subparsers(dest="subcommand", required=True)

    ls = commands.add_parser("ls", help="List the contents of a store")
    ls.add_argument("store", help="The input kastore file")
    ls.add_argument(
        "--long", "-l", action="store_true", help="Show details about arrays"
    )
    ls.add_argument(
        "--human-readable",
        "-H",
        action="store_true",
        help="Show array sizes in human-readable format.",
    )
    ls.set_defaults(runner=run_list)

    dump = commands.add_parser("dump", help="Dump an array within the file to stdout")
    dump.add_argument("store", help="The input kastore file")
    dump.add_argument("array", help="The name of the array of interest.")
    dump.set_defaults(runner=run_dump)
    return parser


def kastore_main(argv: Optional[Sequence[str]] = None) -> None:
    """Runs the command with ``argv`` (``sys.argv`` by default)."""
    if os.name == "posix":
        # A closed pipe (``| head``) ends the program quietly.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = get_kastore_parser().parse_args(argv)
    args.runner(args)
