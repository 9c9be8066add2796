"""``python -m binfmt.kastore``: see :mod:`binfmt.kastore.cli`."""

from binfmt.kastore import cli


def main() -> None:
    """Runs the kastore command line."""
    cli.kastore_main()


if __name__ == "__main__":
    main()
