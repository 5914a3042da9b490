"""The ``python`` adapter: ``agent.target = MODULE:ATTR`` imported from the current directory
(as ``python -m`` does). ATTR is a callable (sync or async) that takes the contract's request
and returns a string or the contract's response, or a compiled LangGraph graph
(:mod:`harness.adapters.graph_agent`)."""
from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
from typing import Any, Callable

from graphs.protocols import Problem
from harness.adapters.contract import parse_response
from harness.adapters.external import ExternalAgent, Sent
from harness.config import ConfigError


def load_target(target: str) -> Any:
    """The object ``MODULE:ATTR`` names (``ATTR`` may be dotted), the current directory on ``sys.path``.

    Raises:
        ConfigError: not ``MODULE:ATTR``, a module that does not import, or a missing attribute.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--agent-target {target!r}: expected MODULE:ATTR, e.g. my_bot.agent:respond "
                          "(a callable) or my_bot.graph:graph (a compiled LangGraph graph).")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the target's, named with its cause
        raise ConfigError(f"--agent-target {target!r}: module {module_name!r} does not import "
                          f"({type(exc).__name__}: {exc}). Run from the folder that holds it, or fix the "
                          "import error.") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"--agent-target {target!r}: {module_name} has no attribute {attr!r}. Name "
                              "the callable or compiled graph the module defines.")
        obj = getattr(obj, part)
    return obj


def is_langgraph_graph(obj: Any) -> bool:
    """Whether ``obj`` is a compiled LangGraph graph (a Pregel runnable)."""
    try:
        from langgraph.pregel import Pregel
    except ImportError:  # pragma: no cover - langgraph is a dependency
        return False
    return isinstance(obj, Pregel)


class PythonAgent(ExternalAgent):
    """A callable of the team's: ``fn(request) -> str | dict``, awaited when it is async, else
    run in a worker thread so that other conversations go on."""

    kind = "python"

    def __init__(self, fn: Callable[[dict], Any], name: str, **kw):
        super().__init__(name, **kw)
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))

    async def send(self, request: dict[str, Any], problem: Problem) -> Sent:
        """Call the function with a copy of the request (it may not change the harness's)."""
        copy = {**request, "messages": [dict(m) for m in request["messages"]],
                "metadata": dict(request["metadata"])}
        result = await self.fn(copy) if self.is_async else await asyncio.to_thread(self.fn, copy)
        if inspect.isawaitable(result):
            result = await result
        return Sent(parse_response(result))


def python_agent(target: str, name: str, **kw) -> ExternalAgent:
    """The adapter of what ``target`` names: a compiled graph, or a callable.

    Raises:
        ConfigError: the target does not import, or names neither a callable nor a graph.
    """
    obj = load_target(target)
    if is_langgraph_graph(obj):
        from harness.adapters.graph_agent import GraphAgent
        return GraphAgent(obj, name, **kw)
    if not callable(obj):
        raise ConfigError(f"--agent-target {target!r} is a {type(obj).__name__}, neither a callable nor a "
                          "compiled LangGraph graph. Name a function fn(request) -> str | dict, or the "
                          "result of StateGraph(...).compile().")
    return PythonAgent(obj, name, **kw)
