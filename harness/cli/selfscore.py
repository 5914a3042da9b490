"""``deskbench run``, ``demo``, ``runs``, ``rescore``, ``export``, ``score``, ``rejudge``,
``compare`` and ``sanity``: SelfScore batches, stored runs and the judges' sanity sets."""
from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from harness.cli.common import (add_config_args, aid_overrides, build_config, console, finish_report, out,
                                progress_printer, role_overrides, run_config, scoring_flags)
from harness.cli.defaults import config_default, config_options, stated_default
from harness.cli.progress import counting, progress_bar

SCORE_OPTIONS = {"--threshold": "ntb.threshold", "--a2-method": "ntb.a2_method",
                 "--embedding-model": "ntb.embedding_model", "--ask-match": "ntb.ask_match",
                 "--formula": "scoring.formula"}
"""The config keys of ``score``'s options."""


def cmd_run(args: argparse.Namespace) -> int:
    """``deskbench run`` and ``demo``: a SelfScore batch (new, or ``--resume``), after the judge sanity
    check when ``--sanity`` > 0, then its report. Returns 0, 3 when interactions failed, 130 when
    interrupted."""
    from harness.compose import Runtime
    from harness.selfscore.batch import arun_selfscore

    config, dataset = run_config(args)
    console.print(f"[bold]deskbench[/] SelfScore batch: store [cyan]{config.store}[/]")

    async def session(runtime, bar, task):
        sanity_lines = await _sanity(runtime, args.sanity, on_progress=lambda done, total: bar.update(
            task, completed=done, total=total, description="judge sanity check")) if args.sanity else None
        run_id, progress = await arun_selfscore(runtime, dataset, args.resume,
                                                progress_printer(bar, task))
        return run_id, progress, sanity_lines

    with Runtime(config) as runtime:
        with progress_bar(args.quiet, console) as bar:
            task = bar.add_task("starting (the embedded model loads on first use)", total=None)
            try:
                run_id, progress, sanity_lines = asyncio.run(session(runtime, bar, task))
            except KeyboardInterrupt:
                console.print("[yellow]Interrupted.[/] Every finished turn is stored; resume with "
                              f"`deskbench run --store {config.store} --resume RUN` (see `deskbench runs`).")
                return 130
    return finish_report(config, run_id, progress, sanity_lines, args.out)


async def _sanity(runtime, pairs: int, solved: int | None = None, outcome: int | None = None,
                  on_progress=None, turns: int | None = 0, stability: int | None = 0,
                  agreement: int = 0, personas: int | None = 0) -> list[str]:
    """Run the judge sanity sets and print the report: ``pairs`` helpfulness pairs (complexity:
    :func:`harness.selfscore.sanity.complexity_pairs_for`), ``solved`` solved-check conversations and ``outcome`` simulated-user
    scenarios (default: as many as ``pairs``, balanced yes/no; None in the sanity command: all),
    ``turns`` helpfulness pairs inside conversations and ``stability`` messages judged
    repeatedly and ``personas`` simulated-user persona scenarios (default 0: none; None: all);
    ``on_progress(judged, cases)`` as the judgments come
    back; then, with ``agreement`` > 0, one line of agreement with the human labels of that many
    held-out conversations of the shipped labelled set (:func:`harness.cli.agreement.heldout_line`)."""
    from harness.selfscore.sanity import complexity_pairs_for, run_sanity
    complexity = complexity_pairs_for(pairs)
    solved = pairs if solved is None else solved
    outcome = pairs if outcome is None else outcome
    profile = runtime.profile
    console.print(f"Method profile {profile.name} (aids on: {', '.join(profile.aids_on()) or 'none'}); "
                  f"scores read: {runtime.config.scoring.score_reading}")
    console.print(f"Judge sanity check on {pairs} helpfulness pairs, {complexity} complexity "
                  f"pairs, {solved or 'all'} solved-check conversations, {outcome or 'all'} "
                  "simulated-user scenarios" + (f", {turns or 'all'} helpfulness pairs inside "
                                                "conversations" if turns != 0 else "")
                  + (f", {stability or 'all'} messages judged repeatedly" if stability != 0 else "")
                  + (f", {personas or 'all'} simulated-user persona scenarios" if personas != 0 else "") + " ...")
    # reasons on (unless scoring.judge_reasons says otherwise): a sanity report is read by a person
    report = await run_sanity(runtime.structured_judge("judge", True), runtime.structured_judge("complexity", True),
                              pairs, complexity, runtime.config.run.concurrency,
                              solved=solved or None, outcome=outcome or None,
                              judges=runtime.turn_judges(reasons_default=True), user=runtime.simulated_user(),
                              turns=turns, stability=stability, personas=personas,
                              on_progress=on_progress)
    lines = report.lines()
    if agreement:
        from harness.cli.agreement import heldout_line
        lines.insert(1, await heldout_line(runtime, agreement))
    print("\n".join(lines), flush=True)
    return lines


