"""``deskbench ntb ...``: NoisyToolBench runs, exports and paired comparisons."""
from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from harness.cli.agent_options import add_agent_options, agent_overrides
from harness.cli.common import add_config_args, build_config, console
from harness.cli.defaults import config_options
from harness.cli.progress import progress_bar
from harness.config import EXTERNAL_AGENTS, Config, ConfigError

NTB_AGENTS = ("plain", "http", "python", "openai")
"""``ntb run --agent``: the built-in tool-using agent (``plain``: the agent role with ``--protocol``
and ``--agent-variant``) or the team's own through an adapter that passes the case's tools on
(``harness.ntb.external_agent.NTB_ADAPTERS``)."""


def ntb_config(args: argparse.Namespace) -> Config:
    """The config of ``ntb run``'s flags (for ``--resume RUN``: the stored run's). Shared by
    ``ntb run`` and ``ray ntb``."""
    from store import StoreReader

    agent = agent_overrides(args)
    if args.resume:
        store = args.store or build_config(args).store
        config = Config.model_validate(StoreReader(store).run(args.resume)["config"])
        if args.concurrency:
            config.run.concurrency = args.concurrency
        if agent.get("headers"):  # never stored: a resumed run is given them again
            config.agent.headers = {**config.agent.headers,
                                    **config.agent.model_validate({"headers": agent["headers"]}).headers}
    else:
        if getattr(args, "agent", None) in EXTERNAL_AGENTS and (args.protocol or args.agent_variant):
            raise ConfigError(f"--protocol and --agent-variant set the built-in agent; --agent {args.agent} "
                              "is your own agent (docs/agents.md, NoisyToolBench: tools in the contract).")
        ntb = {k: v for k, v in {"categories": args.category, "ids": args.case, "per_category": args.per_category,
                                 "protocol": args.protocol, "threshold": args.threshold,
                                 "a2_method": args.a2_method, "user": args.user,
                                 "max_steps": args.max_steps, "agent_variant": args.agent_variant,
                                 "embedding_model": args.embedding_model, "ask_match": args.ask_match,
                                 "api_fallback": args.api_fallback}.items() if v is not None}
        if args.no_api_simulator:
            ntb["api_simulator"] = False
        config = build_config(args, {"concurrency": args.concurrency, "name": args.name, "trials": args.trials,
                                     "seed": args.seed, "agent": getattr(args, "agent", None)},
                              {"ntb": ntb, **({"agent": agent} if agent else {})})
    return config


def cmd_ntb_run(args: argparse.Namespace) -> int:
    """``deskbench ntb run``: run (or ``--resume``) NoisyToolBench cases, then export the run and
    print its tables. Returns 0, 3 when cases failed (with the resume command), 130 when interrupted."""
    from harness.compose import Runtime
    from harness.ntb.batch import arun_ntb

    config = ntb_config(args)
    console.print(f"[bold]deskbench[/] NoisyToolBench: store [cyan]{config.store}[/]")
    with Runtime(config) as runtime:
        with progress_bar(args.quiet, console) as bar:
            task = bar.add_task("starting", total=None)

            def update(p):
                errors = f" | agent errors {p.agent_errors}" if p.agent_errors else ""
                bar.update(task, completed=p.done + p.failed, total=p.total,
                           description=f"cases done {p.done} | failed {p.failed}{errors} | steps {p.turns}")
            try:
                run_id, progress = asyncio.run(arun_ntb(runtime, args.resume, update))
            except KeyboardInterrupt:
                console.print("[yellow]Interrupted.[/] Every finished step is stored; resume with "
                              f"`deskbench ntb run --store {config.store} --resume RUN`.")
                return 130
    ntb_finish(config, run_id, args.out)
    if progress.failed:
        print(f"{progress.failed} case(s) failed; finish them with "
              f"`deskbench ntb run --store {config.store} --resume {run_id}`.")
        return 3
    return 0


