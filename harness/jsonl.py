"""Reading user-supplied JSONL files (plain or gzipped), one object per line, with the line
numbers that error messages need."""
from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from pathlib import Path
from typing import Any


class JsonlError(ValueError):
    """A file that cannot be read as UTF-8 JSONL at all (missing, corrupt gzip, encoding)."""


def read_jsonl(path: Path) -> tuple[list[tuple[int, Any]], list[str], str]:
    """Parse ``path`` line by line.

    Returns:
        ``(rows, problems, sha256)``: ``(line number, parsed value)`` for every non-blank line
        that is valid JSON, ``"line N: not valid JSON (...)"`` for every other one, and the
        SHA-256 of the file as stored.

    Raises:
        JsonlError: the file is missing, a corrupt gzip, or not UTF-8.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise JsonlError(f"{path}: cannot be read ({exc.strerror}).") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise JsonlError(f"{path}: corrupt gzip file ({exc}). Re-create it or use plain JSONL.") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JsonlError(f"{path}: not UTF-8 text (byte {exc.start}). Re-save the file as UTF-8.") from exc
    rows: list[tuple[int, Any]] = []
    problems: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((lineno, json.loads(line)))
        except json.JSONDecodeError as exc:
            problems.append(f"line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})")
    return rows, problems, digest


def json_type(value: Any) -> str:
    """How a JSON value reads in an error message ("a string ("abc")", "a list", "null")."""
    for kind, name in ((bool, "a boolean"), (str, "a string"), (int, "a number"), (float, "a number"),
                       (list, "a list"), (dict, "an object")):
        if isinstance(value, kind):
            return f"{name} ({json.dumps(value)[:40]})" if kind in (str, int, float) else name
    return "null" if value is None else type(value).__name__
