"""Who answers the caller: an LLM behind an OpenAI-compatible endpoint (streamed), or a script.

Both give one :class:`Conversation` per call: :meth:`hear` adds what the caller said (two
utterances in a row, the bot not having answered the first, become one message),
:meth:`reply` streams the next reply's text, and :meth:`said` records what of it the caller
actually heard (all of it, part of it when the caller barged in, nothing when the reply was
cancelled before its first audio).
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import AsyncIterator, Protocol

import httpx

SYSTEM_PROMPT = (
    "You are the voice of a computer help desk, answering a caller on the phone. "
    "Everything you write is read aloud, so speak plainly: no markdown, no numbered lists, no code, "
    "no links, no emoji. Answer in two to four short sentences, at most 60 words. "
    "Give only the next step or two, then ask the caller to try it and say what happens. "
    "If you need a detail, ask one short question."
)


class AgentError(RuntimeError):
    """The agent cannot be used: a bad script file or an unreachable model (one line)."""


class Conversation(Protocol):
    """One call's conversation with the agent."""

    def hear(self, text: str) -> None:
        """Add what the caller said."""

    def reply(self) -> AsyncIterator[str]:
        """The next reply's text, in pieces as it is written."""

    def said(self, text: str) -> None:
        """Record what of the reply the caller heard."""


def load_script(path: str | Path) -> list[str]:
    """The replies of a ``--script`` file: a JSON list of non-empty strings.

    Raises:
        AgentError: the file is missing, not JSON, or not such a list.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise AgentError(f"cannot read the script {path}: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AgentError(f"the script {path} is not JSON: {exc}") from exc
    if not isinstance(data, list) or not data or not all(isinstance(x, str) and x.strip() for x in data):
        raise AgentError(f"the script {path} must be a JSON list of non-empty reply strings")
    return [x.strip() for x in data]


class ScriptedConversation:
    """One call's place in the script: the k-th reply is the script's k-th (the last repeats)."""

    def __init__(self, replies: list[str]):
        self.replies, self.index, self.heard = replies, 0, []

    def hear(self, text: str) -> None:
        """Note what the caller said (a script does not listen)."""
        self.heard.append(text)

    async def reply(self) -> AsyncIterator[str]:
        """The next scripted reply, a word at a time (as a model streams it)."""
        text = self.replies[min(self.index, len(self.replies) - 1)]
        self.index += 1
        for i, word in enumerate(text.split(" ")):
            await asyncio.sleep(0)
            yield word if i == 0 else " " + word

    def said(self, text: str) -> None:
        """Nothing to remember."""


class ScriptedAgent:
    """Replies from a script, in order, per call."""

    def __init__(self, replies: list[str], source: str = "script"):
        self.replies, self.source = replies, source

    @classmethod
    def from_file(cls, path: str | Path) -> "ScriptedAgent":
        """The agent of a ``--script`` file (see :func:`load_script`)."""
        return cls(load_script(path), str(path))

    def conversation(self) -> ScriptedConversation:
        """A new call's conversation."""
        return ScriptedConversation(self.replies)

    def describe(self) -> str:
        """One line for the start-up message."""
        return f"scripted agent ({len(self.replies)} replies from {self.source})"


class LlmConversation:
    """One call's chat history with the model."""

    def __init__(self, agent: "LlmAgent"):
        self.agent = agent
        self.messages: list[dict[str, str]] = []

    def hear(self, text: str) -> None:
        """Add the caller's words (joined to the last message if that was the caller's too)."""
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1]["content"] += " " + text
        else:
            self.messages.append({"role": "user", "content": text})

    async def reply(self) -> AsyncIterator[str]:
        """The model's reply to the history, streamed (the stream is closed when cancelled)."""
        stream = await self.agent.client.chat.completions.create(
            model=self.agent.model, stream=True, max_tokens=self.agent.max_tokens, temperature=0.3,
            messages=[{"role": "system", "content": SYSTEM_PROMPT}, *self.messages])
        async with stream:
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    yield chunk.choices[0].delta.content

    def said(self, text: str) -> None:
        """Add the reply as the caller heard it."""
        if text.strip():
            self.messages.append({"role": "assistant", "content": text.strip()})


class LlmAgent:
    """Replies from a model behind an OpenAI-compatible endpoint (``base_url`` ends in ``/v1``)."""

    def __init__(self, base_url: str, model: str, api_key: str = "none", max_tokens: int = 160):
        from openai import AsyncOpenAI
        self.base_url, self.model, self.max_tokens = base_url.rstrip("/"), model, max_tokens
        self.client = AsyncOpenAI(base_url=self.base_url, api_key=api_key or "none", max_retries=1, timeout=60)

    @classmethod
    def connect(cls, base_url: str, model: str | None = None, api_key: str = "none",
                max_tokens: int = 160) -> "LlmAgent":
        """The agent, after checking that the endpoint answers ``GET {base_url}/models``; the
        model is ``model`` or else the first the endpoint lists.

        Raises:
            AgentError: the endpoint cannot be reached, or lists no model when none was named.
        """
        url = base_url.rstrip("/") + "/models"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "none" else {}
        try:
            response = httpx.get(url, timeout=10, headers=headers)
        except httpx.HTTPError as exc:
            raise AgentError(f"cannot reach the model at {base_url} ({type(exc).__name__}: {exc})") from exc
        if model:
            return cls(base_url, model, api_key, max_tokens)
        try:
            model = response.json()["data"][0]["id"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise AgentError(f"{url} answered {response.status_code} without a model list; "
                             "name the model with --model") from exc
        return cls(base_url, model, api_key, max_tokens)

    def conversation(self) -> LlmConversation:
        """A new call's conversation."""
        return LlmConversation(self)

    def describe(self) -> str:
        """One line for the start-up message."""
        return f"LLM agent ({self.model} at {self.base_url}, max_tokens {self.max_tokens})"
