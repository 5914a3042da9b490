"""A batch's results do not depend on how fast the harness is (issue 44, part 5).

The same small batch (3 tasks x 2 trials x up to 3 turns, 4 conversations at once, every role
on a local HTTP endpoint with scripted answers) is run through ``deskbench run`` and its store
is reduced to everything a result is made of: the messages, every judgment with the judge's own
answer and the aids that touched it, every model call's role, purpose and token counts, the
run's versions and profile, and the request bodies the endpoint received. The reduction must
equal ``tests/data/batch_results_before_issue44.json``, written by the harness as it was
before the throughput work (commit c04cc2d) with this file's ``write_reference``:

    .venv/bin/python -m tests.test_batch_results_unchanged tests/data/batch_results_before_issue44.json

Records added since, which shape no result (issue 43's provenance: the aids that were always on
are now named, the context limits recorded) are checked to be there and then set aside
(``ADDED_RECORDS``): the messages, scores and request bodies must not move.

Left out, because they measure time or the endpoint's order of arrival rather than a result:
timestamps, latencies, ids, contention, the fake server's prompt-cache figure (it compares a
prompt with the ones that happened to come before it).
"""
from __future__ import annotations

import json
import re
import sqlite3
import sys
import tempfile
from pathlib import Path

from harness.cli.main import main
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder

REFERENCE = Path(__file__).parent / "data" / "batch_results_before_issue44.json"
ROLES = ("agent", "user", "judge", "complexity", "extractor")
TASKS = [
    {"id": "wifi", "question": "My laptop wifi drops every few minutes on Ubuntu 22.04.",
     "followups": ["It is an Intel AX200 card.", "Still drops.", "Now it works, thanks!"]},
    {"id": "disk", "question": "My disk is full but du shows only half used.",
     "solution": "Restart the process that holds the deleted log file open."},
    {"id": "dns", "question": "Websites do not load but ping 8.8.8.8 works.",
     "solution": "Set a working DNS server in /etc/resolv.conf or the network settings."},
]
#: columns of each table that hold a result (everything else is a time, an id or a measurement)
RESULT_COLUMNS = {
    "interactions": ("problem_id", "trial", "persona", "status", "stop_reason", "n_turns", "summary",
                     "problem_statement", "error"),
    "turns": ("turn_index", "user_message", "agent_message", "user_helpfulness", "agent_helpfulness",
              "solved", "quality", "input_tokens", "output_tokens", "cost", "extra_json"),
    "judgments": ("turn_index", "kind", "status", "score", "parsed_json", "reason", "raw_json", "attempts",
                  "error", "model", "prompt_version", "judge_score", "profile", "aids_json"),
    "llm_calls": ("turn_index", "role", "purpose", "model", "input_tokens", "output_tokens", "cost", "error",
                  "attempt"),
}
#: keys of a turn's ``extra_json`` that are timings
TIMING_KEYS = {"timings", "latency_ms", "ttft_ms", "seconds", "wall_ms", "elapsed_ms"}


#: what a record gained after the reference was written, with no result changed (issue 43: the
#: judge's reminder, the preprocessing guard and the simulator's outcome method and fallback named
#: as aids, the context limits and what a judge's prompt clipped recorded)
NEW_AIDS = ("judge_reminder", "preprocessing_guard", "user_outcome", "user_fallback")
#: issue 42: the simulator faults of each sent user message (``extra["simulator"]["faults"]``), a
#: record of what the checks found in the message as sent; no message, score or request changes
#: issue 42, part 4: how many of the task's facts the simulated user was told (its later questions
#: and chatter left out) and by which rules
ADDED_RECORDS = {"limits", "clipped", "faults", "situation_facts", *NEW_AIDS}
#: version strings, renamed when every version became a content hash (issue 43: ``hb-...`` became
#: ``helpfulness-bounds-...``, ``manipulation-rules-2`` ``manipulation-...``): records, not results
VERSION_KEYS = {"version", "rules_version"}
#: the prompt version: p14 changed only what the simulated user is told of its facts and a
#: regeneration note (issue 42, part 4); this batch's facts hold no question or chatter and no draft
#: refuses, so no message or request body moves
_VERSION_VALUE = re.compile(r"^([a-z][a-z0-9-]*-[0-9a-f]{10}|manipulation-rules-2|translate-1|selfscore-p1[34]|"
                            r"selfscore-p13\+solved-cues-[0-9a-f]{10})$")


