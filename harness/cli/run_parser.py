"""The ``run`` and ``demo`` parsers (one set of options, other defaults; ``ray run`` shares them)
and the trial options every batch command shares (``--trials``, ``--persona``). The commands
themselves are in :mod:`harness.cli.selfscore`."""
from __future__ import annotations

import argparse

from harness.cli.agent_options import EXTERNAL_HELP, add_agent_options
from harness.cli.common import add_config_args
from harness.cli.defaults import config_options
from harness.cli.selfscore import cmd_run
from harness.config import EXTERNAL_AGENTS

RUN_OPTIONS = {"--dataset": "run.dataset", "--limit": "run.limit", "--offset": "run.offset",
               "--max-turns": "run.max_turns", "--concurrency": "run.concurrency", "--seed": "run.seed",
               "--trials": "run.trials", "--persona": "run.persona", "--name": "run.name", "--user": "run.user", "--agent": "run.agent", "--kb": "rag.kb",
               "--formula": "scoring.formula", "--cost-mode": "cost.mode"}
"""The config keys of ``run``'s and ``demo``'s options (``ray run`` shares them)."""

def add_trial_options(p: argparse.ArgumentParser, persona: bool = True) -> None:
    """``--trials K`` (each task played K times, each trial with its own seeds) and, for a
    simulated user, ``--persona`` (``run.trials``, ``run.persona``)."""
    p.add_argument("--trials", type=int, help="play each task K times, each trial with its own seeds "
                   "for every sampled role (pass^k, flip share, noise floor in the report)")
    if persona:
        from harness.tasks.personas import PERSONAS
        p.add_argument("--persona", choices=PERSONAS, help="the simulated user's behaviour (a task's "
                       "own 'persona' field wins)")


def add_run_commands(sub) -> None:
    """Add ``run`` and ``demo`` (the same flags, other defaults) to the subcommands ``sub``."""
    def run_parser(name, help_, limit, max_turns, sanity):
        p = sub.add_parser(name, help=help_, description=help_)
        add_config_args(p)
        p.add_argument("--dataset", help="built-in task set name (ubuntu_irc_troubleshooting, "
                       "ubuntu_irc, lfrqa_technology) or a JSONL task file")
        p.add_argument("--limit", type=int, default=limit, help="number of problems")
        p.add_argument("--offset", type=int, help="skip this many tasks first")
        p.add_argument("--max-turns", type=int, default=max_turns, help="turns per conversation")
        p.add_argument("--concurrency", type=int, help="conversations at once")
        p.add_argument("--seed", type=int, help="seed of the run (trial 1 samples with roles.ROLE.seed; "
                       "later trials with seeds derived from this one)")
        add_trial_options(p)
        p.add_argument("--name", help="run name")
        p.add_argument("--user", choices=["llm", "scripted"], help="LLM-simulated user or each task's "
                       "followups (--agent human: scripted unless given)")
        p.add_argument("--agent", choices=["plain", "rag", "human", *EXTERNAL_AGENTS],
                       help="the paper's plain agent; rag: with knowledge-base passages (--kb); "
                            "human: the human baseline, replaying each task's agent_replies" + EXTERNAL_HELP)
        add_agent_options(p)
        p.add_argument("--kb", help="knowledge base for --agent rag: a task set (name or JSONL)")
        p.add_argument("--formula", choices=["paper", "agent_only"], help="final-score formula")
        p.add_argument("--cost-mode", choices=["none", "total", "split", "per_turn"], help="cost of a turn")
        p.add_argument("--resume", metavar="RUN", help="finish an interrupted run (id or name) from the store")
        p.add_argument("--sanity", type=int, default=sanity, metavar="PAIRS",
                       help="judge sanity check on PAIRS helpful/useless pairs first (0: off)")
        p.add_argument("--out", help="folder for the report and exports (default next to the store)")
        p.add_argument("--quiet", action="store_true",
                       help="no progress bar (none either when stdout is not a terminal)")
        config_options(p, RUN_OPTIONS)
        p.set_defaults(func=cmd_run)

    run_parser("run", "run (or resume) a SelfScore batch", None, None, 0)
    run_parser("demo", "a small offline SelfScore batch with a judge sanity report", 2, 3, 2)
