"""Who gave a human label: ``labelled_by`` on a conversation's and a turn's ``labels``.

- ``maintainers``: written in this project by its maintainers while they built the judges (every
  helpfulness grade of the shipped set, and the ``solved`` labels they decided by reading);
- ``people``: a verdict given by people outside the project: the asker's own words in the real
  thread ("that worked", giving up), an asker's accepted answer, a published annotator set;
- ``unknown``: the default for a label file that does not say (a user's own file keeps working).

:func:`check_label_sources` is run where label files are loaded (``deskbench agreement``);
:func:`rows_labelled_by` keeps the labels of one source so every agreement table can be given per
source (docs/data-formats.md#human-labels).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

LABEL_SOURCES = ("maintainers", "people", "unknown")
DEFAULT_SOURCE = "unknown"
#: the sources the agreement report gives apart (``unknown`` only counts toward all)
REPORTED_SOURCES = ("maintainers", "people")


def label_source(labels: Mapping[str, Any] | None) -> str:
    """The ``labelled_by`` of one labels object (:data:`DEFAULT_SOURCE` when it does not say)."""
    value = (labels or {}).get("labelled_by")
    return DEFAULT_SOURCE if value is None else value


def label_objects(row: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    """(where, labels object) of a row: the conversation's, then each turn's."""
    if row.get("labels") is not None:
        yield "labels", row["labels"]
    turns = row.get("turns") or row.get("scored_turns") or []
    for i, turn in enumerate(turns if isinstance(turns, list) else []):
        if isinstance(turn, dict) and turn.get("labels") is not None:
            yield f"turns[{i}].labels", turn["labels"]


def label_source_problems(row: Mapping[str, Any], required: bool = False) -> list[str]:
    """What is wrong with a row's ``labelled_by`` fields: not one of :data:`LABEL_SOURCES`, or
    (``required``, as for the shipped files) missing."""
    out = []
    for where, labels in label_objects(row):
        if not isinstance(labels, dict):
            continue
        value = labels.get("labelled_by")
        if value is None and required:
            out.append(f"{where}.labelled_by is missing")
        elif value is not None and value not in LABEL_SOURCES:
            out.append(f"{where}.labelled_by is {value!r}, not one of {', '.join(LABEL_SOURCES)}")
    return out


def check_label_sources(rows: Sequence[Mapping[str, Any]], path: str | Path, required: bool = False) -> None:
    """Check every row's ``labelled_by``.

    Raises:
        ValueError: naming the file, the row (id and line) and the fix, for the first bad row.
    """
    for n, row in enumerate(rows, 1):
        if not isinstance(row, Mapping):
            continue
        problems = label_source_problems(row, required)
        if problems:
            raise ValueError(
                f"{path}: row {row.get('id', '?')!r} (line {n}): {problems[0]}. Set it to 'maintainers' "
                "(labels written by whoever built or tuned the judges), 'people' (a verdict of people outside: "
                "the asker's own words, an accepted answer, a published annotator set) or 'unknown', or leave it "
                "out ('unknown'); docs/data-formats.md#human-labels.")


def rows_labelled_by(rows: Sequence[Mapping[str, Any]], source: str) -> list[dict[str, Any]]:
    """The rows with only the labels whose ``labelled_by`` is ``source`` (the others removed;
    rows left with no label dropped). Works on input rows (``turns``) and scored rows
    (``scored_turns``)."""
    out = []
    for row in rows:
        copy = dict(row)
        keep = label_source(row.get("labels")) == source and bool(row.get("labels"))
        if not keep:
            copy["labels"] = {}
        for key in ("turns", "scored_turns"):
            if isinstance(row.get(key), list):
                turns = []
                for turn in row[key]:
                    turn = dict(turn)
                    if turn.get("labels") and label_source(turn["labels"]) == source:
                        keep = True
                    else:
                        turn["labels"] = {}
                    turns.append(turn)
                copy[key] = turns
        if keep:
            out.append(copy)
    return out
