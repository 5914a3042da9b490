"""``deskbench agreement``: SelfScore's judgments against human labels.

Reads transcripts with ``labels`` (default: the shipped sets, the fresh held-out part
``harness/data/agreement/heldout.jsonl`` and ``labelled.jsonl``), judges what the labels compare and the file does not
already hold (the solved-check per turn, user and agent helpfulness, complexity only when a
conversation has ``labels.quality``) with each asked method profile, and prints the agreement
tables per split (``harness.study.label_agreement``, ``harness.study.label_report``).
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from harness.cli.common import add_config_args, build_config, console, out
from harness.cli.defaults import config_options
from harness.cli.progress import counting

AGREEMENT_DATA = Path(__file__).resolve().parents[1] / "data" / "agreement"
LABELLED_SET = AGREEMENT_DATA / "labelled.jsonl"
HELDOUT_SET = AGREEMENT_DATA / "heldout.jsonl"
LABELLED_SETS = (HELDOUT_SET, LABELLED_SET)
SPLITS = ("heldout", "checked", "tune", "all")


def labelled_rows(paths: Path | list[Path] | tuple[Path, ...], split: str) -> list[dict[str, Any]]:
    """The rows of ``paths`` (one file or several) in ``split`` (``all``: every row) that carry at
    least one label, their labels' ``labelled_by`` checked (``harness.study.label_sources``).

    Raises:
        ValueError: a line that is not JSON, a ``labelled_by`` that is not a known source, or no
            labelled row in the split (each names the file, the row and the fix).
    """
    from harness.study.label_sources import check_label_sources
    from harness.tasks.jsonl import read_jsonl
    rows = []
    for path in [paths] if isinstance(paths, Path) else paths:
        parsed, problems, _ = read_jsonl(path)
        if problems:
            raise ValueError(f"{path}: {problems[0]}. Fix that line (docs/data-formats.md#human-labels).")
        check_label_sources([row for _, row in parsed], path)
        rows += [row for _, row in parsed if split == "all" or row.get("split") == split]
    path = paths if isinstance(paths, Path) else " + ".join(str(p) for p in paths)

    def labelled(row):
        return bool(row.get("labels")) or any(t.get("labels") for t in row.get("turns") or [])
    rows = [r for r in rows if isinstance(r, dict) and labelled(r)]
    if not rows:
        raise ValueError(f"{path} has no labelled conversation in split {split!r}: add 'labels' to a "
                         "conversation or a turn (docs/data-formats.md#human-labels), or pick another --split.")
    return rows


JUDGED_KINDS = ("solved", "agent_helpfulness", "user_helpfulness")


def _wanted(kinds):
    """What to judge for ``kinds``: the solved-check on every turn (a conversation is solved when
    any turn is), a helpfulness score where a label compares it, complexity where a conversation
    has a quality label; and the problem statement the solved-check needs."""
    def wanted(row: dict, i: int | None, kind: str) -> bool:
        if i is None:
            return kind == "complexity" and (row.get("labels") or {}).get("quality") is not None
        return kind in kinds and (kind == "solved" or (row["turns"][i].get("labels") or {}).get(kind) is not None)
    return wanted


async def judge_labelled(runtime, rows: list[dict[str, Any]], out_path: Path, concurrency: int,
                         on_progress=None, kinds=JUDGED_KINDS) -> list[dict[str, Any]]:
    """Judge what ``rows`` lack and the labels compare (of ``kinds``) on ``runtime``'s profile and
    return the scored rows (also written to ``out_path``)."""
    from harness.selfscore.transcripts import ascore_transcripts
    from harness.tasks.jsonl import write_jsonl
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "labelled.jsonl"
        write_jsonl(source, rows)
        await ascore_transcripts(source, out_path, runtime, concurrency=concurrency, on_progress=on_progress,
                                 wanted=_wanted(set(kinds)))
    return [json.loads(line) for line in out_path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _length(row: dict[str, Any]) -> tuple[int, int]:
    """A conversation's turns, then characters (shortest first)."""
    return len(row["turns"]), sum(len(t.get("user") or "") + len(t.get("agent") or "") for t in row["turns"])


async def heldout_line(runtime, n: int) -> str:
    """One line of agreement with the human labels of ``n`` held-out conversations of the shipped
    set: solved per class (the fresh held-out part has the askers' solved verdicts only, so
    nothing else is judged). The shortest threads of each class, balanced (the solved-check runs
    on every turn: the part's 135 turns would make ``deskbench sanity`` slow, the 6 + 6 shortest
    have 35); the whole part's figures are in docs/selfscore.md."""
    from harness.study.label_agreement import agreement_summary
    from harness.study.label_report import agreement_line
    rows = sorted(labelled_rows(HELDOUT_SET, "heldout"), key=_length)
    by_label = [[r for r in rows if (r.get("labels") or {}).get("solved") is label] for label in (True, False)]
    picked = [r for pair in zip(*by_label) for r in pair][:n]
    with tempfile.TemporaryDirectory() as tmp:
        scored = await judge_labelled(runtime, picked, Path(tmp) / "scored.jsonl", runtime.config.run.concurrency,
                                      kinds=("solved",))
    return agreement_line(agreement_summary(scored, "heldout"))


