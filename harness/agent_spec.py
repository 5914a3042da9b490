"""The ``agent`` section of the config: where the team's own agent under test lives and how it
is called (docs/agents.md). ``run.agent`` names the adapter; this section says where and how.

Header values are written as given (``Bearer ${BOT_TOKEN}`` names an environment variable, read
when the agent is built) and are never stored: :meth:`AgentSpec.stored` keeps only their names.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

EXTERNAL_AGENTS = ("http", "python", "openai", "langgraph", "a2a")
"""``run.agent`` values that put a team's own agent under test (``harness.adapters``)."""
VOICE_BOT_AGENTS = ("twilio-ws", "realtime-ws")
"""``run.agent`` values that call a team's voice bot over a websocket (``harness.voicebots``;
``deskbench call simulate`` only, docs/voice-bots.md)."""
TEAM_AGENTS = EXTERNAL_AGENTS + VOICE_BOT_AGENTS
"""Every ``run.agent`` value that puts the team's own agent (text or voice) under test."""
BUILT_IN_AGENTS = ("plain", "rag", "human", "replay")
"""``run.agent`` values the harness builds itself (``harness.agents``)."""
REDACTED = "<not stored>"


class AgentSpec(BaseModel):
    """The agent under test when ``run.agent`` is one of :data:`EXTERNAL_AGENTS`."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    url: str | None = Field(None, description="http, openai, langgraph, a2a: the agent's address (the "
                            "contract's POST URL; an OpenAI-compatible base URL; a LangGraph or A2A server); "
                            "twilio-ws, realtime-ws: the voice bot's ws:// or wss:// address")
    target: str | None = Field(None, description="python: MODULE:ATTR (a callable or a compiled LangGraph "
                               "graph); langgraph: the assistant id or graph name")
    model: str | None = Field(None, description="openai: the model name sent to the endpoint")
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers sent with every "
                                    "request; ${VAR} in a value reads an environment variable (never stored)")
    timeout_s: float = Field(120.0, gt=0, le=3600, description="per-turn timeout of the agent (each attempt)")
    system_prompt: str | None = Field(None, description="openai: a file whose text is sent as the system "
                                      "message (none: the endpoint gets the conversation alone)")
    name: str | None = Field(None, description="the agent's name in run names (default: the host or target)")
    stream: bool = Field(False, description="langgraph, openai: stream the reply (time to first token "
                         "measured); the live app and voice calls stream whatever this says")
    judge_sees_trace: bool = Field(False, description="the judges see the agent's trace (tool calls, "
                                   "retrieved passages) beside its reply; recorded on every score")

    @field_validator("url")
    @classmethod
    def _http_url(cls, v):
        if v is not None and not v.startswith(("http://", "https://", "ws://", "wss://")):
            raise ValueError("agent.url must start with http:// or https:// (e.g. http://localhost:8080/chat), "
                             "or for a voice bot ws:// or wss:// (e.g. ws://localhost:8765/twilio)")
        return v

    @field_validator("target")
    @classmethod
    def _target(cls, v):
        if v is not None and not v.strip():
            raise ValueError("agent.target is empty; give MODULE:ATTR (python) or an assistant id (langgraph)")
        return v

    @field_validator("headers", mode="before")
    @classmethod
    def _headers(cls, v: Any):
        """Headers as a table, or ``NAME=VALUE`` items (``--agent-header``)."""
        if isinstance(v, (list, tuple)):
            out = {}
            for item in v:
                name, sep, value = str(item).partition("=")
                if not sep or not name.strip():
                    raise ValueError(f"agent header {item!r}: expected NAME=VALUE, e.g. "
                                     "Authorization=Bearer ${BOT_TOKEN}")
                out[name.strip()] = value.strip()
            return out
        return v

    @field_serializer("headers", when_used="json")
    def _never_stored(self, headers: dict[str, str]) -> dict[str, str]:
        """A run stores its config as JSON: header names only, never their values."""
        return {k: REDACTED for k in headers}

    def label(self, kind: str) -> str:
        """The agent's name in run names: ``name``, else the target's attribute or the URL's host."""
        if self.name:
            return self.name
        if kind == "python" and self.target:
            return self.target.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
        if kind == "langgraph" and self.target:
            return self.target
        if kind == "openai" and self.model:
            return self.model.rsplit("/", 1)[-1]
        if self.url:
            from urllib.parse import urlsplit
            parts = urlsplit(self.url)
            return (parts.hostname or kind) + (f"-{parts.port}" if parts.port else "")
        return kind

    def redacted_headers(self) -> list[str]:
        """Header names whose value was not stored (a resumed run needs them again)."""
        return [k for k, v in self.headers.items() if v == REDACTED]