def cmd_runs(args: argparse.Namespace) -> int:
    """``deskbench runs``: print a line per stored run (id, kind, status, completed/total, dataset,
    method profile, created) and, under a run with a solved-check, its solved rate with what the
    solved-check is measured to recognise (:func:`harness.study.trust_short`); returns 0."""
    from harness.study import trust_short
    from store import StoreReader
    config = build_config(args)
    reader = StoreReader(config.store)
    rows = reader.runs()
    if not rows:
        out.print(f"No runs in {config.store}.")
    for r in rows:
        profile = json.loads(r["profile_json"]).get("profile") if r.get("profile_json") else "unrecorded"
        trials = (json.loads(r["config_json"] or "{}").get("run") or {}).get("trials") or 1
        out.print(f"{r['id']}  {r['kind']}  {r['status']}  {r['n_completed']}/{r['n_interactions']} "
                  f"interactions{f' ({trials} trials per task)' if trials > 1 else ''}  "
                  f"dataset={r['dataset']}  profile={profile}  created={r['created_at']}", highlight=False)
        if "noisytoolbench" not in r["kind"]:  # NoisyToolBench has no solved-check
            solved = [bool(s["figures"].get("solved")) for s in reader.scores(r["id"])]
            rate = f"solved {sum(solved)}/{len(solved)} ({sum(solved) / len(solved):.0%})" if solved else "solved n/a"
            out.print(f"    {rate}; {trust_short(r)}", highlight=False)
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    """``deskbench rescore RUN``: recompute a run's figures from the stored rows (no LLM call) and
    print how many changed, the mean final score and the profile they were computed on; ``--raw``
    (or ``--profile paper``) reads the judge's own scores, ``--profile embedded`` applies the
    helpfulness bounds to them; returns 0."""
    from harness.selfscore.figures import profile_label, rescore_run
    from harness.selfscore.scoring import summarize
    from harness.study.trials import pass_k_figures
    from store import StoreReader, StoreWriter
    config = build_config(args)
    reader = StoreReader(config.store)
    run = reader.run(args.run)
    variant = ("judge-only" if args.raw or args.profile == "paper"
               else "bounded" if args.profile == "embedded" else "stored")
    before = {s["interaction_id"]: s["figures"] for s in reader.scores(run["id"])}
    figures = rescore_run(reader, StoreWriter(config.store), args.run, args.formula, variant)
    changed = sum(1 for f in figures if before.get(f["interaction_id"]) not in (None, f))
    s = summarize(figures)
    mean = s["mean_final_score"]
    label = profile_label(run, variant)
    out.print(f"Rescored {len(figures)} interactions of {args.run} from stored rows (no LLM calls); "
              f"{changed} changed. Mean final score: {mean if mean is None else round(mean, 2)} "
              f"(profile {label}).", highlight=False)
    over_trials = pass_k_figures(figures)
    if over_trials["trials"][0] > 1:
        out.print(f"Over {over_trials['trials'][0]}+ trials of {over_trials['tasks']} tasks: "
                  + ", ".join(f"pass^{k} {p:.3f}" for k, p in zip(over_trials["k"], over_trials["pass_hat"]))
                  + f"; verdict flips on {len(over_trials['flipped'])} task(s) "
                  f"(share {over_trials['flip_share']:.2f}).", highlight=False)
    kept = [n for n, a in ((run.get("profile") or {}).get("aids") or {}).items()
            if a.get("on") and n != "helpfulness_bounds"]
    if variant != "stored" and kept:
        out.print(f"Not undone (they shaped what the judge read or decided before it was asked; "
                  f"`deskbench rejudge {args.run} --profile paper` judges again without them): "
                  + ", ".join(kept), highlight=False)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``deskbench export RUN``: write the run as JSONL and/or CSV (``--format``), print each file's
    path; returns 0."""
    from harness.study.export import export_run
    from store import StoreReader
    config = build_config(args)
    reader = StoreReader(config.store)
    run = reader.run(args.run)
    files = export_run(reader, run["id"], Path(args.out or Path(config.store).parent / run["id"]),
                       tuple(args.format.split(",")))
    for f in files:
        out.print(str(f))
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    """``deskbench score selfscore|noisytoolbench``: score transcripts made elsewhere into ``--out``
    (a judge fills missing fields unless ``--no-judge``), print the summary as JSON; returns 0."""
    from harness.compose import Runtime
    from harness.selfscore.transcripts import score_transcripts
    config = build_config(args)
    runtime = None if args.no_judge else Runtime(config)
    unit = "cases" if args.benchmark == "noisytoolbench" else "interactions"
    try:
        # a bar only when it judges (--no-judge reads and computes, quickly)
        with counting(f"judging {unit}", args.quiet or args.no_judge, console) as on_progress:
            if args.benchmark == "noisytoolbench":
                from harness.models.embeddings import embedder_for
                from harness.ntb.transcripts import score_ntb_transcripts
                summary = score_ntb_transcripts(args.transcripts, args.out, runtime, no_judge=args.no_judge,
                                                threshold=args.threshold, a2_method=args.a2_method,
                                                embedder=embedder_for(args.embedding_model),
                                                ask_match=args.ask_match,
                                                concurrency=config.run.concurrency, on_progress=on_progress)
            else:
                summary = score_transcripts(args.transcripts, args.out, runtime, no_judge=args.no_judge,
                                            formula=args.formula or config.scoring.formula,
                                            weights=config.scoring.weights,
                                            concurrency=config.run.concurrency, on_progress=on_progress)
    finally:
        if runtime:
            runtime.close()
    out.print(json.dumps(summary, indent=2, default=str))
    return 0


def cmd_sanity(args: argparse.Namespace) -> int:
    """``deskbench sanity``: run the judges' and the simulated user's sanity sets and print the
    report; returns 0."""
    from harness.compose import Runtime
    config = build_config(args)
    with Runtime(config) as runtime, counting("judge sanity check", args.quiet, console) as on_progress:
        asyncio.run(_sanity(runtime, args.pairs, args.solved, args.outcome, on_progress, args.turns or None,
                            args.stability or None, args.agreement, args.personas or None))
    return 0


def cmd_rejudge(args: argparse.Namespace) -> int:
    """``deskbench rejudge RUN``: judge a stored run's conversations again (``--role`` overrides,
    ``--repeats`` times) as new runs, printing each run's report (and, repeated, the run ids); returns 0."""
    from harness.compose import Runtime
    from harness.selfscore.batch import SelfScoreBatch
    from harness.selfscore.rejudge import create_rejudge_run, rejudge_config, replays
    from store import StoreReader, StoreWriter

    store = args.store or build_config(args).store
    reader = StoreReader(store)
    source = reader.run(args.run)
    roles = role_overrides(args.role)
    todo = replays(reader, source)
    n_turns = max(r.n_turns for r in todo)
    run_ids = []
    for repeat in range(args.repeats):
        overrides = aid_overrides(args.aid)
        reading = scoring_flags(args, ("score_reading", "judge_reasons"))  # else the source run's
        if reading:
            overrides["scoring"] = {**overrides.get("scoring", {}), **reading}
        config = rejudge_config(source, roles, repeat, n_turns, args.profile, overrides)
        config.store = store
        config.run.limit = len(todo)
        if args.concurrency:
            config.run.concurrency = args.concurrency

        async def session(runtime, on_progress):
            batch = SelfScoreBatch(runtime, StoreWriter(store), StoreReader(store), on_progress)
            run_id = create_rejudge_run(batch, source, todo)
            return run_id, await batch.run(run_id)

        with Runtime(config) as runtime:
            console.print(f"Re-judging {len(todo)} conversations of {source['id']} "
                          f"as {config.run.name} (repeat {repeat + 1}/{args.repeats}) ...")
            with progress_bar(args.quiet, console) as bar:
                task = bar.add_task("starting", total=len(todo))
                run_id, progress = asyncio.run(session(runtime, progress_printer(bar, task)))
        run_ids.append(run_id)
        finish_report(config, run_id, progress, None, None)
    if len(run_ids) > 1:
        print("Repeated runs: " + " ".join(run_ids))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """``deskbench compare RUNS...``: statistics across runs; prints the summary and the path of the
    HTML report; returns 0."""
    from harness.study.compare import compare
    from store import StoreReader
    config = build_config(args)
    reader = StoreReader(config.store)
    out_dir = Path(args.out or Path(config.store).parent / "compare")
    path, summary = compare(reader, args.runs, out_dir)
    print(summary)
    print(f"HTML report: {path.resolve()}")
    return 0


