"""``deskbench robustness``: the adversarial judge-robustness suite against the configured judge."""
from __future__ import annotations

import argparse
import asyncio
import json

from harness.cli.common import add_config_args, build_config, console
from harness.cli.defaults import config_options
from harness.cli.progress import progress_bar
from harness.tasks.jsonl import atomic_write


def cmd_robustness(args: argparse.Namespace) -> int:
    """``deskbench robustness``: judge the suite's clean and attacked twins, print a line per pair
    (not with ``--quiet``) and the markdown report, write it (``--out``) and the figures
    (``--json``); returns 0."""
    from harness.compose import Runtime
    from harness.selfscore.adversarial import load_suite, run_robustness

    pairs = load_suite(args.suite)
    if args.category:
        pairs = [p for p in pairs if p.category in args.category]
    if args.pairs is not None:
        pairs = pairs[: args.pairs]
    from harness.aids.profiles import resolve_profile
    config = build_config(args)
    overrides = {"manipulation_defence": False} if args.no_defence else {}
    if args.languages:
        overrides["translation"] = args.languages
    profile = resolve_profile(config, overrides=overrides)
    defence, languages = profile.value("manipulation_defence"), profile.value("translation")
    console.print(f"Judging {len(pairs)} adversarial pairs (clean and attacked twins) with the "
                  f"judge role ({config.role('judge').model}), manipulation defence "
                  f"{'on' if defence else 'off'}, other languages {languages} ...")
    with Runtime(config) as runtime, progress_bar(args.quiet, console) as bar:
        task = bar.add_task("adversarial pairs judged", total=len(pairs))

        def done(r) -> None:
            bar.advance(task)
            if not args.quiet:
                console.print(f"  {r.pair.id}: {_pair_line(r)}", highlight=False)
        judges = runtime.turn_judges(profile)
        report = asyncio.run(run_robustness(judges, pairs, args.concurrency, done))
    text = report.markdown()
    print(text)
    if args.out:
        with atomic_write(args.out) as f:
            f.write(text)
        console.print(f"Report: {args.out}")
    if args.json:
        with atomic_write(args.json) as f:
            json.dump({"judge_model": report.judge_model, "prompt_version": report.prompt_version,
                       "manipulation_defence": report.defence, "other_languages": report.other_languages,
                       "rows": report.rows(), "sides": report.side_rows(),
                       "pairs": [{"id": r.pair.id, "category": r.pair.category, "side": r.pair.side,
                                  "clean": r.clean.value, "attacked": r.attacked.value, "shift": r.shift,
                                  "clean_solved": r.clean_solved.value if r.clean_solved else None,
                                  "attacked_solved": r.attacked_solved.value if r.attacked_solved else None,
                                  "failed": r.failed, "injected_verdict": r.copied_injection,
                                  "detected": r.detected, "clean_detected": r.clean_detected}
                                 for r in report.results]}, f, indent=2)
    return 0


def _pair_line(r) -> str:
    from harness.selfscore.adversarial import verdict_text
    line = f"helpfulness {verdict_text(r.clean)} -> {verdict_text(r.attacked)}"
    if r.clean_solved:
        line += f", solved {verdict_text(r.clean_solved)} -> {verdict_text(r.attacked_solved)}"
    return line + f", detector: {', '.join(r.detected) or 'nothing'}"


ROBUSTNESS_OPTIONS = {"--languages": "scoring.other_languages", "--no-defence": "scoring.manipulation_defence"}
"""The config keys of ``robustness``'s options."""


def add_robustness_commands(sub) -> None:
    """Register ``robustness`` on the CLI's subparsers."""
    p = sub.add_parser("robustness", help="adversarial messages (orders to the judge, fake score JSON, "
                       "role-play, long text, other languages, markup) vs clean twins: score shift per category")
    add_config_args(p)
    p.add_argument("--pairs", type=int, help="first N pairs of the suite (balanced over categories; default all)")
    p.add_argument("--category", action="append", help="only this attack category (repeatable)")
    p.add_argument("--suite", help="'attacks' (default: harness/data/adversarial/suite.jsonl), 'languages' "
                   "(the same message in English and in another language) or a suite JSONL file")
    p.add_argument("--languages", choices=("as-is", "tell", "translate"),
                   help="how the judges treat a message that is not English (scoring.other_languages; "
                   "auto profile: the aid is on where the judge role runs on the embedded model)")
    p.add_argument("--concurrency", type=int, default=2, help="pairs judged at once (default 2)")
    p.add_argument("--out", help="write the markdown report here")
    p.add_argument("--json", help="write the figures as JSON here")
    p.add_argument("--no-defence", action="store_true", help="judge the twins as written, without the "
                   "manipulation defence (scoring.manipulation_defence), to measure what it changes")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no line per pair")
    config_options(p, ROBUSTNESS_OPTIONS)
    p.set_defaults(func=cmd_robustness)
