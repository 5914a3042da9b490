"""The judgment rules' verdicts before and after they became data (harness/aids), message by message.

Runs the old code (harness/selfscore/helpfulness_bounds.py, user_checks.py and fix_terms.py as
they were in git, loaded from ``git show``) and the new code (harness/aids and the simuser
modules that read it) over every user and agent message of the shipped sanity sets, the real
#ubuntu threads and the adversarial suite, and prints, for each function, how many verdicts
changed, with each changed message and its old -> new verdict.

    python tests/benchmarks/bench_rule_verdicts.py [--old REV] [--quiet]

``--old`` defaults to the last commit that still had harness/selfscore/helpfulness_bounds.py
(the parent of the commit that moved it); ``--quiet`` prints the counts only.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graphs.protocols import Message, Problem  # noqa: E402
from harness.tasks.datasets import task_solution  # noqa: E402

OLD_PATHS = {"fix_terms": "harness/selfscore/fix_terms.py", "user_checks": "harness/selfscore/user_checks.py",
             "helpfulness_bounds": "harness/selfscore/helpfulness_bounds.py"}
DATA = ROOT / "harness" / "data"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def default_old_rev() -> str:
    """The last commit with the old helpfulness_bounds.py: the parent of the commit that removed
    it, or HEAD while the move is not committed yet."""
    removed = _git("log", "-1", "--format=%H", "--diff-filter=D", "HEAD", "--",
                   OLD_PATHS["helpfulness_bounds"]).strip()
    return f"{removed}^" if removed else "HEAD"


def load_old(rev: str) -> dict[str, types.ModuleType]:
    """The old modules, executed from their source at ``rev``. The old bounds import the old
    user checks and fix terms by name, so those stand in sys.modules while it loads."""
    mods: dict[str, types.ModuleType] = {}
    for name in ("fix_terms", "user_checks", "helpfulness_bounds"):
        module = types.ModuleType(f"old_{name}")
        module.__file__ = f"{rev}:{OLD_PATHS[name]}"
        real = {k: sys.modules.get(k) for k in ("harness.selfscore.fix_terms", "harness.selfscore.user_checks")}
        sys.modules["harness.selfscore.fix_terms"] = mods.get("fix_terms", real["harness.selfscore.fix_terms"])
        sys.modules["harness.selfscore.user_checks"] = mods.get("user_checks", real["harness.selfscore.user_checks"])
        try:
            sys.modules[module.__name__] = module  # dataclasses look their module up
            exec(compile(_git("show", f"{rev}:{OLD_PATHS[name]}"), module.__file__, "exec"), module.__dict__)
        finally:
            for k, v in real.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
        mods[name] = module
    return mods


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def conversations() -> list[tuple[str, Problem | None, list[Message]]]:
    """(name, problem or None, messages) of every shipped conversation with messages to judge."""
    out = []
    sanity = DATA / "sanity"
    for case in _jsonl(sanity / "solved_check.jsonl"):
        msgs = [Message(m["role"], m["content"]) for m in case["conversation"]]
        out.append((f"solved_check/{case['id']}", Problem(case["id"], msgs[0].content, None, case.get("problem")), msgs))
    for case in _jsonl(sanity / "turn_helpfulness.jsonl"):
        msgs = [Message(m["role"], m["content"]) for m in case["conversation"]]
        for kind in ("helpful", "useless"):
            out.append((f"turn_helpfulness/{case['id']}/{kind}", None, [*msgs, Message(case["role"], case[kind])]))
    for case in _jsonl(sanity / "user_outcome.jsonl"):
        problem = Problem(case["id"], case["question"], None, case.get("problem"), solution=case.get("solution"),
                          facts=tuple(case.get("facts") or ()))
        out.append((f"user_outcome/{case['id']}", problem, [Message("user", case["question"]),
                                                             Message("agent", case["agent"])]))
    seen = set()
    for name in ("troubleshooting.jsonl", "tasks.jsonl"):
        for task in _jsonl(DATA / "ubuntu_irc" / name):
            if task["id"] in seen:
                continue
            seen.add(task["id"])
            msgs = [Message("user", task["question"])]
            replies, followups = task.get("agent_replies") or [], task.get("followups") or []
            for i, reply in enumerate(replies):
                msgs.append(Message("agent", reply))
                if i < len(followups):
                    msgs.append(Message("user", followups[i]))
            problem = Problem(task["id"], task["question"], None, None, task.get("reference_answer"),
                              solution=task_solution(task.get("reference_answer"), replies),
                              facts=tuple(task.get("facts") or ()))
            out.append((f"ubuntu_irc/{task['id']}", problem, msgs))
    for name in ("suite.jsonl", "languages.jsonl"):
        for case in _jsonl(DATA / "adversarial" / name):
            context = [Message(m["role"], m["content"]) for m in case.get("context") or []]
            for kind in ("clean", "attacked"):
                out.append((f"adversarial/{case['id']}/{kind}", None, [*context, Message(case["side"], case[kind])]))
    return out


def _band(b) -> str:
    return f"[{b.floor},{b.cap}]" + (f" {b.rules[0]}" if b.rules else "")


def verdicts(mods: dict, convs) -> dict[str, dict[tuple, object]]:
    """Each function's verdict per message: {function: {(conversation, index): verdict}}."""
    hb, uc = mods["helpfulness_bounds"], mods["user_checks"]
    cues, ft = mods["cues"], mods["fix_terms"]
    out: dict[str, dict] = defaultdict(dict)
    for name, problem, msgs in convs:
        first_user = next((i for i, m in enumerate(msgs) if m.role == "user"), None)
        for i, m in enumerate(msgs):
            key, history = (name, i), msgs[:i + 1]
            if m.role == "agent":
                out["agent_reply_bounds"][key] = _band(hb.agent_reply_bounds(m.content, history))
                out["asks_only (fix_terms)"][key] = ft.asks_only(m.content)
                continue
            if i == first_user:
                out["first_question_bounds"][key] = _band(hb.first_question_bounds(m.content))
            else:
                out["user_reply_bounds"][key] = _band(hb.user_reply_bounds(m.content, history))
            persisting, like_agent, results = (cues.persisting_cues(m.content), cues.agent_cues(m.content),
                                               cues.result_cues(m.content))
            out["persisting_cues non-empty"][key] = bool(persisting)
            out["agent_cues non-empty"][key] = bool(like_agent)
            out["result_cues non-empty"][key] = bool(results)
            if i != first_user:  # what the solved-check stores with a later user message's judgment
                out["solved-check cue lists as stored (later user messages)"][key] = (persisting, like_agent, results)
                # ConfirmationSolvedCheck: the rules decide "not solved" (no question asked) when
                # a persisting or agent cue is found, or no result cue
                out["solved-check rule veto (later user messages)"][key] = bool(persisting or like_agent or not results)
            out["claims_success"][key] = cues.claims_success(m.content)
            if i != first_user and problem is not None:
                for fixed in (None, False, True):
                    found = uc.rule_violations(m.content, problem, msgs[:i], fixed)
                    out[f"rule_violations (fixed={fixed})"][key] = sorted({v.kind for v in found})
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the changed verdicts per function (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default=None, help="the git revision of the old code")
    parser.add_argument("--quiet", action="store_true", help="the counts only")
    args = parser.parse_args(argv)
    rev = args.old or default_old_rev()
    old = load_old(rev)
    old["cues"] = old["user_checks"]
    from harness.aids import cues, helpfulness_bounds
    from harness.simuser import checks as user_checks, fix_terms
    new = {"helpfulness_bounds": helpfulness_bounds, "user_checks": user_checks, "cues": cues, "fix_terms": fix_terms}
    convs = conversations()
    users = sum(m.role == "user" for _, _, msgs in convs for m in msgs)
    agents = sum(m.role == "agent" for _, _, msgs in convs for m in msgs)
    print(f"old code: {rev} ({_git('rev-parse', '--short', rev).strip()}); new: the working tree "
          f"(rules {helpfulness_bounds.RULES_VERSION}, solved cues {cues.SOLVED_CUES_VERSION})")
    print(f"messages read: {users + agents} ({users} user, {agents} agent) in {len(convs)} conversations\n")
    before, after = verdicts(old, convs), verdicts(new, convs)
    texts = {(name, i): m.content for name, _, msgs in convs for i, m in enumerate(msgs)}
    for function in before:
        changed = [k for k in before[function] if before[function][k] != after[function][k]]
        print(f"{function}: {len(changed)} of {len(before[function])} verdicts changed")
        if args.quiet:
            continue
        for k in changed:
            text = " ".join(texts[k].split())
            print(f"  {k[0]} #{k[1]}: {text[:150]!r}\n      {before[function][k]} -> {after[function][k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