def ntb_finish(config: Config, run_id: str, out_dir: str | None) -> None:
    """Export a finished run (cases.csv, transcripts, summary) and print its tables and paths."""
    from harness.ntb.report import METRICS, agent_error_lines, export_run, run_rows, text_tables
    from harness.study.trial_report import pass_k_lines
    from store import StoreReader

    reader = StoreReader(config.store)
    files = export_run(reader, run_id, Path(out_dir) if out_dir else Path(config.store).parent / run_id)
    rows = run_rows(reader, run_id)
    print(text_tables(rows))
    print("\n".join(pass_k_lines(rows, METRICS)))
    for line in agent_error_lines(reader, run_id):
        print(line)
    print(f"Store:   {Path(config.store).resolve()}\nRun:     {run_id}\nExports: "
          + ", ".join(str(f.resolve()) for f in files))


def cmd_ntb_export(args: argparse.Namespace) -> int:
    """``deskbench ntb export RUN``: write cases.csv, transcripts and summary, print each path and
    the run's tables; returns 0."""
    from harness.ntb.report import export_run, run_rows, text_tables
    from store import StoreReader
    config = build_config(args)
    reader = StoreReader(config.store)
    run = reader.run(args.run)
    for f in export_run(reader, run["id"], Path(args.out or Path(config.store).parent / run["id"])):
        print(f)
    print(text_tables(run_rows(reader, run["id"])))
    return 0


def cmd_ntb_compare(args: argparse.Namespace) -> int:
    """``deskbench ntb compare A B``: print each metric's rates on the paired cases with McNemar's
    exact p (Re: the two means); returns 0."""
    from harness.ntb.report import METRICS, compare_runs, run_rows
    from harness.study.noise import compare_trials, noise_lines
    from store import StoreReader
    config = build_config(args)
    reader = StoreReader(config.store)
    a, b = reader.run(args.run_a), reader.run(args.run_b)
    print(f"A = {a['id']}\nB = {b['id']}")
    rows_a, rows_b = run_rows(reader, a["id"]), run_rows(reader, b["id"])
    noise = compare_trials({"A": rows_a, "B": rows_b}, METRICS)
    if not noise["single_trial"]:  # McNemar pairs one outcome per case: trial 1 of each
        print("McNemar on trial 1 of each case; the noise floor over all trials follows.")
        rows_a, rows_b = ([r for r in rows if (r.get("trial") or 1) == 1] for rows in (rows_a, rows_b))
    for row in compare_runs(rows_a, rows_b):
        if row["metric"] == "Re":
            print(f"Re    mean A {row['mean_a']}, mean B {row['mean_b']}")
        elif row["n"]:
            print(f"{row['metric']}    A {row['rate_a']:.3f}  B {row['rate_b']:.3f}  on {row['n']} paired cases "
                  f"({row['excluded']} left out); only A {row['only_a']}, only B {row['only_b']}; "
                  f"McNemar exact p = {row['p']:.4g}")
        else:
            print(f"{row['metric']}    no paired cases")
    print("\n".join(noise_lines(noise)))
    return 0



NTB_OPTIONS = {"--category": "ntb.categories", "--case": "ntb.ids", "--per-category": "ntb.per_category",
               "--protocol": "ntb.protocol", "--agent-variant": "ntb.agent_variant",
               "--embedding-model": "ntb.embedding_model", "--ask-match": "ntb.ask_match",
               "--api-fallback": "ntb.api_fallback", "--threshold": "ntb.threshold",
               "--a2-method": "ntb.a2_method", "--max-steps": "ntb.max_steps", "--user": "ntb.user",
               "--no-api-simulator": "ntb.api_simulator", "--concurrency": "run.concurrency",
               "--agent": "run.agent",
               "--trials": "run.trials", "--seed": "run.seed",
               "--name": ("run.name", "from the models, <agent>[+variant]_ntb_<judge>")}
