"""The run report's "Agent under test" section: a team's own agent (``harness.adapters``) as the
store keeps it. Each answered turn carries ``extra_json`` -> ``agent`` (adapter, agent name,
messages, usage or "not reported", trace, latency, time to first token, attempts); a
conversation the agent failed ends with stop reason ``agent_error`` and its ``error`` column
holds the failure as JSON (kind, status, body excerpt, turn, the user's unanswered message).
Read from the store; no LLM calls (docs/agents.md).
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable, Mapping

from harness.agent_spec import VOICE_BOT_AGENTS as VOICE_BOTS
from harness.selfscore.batch import failed_by_agent
from harness.study.statistics import summarize_measures
from store import StoreReader

NOT_REPORTED = "not reported"
"""What the report says of usage the agent did not report (never 0)."""
TOP_TOOLS = 5


def turn_agent_extra(turn: Mapping[str, Any]) -> dict[str, Any] | None:
    """The agent's record of a stored turn (``extra_json`` -> ``agent``) when a team's own agent
    answered it (it names its ``adapter``), else None."""
    agent = (json.loads(turn.get("extra_json") or "{}") or {}).get("agent")
    return agent if isinstance(agent, dict) and agent.get("adapter") else None


def failure_detail(interaction: Mapping[str, Any]) -> dict[str, Any]:
    """The failure an ``agent_error`` conversation stored in its ``error`` column (JSON), or
    ``{"error": text}`` for an error that is not JSON."""
    raw = interaction.get("error")
    if not raw:
        return {}
    try:
        detail = json.loads(raw)
    except (TypeError, ValueError):
        return {"error": str(raw)}
    return detail if isinstance(detail, dict) else {"error": str(raw)}


def _trace_list(extra: Mapping[str, Any], key: str) -> list | None:
    trace = extra.get("trace")
    if not isinstance(trace, Mapping):
        return None
    items = trace.get(key)
    return items if isinstance(items, list) else []


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def usage_totals(extras: Iterable[Mapping[str, Any]]) -> dict[str, Any] | str:
    """Token and cost totals over the turns whose agent reported usage, with how many turns did;
    :data:`NOT_REPORTED` when no turn did (never 0)."""
    reported = [e["usage"] for e in extras if isinstance(e.get("usage"), Mapping)]
    if not reported:
        return NOT_REPORTED
    out: dict[str, Any] = {"turns_reporting": len(reported)}
    for key in ("input_tokens", "output_tokens", "cost"):
        values = [u.get(key) for u in reported if u.get(key) is not None]
        out[key] = sum(values) if values else NOT_REPORTED
    return out


def agent_figures(reader: StoreReader, run_id: str) -> dict[str, Any] | None:
    """The figures of the agent under test over a run (None when no team's agent answered or
    failed in it): adapter and name, failures (``agent_error``, each with its detail) and
    ``agent_ended`` conversations, latency and time to first token (n, mean, p50, p95, max),
    tool calls, retrieved passages and messages per turn, the most used tools, retried turns
    and usage totals (or "not reported")."""
    interactions = reader.interactions(run_id)
    turns_by = reader.turns_for_run(run_id)
    extras = [e for rows in turns_by.values() for t in rows if (e := turn_agent_extra(t))]
    failed = [i for i in interactions if failed_by_agent(i)]
    details = [failure_detail(i) for i in failed]
    if not extras and not any(d.get("adapter") for d in details):
        return None
    first = extras[0] if extras else next(d for d in details if d.get("adapter"))
    tools = [_trace_list(e, "tool_calls") for e in extras]
    retrieved = [_trace_list(e, "retrieved") for e in extras]
    names = Counter(str(c.get("name")) for calls in tools if calls for c in calls if isinstance(c, Mapping))
    latency = [float(e["latency_ms"]) for e in extras if e.get("latency_ms") is not None]
    ttft = [float(e["ttft_ms"]) for e in extras if e.get("ttft_ms") is not None]
    timing = summarize_measures({"latency_ms": latency, "ttft_ms": ttft})
    timing["latency_ms"]["max"] = max(latency) if latency else None
    timing["ttft_ms"]["max"] = max(ttft) if ttft else None
    return {
        "adapter": first.get("adapter"), "agent": first.get("agent"),
        "contract_version": first.get("contract_version"),
        "conversations": sum(1 for i in interactions if i["status"] == "completed"),
        "answered_turns": len(extras),
        "agent_error": len(failed),
        "failures": [{"task_id": i.get("task_id"), "interaction_id": i["id"], "turn": d.get("turn"),
                      "kind": d.get("kind"), "status": d.get("status"), "body": d.get("body"),
                      "attempts": d.get("attempts"), "error": d.get("error")}
                     for i, d in zip(failed, details)],
        "agent_ended": sum(1 for i in interactions if i.get("stop_reason") == "agent_ended"),
        "latency_ms": timing["latency_ms"], "ttft_ms": timing["ttft_ms"],
        "turns_with_trace": sum(1 for t in tools if t is not None),
        "tool_calls_per_turn": _mean([len(t) for t in tools if t is not None]),
        "top_tools": dict(names.most_common(TOP_TOOLS)),
        "retrieved_per_turn": _mean([len(r) for r in retrieved if r is not None]),
        "messages_per_turn": _mean([float(e.get("n_messages") or len(e.get("messages") or [])) for e in extras]),
        "retried_turns": sum(1 for e in extras if (e.get("attempts") or 1) > 1),
        "usage": usage_totals(extras),
    }


def _n(value: Any, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _timing(label: str, s: Mapping[str, Any]) -> str:
    if not s.get("n"):
        return f"- {label}: n/a"
    return (f"- {label} (ms, {s['n']} replies): mean {s['mean']:.0f}, p50 {s['p50']:.0f}, "
            f"p95 {s['p95']:.0f}, max {s['max']:.0f}")


def _usage_line(usage: Mapping[str, Any] | str, turns: int) -> str:
    if usage == NOT_REPORTED:
        return f"- usage: {NOT_REPORTED} (the agent sent no `usage`; tokens and cost are left empty, not 0)"
    cost = usage["cost"]
    return (f"- usage ({usage['turns_reporting']}/{turns} turns reported it): input tokens "
            f"{usage['input_tokens']}, output tokens {usage['output_tokens']}, cost "
            f"{cost if isinstance(cost, str) else f'{cost:.4f}'}")


def agent_lines(reader: StoreReader, run_id: str, f: dict[str, Any] | None = None) -> list[str]:
    """The report's "Agent under test" section ([] when no team's own agent ran); ``f``: the
    run's :func:`agent_figures` when already read."""
    f = f or agent_figures(reader, run_id)
    if f is None:
        return []
    bot = f["adapter"] in VOICE_BOTS
    how = ("a voice bot dialled in real time; its figures at the caller: \"Voice bot at the caller\"" if bot
           else f"contract version {f['contract_version'] or '-'}")
    lines = ["", "## Agent under test", "",
             f"- adapter `{f['adapter']}`, agent `{f['agent']}` ({how})",
             f"- {f['answered_turns']} replies in {f['conversations']} conversations; ended by the agent's "
             f"failure (`{'bot_error`, `bot_timeout`, `bot_hung_up' if bot else 'agent_error'}`): {f['agent_error']}; "
             f"ended by the agent (`agent_ended`): {f['agent_ended']}; turns that needed a retry: {f['retried_turns']}",
             _timing("the caller's wait" if bot else "latency", f["latency_ms"])]
    if not bot:
        lines += [_timing("time to first token", f["ttft_ms"]) if f["ttft_ms"]["n"]
                  else "- time to first token: not measured (the agent did not stream)",
                  f"- messages per turn: {_n(f['messages_per_turn'])}"]
    if f["turns_with_trace"]:
        tools = ", ".join(f"{name} {n}" for name, n in f["top_tools"].items()) or "none"
        lines += [f"- trace reported on {f['turns_with_trace']}/{f['answered_turns']} turns: tool calls per turn "
                  f"{_n(f['tool_calls_per_turn'])} (most used: {tools}); retrieved passages per turn "
                  f"{_n(f['retrieved_per_turn'])}"]
    else:
        lines.append("- trace: not reported (no tool calls or retrieved passages to show)")
    lines.append(_usage_line(f["usage"], f["answered_turns"]))
    if f["failures"]:
        lines += ["", "| task | turn | kind | status | attempts | body excerpt |", "|---|---|---|---|---|---|"]
        for x in f["failures"]:
            body = (x["body"] or x["error"] or "").replace("|", "\\|").replace("\n", " ")[:160]
            lines.append(f"| {x['task_id']} | {_n(x['turn'])} | {_n(x['kind'])} | {_n(x['status'])} | "
                         f"{_n(x['attempts'])} | {body} |")
        if not str(reader.run(run_id).get("kind") or "").startswith("live"):
            lines += ["", f"`deskbench run --resume {run_id}` gives the agent these turns again."]
    return lines
