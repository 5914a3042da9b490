"""What a run's solved-check can be trusted with: its measured agreement with human labels per
class, said next to the solved rate in the run report and under the run in ``deskbench runs``.

The figures are stored once, versioned, in ``harness/data/agreement/solved_check_agreement.json``
(one entry per judge, solved method and labelled set), not in this module. Where they come from:

- the embedded judge (Qwen2.5-Coder-1.5B), method ``evidence`` (ev4) and ``verdict``, on the
  shipped fresh held-out part (``heldout.jsonl``, sha256 910e5bbf..., labels the askers' own
  words): docs/selfscore.md, "Agreement with human labels", the "Fresh held-out part" table
  ("| embedded (`evidence` ev4) | 11/14 ... | 13/14 ...", "| paper (`verdict`) | 14/14 ... | 0/14");
- the same judge, ``evidence``, on the checked part of ``labelled.jsonl`` (the maintainers'
  labels, 4 of 33 the askers'): the "Checked part" table there ("11/15 (CI 48-89%), 15/18");
  ``verdict`` and ``confirmation`` on that part: the table of "The solved-check" ("| `verdict`
  (profile paper) | 15/15 | 0/18", "| `confirmation` ... | 2/15 ... | 17/18");
- the same judge, ``evidence``, on other help-desk data kept outside the project (real customer
  help-desk dialogues, 19 raters each): issue 43, "recognises 4 of 30 solved ones (29 of 30
  unsolved right)", quoted in docs/selfscore.md.

``tests/test_solved_check_trust.py`` checks every entry's ``docs_quote`` against docs/selfscore.md
and recounts each shipped set's classes, label sources and hash, so a figure cannot drift from
the docs or from its set silently. A judge or method with no entry is "not measured", said so.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

FIGURES_FILE = Path(__file__).resolve().parents[1] / "data" / "agreement" / "solved_check_agreement.json"
DOCS = "docs/selfscore.md#agreement-with-human-labels"


@lru_cache(maxsize=1)
def measured_agreement() -> dict[str, Any]:
    """The stored figures (``solved_check_agreement.json``): ``version``, ``measure_with`` and the
    ``measurements``, each with its judge, solved method, set, who labelled and the two classes'
    ``{"right", "n"}``."""
    return json.loads(FIGURES_FILE.read_text(encoding="utf-8"))


def _field(run: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``config`` or ``profile`` of a run row, parsed (``reader.run``) or not (``reader.runs``)."""
    value = run.get(key)
    if value is None and run.get(f"{key}_json"):
        value = json.loads(run[f"{key}_json"])
    return value or {}


def run_judge(run: Mapping[str, Any]) -> dict[str, Any]:
    """The judge role a run's solved-check ran on: ``{"kind": "embedded"|"endpoint", "model",
    "base_url"}`` from the run's stored config."""
    spec = (_field(run, "config").get("roles") or {}).get("judge") or {}
    base_url = spec.get("base_url")
    return {"kind": "endpoint" if base_url else "embedded", "model": spec.get("model") or "unrecorded",
            "base_url": base_url}


def run_solved_method(run: Mapping[str, Any]) -> str | None:
    """The solved method a run used: the profile record's ``solved_rules`` value
    (``runs.profile_json``), else the config's ``run.solved_check``; None when neither says."""
    aid = (_field(run, "profile").get("aids") or {}).get("solved_rules") or {}
    return aid.get("value") or (_field(run, "config").get("run") or {}).get("solved_check")


def measurements_for(judge: Mapping[str, Any], method: str | None) -> list[dict[str, Any]]:
    """The stored measurements of this judge (kind and model) and solved method, shipped held-out
    set first, then the other shipped parts, then data kept outside the project."""
    found = [m for m in measured_agreement()["measurements"]
             if m["judge"]["kind"] == judge["kind"] and m["judge"]["model"] == judge["model"]
             and m["solved_method"] == method]
    return sorted(found, key=lambda m: (m["set"]["file"] is None, m["set"]["split"] != "heldout"))


