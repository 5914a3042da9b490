"""The options that put a team's own agent under test (docs/agents.md), shared by ``run``,
``demo``, ``ray run``, ``call simulate``, ``ntb run`` and the live app: ``--agent KIND`` picks the
adapter, ``--agent-url``, ``--agent-target``, ``--agent-model``, ``--agent-header`` ... say where
and how (the config's ``agent`` section)."""
from __future__ import annotations

import argparse
from typing import Any

from harness.cli.defaults import config_options
from harness.config import EXTERNAL_AGENTS

AGENT_OPTIONS = {"--agent-url": "agent.url", "--agent-target": "agent.target", "--agent-model": "agent.model",
                 "--agent-header": "agent.headers", "--agent-timeout": "agent.timeout_s",
                 "--agent-system-prompt": "agent.system_prompt", "--agent-name": "agent.name",
                 "--agent-stream": "agent.stream", "--judge-sees-trace": "agent.judge_sees_trace"}
"""The config keys of the agent options."""
EXTERNAL_HELP = ("; " + ", ".join(EXTERNAL_AGENTS) + ": the team's own agent (--agent-url / --agent-target, "
                 "docs/agents.md)")


def add_agent_options(p: argparse.ArgumentParser, judges: bool = True) -> None:
    """Add the agent-under-test options to ``p`` (``--judge-sees-trace`` where ``judges``)."""
    p.add_argument("--agent-url", help="http: the URL the contract is POSTed to; openai: an OpenAI-compatible "
                   "base URL (…/v1); langgraph: a LangGraph server; a2a: an A2A agent's base URL")
    p.add_argument("--agent-target", help="python: MODULE:ATTR, a callable fn(request) or a compiled "
                   "LangGraph graph (the current folder is importable); langgraph: the assistant id")
    p.add_argument("--agent-model", help="openai: the model name")
    p.add_argument("--agent-header", action="append", metavar="NAME=VALUE",
                   help="an HTTP header of every agent request (repeatable); ${VAR} reads an environment "
                        "variable, e.g. 'Authorization=Bearer ${BOT_TOKEN}'; values are never stored")
    p.add_argument("--agent-timeout", type=float, help="seconds the agent has for a turn (each attempt)")
    p.add_argument("--agent-system-prompt", metavar="FILE", help="openai: a system prompt file sent first")
    p.add_argument("--agent-name", help="the agent's name in run names")
    p.add_argument("--agent-stream", action="store_true", default=None,
                   help="openai, langgraph: stream the reply (time to first token)")
    options = dict(AGENT_OPTIONS)
    if judges:
        p.add_argument("--judge-sees-trace", action="store_true", default=None,
                       help="show the judges the agent's trace (tool calls, retrieved passages) beside its reply")
    else:
        options.pop("--judge-sees-trace")
    config_options(p, options)


def agent_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The ``agent`` section's keys the options set (options not given left out)."""
    keys = {"url": "agent_url", "target": "agent_target", "model": "agent_model", "headers": "agent_header",
            "timeout_s": "agent_timeout", "system_prompt": "agent_system_prompt", "name": "agent_name",
            "stream": "agent_stream", "judge_sees_trace": "judge_sees_trace"}
    return {k: getattr(args, a) for k, a in keys.items() if getattr(args, a, None) is not None}
