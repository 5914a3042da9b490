"""Rendering the benchmark-owned history for prompts, within a bounded size."""
from __future__ import annotations

from typing import Sequence

from graphs.protocols import Message

LABELS = {"user": "USER", "agent": "AGENT"}


def render_conversation(history: Sequence[Message], max_chars: int = 6000) -> str:
    """The conversation between ``<conversation>`` tags.

    Keeps the first message (the question) and as many of the latest messages as fit in
    ``max_chars``; omitted messages are announced so the judge knows the window is partial.
    Long single messages are cut in the middle.
    """
    lines, omitted = conversation_window(history, max_chars)
    if not lines:
        return "<conversation>\n</conversation>"
    head, kept = lines[0], lines[1:]
    body = [head] + ([f"[... {omitted} earlier messages omitted ...]"] if omitted else []) + kept
    return "<conversation>\n" + "\n\n".join(body) + "\n</conversation>"


def conversation_window(history: Sequence[Message], max_chars: int) -> tuple[list[str], int]:
    """The labelled lines :func:`render_conversation` keeps (the first message, then the latest
    that fit in ``max_chars``, each cut to a third of it) and how many it omits between them."""
    lines = [f"{LABELS[m.role]}: {_clip(m.content, max_chars // 3)}" for m in history]
    if not lines:
        return [], 0
    head, rest = lines[0], lines[1:]
    budget = max_chars - len(head)
    kept: list[str] = []
    for line in reversed(rest):
        if budget - len(line) < 0 and kept:
            break
        kept.append(line)
        budget -= len(line)
    kept.reverse()
    return [head, *kept], len(rest) - len(kept)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + " [...] " + text[-half:]