def _weak_reason(found: list[dict[str, Any]]) -> str:
    """Why a solved rate on this judge is weak evidence, from the worst class figure measured."""
    def share(m, cls):
        return m[cls]["right"] / m[cls]["n"]
    worst = min(((share(m, cls), cls, m) for m in found for cls in ("solved", "unsolved")),
                key=lambda x: x[0])
    value, cls, m = worst
    where = "elsewhere" if m["set"]["file"] is None else f"on the {m['set']['name']}"
    if cls == "unsolved" and value == 0:
        return f"it called every unsolved conversation {where} solved"
    if value < 0.5:
        return (f"most solved conversations {where} were not recognised" if cls == "solved"
                else f"most unsolved conversations {where} were called solved")
    return "its figures come from a few dozen conversations"


def _judge_words(judge: Mapping[str, Any]) -> str:
    return (f"embedded judge {judge['model']}" if judge["kind"] == "embedded"
            else f"judge {judge['model']} at {judge['base_url']}")


def _not_measured(judge: Mapping[str, Any], method: str | None, short: bool) -> str:
    command = measured_agreement()["measure_with"]
    if short:
        return f"solved-check ({judge['kind']} {judge['model']}, {method or 'unrecorded'}): not measured; `{command}`"
    return (f"Solved-check ({_judge_words(judge)}, `{method or 'method unrecorded'}`): its agreement with "
            f"human labels is not measured for this judge and method (the project measured the embedded "
            f"Qwen2.5-Coder-1.5B only), so nothing here says how many solved or unsolved conversations it "
            f"recognises: run `{command}` with this run's judge settings (`--role judge.base_url=... "
            f"--role judge.model=...`, `--profile`) to measure it on the shipped held-out set ({DOCS}).")


def trust_line(run: Mapping[str, Any]) -> str:
    """The report's sentence under the solved rate: the run's solved-check (judge and method)
    and what it recognised per class on each measured set, with who labelled it; on the embedded
    judge, that a solved rate of transcripts is weak evidence and why; else "not measured"."""
    judge, method = run_judge(run), run_solved_method(run)
    found = measurements_for(judge, method)
    if not found:
        return _not_measured(judge, method, short=False)
    parts = []
    for m in found:
        s, u = m["solved"], m["unsolved"]
        if m["set"]["file"] is None:
            parts.append(f"on {m['set']['name']} {s['right']} of {s['n']} solved and {u['right']} of {u['n']} unsolved")
            continue
        digest = f", sha256 {m['set']['sha256'][:12]}" if m["set"]["sha256"] else ""
        parts.append(f"on the {m['set']['name']} ({Path(m['set']['file']).name}, split {m['set']['split']}{digest}; "
                     f"labels: {m['labelled_by']}, {m['labels']}) it recognised {s['right']} of {s['n']} solved "
                     f"and {u['right']} of {u['n']} unsolved conversations")
    line = f"Solved-check ({_judge_words(judge)}, `{method}`): " + "; ".join(parts) + "."
    if judge["kind"] == "embedded":
        line += f" On this judge a solved rate of transcripts is weak evidence: {_weak_reason(found)}."
    return line + f" ({DOCS})"


def trust_short(run: Mapping[str, Any]) -> str:
    """The same in one short clause for ``deskbench runs``."""
    judge, method = run_judge(run), run_solved_method(run)
    found = measurements_for(judge, method)
    if not found:
        return _not_measured(judge, method, short=True)
    if any(m["set"]["split"] == "heldout" for m in found):  # the held-out estimate, not the parts looked at
        found = [m for m in found if m["set"]["split"] in ("heldout", None)]
    parts = []
    for m in found:
        s, u = m["solved"], m["unsolved"]
        where = ("other help-desk data" if m["set"]["file"] is None
                 else f"shipped {m['set']['split']}".replace("heldout", "held-out"))
        parts.append(f"{s['right']}/{s['n']} solved, {u['right']}/{u['n']} unsolved on {where} ({m['labelled_by']})")
    text = f"solved-check ({judge['kind']}, {method}): " + "; ".join(parts)
    return text + ("; weak evidence on the embedded judge" if judge["kind"] == "embedded" else "")
