"""The agent under test from the config: ``run.agent`` names the adapter, the ``agent`` section
says where and how (docs/agents.md). :func:`check_agent` finds what can be found wrong before any
conversation starts (a header naming an unset variable, a target that does not import, an
unreachable URL) and says how to fix it in one line."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx

from harness.adapters.external import ExternalAgent
from harness.adapters.headers import expand_headers
from harness.config import Config, ConfigError
from harness.models.retry import RetryPolicy

NEEDS = {"http": ("url",), "openai": ("url",), "langgraph": ("url", "target"), "a2a": ("url",),
         "python": ("target",)}
FLAG = {"url": "--agent-url URL", "target": "--agent-target MODULE:ATTR", "model": "--agent-model NAME"}


def require(config: Config) -> None:
    """The keys the adapter needs are set.

    Raises:
        ConfigError: naming the missing key and its flag."""
    kind, spec = config.run.agent, config.agent
    for key in NEEDS.get(kind, ()):
        if not getattr(spec, key):
            flag = "--agent-target ASSISTANT_ID" if (kind, key) == ("langgraph", "target") else FLAG[key]
            raise ConfigError(f"--agent {kind} needs agent.{key}: pass {flag} (or set [agent] {key} in "
                              "the config file; docs/agents.md).")


def build_external_agent(config: Config, policy: RetryPolicy | None = None) -> ExternalAgent:
    """The adapter ``run.agent`` names, configured from the ``agent`` section.

    Raises:
        ConfigError: a missing key, a header naming an unset variable, a target that does not
            import or names neither a callable nor a graph.
    """
    require(config)
    kind, spec = config.run.agent, config.agent
    agent_role = config.role("agent")
    common: dict[str, Any] = {"timeout_s": spec.timeout_s, "policy": policy or RetryPolicy.from_config(config.retry),
                              "prices": (agent_role.input_price_per_mtok, agent_role.output_price_per_mtok)}
    name = spec.label(kind)
    redacted = spec.redacted_headers()
    if redacted:
        raise ConfigError(f"agent header(s) {', '.join(redacted)} were not stored with the run: pass them again "
                          "(--agent-header NAME=VALUE) when resuming or re-using it.")
    headers = expand_headers(spec.headers)
    if kind == "python":
        from harness.adapters.python_agent import python_agent
        return python_agent(spec.target, name, **common)
    if kind == "http":
        from harness.adapters.http_agent import HttpAgent
        return HttpAgent(spec.url, headers, name, **common)
    if kind == "openai":
        from harness.adapters.openai_agent import OpenAIChatAgent, read_system_prompt
        return OpenAIChatAgent(spec.url, spec.model or "", headers, name, read_system_prompt(spec.system_prompt),
                               spec.stream, **common)
    if kind == "langgraph":
        from harness.adapters.langgraph_server import LangGraphServerAgent
        return LangGraphServerAgent(spec.url, spec.target, headers, name, stream=spec.stream, **common)
    if kind == "a2a":
        from harness.adapters.a2a_agent import A2AAgent
        return A2AAgent(spec.url, headers, name, **common)
    raise ConfigError(f"run.agent {kind!r} is not an external agent (http, python, openai, langgraph, a2a).")


def check_agent(config: Config, agent: ExternalAgent | None = None, timeout_s: float = 10.0) -> str | None:
    """Check that the agent can be reached before a run stores anything; for ``openai`` without a
    model, ask the endpoint's ``/models`` for it (returned, else None).

    Raises:
        ConfigError: the URL cannot be reached (connection refused, bad host, timeout).
    """
    kind, spec = config.run.agent, config.agent
    if kind == "python" or not spec.url:
        return None
    probe = spec.url.rstrip("/") + ("/models" if kind == "openai" else "/info" if kind == "langgraph"
                                    else "/.well-known/agent-card.json" if kind == "a2a" else "")
    headers = expand_headers(spec.headers)
    try:
        response = httpx.get(probe, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise ConfigError(f"--agent-url {spec.url}: cannot reach the agent ({type(exc).__name__}: {exc}). "
                          "Start it, or fix the URL (host, port, http/https).") from exc
    if kind == "openai" and not spec.model:
        try:
            models = response.json().get("data") or []
            return models[0]["id"] if models else None
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
    return None


async def close_agent(agent: Any) -> None:
    """Close an external agent's connections (nothing for the others)."""
    close = getattr(agent, "aclose", None)
    if close is not None:
        try:
            await close()
        except (RuntimeError, asyncio.CancelledError):  # a loop already closed: nothing left to release
            pass
