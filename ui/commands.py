"""The installed ``deskbench`` script: every ``harness.cli`` command plus ``deskbench app`` (the
live app, which lives above ``harness``: nothing in ``harness`` imports ``ui``)."""
from __future__ import annotations

import argparse
import sys

from harness.cli import main as cli
from ui.serve import add_app_command


def build_parser() -> argparse.ArgumentParser:
    """The ``deskbench`` parser: the harness's commands and ``app``."""
    return cli.build_parser(extra_commands=(add_app_command,))


def main(argv: list[str] | None = None) -> int:
    """Run one ``deskbench`` command (``app`` included); returns its exit status."""
    return cli.main(argv, parser=build_parser())


if __name__ == "__main__":
    sys.exit(main())
