"""The streamed pipeline's latency stages and the full-duplex call measures of a run, from the
store (``extra_json`` -> ``agent`` -> ``voice``): the lines ``deskbench call report`` adds
after the voice figures (:func:`harness.study.voice_report.voice_lines`)."""
from __future__ import annotations

import json
from typing import Any

from harness.study.statistics import summarize_measures
from harness.study.bot_report import bot_lines  # a team's voice bot, measured at the caller
from store import StoreReader

STAGES = ("time_to_first_audio_ms", "endpoint_ms", "stt_tail_ms", "llm_first_sentence_ms",
          "tts_first_chunk_ms", "playback_stall_ms")
CALL = ("interruptions", "backchannels", "overlap_s", "dead_air_s", "call_s")


def _agent_voices(turns: list[dict[str, Any]]):
    for t in turns:
        voice = (json.loads(t.get("extra_json") or "{}").get("agent") or {}).get("voice")
        if voice:
            yield t, voice


def latency_stages(turns: list[dict[str, Any]]) -> dict[str, list[float]]:
    """End of caller speech -> first agent audio and its stages, per agent reply."""
    out: dict[str, list[float]] = {k: [] for k in STAGES}
    for _, v in _agent_voices(turns):
        for k in STAGES:
            if isinstance(v.get(k), (int, float)):
                out[k].append(float(v[k]))
    return {k: vals for k, vals in out.items() if vals}


def duplex_measures(turns_by_interaction: dict[str, list[dict[str, Any]]]) -> dict[str, list[float]]:
    """Per call (its last turn's ``call`` figures) and per reply (response and yield latency)."""
    out: dict[str, list[float]] = {f"call.{k}": [] for k in CALL}
    out.update({"reply.response_latency_ms": [], "barge_in.yield_ms": []})
    for turns in turns_by_interaction.values():
        last = None
        for _, v in _agent_voices(turns):
            d = v.get("duplex") or {}
            if "response_latency_ms" in d:
                out["reply.response_latency_ms"].append(float(d["response_latency_ms"]))
            if d.get("barge_in"):
                out["barge_in.yield_ms"].append(float(d["barge_in"]["yield_ms"]))
            last = v.get("call") or last
        if last:
            for k in CALL:
                out[f"call.{k}"].append(float(last.get(k) or 0.0))
    return {k: vals for k, vals in out.items() if vals}


UNCONTENDED_SHARE = 0.05
"""A reply whose agent calls shared at most this share of their time with other requests on the
endpoint counts as uncontended: its latency measured the agent alone."""


def contention_figures(turns_by_interaction: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Replies that carry the contention bookkeeping (``agent_contended_share``): how many, how
    many uncontended, and the time to first audio of all of them and of the uncontended ones."""
    shares, all_ms, alone_ms = [], [], []
    for turns in turns_by_interaction.values():
        for _, v in _agent_voices(turns):
            share = v.get("agent_contended_share")
            if not isinstance(share, (int, float)):
                continue
            shares.append(float(share))
            ttfa = v.get("time_to_first_audio_ms")
            if isinstance(ttfa, (int, float)):
                all_ms.append(float(ttfa))
                if share <= UNCONTENDED_SHARE:
                    alone_ms.append(float(ttfa))
    return {"replies": len(shares), "uncontended": sum(1 for s in shares if s <= UNCONTENDED_SHARE),
            "mean_share": sum(shares) / len(shares) if shares else None,
            "time_to_first_audio_ms": all_ms, "uncontended_time_to_first_audio_ms": alone_ms}


def shared_endpoint_line(config: dict[str, Any]) -> str | None:
    """A sentence when the run's agent shared its endpoint with the judges (None when not)."""
    roles = config.get("roles") or {}
    engine = config.get("engine") or {}
    agent = roles.get("agent") or {}

    def server(role: str, spec: dict) -> tuple:
        if spec.get("base_url"):
            return ("url", spec["base_url"].rstrip("/"))
        return ("embedded", spec.get("model"), "judges" if engine.get("judge_server") and role != "agent" else "")
    shared = [r for r in ("judge", "complexity", "extractor", "user")
              if r in roles and server(r, roles[r]) == server("agent", agent)]
    if not shared:
        if engine.get("judge_server") and not agent.get("base_url"):
            return ("The agent has its own embedded server (`engine.judge_server`); the judges' server "
                    "runs on the same machine, and its work on shared cores is not counted as contention.")
        return None
    voice = config.get("voice") or {}
    how = ("they yielded it to the agent (`voice.judging = yield`)" if voice.get("judging", "yield") == "yield"
           else "they ran beside it (`voice.judging = inline`)")
    return (f"The agent shares its endpoint with the judges ({', '.join(shared)}): {how}. "
            "Set `engine.judge_server = true` (embedded) or give the agent its own `base_url` to "
            "measure it alone.")


def _contention_lines(by_iid: dict[str, list[dict[str, Any]]], config: dict[str, Any]) -> list[str]:
    figures = contention_figures(by_iid)
    lines: list[str] = []
    if figures["replies"]:
        rows = {"time_to_first_audio_ms (all replies)": figures["time_to_first_audio_ms"],
                "time_to_first_audio_ms (uncontended replies)": figures["uncontended_time_to_first_audio_ms"]}
        lines += ["", f"Contention: {figures['uncontended']}/{figures['replies']} replies uncontended (the "
                  f"agent's calls shared at most {UNCONTENDED_SHARE:.0%} of their time with other requests "
                  f"on its endpoint; mean share {figures['mean_share']:.2f}).", "",
                  "| measure | n | mean | p50 | p95 |", "|---|---|---|---|---|"]
        lines += [_row(k, s) for k, s in summarize_measures({k: v for k, v in rows.items() if v}).items()]
    line = shared_endpoint_line(config)
    return lines + (["", line] if line else [])


def call_lines(reader: StoreReader, run_id: str) -> list[str]:
    """Markdown lines ([] when the run has neither streamed nor duplex replies)."""
    by_iid = reader.turns_for_run(run_id)
    turns = [t for rows in by_iid.values() for t in rows]
    pipelines = {v.get("pipeline", "turn-based") for _, v in _agent_voices(turns)}
    lines: list[str] = []
    stages = latency_stages(turns)
    if stages:
        lines += ["", "### Latency at the caller", "", f"Pipeline: {', '.join(sorted(pipelines))}. End of "
                  "the caller's speech -> the agent's first audio (`time_to_first_audio_ms`) = endpoint + "
                  "STT tail + LLM time to the first sentence + its TTS; ms per reply.", "",
                  "| stage | n | mean | p50 | p95 |", "|---|---|---|---|---|"]
        lines += [_row(k, s) for k, s in summarize_measures(stages).items()]
        lines += _contention_lines(by_iid, reader.run(run_id).get("config") or {})
    duplex = duplex_measures(by_iid)
    if duplex:
        recordings = sum(1 for rows in by_iid.values() if any("call_audio" in v for _, v in _agent_voices(rows)))
        lines += ["", "### Full-duplex calls", "", f"Per call (seconds, counts) and per reply (ms); "
                  f"{recordings} stereo recordings (caller left, agent right).", "",
                  "| measure | n | mean | p50 | p95 |", "|---|---|---|---|---|"]
        lines += [_row(k, s) for k, s in summarize_measures(duplex).items()]
    return lines + bot_lines(reader, run_id)


def _row(key: str, s: dict[str, Any]) -> str:
    return f"| {key} | {s['n']} | " + " | ".join(
        "n/a" if s[k] is None else f"{s[k]:.1f}" for k in ("mean", "p50", "p95")) + " |"
