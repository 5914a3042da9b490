"""Resume overhead: a SelfScore batch SIGKILLed N times and resumed vs the same batch run clean
(a script, not a pytest test).

Run from the repository root:

    .venv/bin/python -m tests.benchmarks.bench_resume                 # 30 kills, fork mode
    .venv/bin/python -m tests.benchmarks.bench_resume --kills 60 --tasks 10 --turns 8
    .venv/bin/python -m tests.benchmarks.bench_resume --mode subprocess --kills 5   # the real CLI

Both runs are the real ``deskbench run`` (``harness.cli.main.main``) in its own process against the
deterministic fake OpenAI server (``tests.fake_openai_server``, ``--delay`` seconds per answer
to stand in for a model's latency), driven by ``tests.crash_harness``. Figures: wall time and
model requests of each run; the kill+resume overhead in seconds and in extra requests (the
calls of turns that were in flight when killed, made again on resume) per kill; and whether
the killed run's stored turns and scores equal the clean run's (they must).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

QUESTIONS = ("wifi drops every few minutes", "disk full but du shows half used", "websites do not load",
             "printer prints blank pages", "bluetooth connects but no sound", "ssh ignores my key",
             "laptop does not wake from sleep", "second monitor not detected", "apt update fails",
             "clock drifts by minutes a day", "usb stick is read-only", "fan always at full speed")


def main(argv: list[str] | None = None) -> int:
    from store import StoreReader
    from tests.crash_harness import crash_and_resume, integrity
    from tests.fake_openai_server import FakeOpenAIServer
    from tests.fakes import default_responder
    from tests.test_resume_and_failures import figures, snapshot

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--tasks", type=int, default=6, help="interactions (at most 12)")
    ap.add_argument("--turns", type=int, default=6, help="turns per interaction")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--mode", choices=("fork", "subprocess"), default="fork")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds per fake model answer")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    tasks = folder / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "question": f"My {q}. What can I do?"}) + "\n"
                             for i, q in enumerate(QUESTIONS[: args.tasks])))
    kw = dict(mode=args.mode, limit=args.tasks, max_turns=args.turns, concurrency=args.concurrency)
    server_kw = {"delay_s": args.delay} if args.delay else {}
    with FakeOpenAIServer(default_responder(solve_at=None), **server_kw) as server:
        clean = crash_and_resume(folder / "clean.sqlite", tasks, server, kills=0, **kw)
        killed = crash_and_resume(folder / "killed.sqlite", tasks, server, kills=args.kills, seed=args.seed,
                                  max_requests_before_kill=max(3, clean.requests // max(args.kills, 1)), **kw)
    a, b = StoreReader(folder / "clean.sqlite"), StoreReader(folder / "killed.sqlite")
    same = (snapshot(a, clean.run_id) == snapshot(b, killed.run_id)
            and figures(a, clean.run_id) == figures(b, killed.run_id))
    turns = sum(len(t) for t in b.turns_for_run(killed.run_id).values())
    extra = killed.requests - clean.requests
    rows = [
        ("batch", f"{args.tasks} interactions x {args.turns} turns, concurrency {args.concurrency}, "
                  f"{args.mode} mode, fake model {args.delay:g} s/answer"),
        ("clean run", f"{clean.seconds:.2f} s, {clean.requests} model requests, {turns} turns"),
        ("killed run", f"{killed.kills} SIGKILLs, {killed.attempts} processes, {killed.seconds:.2f} s, "
                       f"{killed.requests} model requests"),
        ("overhead", f"+{killed.seconds - clean.seconds:.2f} s "
                     f"({(killed.seconds - clean.seconds) / max(killed.kills, 1):.3f} s per kill+resume), "
                     f"+{extra} requests ({100 * extra / clean.requests:.1f}%, "
                     f"{extra / max(killed.kills, 1):.2f} per kill)"),
        ("store", f"integrity_check after every kill: {sorted(set(killed.integrity)) or ['-']}, "
                  f"at the end: {integrity(folder / 'killed.sqlite')}"),
        ("result", "turns and scores equal the clean run's" if same else "MISMATCH with the clean run"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0 if same and killed.final_rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
