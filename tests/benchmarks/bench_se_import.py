"""Memory and speed of the Stack Exchange dump import (a script, not a pytest test).

Run from the repository root:

    .venv/bin/python tests/benchmarks/bench_se_import.py                 # ~200 MB dump
    .venv/bin/python tests/benchmarks/bench_se_import.py --sizes 50,200  # two sizes: memory should not grow
    .venv/bin/python -m tests.benchmarks.bench_se_import --quick         # ~20 MB

For each size it writes a synthetic dump in the official format into a temporary folder
(``Posts.xml`` with questions, accepted and other answers with long HTML bodies;
``Comments.xml``), then imports it in a fresh child process (so the figures are the import's
alone) with ``harness.tasks.stackexchange.import_dump`` and prints:

- wall time, rows/s (rows of both files read, Posts.xml counted once) and MB/s;
- peak RSS (``resource.getrusage``) and its growth over the child's RSS before the import;
- tracemalloc peak of a second, traced import (tracemalloc slows Python down, so it is not timed);
- peak memory / dump size, the figure that must stay small for a multi-GB dump.

About 2% of the accepted answers score >= 100 (``--min-score``, the paper's N), so the kept
tasks, which are held in memory as the result, stay a small share of the dump as on a real site.
Always exits 0: the figures are informative.
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path
from time import perf_counter
from xml.sax.saxutils import quoteattr

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

WORDS = ("the disk mount boot kernel driver wifi network install package update fails error log "
         "service config permission user grub partition swap memory cpu firewall dns route").split()


def _html(rng: random.Random, paragraphs: int) -> str:
    parts = []
    for i in range(paragraphs):
        words = " ".join(rng.choice(WORDS) for _ in range(60))
        parts.append(f"<p>{words} &amp; <code>sudo apt {rng.choice(WORDS)}</code></p>")
        if i % 3 == 2:
            parts.append("<pre><code>$ dmesg | tail\n[  1.234] " + " ".join(rng.choice(WORDS) for _ in range(20))
                         + "\n</code></pre>")
    return "\n".join(parts)


def _row(attrs: dict) -> str:
    return "  <row " + " ".join(f"{k}={quoteattr(str(v))}" for k, v in attrs.items()) + " />\n"


def generate_dump(folder: Path, size_mb: float, seed: int = 0) -> dict[str, int]:
    """Write Posts.xml and Comments.xml of about ``size_mb`` MB in total; return row counts."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    target = size_mb * 1e6
    counts = {"questions": 0, "answers": 0, "comments": 0}
    post_id = comment_id = 0
    posts = open(folder / "Posts.xml", "w", encoding="utf-8")
    comments = open(folder / "Comments.xml", "w", encoding="utf-8")
    head = '\ufeff<?xml version="1.0" encoding="utf-8"?>\n'
    posts.write(head + "<posts>\n")
    comments.write(head + "<comments>\n")
    written = 0
    while written < target:
        qid, n_answers = post_id + 1, rng.randint(1, 3)
        answer_ids = list(range(qid + 1, qid + 1 + n_answers))
        post_id = answer_ids[-1]
        accepted = rng.choice(answer_ids) if rng.random() < 0.6 else None
        q = {"Id": qid, "PostTypeId": 1, "CreationDate": "2015-03-01T10:00:00.000", "Score": rng.randint(0, 50),
             "Body": _html(rng, rng.randint(2, 6)), "OwnerUserId": rng.randint(1, 10**6),
             "Title": " ".join(rng.choice(WORDS) for _ in range(8)), "Tags": "|linux|boot|",
             "ContentLicense": "CC BY-SA 3.0"}
        if accepted:
            q["AcceptedAnswerId"] = accepted
        chunk = _row(q)
        for aid in answer_ids:
            score = rng.randint(100, 900) if aid == accepted and rng.random() < 1 / 30 else rng.randint(0, 99)
            chunk += _row({"Id": aid, "PostTypeId": 2, "ParentId": qid, "CreationDate": "2015-03-01T11:00:00.000",
                           "Score": score, "Body": _html(rng, rng.randint(2, 8)),
                           "OwnerUserId": rng.randint(1, 10**6), "ContentLicense": "CC BY-SA 3.0"})
        posts.write(chunk)
        written += len(chunk)
        counts["questions"] += 1
        counts["answers"] += n_answers
        for post in [qid] + answer_ids:
            for _ in range(rng.randint(0, 2)):
                comment_id += 1
                line = _row({"Id": comment_id, "PostId": post, "Score": 0,
                             "Text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 50))),
                             "CreationDate": f"2015-03-02T{rng.randint(10, 23)}:00:00.000",
                             "UserId": q["OwnerUserId"] if rng.random() < 0.4 else rng.randint(1, 10**6)})
                comments.write(line)
                written += len(line)
                counts["comments"] += 1
    posts.write("</posts>\n")
    comments.write("</comments>\n")
    posts.close()
    comments.close()
    return counts