def add_stored_run_commands(sub) -> None:
    """Add the commands over stored runs and transcripts: ``runs``, ``rescore``, ``export``,
    ``score``, ``rejudge`` and ``compare``."""
    p = sub.add_parser("runs", help="list the runs in the store")
    add_config_args(p)
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("rescore", help="recompute every figure of a run from the store (no LLM calls)")
    add_config_args(p)
    p.add_argument("run", help="run id or name")
    p.add_argument("--formula", choices=["paper", "agent_only"], help="final-score formula")
    p.add_argument("--raw", action="store_true", help="the judge's own scores, the post-processing "
                   "aids (helpfulness bounds) undone; same as --profile paper (--profile embedded "
                   "applies the bounds; neither: the scores as stored)")
    # a stored run is rescored as it was scored unless a flag says otherwise
    stated_default(p, "--formula", "the run's own scoring.formula")
    stated_default(p, "--profile", "the scores as stored")
    p.set_defaults(func=cmd_rescore)

    p = sub.add_parser("export", help="export a run as JSONL (per interaction, per turn) and CSV")
    add_config_args(p)
    p.add_argument("run", help="run id or name")
    p.add_argument("--out", help="output folder")
    p.add_argument("--format", default="jsonl,csv", help="jsonl, csv or jsonl,csv")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("score", help="score transcripts made elsewhere")
    p.add_argument("benchmark", choices=["selfscore", "noisytoolbench"])
    add_config_args(p)
    p.add_argument("--transcripts", required=True, help="JSONL, one interaction per line (docs/data-formats.md)")
    p.add_argument("--out", required=True, help="output: JSONL (selfscore) or CSV (noisytoolbench)")
    # score reads these flags, not the config's ntb section: the config's defaults, as defaults
    p.add_argument("--threshold", type=float, default=config_default("ntb.threshold"),
                   help="noisytoolbench: question-match threshold")
    p.add_argument("--a2-method", default=config_default("ntb.a2_method"), choices=["exact-set", "llm-judge"],
                   help="noisytoolbench: A2 (calls) by exact set or by the judge")
    p.add_argument("--embedding-model", default=config_default("ntb.embedding_model"),
                   choices=["minilm", "paraphrase-minilm-l3"], help="noisytoolbench: question-match embeddings")
    p.add_argument("--ask-match", default=config_default("ntb.ask_match"), choices=["message", "question"],
                   help="noisytoolbench: compare the whole asking message (thought + question, "
                        "official) or the question alone")
    p.add_argument("--no-judge", action="store_true", help="never call a judge; missing fields are errors")
    p.add_argument("--formula", choices=["paper", "agent_only"], help="selfscore: final-score formula")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    config_options(p, SCORE_OPTIONS)
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("rejudge", help="judge a stored run's conversations again with other judges "
                       "(no conversation is re-run)")
    add_config_args(p)
    p.add_argument("run", help="run id or name")
    p.add_argument("--repeats", type=int, default=1,
                   help="re-judge K times (judge seed + k) to measure judge reliability")
    p.add_argument("--concurrency", type=int, help="conversations judged at once")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    # a re-judging run starts from the source run's stored config
    stated_default(p, "--concurrency", "the source run's run.concurrency")
    stated_default(p, "--profile", "the source run's method profile")
    p.set_defaults(func=cmd_rejudge)

    p = sub.add_parser("compare", help="ANOVA, Tukey HSD, Mann-Whitney U, judge agreement and "
                       "reliability, weight sensitivity across runs; HTML report with plots")
    add_config_args(p)
    p.add_argument("runs", nargs="+", help="run ids or names, or study ids (a study's runs); one run gives "
                   "its distributions only. People (a live study) and the simulated user over one task "
                   "set are also set side by side, paired by task")
    p.add_argument("--out", help="folder for report.html (default next to the store, compare/)")
    p.set_defaults(func=cmd_compare)


