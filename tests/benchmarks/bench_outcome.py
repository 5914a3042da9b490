"""The simulated user's outcome decision, case by case, on the embedded model (a script, not a
pytest test; a few minutes on 2 cores).

    .venv/bin/python -m tests.benchmarks.bench_outcome            # the outcome sanity set
    .venv/bin/python -m tests.benchmarks.bench_outcome --json o.json
    .venv/bin/python -m tests.benchmarks.bench_outcome --replay   # real helpers' messages

For every scenario of ``harness/data/sanity/user_outcome.jsonl`` it prints the parts of the
decision (``harness.simuser.users.SimulatedUser.outcome``): the user model's P(yes), the MiniLM
similarity with the real fix, their mean, the shared fix terms, the threshold and the decision,
against the case's class. ``deskbench sanity`` reports only right/wrong per class; this shows
the margins the thresholds were set on. It exits 0: the figures are informative.

``--replay`` is a check on real data instead: the messages the real #ubuntu helpers wrote in the
default batch's 10 threads (``harness/data/ubuntu_irc/troubleshooting.jsonl``), each taken as the
agent's latest message, with the problem statement extracted from the thread's solution by the
extractor role as a batch does. :data:`REPLAY_LABELS` says, by hand, which helper message gives
the thread's fix (the one the asker's later messages confirm, or the last instruction the
thread ends on) and which does not (a question, a diagnostic step, chatter); messages that are
neither clearly are left out. The thresholds were not set on these. The solution the decision
compares with is the thread's as a batch builds it (:func:`harness.tasks.datasets.task_solution`): the
task's labelled fix (``troubleshooting_fixes.tsv``, the same helper turns as the fixes here, so a
fix row compares a message with itself) or, for a thread without one, all its helpers' messages
joined, in which a helper's own diagnostic step is literally part of the "real fix".
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graphs.protocols import Problem
from harness.compose import Runtime
from harness.config import load_config
from harness.selfscore.preprocess import extract
from harness.selfscore.sanity import _outcome_problem, outcome_cases
from harness.tasks.datasets import task_solution

IRC = Path(__file__).resolve().parents[2] / "harness" / "data" / "ubuntu_irc" / "troubleshooting.jsonl"
REPLAY_LABELS = {  # thread id -> (indices of agent_replies that give the fix, indices that do not)
    "ubuntu-irc-2014-06-18_13#1236": ({3}, {0, 1, 2}),        # use ssh-copy-id
    "ubuntu-irc-2008-07-14_18#1118": ({2}, {1, 3}),           # reinstall gnome
    "ubuntu-irc-2013-09-01_02#1451": ({4}, {0, 1, 2, 5, 6}),  # EOL: alter sources.list
    "ubuntu-irc-2008-07-14_18#1357": ({6}, {0, 1, 2, 3, 4, 5}),  # output plugin alsa
    "ubuntu-irc-2008-07-14_18#1116": ({1, 2}, {0}),           # edit the old release's menu.lst
    "ubuntu-irc-2005-07-06_14#1161": ({1}, {0}),              # apt-get update (confirmed)
    "ubuntu-irc-2005-07-06_14#1289": (set(), {0, 1, 2}),      # no fix in the thread
    "ubuntu-irc-2007-01-11_12#1262": ({1}, {0}),              # ensure ALSA is selected
    "ubuntu-irc-2007-12-01_03#1057": ({0}, set()),            # the vga= boot option
}


async def decide_all(runtime: Runtime, cases: list[dict], concurrency: int) -> list[dict]:
    user = runtime.simulated_user()
    semaphore = asyncio.Semaphore(concurrency)

    async def one(case: dict) -> dict:
        problem, history = _outcome_problem(case)
        async with semaphore:
            fixed, parts, _ = await user.outcome(problem, history[-1].content)
        return {"id": case["id"], "fixed": case["fixed"], "decided": fixed, **parts}

    return list(await asyncio.gather(*(one(c) for c in cases)))


async def replay_all(runtime: Runtime, concurrency: int) -> list[dict]:
    threads = {t["id"]: t for t in map(json.loads, IRC.read_text(encoding="utf-8").splitlines())}
    user, extractor = runtime.simulated_user(), runtime.client("extractor")
    semaphore = asyncio.Semaphore(concurrency)

    async def thread(tid: str) -> list[dict]:
        t = threads[tid]
        solution = task_solution(t.get("reference_answer"), t["agent_replies"])
        async with semaphore:
            statement = (await extract("problem", t["question"], extractor, solution)).text
        problem = Problem(tid, t["question"], None, statement, solution=solution,
                          problem_source="solution", facts=tuple(t["facts"]))
        fixes, others = REPLAY_LABELS[tid]

        async def one(i: int) -> dict:
            async with semaphore:
                fixed, parts, _ = await user.outcome(problem, t["agent_replies"][i])
            return {"id": f"{tid.split('#')[1]}/{i}", "fixed": i in fixes, "decided": fixed,
                    "message": t["agent_replies"][i].replace("\n", " / ")[:70], **parts}

        return list(await asyncio.gather(*(one(i) for i in sorted(fixes | others))))

    return [r for rows in await asyncio.gather(*(thread(t) for t in REPLAY_LABELS)) for r in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--replay", action="store_true",
                        help="the real helpers' messages of the default batch's threads (labelled by hand)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(overrides={"store": str(Path(tmp) / "bench.sqlite")})
        with Runtime(cfg) as runtime:
            rows = asyncio.run(replay_all(runtime, args.concurrency) if args.replay
                               else decide_all(runtime, outcome_cases(), args.concurrency))
    print(f"\nOutcome decision on {cfg.role('user').model}"
          f"{' (real helpers, default batch threads)' if args.replay else ''}\n")
    print("| case | class | P(yes) | similarity | mean | terms | threshold | decided | right |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        right = r["decided"] == r["fixed"]
        case = f"{r['id']} {r['message']!r}" if args.replay else r["id"]
        print(f"| {case} | {'fix' if r['fixed'] else 'no fix'} | {r['p_llm']:.2f} | {r['similarity']:.2f} "
              f"| {r['p_fix']:.2f} | {', '.join(r['fix_terms'] or []) or '-'} | {r['threshold']:.2f} "
              f"| {'fixed' if r['decided'] else 'not fixed'} | {'yes' if right else '**no**'} |")
    for label, cls in (("fixes", True), ("non-fixes", False)):
        group = [r for r in rows if r["fixed"] is cls]
        print(f"{label}: right on {sum(r['decided'] == cls for r in group)}/{len(group)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
