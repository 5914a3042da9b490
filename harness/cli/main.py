"""``deskbench``: the command line. Builds the parser from the command modules and maps the
errors a user can cause to a message and an exit status (2: bad input, 4: an endpoint's breaker
opened, 130: interrupted).

Every subcommand builds its config the same way (:func:`harness.cli.common.build_config`):
defaults < ``--config FILE`` < environment (``DESKBENCH_...``) < flags.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, Iterable

from rich.markup import escape

from harness.cli.agreement import add_agreement_command
from harness.cli.browse import add_browse_command
from harness.cli.common import console
from harness.cli.data import add_import_command, add_models_command
from harness.cli.defaults import show_defaults
from harness.cli.ntb import add_ntb_commands
from harness.cli.robustness import add_robustness_commands
from harness.cli.scale import add_scale_commands
from harness.cli.run_parser import add_run_commands
from harness.cli.selfscore import add_sanity_command, add_stored_run_commands
from harness.cli.simcheck import add_simcheck_command
from harness.cli.voice import add_voice_commands
from harness.config import ConfigError


def build_parser(extra_commands: Iterable[Callable] = ()) -> argparse.ArgumentParser:
    """The ``deskbench`` parser with every subcommand, in the order ``--help`` lists them;
    ``extra_commands`` (each ``add(sub)``) adds commands from above ``harness`` (``deskbench app``,
    ``ui.commands``)."""
    parser = argparse.ArgumentParser(
        prog="deskbench", description="Evaluate help-desk agents with SelfScore, offline by default "
        "(an embedded llama.cpp server with Qwen2.5-Coder-1.5B serves every role).")
    sub = parser.add_subparsers(dest="command", required=True)

    add_run_commands(sub)
    add_stored_run_commands(sub)
    add_import_command(sub)
    add_ntb_commands(sub)
    add_voice_commands(sub)
    add_robustness_commands(sub)
    add_scale_commands(sub)
    add_models_command(sub)
    add_sanity_command(sub)
    add_agreement_command(sub)
    add_simcheck_command(sub)
    add_browse_command(sub)
    for add in extra_commands:
        add(sub)
    return show_defaults(parser)


def main(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Run one ``deskbench`` command (parsed by ``parser``, :func:`build_parser` by default);
    returns its exit status."""
    from harness.models.circuit import CircuitOpenError
    from harness.models.engine import EngineError
    from harness.models.model_files import ModelFileError
    from harness.tasks.datasets import DatasetError
    from store.schema import StoreError

    args = (parser or build_parser()).parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, DatasetError, EngineError, ModelFileError, StoreError, ValueError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)  # one line, any width
        return 2
    except CircuitOpenError as exc:  # docs/reliability.md: the run stopped cleanly, resumable
        console.print(f"[red]stopped:[/] {escape(str(exc))}. Every finished turn is stored; resume with "
                      f"`deskbench ... run --resume {exc.run_id or 'RUN'}` once the endpoint is back.",
                      highlight=False)
        return 4
    except KeyboardInterrupt:  # Ctrl-C outside a batch's own handling (imports, set-up, reports)
        if getattr(args, "command", None) == "simcheck":
            console.print("[yellow]Interrupted.[/] Every simulated reply played so far is in the cache; "
                          "the same `deskbench simcheck` command plays only the rest.", highlight=False)
        else:
            console.print("[yellow]Interrupted.[/] Every finished turn is stored; `deskbench runs` lists "
                          "the runs, and `deskbench run --resume RUN` finishes one.", highlight=False)
        return 130


if __name__ == "__main__":
    sys.exit(main())
