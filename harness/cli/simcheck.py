"""``deskbench simcheck``: the simulated user against real askers (issue 42, docs/simcheck.md).

Loads the real reply points of a task file (``harness.simcheck``), plays the simulated user of
each ``--user-model`` and ``--persona`` at every point (cached in ``--cache``, so a rerun only
plays what changed), and prints the measures per user model, persona and part (tune and the
frozen held-out part apart); ``--json FILE`` writes the summary.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.cli.common import add_config_args, build_config, console, out
from harness.cli.defaults import config_options, stated_default
from harness.cli.progress import counting

DEFAULT_DATASET = "ubuntu_irc_troubleshooting"


def _runtime(config):
    """The runtime of one user model (tests replace it to hand in fake chat models)."""
    from harness.compose import Runtime
    return Runtime(config)


def user_key(runtime) -> str:
    """What decides the simulated user's replies besides the point: its model and sampling,
    the method profile's simulator aids with their versions (a changed rule, threshold or logic
    plays the points again), its checks and the prompts' version."""
    from harness.selfscore import PROMPT_VERSION
    spec = runtime.config.role("user")
    aids = ("user_outcome", "user_regenerations", "user_fallback")
    return json.dumps({"model": spec.model, "base_url": spec.base_url, "temperature": spec.temperature,
                       "seed": spec.seed, "max_tokens": spec.max_tokens, "prompts": PROMPT_VERSION,
                       "profile": runtime.profile.name, "user_checks": runtime.config.run.user_checks,
                       **{a: str(runtime.profile.value(a)) for a in aids},
                       "versions": {a: runtime.aid_versions.get(a) for a in aids}}, sort_keys=True)


def _play(args, config, points, personas: list[str], cache: Path) -> dict:
    """Play every persona of one user model at every point; the records per (model, persona)."""
    import asyncio

    from harness.simcheck.run import problem_statements, simulate_points
    runs = {}
    with _runtime(config) as runtime:
        model = config.role("user").model
        statements = asyncio.run(problem_statements(
            lambda: runtime.client("extractor"), config.role("extractor").model, points, cache,
            guard=runtime.profile.value("preprocessing_guard")))
        users: list = []  # built on the first reply the cache does not hold: a cached rerun starts no model

        def user_of():
            if not users:
                users.append(runtime.simulated_user())
            return users[0]
        key = user_key(runtime)
        for persona in personas:
            console.print(f"Simulated user {model}, persona {persona}: {len(points)} points ...")
            with counting("points", args.quiet, console) as on_progress:
                runs[(model, persona)] = asyncio.run(simulate_points(
                    user_of, points, persona, key, statements, cache, config.run.concurrency, on_progress))
    return runs


def cmd_simcheck(args: argparse.Namespace) -> int:
    """``deskbench simcheck``: print (``--json``: also write) the fidelity figures; returns 0."""
    from harness.simcheck.points import real_points
    from harness.simcheck.report import simcheck_lines, simcheck_summary
    from harness.tasks.datasets import load_dataset
    from harness.tasks.personas import PERSONAS

    personas = args.persona or ["cooperative"]
    unknown = [p for p in personas if p not in PERSONAS]
    if unknown:
        raise ValueError(f"--persona {unknown[0]!r}: choose from {', '.join(PERSONAS)}")
    dataset = load_dataset(args.dataset)
    everything = real_points(dataset.tasks, args.facts, "all", source=str(dataset.path))
    points = [p for p in everything if args.split == "all" or p.split == args.split]
    if args.limit:
        points = points[:args.limit]
    if not points:
        raise ValueError(f"{dataset.path} has no real reply point in split {args.split!r}; pick another --split.")
    followups_of = {t.id: list(t.followups) for t in dataset.tasks}
    runs: dict = {}
    for model in args.user_model or [None]:
        roles = list(args.role or []) + ([f"user.model={model}"] if model else [])
        config = build_config(argparse.Namespace(**{**vars(args), "role": roles}),
                              {"concurrency": args.concurrency})
        cache = Path(args.cache) if args.cache else Path(config.store).parent / "simcheck"
        runs.update(_play(args, config, points, personas, cache))
    summary = simcheck_summary(dataset.name, points, runs, followups_of, args.facts, everything, args.split)
    out.print("\n".join(simcheck_lines(summary)), highlight=False, markup=False)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
        out.print(f"Summary: {args.json}", highlight=False)
    return 0


def add_simcheck_command(sub) -> None:
    """Add ``deskbench simcheck``."""
    from harness.tasks.personas import PERSONAS
    p = sub.add_parser("simcheck", help="the simulated user against real askers: at every point where a real "
                       "asker answered a real helper, compare the simulated reply's act, facts and style "
                       "(docs/simcheck.md)")
    add_config_args(p)
    p.add_argument("--dataset", default=DEFAULT_DATASET, help="built-in set or task file with real threads "
                   f"(agent_replies and followups; default: {DEFAULT_DATASET})")
    p.add_argument("--limit", type=int, help="only the first N points (of the split, in file order)")
    stated_default(p, "--limit", "every point")
    p.add_argument("--persona", action="append", choices=PERSONAS,
                   help="persona of the simulated user (repeatable, each reported)")
    stated_default(p, "--persona", "cooperative")
    p.add_argument("--user-model", action="append", metavar="MODEL", help="the user role's model (repeatable, "
                   "each reported; default: the config's user model)")
    p.add_argument("--split", choices=("all", "tune", "heldout"), default="all",
                   help="which points: tune, the frozen held-out part, or all (each part reported apart)")
    p.add_argument("--facts", choices=("before", "all"), default="before",
                   help="facts the simulated user gets at a point: before = only those the real asker had said "
                        "before it (fair); all = every fact of the task, as a batch gives them (default: before)")
    p.add_argument("--cache", help="folder of the cached replies and statements (default: simcheck/ next to the store)")
    p.add_argument("--concurrency", type=int, help="points played at once")
    p.add_argument("--json", help="write the machine-readable summary here")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    config_options(p, {"--concurrency": "run.concurrency"})
    p.set_defaults(func=cmd_simcheck)
