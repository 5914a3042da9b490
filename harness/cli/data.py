"""``deskbench import`` (real help-desk threads into task files) and ``deskbench models``
(the embedded engine and model files)."""
from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.common import console, out
from harness.cli.progress import counting


def cmd_import(args: argparse.Namespace) -> int:
    """``deskbench import``: a Stack Exchange dump or #ubuntu IRC threads into a task file (``--split``:
    also its knowledge-base and test halves); prints a summary and the files written, returns 0.

    Raises:
        ValueError: no dump folder given, or no question qualified.
    """
    import json as _json
    from harness.tasks.split import split_ids, write_split
    from harness.tasks.stackexchange import import_dump, write_tasks
    from harness.tasks.ubuntu_irc import DEFAULT_PATH, import_ubuntu_irc

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
    """``deskbench models``: print the llama.cpp server binary and each embedded model's state;
    ``--prepare`` assembles and verifies the installed ones (the default model must be). Returns 0."""
    from harness.models.engine import EngineError, find_server_binary
    from harness.models.model_files import EMBEDDED_MODELS, ModelFileError, cache_dir, ensure_model
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
                out.print(f"{key}: not installed ({model.description}; in a clone `pip install -e "
                          f"'.[{model.extra}]'`, installed `pip install 'deskbench[{model.extra}]'`)", markup=False)
        else:
            path = cache_dir() / model.filename
            state = "assembled" if path.exists() else "not assembled (run `deskbench models --prepare`)"
            out.print(f"{key}: {state}; {model.description}")
    return 0


def add_import_command(sub) -> None:
    """Add ``import``: Stack Exchange dumps and #ubuntu IRC threads into task files."""
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


def add_models_command(sub) -> None:
    """Add ``models``: show the embedded engine and models; ``--prepare`` assembles them."""
    p = sub.add_parser("models", help="show the embedded engine and models; --prepare assembles them")
    p.add_argument("--prepare", action="store_true", help="assemble and verify the installed models now")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_models)