def add_sanity_command(sub) -> None:
    """Add ``sanity``: the judges' and the simulated user's sanity sets."""
    p = sub.add_parser("sanity", help="can the judges tell helpful from useless, solved from unsolved, "
                       "and the simulated user a fix from a non-fix?")
    add_config_args(p)
    p.add_argument("--pairs", type=int, default=12,
                   help="helpfulness pairs (max 12); complexity pairs: all 9 with 12, else half")
    p.add_argument("--solved", type=int, default=0, metavar="N",
                   help="solved-check conversations, balanced solved/unsolved (default 0: all 26)")
    p.add_argument("--outcome", type=int, default=0, metavar="N",
                   help="simulated-user outcome scenarios, balanced fix/no fix (default 0: all 22)")
    p.add_argument("--turns", type=int, default=0, metavar="N",
                   help="helpfulness pairs inside conversations, agent and user messages (default 0: all 15)")
    p.add_argument("--stability", type=int, default=0, metavar="N",
                   help="messages judged 5 times each at once, to report the spread of the scores (default 0: all 4)")
    p.add_argument("--personas", type=int, default=0, metavar="N",
                   help="simulated-user persona scenarios, one per persona (default 0: all 5)")
    p.add_argument("--agreement", type=int, default=12, metavar="N",
                   help="held-out conversations of the shipped human-labelled set judged for the agreement "
                   "line: the shortest of each class, balanced solved/unsolved (0: none; `deskbench agreement` "
                   "reports all)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sanity)
