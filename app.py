"""Starts the live Gradio app: people chat with the agent (or answer as the agent), rate its
replies, join studies; organisers set up studies and browse results. Offline by default (the
embedded model serves every role), like the batch runs.

    .venv/bin/python app.py                      # http://127.0.0.1:7860
    .venv/bin/python app.py --host 0.0.0.0 --port 8080 --store runs/study.sqlite
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading


APP_OPTIONS = {"--host": "app.host", "--port": "app.port", "--dataset": "run.dataset",
               "--kb": ("rag.kb", "none: the plain agent only"),
               "--show-judge-scores": "app.show_judge_scores"}
"""The config keys of the app's options."""


def build_parser() -> argparse.ArgumentParser:
    """The flags of ``python app.py``: the config flags every command has, plus where to listen,
    the task set, the RAG knowledge base and whether participants see the judge's scores."""
    from harness.cli.common import add_config_args
    from harness.cli.defaults import config_options, show_defaults

    parser = argparse.ArgumentParser(prog="app.py", description=__doc__.split("\n\n")[0])
    add_config_args(parser)
    parser.add_argument("--host", help="interface to listen on (0.0.0.0 for a network)")
    parser.add_argument("--port", type=int, help="port (0: any free port)")
    parser.add_argument("--dataset", help="task set drawn from in free sessions")
    parser.add_argument("--kb", help="knowledge base for the RAG agent (enables agent 'rag')")
    parser.add_argument("--show-judge-scores", action="store_true",
                        help="show participants the LLM judge's scores")
    config_options(parser, APP_OPTIONS)
    return show_defaults(parser)


def main(argv: list[str] | None = None) -> int:
    """Start the live app and serve until Ctrl-C or SIGTERM; returns 0, or 2 on a bad config or
    a port that cannot be listened on (the message names the fix)."""
    from harness.cli.common import build_config
    from harness.config import ConfigError
    from harness.live.services import AppServices
    from ui.app import launch

    args = build_parser().parse_args(argv)
    app = {k: v for k, v in {"host": args.host, "port": args.port}.items() if v is not None}
    if args.show_judge_scores:
        app["show_judge_scores"] = True
    extra: dict = {"app": app}
    if args.kb:
        extra["rag"] = {"kb": args.kb}
        app["agents"] = ["plain", "rag"]
    try:
        config = build_config(args, run={"dataset": args.dataset}, extra=extra)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    services = AppServices(config)
    services.warm_up()
    try:
        demo, url = launch(services)
    except OSError as exc:
        services.close()
        print(f"error: cannot listen on {config.app.host}:{config.app.port} ({exc}). "
              "Pass --port with a free port (or 0 for any).", file=sys.stderr)
        return 2
    print(f"deskbench live app: {url}")
    print(f"store: {config.store}")
    if services.secret_generated:
        print(f"organiser secret (made for this start; set {config.app.organiser_secret_env} "
              f"to choose one): {services.organiser_secret}")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        demo.close()
        services.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