def _rss_mb() -> float:
    """Peak RSS of this process so far, MB (``ru_maxrss`` is KB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1e6 if sys.platform == "darwin" else peak / 1e3


def child(dump: Path, min_score: int, traced: bool) -> None:
    """Import ``dump`` in this (fresh) process and print the figures as JSON."""
    from harness.tasks.stackexchange import import_dump

    before = _rss_mb()
    t0 = perf_counter()
    result = import_dump(dump, min_answer_score=min_score)
    wall = perf_counter() - t0
    figures = {"wall_s": wall, "rss_before_mb": before, "rss_peak_mb": _rss_mb(), "kept": result.kept,
               "questions": result.questions_seen, "answers": result.answers_seen,
               "comments": result.comments_seen, "malformed": result.malformed}
    del result
    if traced:
        tracemalloc.start()
        import_dump(dump, min_answer_score=min_score)
        figures["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    print(json.dumps(figures))


def run_size(size_mb: float, min_score: int, traced: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_se_") as tmp:
        dump = Path(tmp) / "synthetic.stackexchange.com"
        t0 = perf_counter()
        generate_dump(dump, size_mb)
        gen_s = perf_counter() - t0
        file_mb = sum(p.stat().st_size for p in dump.iterdir()) / 1e6
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(dump), "--min-score", str(min_score)]
        if not traced:
            cmd.append("--no-tracemalloc")
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        figures = json.loads(out.strip().splitlines()[-1])
    figures.update(file_mb=file_mb, generate_s=gen_s)
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="200", help="dump sizes in MB, comma-separated (default 200)")
    ap.add_argument("--quick", action="store_true", help="one ~20 MB dump")
    ap.add_argument("--min-score", type=int, default=100, help="min_answer_score (default 100, the paper's)")
    ap.add_argument("--no-tracemalloc", action="store_true", help="skip the traced second import")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.min_score, not args.no_tracemalloc)
        return 0
    sizes = [20.0] if args.quick else [float(s) for s in args.sizes.split(",")]
    print(f"{'dump MB':>8} {'rows':>9} {'kept':>6} {'wall s':>7} {'rows/s':>8} {'MB/s':>6} "
          f"{'RSS peak':>9} {'RSS +':>7} {'tracemalloc':>11} {'peak/size':>9}")
    for size in sizes:
        f = run_size(size, args.min_score, not args.no_tracemalloc)
        rows = f["questions"] + f["answers"] + f["comments"]
        traced = f.get("tracemalloc_peak_mb")
        growth = f["rss_peak_mb"] - f["rss_before_mb"]
        print(f"{f['file_mb']:8.1f} {rows:9d} {f['kept']:6d} {f['wall_s']:7.1f} {rows / f['wall_s']:8.0f} "
              f"{f['file_mb'] / f['wall_s']:6.1f} {f['rss_peak_mb']:7.1f}MB {growth:5.1f}MB "
              f"{(f'{traced:9.1f}MB' if traced is not None else '        -'):>11} "
              f"{max(growth, traced or 0) / f['file_mb']:9.3f}")
    print("RSS +: peak RSS minus the RSS before the import (interpreter and modules loaded). "
          "peak/size: the larger of RSS + and the tracemalloc peak, over the dump's size.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
