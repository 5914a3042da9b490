"""JSONL and output files: reading user-supplied JSONL (plain or gzipped) with the line
numbers that error messages need, and writing any output atomically."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterable, Iterator


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
    for lineno, line in enumerate(text.split("\n"), 1):  # not splitlines: JSON strings may hold U+2028 etc.
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


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path`` for writing; on success it is renamed over
    ``path``, on any error it is removed, so ``path`` is never left half-written.

    Text modes use UTF-8 with no newline translation; missing parent folders are created.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Write ``rows`` as JSONL, atomically; returns the number of rows."""
    count = 0
    with atomic_write(path) as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count
