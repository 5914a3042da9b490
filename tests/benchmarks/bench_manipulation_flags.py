"""The manipulation detector's flags: recall on the adversarial suite, false flags on real messages.

    .venv/bin/python tests/benchmarks/bench_manipulation_flags.py [--sample 100] [--seed 0] [--all]

No model is used. Prints the detection rate per attack category on the suite's attacked twins,
the false-flag rate on its clean twins, and the false-flag rate on ``--sample`` real messages
drawn deterministically (``--seed``) from the shipped data: #ubuntu IRC askers and helpers
(``harness/data/ubuntu_irc``), Stack Exchange questions and their human reference answers
(``harness/data/lfrqa_technology``), NoisyToolBench user instructions and clarifications
(``harness/data/noisytoolbench``). Every flagged real message is printed so that a person can
read it. ``--all`` also screens every shipped real message (about 12,000).
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import defaultdict
from pathlib import Path
from time import perf_counter

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.defence.manipulation import RULES_VERSION, screen
from harness.selfscore.adversarial import CATEGORIES, load_suite

DATA = Path(__file__).resolve().parents[2] / "harness" / "data"
# how many of the sample come from each source (scaled to --sample)
SHARES = {"irc-asker": 25, "irc-helper": 25, "se-question": 20, "se-answer": 20, "ntb-user": 10}


def real_messages() -> dict[str, list[str]]:
    """Messages written by real people in the shipped data, by source."""
    out: dict[str, list[str]] = defaultdict(list)
    with open(DATA / "ubuntu_irc" / "ubuntu_irc_test_threads.jsonl", encoding="utf-8") as f:
        for line in f:
            messages = json.loads(line)["messages"]
            asker = messages[0]["speaker"]
            for m in messages:
                out["irc-asker" if m["speaker"] == asker else "irc-helper"].append(m["text"])
    with gzip.open(DATA / "lfrqa_technology" / "tasks.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            task = json.loads(line)
            out["se-question"].append(task["question"])
            if task.get("reference_answer"):
                out["se-answer"].append(task["reference_answer"])
    for path in sorted((DATA / "noisytoolbench").glob("I*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")):
            out["ntb-user"] += [case["query"], str(case["clarification"])]
    return {k: [t for t in v if t and t.strip()] for k, v in out.items()}


def sample(pool: dict[str, list[str]], n: int, seed: int) -> list[tuple[str, str]]:
    rng, total = random.Random(seed), sum(SHARES.values())
    picked = []
    for source, share in SHARES.items():
        k = min(len(pool[source]), round(n * share / total))
        picked += [(source, t) for t in rng.sample(pool[source], k)]
    return picked[:n]


def flagged_lines(messages: list[tuple[str, str]]) -> list[str]:
    lines = []
    for source, text in messages:
        result = screen(text)
        if result.flagged:
            spans = "; ".join(f"{s.kind}: {s.text[:160]!r}" for s in result.spans)
            lines.append(f"- [{source}] {text[:400]!r}\n    spans: {spans}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=100, help="real messages to draw (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--all", action="store_true", help="also screen every shipped real message")
    args = ap.parse_args()

    pairs = load_suite()
    print(f"Manipulation detector {RULES_VERSION}\n")
    print("| category | attacked twins flagged | clean twins flagged |\n|---|---|---|")
    missed = []
    for category in [*CATEGORIES, "all"]:
        group = [p for p in pairs if category in (p.category, "all")]
        hits = [screen(p.attacked).flagged for p in group]
        false = sum(screen(p.clean).flagged for p in group)
        print(f"| {category} | {sum(hits)}/{len(group)} ({sum(hits) / len(group):.0%}) | "
              f"{false}/{len(group)} ({false / len(group):.0%}) |")
        if category == "all":
            missed = [p.id for p, hit in zip(group, hits) if not hit]
    print(f"\nAttacked twins not flagged: {', '.join(missed) or 'none'}")

    pool = real_messages()
    drawn = sample(pool, args.sample, args.seed)
    started = perf_counter()
    lines = flagged_lines(drawn)
    ms = (perf_counter() - started) * 1000 / max(1, len(drawn))
    by_source = defaultdict(int)
    for source, _ in drawn:
        by_source[source] += 1
    print(f"\nReal messages (seed {args.seed}): {len(drawn)} drawn "
          f"({', '.join(f'{s} {n}' for s, n in by_source.items())}); flagged {len(lines)} "
          f"({len(lines) / max(1, len(drawn)):.1%}); {ms:.2f} ms a message")
    print("\n".join(lines) if lines else "No real message flagged.")
    if args.all:
        everything = [(s, t) for s, texts in pool.items() for t in texts]
        started = perf_counter()
        lines = flagged_lines(everything)
        seconds = perf_counter() - started
        print(f"\nAll shipped real messages: {len(everything)} "
              f"({', '.join(f'{s} {len(t)}' for s, t in pool.items())}); flagged {len(lines)} "
              f"({len(lines) / len(everything):.2%}); {seconds:.1f} s in all")
        print("\n".join(lines[:50]) if lines else "No real message flagged.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
