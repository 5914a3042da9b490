"""Starts the live Gradio app: people chat with the agent (or answer as the agent), rate its
replies, join studies; organisers set up studies and browse results. Offline by default (the
embedded model serves every role), like the batch runs. An installed package starts the same
app, with the same options, as ``deskbench app`` (both run :func:`ui.serve.serve`).

    .venv/bin/python app.py                      # http://127.0.0.1:7860
    .venv/bin/python app.py --host 0.0.0.0 --port 8080 --store runs/study.sqlite
"""
from __future__ import annotations

import sys

from ui.serve import APP_OPTIONS, build_parser, serve

__all__ = ["APP_OPTIONS", "build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    """Start the live app and serve until Ctrl-C or SIGTERM (see :func:`ui.serve.serve`)."""
    return serve(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
