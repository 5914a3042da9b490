"""Serving the live app: its options and its start-up path, one implementation for
``python app.py`` and ``deskbench app``.

:func:`add_app_options` adds the flags (the config flags every command has, plus where to listen,
the task set, the RAG knowledge base and whether participants see the judge's scores);
:func:`serve` builds the config, warms the services up, launches Gradio, prints the address and
serves until Ctrl-C or SIGTERM.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading

from harness.cli.agent_options import EXTERNAL_HELP, add_agent_options, agent_overrides
from harness.cli.common import add_config_args, build_config
from harness.cli.defaults import config_options, show_defaults
from harness.config import EXTERNAL_AGENTS, ConfigError

DESCRIPTION = ("Start the live app: people chat with the agent (or answer as the agent), rate its "
               "replies and join studies; organisers set up studies and browse results. Offline by "
               "default (the embedded model serves every role).")

APP_OPTIONS = {"--host": "app.host", "--port": "app.port", "--dataset": "run.dataset",
               "--kb": ("rag.kb", "none: the plain agent only"),
               "--show-judge-scores": "app.show_judge_scores", "--agent": "run.agent"}
"""The config keys of the app's options."""


def add_app_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the live app's flags to ``parser`` (returned, with every default shown in its help)."""
    add_config_args(parser)
    parser.add_argument("--host", help="interface to listen on (0.0.0.0 for a network)")
    parser.add_argument("--port", type=int, help="port (0: any free port)")
    parser.add_argument("--dataset", help="task set drawn from in free sessions")
    parser.add_argument("--kb", help="knowledge base for the RAG agent (enables agent 'rag')")
    parser.add_argument("--show-judge-scores", action="store_true",
                        help="show participants the LLM judge's scores")
    parser.add_argument("--agent", choices=["plain", *EXTERNAL_AGENTS], help="the agent people chat with: "
                        "plain (and rag with --kb)" + EXTERNAL_HELP)
    add_agent_options(parser)
    config_options(parser, APP_OPTIONS)
    return show_defaults(parser)


def build_parser(prog: str = "app.py") -> argparse.ArgumentParser:
    """The parser of ``python app.py``."""
    return add_app_options(argparse.ArgumentParser(prog=prog, description=DESCRIPTION))


def add_app_command(sub) -> None:
    """Add ``deskbench app``: the same options and start-up path as ``python app.py``."""
    p = sub.add_parser("app", help="start the live app (Gradio): chat, rate, studies, organiser",
                       description=DESCRIPTION + " The same as `python app.py` in a clone.")
    add_app_options(p)
    p.set_defaults(func=serve)


def serve(args: argparse.Namespace) -> int:
    """Start the live app and serve until Ctrl-C or SIGTERM; returns 0, or 2 on a bad config or
    a port that cannot be listened on (the message names the fix). Gradio and the live services
    are imported here, not at the top: every other ``deskbench`` command starts without them."""
    from harness.live.services import AppServices
    from ui.app import launch

    app = {k: v for k, v in {"host": args.host, "port": args.port}.items() if v is not None}
    if args.show_judge_scores:
        app["show_judge_scores"] = True
    extra: dict = {"app": app}
    if args.kb:
        extra["rag"] = {"kb": args.kb}
        app["agents"] = ["plain", "rag"]
    run = {"dataset": args.dataset}
    if args.agent in EXTERNAL_AGENTS:  # people chat with the team's own agent (docs/agents.md)
        # first: the free sessions' default; with --kb the built-in agents stay beside it (studies)
        app["agents"], run["agent"] = [args.agent, *app.get("agents", [])], args.agent
        extra["agent"] = agent_overrides(args)
    try:
        config = build_config(args, run=run, extra=extra)
        services = AppServices(config)
        if args.agent in EXTERNAL_AGENTS:
            try:
                services.runtime.external_agent  # noqa: B018 - built and checked before the app listens
            except ConfigError:
                services.close()
                raise
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    services.warm_up()
    try:
        demo, url = launch(services)
    except OSError as exc:
        services.close()
        print(f"error: cannot listen on {config.app.host}:{config.app.port} ({exc}). "
              "Pass --port with a free port (or 0 for any).", file=sys.stderr)
        return 2
    print(f"deskbench live app: {url}", flush=True)
    print(f"store: {config.store}", flush=True)
    if services.secret_generated:
        print(f"organiser secret (made for this start; set {config.app.organiser_secret_env} "
              f"to choose one): {services.organiser_secret}", flush=True)
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