def cmd_agreement(args: argparse.Namespace) -> int:
    """``deskbench agreement``: judge the labelled transcripts with each ``--profiles`` profile
    and print (``--json``: also write) the agreement tables per split; returns 0."""
    import asyncio

    from harness.compose import Runtime
    from harness.study.label_agreement import agreement_summary
    from harness.study.label_report import agreement_markdown
    paths = [Path(args.transcripts)] if args.transcripts else list(LABELLED_SETS)
    rows = labelled_rows(paths, args.split)
    names = " + ".join(p.name for p in paths)
    profiles = [p.strip() for p in (args.profiles or "").split(",") if p.strip()] or [None]
    kinds = [k.strip() for k in (args.kinds or ",".join(JUDGED_KINDS)).split(",") if k.strip()]
    if set(kinds) - set(JUDGED_KINDS):
        raise ValueError(f"--kinds {args.kinds!r}: choose from {', '.join(JUDGED_KINDS)}")
    if args.no_reference:  # the judge reads the problem statement alone, no reference solution
        rows = [{k: v for k, v in r.items() if k != "solution"} for r in rows]
    results: dict[str, Any] = {"transcripts": " + ".join(str(p) for p in paths), "split": args.split, "profiles": {}}
    for profile in profiles:
        if profile is not None:
            args.profile = profile
        config = build_config(args)
        if args.concurrency:
            config.run.concurrency = args.concurrency
        with Runtime(config) as runtime:
            name = runtime.profile.name
            target = Path(args.out or Path(config.store).parent / "agreement") / f"scored-{name}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            console.print(f"Judging {len(rows)} labelled conversations of {names} (split {args.split}) "
                          f"with the judge role ({config.role('judge').model}), profile {name} ...")
            with counting("conversations judged", args.quiet, console) as on_progress:
                scored = asyncio.run(judge_labelled(runtime, rows, target, config.run.concurrency, on_progress,
                                                    kinds))
        present = {str(r.get("split")) for r in scored if r.get("split")}
        splits = ([s for s in SPLITS[:-1] if s in present] + sorted(present - set(SPLITS))
                  if args.split == "all" else [args.split])
        summaries = {s: agreement_summary(scored, s) for s in splits if any(r.get("split") == s for r in scored)}
        if not summaries:  # a file without splits: all of it
            summaries = {"all": agreement_summary(scored)}
        results["profiles"][name] = {"judge_model": config.role("judge").model, "scored": str(target),
                                     "profile": runtime.profile_record(), "splits": summaries}
        for split, summary in summaries.items():
            title = f"Agreement with human labels: {names}, split {split}, profile {name}, judge {config.role('judge').model}"
            out.print("\n".join(agreement_markdown(summary, title)), highlight=False, markup=False)
        out.print(f"\nScored transcripts: {target}", highlight=False)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
        out.print(f"Summary: {args.json}", highlight=False)
    return 0


def add_agreement_command(sub) -> None:
    """Add ``deskbench agreement``."""
    p = sub.add_parser("agreement", help="judge transcripts with human labels and report judge-human "
                       "agreement (solved accuracy per class, Spearman/Kendall, weighted kappa)")
    add_config_args(p)
    p.add_argument("--transcripts", help="JSONL transcripts with labels (docs/data-formats.md#human-labels; "
                   "default: the shipped sets, harness/data/agreement/heldout.jsonl and labelled.jsonl)")
    p.add_argument("--split", choices=SPLITS, default="all", help="which rows to judge: heldout (frozen, "
                   "no figure read before it was frozen), checked (the first held-out part, since looked at), tune, "
                   "or all (each reported separately) (default: all)")
    p.add_argument("--profiles", help="comma-separated method profiles to judge with, each reported "
                   "(e.g. paper,embedded; default: --profile, else the config's)")
    p.add_argument("--kinds", help="comma-separated judgments to compare: solved, agent_helpfulness, "
                   "user_helpfulness (default: all three)")
    p.add_argument("--no-reference", action="store_true", help="drop each conversation's `solution` "
                   "before judging: the solved-check reads the problem statement alone")
    p.add_argument("--out", help="folder for the scored transcripts (default: agreement/ next to the store)")
    p.add_argument("--json", help="write the machine-readable summary here")
    p.add_argument("--concurrency", type=int, help="judgments in flight at once")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    config_options(p, {"--concurrency": "run.concurrency"})
    p.set_defaults(func=cmd_agreement)