"""The config keys of ``ntb run``'s options (``ray ntb`` shares them)."""


def add_ntb_commands(sub) -> None:
    """Register ``ntb run``, ``ntb export`` and ``ntb compare`` on the CLI's subparsers."""
    ntb = sub.add_parser("ntb", help="NoisyToolBench: tool-using agents that must ask (docs/noisytoolbench.md)")
    ntb_sub = ntb.add_subparsers(dest="ntb_command", required=True)
    p = ntb_sub.add_parser("run", help="run (or resume) NoisyToolBench cases")
    add_config_args(p)
    p.add_argument("--category", action="append", choices=["IMKI", "IMR", "IwE", "IBTC"],
                   help="category to run (repeatable)")
    p.add_argument("--case", action="append", help="a query id, or a key like IMKI/3 (repeatable)")
    p.add_argument("--per-category", type=int, help="first N cases of each category")
    p.add_argument("--agent", choices=NTB_AGENTS,
                   help="plain: the harness's tool-using agent on the agent role (--protocol, --agent-variant); "
                        "http, python, openai: your own agent, given the case's tools in the request "
                        "(--agent-url / --agent-target; docs/agents.md, NoisyToolBench: tools in the contract)")
    add_agent_options(p, judges=False)
    p.add_argument("--protocol", choices=["auto", "text", "native"],
                   help="agent protocol (auto: JSON text protocol for embedded models, tool calls otherwise)")
    p.add_argument("--agent-variant", choices=["current", "awn", "no-ask"],
                   help="agent prompt: current, awn (the paper's Ask-when-Needed), "
                        "no-ask (asking not offered: the paper's runs without asking)")
    p.add_argument("--embedding-model", choices=["minilm", "paraphrase-minilm-l3"],
                   help="question-match embeddings (paraphrase-minilm-l3: pip install -e '.[ntb-embeddings]')")
    p.add_argument("--ask-match", choices=["message", "question"],
                   help="what is compared with the anticipated question: the whole asking message "
                        "(as the official code) or the question alone")
    p.add_argument("--api-fallback", choices=["examples-first", "simulator-first"],
                   help="after a recorded response: response example/template first, "
                        "or the api_simulator role first")
    p.add_argument("--threshold", type=float, help="question-match cosine threshold (official code 0.4, paper 0.8)")
    p.add_argument("--a2-method", choices=["exact-set", "llm-judge"], help="A2 (calls) by exact set or by the judge")
    p.add_argument("--max-steps", type=int, help="steps per case (official: 12)")
    p.add_argument("--user", choices=["embedding", "llm"], help="llm: the user words the clarification")
    p.add_argument("--no-api-simulator", action="store_true",
                   help="never let the api_simulator role simulate an API (no recorded response, "
                        "no example: an error observation)")
    p.add_argument("--concurrency", type=int, help="cases at once")
    p.add_argument("--name", help="run name")
    p.add_argument("--trials", type=int, help="play each case K times, each trial with its own seeds "
                   "for every sampled role (pass^k of A1, A2, A3 and the flip share)")
    p.add_argument("--seed", type=int, help="seed of the run (trials after the first derive their seeds from it)")
    p.add_argument("--resume", metavar="RUN", help="finish an interrupted run (id or name) from the store")
    p.add_argument("--out", help="folder for the exports")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    config_options(p, NTB_OPTIONS)
    p.set_defaults(func=cmd_ntb_run)
    p = ntb_sub.add_parser("export", help="cases.csv (official columns), transcripts.jsonl, summary.json")
    add_config_args(p)
    p.add_argument("run")
    p.add_argument("--out")
    p.set_defaults(func=cmd_ntb_export)
    p = ntb_sub.add_parser("compare", help="two runs on the same cases: rates and McNemar's test per metric")
    add_config_args(p)
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.set_defaults(func=cmd_ntb_compare)
