"""What the caller experienced in one turn of a call to a voice bot, in numbers.

From the caller's speech and the bot's audio as played (both on the call's clock), with the
speech found by the energy detector of :mod:`harness.voice.vad` (gaps under 0.3 s bridged):

| measure | meaning |
|---|---|
| ``wait_ms`` | the caller's end of speech -> the bot's first speech as played: the caller's wait |
| ``spoke_early_ms`` | instead of ``wait_ms`` when the bot's speech began before the caller finished: how early |
| ``first_audio_ms`` | the caller's end of speech -> the bot's first audio of any kind (silence included) |
| ``bot_speech_s`` | the bot's speaking time in the turn (as heard: cut at a barge-in's yield) |
| ``gaps`` | silences of 0.3 s or more inside the bot's reply: ``n``, ``total_s``, ``max_s`` |
| ``talk_over_s`` | time both spoke at once (the bot starting before the caller finished, a barge-in) |
| ``barge_in`` | the caller's cut-in: ``yield_ms`` (opener start -> the bot stopped), ``yielded``, ``by`` |
"""
from __future__ import annotations

from typing import Any

import numpy as np

from harness.voice.vad import speech_regions

BRIDGE_S = 0.3


def regions(samples: np.ndarray, rate: int, offset_s: float) -> list[tuple[float, float]]:
    """Speech stretches of a clip placed at ``offset_s`` on the call's clock."""
    if samples is None or len(samples) == 0:
        return []
    return [(offset_s + a, offset_s + b) for a, b in speech_regions(samples, rate, bridge_s=BRIDGE_S)]


def _overlap(x: list[tuple[float, float]], y: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(b, d) - max(a, c)) for a, b in x for c, d in y)


def turn_measures(caller: list[tuple[float, float]], bot: list[tuple[float, float]],
                  caller_end_s: float, first_audio_start_s: float | None,
                  barge: dict | None) -> dict[str, Any]:
    """The turn's measures (see the module docstring). ``caller`` and ``bot`` are speech
    stretches on the call's clock; ``caller_end_s`` the end of the caller's message's speech."""
    out: dict[str, Any] = {
        "caller_speech_end_s": round(caller_end_s, 3),
        "first_audio_ms": None if first_audio_start_s is None
        else round((first_audio_start_s - caller_end_s) * 1000.0, 1),
        "wait_ms": None, "bot_speech_s": 0.0, "gaps": {"n": 0, "total_s": 0.0, "max_s": 0.0},
        "talk_over_s": round(_overlap(caller, bot), 3)}
    if bot:
        wait = round((bot[0][0] - caller_end_s) * 1000.0, 1)
        if wait >= 0:
            out["wait_ms"] = wait
        else:   # it spoke before the caller had finished: no wait, a talk-over (how early, kept)
            out["spoke_early_ms"] = -wait
        out["bot_speech_s"] = round(sum(b - a for a, b in bot), 3)
        gaps = [c - b for (_, b), (c, _) in zip(bot, bot[1:])]
        if gaps:
            out["gaps"] = {"n": len(gaps), "total_s": round(sum(gaps), 3), "max_s": round(max(gaps), 3)}
    if barge is not None:
        out["barge_in"] = barge
    return out


def percentiles(values: list[float]) -> dict[str, float | int | None]:
    """``n``, ``p50``, ``p95``, ``max`` and ``mean`` of a list (None where it is empty)."""
    vals = np.asarray([v for v in values if v is not None], float)
    if not len(vals):
        return {"n": 0, "p50": None, "p95": None, "max": None, "mean": None}
    return {"n": int(len(vals)), "p50": round(float(np.percentile(vals, 50)), 1),
            "p95": round(float(np.percentile(vals, 95)), 1), "max": round(float(vals.max()), 1),
            "mean": round(float(vals.mean()), 1)}
