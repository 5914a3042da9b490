"""A voice-bot run's figures at the caller (docs/voice-bots.md), from the store: per turn the
caller's wait, the bot's first audio, its speaking time, silence gaps, talk-over and barge-in
yields as n, p50, p95, max and mean; how the calls ended (hang-ups by either side, timeouts,
protocol errors); the word error rate between the bot's own transcript and what the harness's
STT heard of its audio."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

from harness.agent_spec import VOICE_BOT_AGENTS
from harness.voice.wer import summarize_errors, word_errors
from store import StoreReader

BOT_STOPS = ("bot_hung_up", "bot_timeout", "bot_error")
MEASURES = (("wait_ms", "end of the caller's speech -> the bot's first speech (the caller's wait)"),
            ("first_audio_ms", "end of the caller's speech -> the bot's first audio of any kind"),
            ("bot_speech_s", "the bot's speaking time per turn, as heard"),
            ("gap_total_s", "silences of 0.3 s or more inside a reply, per turn"),
            ("gap_max_s", "the longest such silence per turn"),
            ("talk_over_s", "both speaking at once, per turn"),
            ("yield_ms", "barge-in: the caller's opener -> the bot stopped (Twilio clear; Realtime speech_started "
                         "or response.done)"))


def bot_voices(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``agent.voice`` measures of every voice-bot turn."""
    out = []
    for turn in turns:
        voice = ((json.loads(turn.get("extra_json") or "{}").get("agent") or {}).get("voice") or {})
        if voice.get("pipeline") == "voice-bot":
            out.append(voice)
    return out


def bot_measures(voices: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each measure's values over the turns that have it."""
    values: dict[str, list[float]] = {name: [] for name, _ in MEASURES}
    for v in voices:
        for name in ("wait_ms", "first_audio_ms", "bot_speech_s", "talk_over_s"):
            if v.get(name) is not None:
                values[name].append(float(v[name]))
        gaps = v.get("gaps") or {}
        if gaps:
            values["gap_total_s"].append(float(gaps.get("total_s") or 0.0))
            values["gap_max_s"].append(float(gaps.get("max_s") or 0.0))
        barge = v.get("barge_in") or {}
        if barge.get("yield_ms") is not None:
            values["yield_ms"].append(float(barge["yield_ms"]))
    return values


def spread(values: list[float]) -> dict[str, float | int | None]:
    """``n``, ``p50``, ``p95``, ``max``, ``mean`` (None where there are no values)."""
    vals = np.asarray(values, float)
    if not len(vals):
        return {"n": 0, "p50": None, "p95": None, "max": None, "mean": None}
    return {"n": int(len(vals)), "p50": float(np.percentile(vals, 50)), "p95": float(np.percentile(vals, 95)),
            "max": float(vals.max()), "mean": float(vals.mean())}


def transcript_wer(voices: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The WER between the bot's transcript (reference) and the harness's STT of its audio, per
    turn (mean) and over all words (corpus), over the turns that have both."""
    pairs = [(v["bot_transcript"], v.get("heard_text") or "") for v in voices if v.get("bot_transcript")]
    if not pairs:
        return None
    totals = summarize_errors([word_errors(ref, hyp) for ref, hyp in pairs])
    return {"n": totals.n, "mean": totals.mean, "wer": totals.corpus, "words": totals.words}


def _stops(reader: StoreReader, run_id: str) -> tuple[Counter, list[str]]:
    stops: Counter = Counter()
    failures = []
    for row in reader.interactions(run_id):
        stop = row.get("stop_reason")
        stops[stop or row.get("status")] += 1
        if stop in BOT_STOPS and row.get("error"):
            try:
                detail = json.loads(row["error"])
            except ValueError:
                detail = {"error": row["error"]}
            failures.append(f"- {row.get('task_id')} (trial {row.get('trial') or 1}): {stop}: {detail.get('error', '')}"
                            + (f" Heard before it: \"{detail['heard_text']}\"." if detail.get("heard_text") else ""))
    return stops, failures


def bot_lines(reader: StoreReader, run_id: str) -> list[str]:
    """The report's "Voice bot at the caller" section ([] when the run called no voice bot)."""
    by_iid = reader.turns_for_run(run_id)
    voices = bot_voices([t for rows in by_iid.values() for t in rows])
    config = reader.run(run_id).get("config") or {}
    kind = (config.get("run") or {}).get("agent")
    if not voices and kind not in VOICE_BOT_AGENTS:
        return []
    stops, failures = _stops(reader, run_id)
    barges = [v["barge_in"] for v in voices if v.get("barge_in")]
    early = sum(1 for v in voices if v.get("spoke_early_ms") is not None)
    lines = ["", "### Voice bot at the caller", "",
             f"Protocol `{kind}`, bot at `{(config.get('agent') or {}).get('url')}`, dialled in real time; "
             f"{len(by_iid)} calls, {len(voices)} bot turns. How the calls ended: "
             + ", ".join(f"{k} {n}" for k, n in sorted(stops.items(), key=lambda kv: str(kv[0]))) + ". "
             f"Barge-ins: {len(barges)}, the bot yielded in {sum(1 for b in barges if b.get('yielded'))}. "
             f"Turns where the bot began before the caller had finished (no wait; see talk_over_s): {early}.", "",
             "| measure | n | p50 | p95 | max | mean | what |", "|---|---|---|---|---|---|---|"]
    for (name, what), values in zip(MEASURES, bot_measures(voices).values()):
        s = spread(values)
        lines.append(f"| {name} | {s['n']} | " + " | ".join("n/a" if s[k] is None else f"{s[k]:.1f}" if name.endswith("ms")
                                                             else f"{s[k]:.2f}" for k in ("p50", "p95", "max", "mean"))
                     + f" | {what} |")
    wer = transcript_wer(voices)
    if wer:
        mean = f"{wer['mean']:.3f}"
        lines += ["", f"The bot's own transcript against what the harness's STT heard of its audio ({wer['n']} turns): "
                      f"WER {mean} per turn, {wer['wer']:.3f} over all {wer['words']} words."]
    if failures:
        lines += ["", "Calls the bot ended or failed:", *failures]
    return lines
