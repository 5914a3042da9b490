"""Scores read from the score tokens' probabilities (G-Eval, Liu et al. 2023), reasons on demand.

Mode ``probabilities`` of the judges (config ``scoring.score_reading``): the judge is asked for
the score alone, one generated token at temperature 0 with its top alternatives, and the score
is the expected value over the ten score values, each weighted by its probability among them.
The full distribution, its entropy (bits), the score the model wrote and the share of the first
token's probability that went to a score at all are stored with the judgment.

"10" on a tokenizer that splits digits (Qwen, Llama: "1" then "0"): the first token "1" stands for
1 or 10. When the model wrote "1", the second generated position says which (P("0") against
the end); otherwise, when "1" carries at least :data:`SPLIT_MIN` of the score mass, one more
one-token call continues an assistant message prefilled with "1" (llama.cpp and vLLM continue a
final assistant message; its prompt is cached, so it evaluates a token or two). A tokenizer
with a "10" token (OpenAI's) needs neither. An endpoint that returns no log-probabilities gives
the written score with all its mass, and the judgment says ``sampled (no log-probabilities)``.

A written reason, when asked for (``scoring.judge_reasons``), comes in a separate call after the
score was read, with the score in the conversation: it cannot move the score.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from graphs.protocols import Judgment, LLMCall
from harness.selfscore import prompts

SCORE_READING_VERSION = "sr1"  # bump when the reading (positions, "10", the fallback) changes
SCALE = tuple(range(1, 11))
TOP_LOGPROBS = 20
SPLIT_MIN = 0.02        # the share of the score mass on "1" above which "1" vs "10" is resolved
REASON_MAX_TOKENS = 60  # a reason of at most 25 words
REASON_ASK = "Give the reason for your score in at most 25 words, as plain text."
_NUMBER = re.compile(r"\b(10|[1-9])\b")


def score_reading_record(reading: str) -> dict:
    """What a run, a judgment's profile and a score row store of the reading in force: the mode
    and, for ``probabilities``, the version of the prompts and the reading."""
    return {"reading": reading,
            "version": f"{prompts.PROMPT_VERSION}+{SCORE_READING_VERSION}" if reading == "probabilities" else None}


class NoScoreError(ValueError):
    """The judge wrote no score from 1 to 10 and gave none any probability."""


@dataclass
class ScoreReading:
    """One score read from probabilities (or written, when none came back)."""

    distribution: dict[int, float]     # score -> probability among the ten values
    written: int | None                # the score the model wrote (greedy)
    mode: str                          # "probabilities" | "sampled (no log-probabilities)"
    score_mass: float | None = None    # P(the first token is a score token): how much it meant a score
    ten: str = "not needed"            # how "1" vs "10" was decided
    calls: list[LLMCall] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)

    @property
    def expected(self) -> float:
        """The probability-weighted score, rounded to 2 decimals."""
        return round(sum(s * p for s, p in self.distribution.items()), 2)

    @property
    def entropy_bits(self) -> float:
        """Shannon entropy of the distribution in bits (0: one value; log2(10)=3.32 at most)."""
        return round(-sum(p * math.log2(p) for p in self.distribution.values() if p > 0), 3)

    def record(self) -> dict:
        """What a judgment stores of the reading."""
        return {"score_reading": self.mode, "expected": self.expected, "written": self.written,
                "distribution": {str(s): round(p, 4) for s, p in sorted(self.distribution.items()) if p >= 1e-4},
                "entropy_bits": self.entropy_bits, "score_mass": self.score_mass, "ten": self.ten}


def _no_score(message: str, calls: list[LLMCall]) -> NoScoreError:
    exc = NoScoreError(message)
    exc.llm_calls = list(calls)
    return exc


def _positions(msg) -> list[dict]:
    return ((msg.response_metadata or {}).get("logprobs") or {}).get("content") or []


def _alternatives(position: dict) -> dict[str, float]:
    """Token (stripped) -> probability of one generated position's top alternatives."""
    probs: dict[str, float] = {}
    for alt in position.get("top_logprobs") or [position]:
        token = str(alt.get("token", "")).strip()
        probs[token] = probs.get(token, 0.0) + math.exp(float(alt.get("logprob", -1e9)))
    return probs


def _text(msg) -> str:
    return (msg.content if isinstance(msg.content, str) else str(msg.content)).strip()


def _written(text: str) -> int | None:
    match = _NUMBER.search(text)
    return int(match.group(1)) if match else None


def p_ten_after_one(position: dict) -> float:
    """P("0" follows "1") among a digit "0" and anything that ends the number, from the position
    after a written "1"."""
    alts = _alternatives(position)
    zero = alts.get("0", 0.0)
    other_digits = sum(p for t, p in alts.items() if t.isdigit() and t != "0")
    ends = sum(alts.values()) - zero - other_digits
    return zero / (zero + ends) if zero + ends > 0 else 0.0


