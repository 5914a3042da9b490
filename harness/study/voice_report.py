"""Voice figures of a run, from the store: per measure and side, n, mean, p50 and p95 over the
turns that have it (``extra_json`` -> ``user``/``agent`` -> ``voice``), the same per line preset
(the message's stored ``channel``), and the word error rate by utterance length."""
from __future__ import annotations

import json
from typing import Any

from harness.study.call_report import call_lines  # the streamed and full-duplex measures
from harness.study.statistics import clean, summarize_measures
from harness.voice.lines import line_name
from harness.voice.wer import LENGTH_BUCKETS, length_bucket, summarize_errors, word_errors
from store import StoreReader

MEASURES: tuple[tuple[str, str], ...] = (
    ("user", "stt_wer"), ("user", "tts_wer"), ("agent", "stt_wer"), ("agent", "tts_wer"),
    ("user", "respond_ms"), ("user", "tts_ms"), ("user", "stt_ms"),
    ("agent", "respond_ms"), ("agent", "tts_ms"), ("agent", "tts_first_audio_ms"), ("agent", "stt_ms"),
    ("agent", "time_to_first_audio_ms"), ("user", "audio_s"), ("agent", "audio_s"),
)


NO_LINE = "(none stored)"   # a message without a stored channel (e.g. a live recording)


def message_line(voice: dict[str, Any]) -> str:
    """The line preset a message went through, from its stored ``channel`` (older runs stored
    only ``telephone`` and ``snr_db``: the preset of that shape)."""
    ch = voice.get("channel")
    if not isinstance(ch, dict):
        return NO_LINE
    return ch.get("line") or line_name(bool(ch.get("telephone")), ch.get("snr_db"), ch.get("loss_rate") or 0.0)


def _voices(turns: list[dict[str, Any]]):
    """``(side, voice measures)`` of every message of the turn rows that has voice."""
    for turn in turns:
        extra = json.loads(turn.get("extra_json") or "{}")
        for side in ("user", "agent"):
            voice = (extra.get(side) or {}).get("voice")
            if voice:
                yield side, voice


def voice_measures(turns: list[dict[str, Any]], line: str | None = None) -> dict[str, list[float]]:
    """``{"user.stt_wer": [...], ...}`` from turn rows; turns without voice add nothing.
    ``line``: only the messages that went through that line preset."""
    values: dict[str, list[Any]] = {f"{side}.{name}": [] for side, name in MEASURES}
    for side, voice in _voices(turns):
        if line is not None and message_line(voice) != line:
            continue
        for name in (n for s, n in MEASURES if s == side and n in voice):
            values[f"{side}.{name}"].append(voice[name])
    return {k: clean(v)[0] for k, v in values.items() if v}


def voice_by_line(turns: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """``{line preset: {measure: n, mean, p50, p95}}`` over the messages of each line."""
    lines = dict.fromkeys(message_line(v) for _, v in _voices(turns))
    return {line: summarize_measures(voice_measures(turns, line)) for line in lines}


def wer_by_length_rows(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """STT word error rate per line preset, side and utterance length (reference words of the
    cleaned text; silent messages left out): n, words, errors, mean (per message) and corpus
    (all errors / all words) WER, recounted from the stored ``cleaned_text``/``heard_text``."""
    groups: dict[tuple[str, str, str], list] = {}
    for side, voice in _voices(turns):
        if voice.get("silent") or not voice.get("cleaned_text") or "heard_text" not in voice:
            continue
        e = word_errors(voice["cleaned_text"], voice["heard_text"] or "")
        for bucket in (length_bucket(e.reference_words), "all"):
            groups.setdefault((message_line(voice), side, bucket), []).append(e)
    order = [length_bucket(lo) for lo, _ in LENGTH_BUCKETS] + ["all"]
    rows = []
    for (line, side, bucket) in sorted(groups, key=lambda k: (k[0], k[1] != "user", order.index(k[2])
                                                                if k[2] in order else -1)):
        s = summarize_errors(groups[(line, side, bucket)])
        rows.append({"line": line, "side": side, "words": bucket, "n": s.n, "reference_words": s.words,
                     "errors": s.errors, "mean": s.mean, "corpus": s.corpus})
    return rows


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
    turns = [t for rows in reader.turns_for_run(run_id).values() for t in rows]
    channel = json.dumps(reader.run(run_id)["config"].get("voice", {}))
    lines = ["", "## Voice", "", f"Voice settings: `{channel}`. WER is per message (0 = every word "
             "right); *_ms are milliseconds per message; people's naturalness and comprehensibility "
             "ratings of spoken replies are 1 (bad) to 5 (excellent).", "",
             "| side | measure | n | mean | p50 | p95 |", "|---|---|---|---|---|---|"]
    lines += [_row([], key, s) for key, s in summary.items()]
    by_line = voice_by_line(turns)
    if by_line:
        lines += ["", "### By line preset", "", "The same figures per line the messages went through "
                  "(clean, telephone, telephone-noise, packet-loss; docs/voice.md).", "",
                  "| line | side | measure | n | mean | p50 | p95 |", "|---|---|---|---|---|---|---|"]
        lines += [_row([line], key, s) for line, figures in by_line.items() for key, s in figures.items()]
    length = wer_by_length_rows(turns)
    if length:
        lines += ["", "### STT word error rate by utterance length", "",
                  "Words: the spoken (cleaned) text's length. Mean: per message, as `stt_wer` above; "
                  "corpus: all word errors / all words (a short message with one error weighs "
                  "less).", "", "| line | side | words | n | reference words | errors | mean WER | corpus WER |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['line']} | {r['side']} | {r['words']} | {r['n']} | {r['reference_words']} | "
                  f"{r['errors']} | {r['mean']:.3f} | {r['corpus']:.3f} |" for r in length]
    return lines + call_lines(reader, run_id)


def _row(first: list[str], key: str, s: dict[str, Any]) -> str:
    side, name = key.split(".", 1)
    digits = 3 if name.endswith("wer") else 2 if side == "people" else 1
    return "| " + " | ".join([*first, side, name, str(s["n"])] + [
        "n/a" if s[k] is None else f"{s[k]:.{digits}f}" for k in ("mean", "p50", "p95")]) + " |"
