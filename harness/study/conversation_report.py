"""How the conversations of a run went: turns per conversation, solved rate, stop reasons, where
each problem statement came from, and the simulated user's checks (violations caught,
regenerations, unresolved). Read from the store; no LLM calls."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from store import StoreReader


def conversation_figures(reader: StoreReader, run_id: str) -> dict[str, Any]:
    """The figures of the run's completed conversations (see the module docstring)."""
    interactions = [i for i in reader.interactions(run_id) if i["status"] == "completed"]
    turns_by = reader.turns_for_run(run_id)
    n_turns = [len(turns_by.get(i["id"], [])) for i in interactions]
    simulated = with_violation = regenerated = regenerations = unresolved = 0
    kinds: Counter[str] = Counter()
    for i in interactions:
        for t in turns_by.get(i["id"], []):
            sim = (json.loads(t["extra_json"] or "{}").get("user") or {}).get("simulator")
            if not sim:
                continue
            simulated += 1
            first = sim["attempts"][0]["violations"] if sim.get("attempts") else []
            with_violation += bool(first)
            regenerated += sim.get("regenerations", 0) > 0
            regenerations += sim.get("regenerations", 0)
            unresolved += bool(sim.get("unresolved"))
            kinds.update({v["kind"] for a in sim.get("attempts", []) for v in a["violations"]})
    solved = sum(1 for i in interactions if i["stop_reason"] == "solved")
    return {
        "conversations": len(interactions),
        "turns_mean": sum(n_turns) / len(n_turns) if n_turns else None,
        "turns_distribution": dict(sorted(Counter(n_turns).items())),
        "solved": solved,
        "solved_rate": solved / len(interactions) if interactions else None,
        "stop_reasons": dict(Counter(i["stop_reason"] for i in interactions).most_common()),
        "problem_sources": dict(Counter(i.get("problem_source") or "unknown" for i in interactions).most_common()),
        "simulated_user_turns": simulated,
        "simulator_violation_rate": with_violation / simulated if simulated else None,
        "simulator_turns_regenerated": regenerated,
        "simulator_regenerations": regenerations,
        "simulator_unresolved": unresolved,
        "simulator_violations_by_kind": dict(kinds.most_common()),
    }


def conversation_lines(reader: StoreReader, run_id: str) -> list[str]:
    """The report's "Conversations" section."""
    f = conversation_figures(reader, run_id)
    if not f["conversations"]:
        return []

    def counts(d: dict) -> str:
        return ", ".join(f"{k}: {v}" for k, v in d.items()) or "none"

    lines = ["", "## Conversations", "",
             f"- turns per conversation: mean {f['turns_mean']:.2f}; distribution (turns: conversations) "
             f"{counts(f['turns_distribution'])}",
             f"- solved: {f['solved']}/{f['conversations']} ({f['solved_rate']:.0%})",
             f"- stop reasons: {counts(f['stop_reasons'])}",
             f"- problem statement from: {counts(f['problem_sources'])}"]
    if f["simulated_user_turns"]:
        lines.append(
            f"- simulated user: {f['simulated_user_turns']} messages checked; violation rate "
            f"{f['simulator_violation_rate']:.0%} (first attempt); {f['simulator_turns_regenerated']} "
            f"regenerated ({f['simulator_regenerations']} regenerations); {f['simulator_unresolved']} "
            f"still failing a check after the last regeneration; by kind: "
            f"{counts(f['simulator_violations_by_kind'])}")
    return lines