async def read_score(client, messages: Sequence[BaseMessage], purpose: str) -> ScoreReading:
    """The score of ``messages`` (a task that asks for the score alone) from the first generated
    token's probabilities; see the module docstring for "10" and the fallback.

    Raises:
        NoScoreError: nothing written or offered was a score from 1 to 10.
        ModelCallError, CircuitOpenError: the endpoint failed (``exc.llm_calls`` holds the calls).
    """
    msg, call = await client.invoke(messages, purpose, max_tokens=2, logprobs=True,
                                    top_logprobs=TOP_LOGPROBS, temperature=0.0)
    text, positions = _text(msg), _positions(msg)
    written = _written(text)
    calls, raw = [call], [text]
    if not positions:
        if written is None:
            raise _no_score(f"expected a score from 1 to 10, got {text[:60]!r}", calls)
        return ScoreReading({written: 1.0}, written, "sampled (no log-probabilities)", calls=calls, raw=raw)
    alts = _alternatives(positions[0])
    mass = {s: alts.get(str(s), 0.0) for s in SCALE}
    total = sum(mass.values())
    if total <= 0:
        raise _no_score(f"no score token among the judge's first-token alternatives; it wrote {text[:60]!r}", calls)
    ten = "not needed"
    if "10" in alts:
        ten = "a token of its own"
    elif mass[1] / total >= SPLIT_MIN:
        first = str(positions[0].get("token", "")).strip()
        if first == "1" and len(positions) > 1:
            p_ten, ten = p_ten_after_one(positions[1]), "the second position"
        else:
            p_ten, ten = await _ten_from_prefill(client, messages, purpose, calls, raw)
        mass[1], mass[10] = mass[1] * (1 - p_ten), mass[1] * p_ten
    distribution = {s: p / total for s, p in mass.items() if p > 0}
    return ScoreReading(distribution, written, "probabilities", score_mass=round(total, 4), ten=ten,
                        calls=calls, raw=raw)


async def _ten_from_prefill(client, messages, purpose, calls: list, raw: list) -> tuple[float, str]:
    """P(10 | the first digit is "1") from one more token after an assistant message "1"."""
    msg, call = await client.invoke([*messages, AIMessage("1")], f"{purpose}:ten", max_tokens=1,
                                    logprobs=True, top_logprobs=TOP_LOGPROBS, temperature=0.0)
    calls.append(call)
    raw.append(_text(msg))
    positions = _positions(msg)
    if not positions or not _text(msg).startswith("1"):
        # the endpoint answered anew instead of continuing "1": counted as 1, and said so
        return 0.0, "unresolved: the endpoint did not continue a prefilled '1' (counted as 1)"
    return p_ten_after_one(positions[0]), "a prefilled '1'"


async def reason_after(client, messages: Sequence[BaseMessage], answer: str, purpose: str) -> tuple[str, LLMCall]:
    """A written reason for ``answer`` (the score, already read), asked after it: the score is in
    the conversation as the judge's own message, so the reason cannot change it."""
    msg, call = await client.invoke([*messages, AIMessage(answer), HumanMessage(REASON_ASK)],
                                    f"{purpose}:reason", max_tokens=REASON_MAX_TOKENS, temperature=0.0)
    return _text(msg), call


async def read_judgment(client, retries: int, reasons: bool, kind: str,
                        keyed: dict[str | None, list[BaseMessage]]) -> Judgment:
    """A judgment whose scores are read (:func:`read_score`): one per key of ``keyed`` (the
    messages that ask for it), or one score under the key None. A reading that fails (no score,
    an endpoint failure) is retried up to ``retries`` more times, the no-score case with a
    reminder; then the judgment is *failed*, never defaulted. With ``reasons`` a written reason
    follows the read scores (:func:`reason_after`); a failed reason leaves the scores standing.

    Returns:
        value: the expected score (one key None) or ``{key: expected}``; ``parsed`` holds each
        reading's record (:meth:`ScoreReading.record`).
    """
    base = dict(kind=kind, model=client.model_name, prompt_version=prompts.PROMPT_VERSION)
    readings: dict[str | None, ScoreReading] = {}
    calls: list[LLMCall] = []
    raws: list[str] = []
    attempts = 1
    for key, messages in keyed.items():
        purpose = f"judge:{kind}" + (f":{key}" if key else "")
        attempt_messages, error = list(messages), None
        for attempt in range(1, retries + 2):
            try:
                readings[key] = reading = await read_score(client, attempt_messages, purpose)
            except Exception as exc:  # recorded and retried, never defaulted
                calls.extend(getattr(exc, "llm_calls", None) or [])
                error = f"{type(exc).__name__}: {exc}"[:500]
                if isinstance(exc, NoScoreError):
                    attempt_messages = [*messages, HumanMessage("Answer with one number from 1 to 10 only.")]
                continue
            calls.extend(reading.calls)
            raws.extend(reading.raw)
            attempts = max(attempts, attempt)
            break
        else:
            return Judgment(**base, status="failed", value=None, raw=raws, calls=calls,
                            attempts=retries + 1, error=error)
    values = {k: r.expected for k, r in readings.items()}
    parsed: dict = {"score_reading": "probabilities" if all(r.mode == "probabilities" for r in readings.values())
                    else "sampled (no log-probabilities)", "reason_after_score": reasons}
    if list(keyed) == [None]:
        parsed.update(readings[None].record(), score=values[None])
        answer = str(readings[None].written or round(values[None]))
    else:
        parsed.update(values, readings={k: r.record() for k, r in readings.items()})
        answer = ", ".join(f"{k} {r.written or round(r.expected)}" for k, r in readings.items())
    reason = None
    if reasons:
        try:
            reason, call = await reason_after(client, list(keyed.values())[-1], answer, f"judge:{kind}")
            calls.append(call)
        except Exception as exc:  # the scores stand; the missing reason is said
            calls.extend(getattr(exc, "llm_calls", None) or [])
            parsed["reason_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return Judgment(**base, status="ok", value=values[None] if None in values else values, reason=reason,
                    raw=raws, attempts=attempts, parsed=parsed, calls=calls)
