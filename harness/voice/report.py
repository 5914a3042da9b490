"""Voice figures of a run, from the store: per measure and side, n, mean, p50 and p95 over the
turns that have it (``extra_json`` -> ``user``/``agent`` -> ``voice``)."""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from harness.statistics import clean
from store import StoreReader

MEASURES: tuple[tuple[str, str], ...] = (
    ("user", "stt_wer"), ("user", "tts_wer"), ("agent", "stt_wer"), ("agent", "tts_wer"),
    ("user", "respond_ms"), ("user", "tts_ms"), ("user", "stt_ms"),
    ("agent", "respond_ms"), ("agent", "tts_ms"), ("agent", "tts_first_audio_ms"), ("agent", "stt_ms"),
    ("agent", "time_to_first_audio_ms"), ("user", "audio_s"), ("agent", "audio_s"),
)


def voice_measures(turns: list[dict[str, Any]]) -> dict[str, list[float]]:
    """``{"user.stt_wer": [...], ...}`` from turn rows; turns without voice add nothing."""
    values: dict[str, list[Any]] = {f"{side}.{name}": [] for side, name in MEASURES}
    for turn in turns:
        extra = json.loads(turn.get("extra_json") or "{}")
        for side, name in MEASURES:
            voice = (extra.get(side) or {}).get("voice") or {}
            if name in voice:
                values[f"{side}.{name}"].append(voice[name])
    return {k: clean(v)[0] for k, v in values.items() if v}


def summarize_measures(values: dict[str, list[float]]) -> dict[str, dict[str, float | int | None]]:
    """n, mean, p50 and p95 of each measure."""
    out = {}
    for key, vals in values.items():
        arr = np.asarray(vals, dtype=float)
        out[key] = {"n": len(vals), "mean": float(arr.mean()) if len(vals) else None,
                    "p50": float(np.percentile(arr, 50)) if len(vals) else None,
                    "p95": float(np.percentile(arr, 95)) if len(vals) else None}
    return out


# people's ratings of spoken replies in the live app (1-5, a mean-opinion-score scale)
RATINGS = {"human_tts_naturalness": "people.naturalness",
           "human_tts_comprehensibility": "people.comprehensibility"}


def voice_ratings(judgments: list[dict[str, Any]]) -> dict[str, list[float]]:
    """``{"people.naturalness": [...], ...}`` from judgment rows (every rater's rating)."""
    values: dict[str, list[float]] = {}
    for j in judgments:
        if j["kind"] in RATINGS and j["score"] is not None:
            values.setdefault(RATINGS[j["kind"]], []).append(float(j["score"]))
    return values


def voice_summary(reader: StoreReader, run_id: str) -> dict[str, dict[str, float | int | None]]:
    """The run's voice figures (empty when the run had no voice)."""
    turns = [t for rows in reader.turns_for_run(run_id).values() for t in rows]
    return summarize_measures({**voice_measures(turns),
                               **voice_ratings(reader.judgments_for_run(run_id))})


def voice_lines(reader: StoreReader, run_id: str) -> list[str]:
    """The report's "Voice" section as markdown lines ([] when the run had no voice)."""
    summary = voice_summary(reader, run_id)
    if not summary:
        return []
    channel = json.dumps(reader.run(run_id)["config"].get("voice", {}))
    lines = ["", "## Voice", "", f"Voice settings: `{channel}`. WER is per message (0 = every word "
             "right); *_ms are milliseconds per message; people's naturalness and comprehensibility "
             "ratings of spoken replies are 1 (bad) to 5 (excellent).", "",
             "| side | measure | n | mean | p50 | p95 |", "|---|---|---|---|---|---|"]
    for key, s in summary.items():
        side, name = key.split(".", 1)
        digits = 3 if name.endswith("wer") else 2 if side == "people" else 1
        lines.append(f"| {side} | {name} | {s['n']} | " + " | ".join(
            "n/a" if s[k] is None else f"{s[k]:.{digits}f}" for k in ("mean", "p50", "p95")) + " |")
    return lines
