"""A1 and Re: the agent's asks compared with the case's anticipated question.

An ask matches when the sentence-embedding cosine of the compared text and the anticipated
question is at least the threshold; A1 is 1 when some ask matches, Re counts the asks that did
not match plus the matches after the first (see :mod:`harness.ntb.scoring`).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from harness.config import NtbConfig
from harness.models import embeddings
from harness.ntb.steplog import Step

DEFAULT_THRESHOLD = NtbConfig.model_fields["threshold"].default  # ntb.threshold: the official code's 0.4
PAPER_THRESHOLD = 0.8
ASK_MATCH_MODES = ("message", "question")
DEFAULT_ASK_MATCH = NtbConfig.model_fields["ask_match"].default  # ntb.ask_match: the whole message, as the official code

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]


def ask_match_text(step: Step, mode: str = DEFAULT_ASK_MATCH) -> str:
    """The text of an ask step that is compared with the anticipated question.

    ``question``: the question (``text``). ``message``: the whole message the agent wrote to
    ask, as the official code compares it (``new_message["content"]`` of the reflection call,
    reasoning and "Question: ..." together): the step's ``thought`` (the text protocol's
    thought, a native call's message content) then its ``text``; just ``text`` when there is no
    thought.

    Raises:
        ValueError: an unknown mode.
    """
    if mode not in ASK_MATCH_MODES:
        raise ValueError(f"unknown ask_match {mode!r}; choose one of {', '.join(ASK_MATCH_MODES)}")
    text = str(step.get("text") or "")
    thought = str(step.get("thought") or "").strip()
    if mode == "question" or not thought or thought in text:
        return text
    return f"{thought}\n{text}"


def embedder_id(embedder: Embedder | None) -> str:
    """The provenance id of an embedder: :func:`harness.models.embeddings.model_id` for the default,
    else the callable's ``model_id`` (attribute or method), else its qualified name."""
    if embedder is None or embedder is embeddings.embed:
        return embeddings.model_id()
    ident = getattr(embedder, "model_id", None)
    if callable(ident):
        ident = ident()
    if isinstance(ident, str) and ident:
        return ident
    return f"{getattr(embedder, '__module__', '?')}.{getattr(embedder, '__qualname__', type(embedder).__name__)}"


def ask_matches(asks: Sequence[str], expected_question: str, embedder: Embedder | None = None,
                threshold: float = DEFAULT_THRESHOLD) -> list[dict[str, Any]]:
    """Compare each ask with the anticipated question (the official rule).

    Args:
        asks: the agent's questions, in order.
        expected_question: the case's anticipated clarifying question.
        embedder: texts -> vectors; default :func:`harness.models.embeddings.embed`.
        threshold: an ask matches when its cosine similarity is ``>=`` this (0 to 1).

    Returns:
        One ``{"text", "similarity", "matched", "redundant"}`` per ask. ``redundant`` is true
        for an ask that does not match and for every match after the first.

    Raises:
        ValueError: a threshold outside 0..1, or an embedder returning the wrong count.
    """
    check_threshold(threshold)
    if not asks:
        return []
    embed = embedder or embeddings.embed
    vectors = list(embed([expected_question, *asks]))
    if len(vectors) != len(asks) + 1:
        raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(asks) + 1} texts")
    target, matched_before, out = vectors[0], False, []
    for text, vector in zip(asks, vectors[1:]):
        similarity = embeddings.cosine(target, vector)
        matched = similarity >= threshold
        out.append({"text": text, "similarity": round(similarity, 6), "matched": matched,
                    "redundant": not matched or matched_before})
        matched_before = matched_before or matched
    return out


def check_threshold(threshold: float) -> None:
    """Raises ValueError unless ``threshold`` is a number from 0 to 1."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ValueError(f"threshold must be a number from 0 to 1, got {threshold!r}")