def _without_added(value):
    if isinstance(value, dict):
        return {k: _without_added(v) for k, v in value.items() if k not in ADDED_RECORDS | VERSION_KEYS}
    if isinstance(value, list):
        return [_without_added(v) for v in value]
    if isinstance(value, str) and _VERSION_VALUE.match(value):
        return "<version>"
    return value


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMING_KEYS and not k.endswith("_ms")}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _cell(column: str, value):
    if column.endswith("_json") and value:
        return _without_timings(json.loads(value))
    return value


def reduce_store(path: Path) -> dict:
    """The results held in the store at ``path``, in an order that does not depend on timing."""
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    run = db.execute("SELECT * FROM runs").fetchone()
    out: dict = {"run": {c: _cell(c, run[c]) for c in ("status", "seed", "prompt_version", "scorer_version",
                                                       "profile_json", "models_json")}}
    conversations = []
    for inter in db.execute("SELECT * FROM interactions ORDER BY problem_id, trial"):
        one = {c: inter[c] for c in RESULT_COLUMNS["interactions"]}
        for table in ("turns", "judgments", "llm_calls"):
            rows = db.execute(f"SELECT * FROM {table} WHERE interaction_id = ?", (inter["id"],)).fetchall()
            reduced = [{c: _cell(c, r[c]) for c in RESULT_COLUMNS[table]} for r in rows]
            one[table] = sorted(reduced, key=lambda r: json.dumps(r, sort_keys=True))
        conversations.append(one)
    out["conversations"] = conversations
    return out


def run_batch(folder: Path) -> dict:
    """Run the batch into ``folder`` and return its reduced store and the request bodies received."""
    tasks = folder / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    store = folder / "s.sqlite"
    with FakeOpenAIServer(default_responder(solve_at=3)) as server:
        flags = ["--profile", "embedded"]
        for role in ROLES:
            flags += ["--role", f"{role}.base_url={server.base_url}", "--role", f"{role}.model={role}-fake"]
        rc = main(["run", "--store", str(store), "--dataset", str(tasks), "--trials", "2", "--max-turns", "3",
                   "--concurrency", "4", "--seed", "11", "--quiet", "--name", "unchanged", *flags])
        assert rc == 0
        requests = sorted(json.dumps(r, sort_keys=True) for r in server.requests)
    return {**reduce_store(store), "requests": requests}


def write_reference(path: Path) -> None:
    """Write the reference reduction (run with the harness before a change)."""
    with tempfile.TemporaryDirectory() as tmp:
        path.write_text(json.dumps(run_batch(Path(tmp)), indent=1, sort_keys=True) + "\n")


def test_the_batch_stores_the_same_results_as_before_the_throughput_work(tmp_path):
    reference = json.loads(REFERENCE.read_text())
    now = json.loads(json.dumps(run_batch(tmp_path), sort_keys=True))
    profile = now["run"]["profile_json"]
    assert all(profile["aids"][a]["on"] and profile["aids"][a]["version"] for a in NEW_AIDS)
    assert profile["limits"]["judge_latest_message_chars"] == 3000 and profile["limits"]["max_tokens"]["agent"] == 320
    judged = [json.loads(j["aids_json"]) if isinstance(j["aids_json"], str) else j["aids_json"]
              for c in now["conversations"] for j in c["judgments"] if j["kind"] == "agent_helpfulness"]
    assert judged and all("judge_reminder" in (a or {}) for a in judged)
    now, reference = _without_added(now), _without_added(reference)
    for conversation in now["conversations"] + reference["conversations"]:  # sorted without the set-aside keys
        for table in ("turns", "judgments", "llm_calls"):
            conversation[table].sort(key=lambda r: json.dumps(r, sort_keys=True))
    assert len(now["conversations"]) == 6 and all(c["turns"] for c in now["conversations"])
    assert any(j["kind"] == "agent_helpfulness" for c in now["conversations"] for j in c["judgments"])
    assert now["run"] == reference["run"]
    for mine, theirs in zip(now["conversations"], reference["conversations"], strict=True):
        assert mine == theirs, f"{mine['problem_id']} trial {mine['trial']} changed"
    assert now["requests"] == reference["requests"]  # the same bodies went on the wire


if __name__ == "__main__":
    write_reference(Path(sys.argv[1]))
