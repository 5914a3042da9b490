"""Progress bars of the long CLI commands (docs/configuration.md#progress-bars).

Every long command (``run``, ``demo``, ``ntb run``, ``ray run``, ``call simulate``, ``import``,
``rejudge``, ``score`` when it judges, ``sanity``, ``robustness``, ``models --prepare``) shows a
rich bar on stderr, and none with ``--quiet`` or when stdout is not a terminal (a pipe, a file,
a CI log), so redirected output holds only the command's results.

The library functions these commands call take a plain ``on_progress(done, total)`` callback
(items or bytes); :func:`counting` hands one to them and draws it.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TransferSpeedColumn)

Tick = Callable[[int, int], None]  # on_progress(done, total)

_stderr = Console(stderr=True)


def show_progress(quiet: bool) -> bool:
    """Whether a command draws its bar: not with ``--quiet``, not when stdout is no terminal."""
    return not quiet and sys.stdout.isatty()


def progress_bar(quiet: bool, console: Console | None = None, unit: str = "items") -> Progress:
    """The rich bar of a long command: description, bar, done/total (``unit="bytes"``: sizes
    and speed), elapsed time; disabled (it still counts, but draws nothing) per
    :func:`show_progress`."""
    counts = ((DownloadColumn(), TransferSpeedColumn()) if unit == "bytes" else (MofNCompleteColumn(),))
    return Progress(TextColumn("{task.description}"), BarColumn(), *counts, TimeElapsedColumn(),
                    console=console or _stderr, disable=not show_progress(quiet))


@contextmanager
def counting(description: str, quiet: bool, console: Console | None = None,
             unit: str = "items", total: int | None = None) -> Iterator[Tick]:
    """A bar for the duration of the block; yields the ``on_progress(done, total)`` to hand on."""
    with progress_bar(quiet, console, unit) as bar:
        task = bar.add_task(description, total=total)

        def on_progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
        yield on_progress
