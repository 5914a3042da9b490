"""``python -m harness.aids [--versions | --full | --markdown] [FILE ...]``: every rule set with its version and rules.

With ``--markdown`` the block docs/rules.md holds (``--markdown docs/rules.md`` rewrites that
block in the file); with ``--versions`` only the versions; with ``--full`` each rule's pattern (a word list's words, a
limit's value) and why; with JSONL or text files, each rule's number of matching lines (a JSONL
line counts by its ``content``, ``text`` or ``question`` field).
"""
from __future__ import annotations

import json
import sys

from harness.aids.catalogue import markdown, report, with_markdown


def _texts(paths: list[str]) -> list[str]:
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    obj = json.loads(line)
                except ValueError:
                    obj = line
                if isinstance(obj, dict):
                    obj = obj.get("content") or obj.get("text") or obj.get("question") or ""
                out.append(str(obj))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the rule sets (see the module's docstring); returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    flags = {"--versions", "--full", "--markdown"}
    paths = [a for a in args if a not in flags]
    if "--markdown" in args:
        for path in paths:
            with open(path, encoding="utf-8") as f:
                text = with_markdown(f.read())
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        if not paths:
            print(markdown())
        return 0
    print(report(_texts(paths) if paths else None, show_rules="--versions" not in args, full="--full" in args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
