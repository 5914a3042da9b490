"""``deskbench ray ...``: a SelfScore or NoisyToolBench run split into shards that run as Ray
tasks (one machine or a cluster), merged into one store; and ``ray merge`` (docs/scale-out.md)."""
from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.common import finish_report, add_config_args, build_config, console, out, run_config
from harness.cli.defaults import config_options
from harness.cli.ntb import ntb_config, ntb_finish
from harness.cli.progress import progress_bar


def _shard_line(p) -> str:
    states = [s.get("state", "waiting") for s in p.shards.values()]
    mean = f"{p.mean_final:.1f}" if p.mean_final is not None else "-"
    return (f"shards {states.count('finished')}/{len(states) or '?'} finished, {p.retries} retried | "
            f"done {p.done} | failed {p.failed} | turns {p.turns} ({p.turns_per_s * 60:.1f}/min) | "
            f"mean final {mean}")


def _scale(args: argparse.Namespace, config, benchmark: str, dataset=None):
    from harness.scale.ray_tasks import run_on_ray

    if getattr(args, "sanity", 0):
        raise ValueError("--sanity is not available with `ray run`; run `deskbench sanity` first.")
    console.print(f"[bold]deskbench[/] {benchmark} on Ray, {args.shards} shard(s), "
                  f"{'cluster ' + args.address if args.address else 'a local Ray instance'}: "
                  f"store [cyan]{config.store}[/]")
    with progress_bar(args.quiet, console) as bar:
        task = bar.add_task("starting Ray and the shards", total=None)

        def update(p):
            bar.update(task, completed=p.done + p.failed, total=p.total, description=_shard_line(p))
        try:
            result = run_on_ray(config, benchmark, args.shards, dataset=dataset, resume=args.resume,
                                address=args.address, shard_dir=args.shard_dir, worker_dir=args.worker_dir,
                                max_retries=args.max_retries, cpus_per_shard=args.cpus_per_shard,
                                on_progress=update)
        except KeyboardInterrupt:
            console.print("[yellow]Interrupted.[/] Every finished turn is in the shard stores; `deskbench "
                          f"ray {'ntb' if benchmark == 'ntb' else 'run'} --store {config.store} --resume RUN` "
                          "merges them and finishes the run (see `deskbench runs`).")
            return None
    for m in result.merges:
        console.print(f"merged {m.line()}", highlight=False, soft_wrap=True)
    for e in result.errors:
        console.print(f"[yellow]shard problem:[/] {e}", highlight=False, soft_wrap=True)
    console.print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in result.seconds.items()))
    return result


def _resume_hint(config, run_id: str, n_failed: int, command: str) -> int:
    out.print(f"{n_failed} interaction(s) not completed; finish them with "
              f"`deskbench {command} --store {config.store} --resume {run_id}`.")
    return 3


def cmd_ray_run(args: argparse.Namespace) -> int:
    """``deskbench ray run``: a SelfScore run (``run``'s options) as Ray shards merged into the store,
    then ``run``'s report. Returns 0, 3 when interactions failed or are left unfinished, 130 when
    interrupted."""
    config, dataset = run_config(args)
    result = _scale(args, config, "selfscore", dataset)
    if result is None:
        return 130
    rc = finish_report(config, result.run_id, result.progress, None, args.out)
    unfinished = result.progress.total - result.progress.done
    return _resume_hint(config, result.run_id, unfinished, "ray run") if unfinished and not rc else rc


def cmd_ray_ntb(args: argparse.Namespace) -> int:
    """``deskbench ray ntb``: a NoisyToolBench run (``ntb run``'s options) as Ray shards merged into
    the store, then its tables. Returns 0, 3 when cases are left unfinished, 130 when interrupted."""
    config = ntb_config(args)
    result = _scale(args, config, "ntb")
    if result is None:
        return 130
    ntb_finish(config, result.run_id, args.out)
    unfinished = result.progress.total - result.progress.done
    return _resume_hint(config, result.run_id, unfinished, "ray ntb") if unfinished else 0


def cmd_ray_merge(args: argparse.Namespace) -> int:
    """``deskbench ray merge SHARDS...``: merge shard stores into ``--into`` (default the config's
    store), printing a line per source store; returns 0."""
    from store.merge import merge_stores
    target = args.into or build_config(args).store
    for report in merge_stores(args.shards, target):
        out.print(report.line(), highlight=False)
    out.print(f"Merged {len(args.shards)} store(s) into {Path(target).resolve()}; `deskbench rescore RUN "
              f"--store {target}` recomputes every figure from the merged rows.", highlight=False)
    return 0


def _scale_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shards", type=int, default=2, help="shards (Ray tasks) to split the run into (default 2)")
    p.add_argument("--address", help="Ray cluster to use: auto (the one `ray start` began on this machine) "
                   "or HOST:PORT; default: start a local Ray instance")
    p.add_argument("--shard-dir", help="folder for the shard stores (default <store dir>/shards/<run id>)")
    p.add_argument("--worker-dir", help="folder for the shard stores on other machines (default: the "
                   "same path as --shard-dir)")
    p.add_argument("--max-retries", type=int, default=2,
                   help="times Ray re-runs a shard whose worker died or whose interactions failed; "
                        "a retry resumes from the shard store (default 2)")
    p.add_argument("--cpus-per-shard", type=float, default=1.0,
                   help="CPUs Ray reserves per shard (raise it for the embedded model; default 1)")


def _subparser_of(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return action.choices[name]
    raise LookupError(f"no '{name}' command to copy the options of")


def add_scale_commands(sub) -> None:
    """Register ``ray run``, ``ray ntb`` and ``ray merge``; ``ray run`` and ``ray ntb`` take every
    option of ``run`` and ``ntb run`` (register those first)."""
    ray = sub.add_parser("ray", help="scale out on Ray: a run split into shards on one machine or a "
                         "cluster, merged into one store (docs/scale-out.md)")
    ray_sub = ray.add_subparsers(dest="ray_command", required=True)
    run = sub.choices["run"]
    p = ray_sub.add_parser("run", parents=[run], conflict_handler="resolve",
                           help="a SelfScore run (the options of `deskbench run`) as Ray shards")
    _scale_args(p)
    p.set_defaults(func=cmd_ray_run)
    ntb_run = _subparser_of(sub.choices["ntb"], "run")
    p = ray_sub.add_parser("ntb", parents=[ntb_run], conflict_handler="resolve",
                           help="a NoisyToolBench run (the options of `deskbench ntb run`) as Ray shards")
    _scale_args(p)
    p.set_defaults(func=cmd_ray_ntb)
    p = ray_sub.add_parser("merge", help="merge shard stores into one store (idempotent; refuses "
                           "stores of another run or schema)")
    add_config_args(p)
    p.add_argument("shards", nargs="+", help="shard stores (shard-<k>.sqlite)")
    p.add_argument("--into", help="the store to merge into (else --store, else the config's store)")
    config_options(p, {"--into": "store"})
    p.set_defaults(func=cmd_ray_merge)
