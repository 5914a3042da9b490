"""NoisyToolBench cases: the shipped case files, the :class:`Case` and its APIs.

The four case files (``IMKI``, ``IMR``, ``IwE``, ``IBTC``; 50 cases each) ship in
``harness/data/noisytoolbench/`` (see its SOURCE.md). The category is the file name.

A case's APIs are named and described as ToolBench does (:mod:`harness.ntb.toolbench`);
:func:`resolve_api_name` maps a name an agent or an expected call writes to one of them, and
:func:`openai_tools` gives their tool schemas. Arguments are parsed and compared by
:mod:`harness.ntb.arguments`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.ntb.arguments import ArgumentsError, parse_arguments
from harness.ntb.toolbench import (api_callable_name, full_callable_name, parameters_schema, standardize,
                                   tool_description)

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "noisytoolbench"
CATEGORIES: tuple[str, ...] = ("IMKI", "IMR", "IwE", "IBTC")
CATEGORY_NAMES = {
    "IMKI": "instruction missing key information",
    "IMR": "instruction with multiple or ambiguous references",
    "IwE": "instruction with errors",
    "IBTC": "instruction beyond the tools' capabilities",
}


class CaseError(ValueError):
    """An unknown category or case id, or an unreadable case file."""


@dataclass
class Case:
    """One NoisyToolBench case.

    Attributes:
        category: ``IMKI``, ``IMR``, ``IwE`` or ``IBTC`` (the source file's name).
        query_id: the case's ``query_id`` (1..50 in each category).
        query: the noisy user instruction.
        question_to_ask: the anticipated clarifying question (``question need to be asked``).
        clarification: what the simulated user answers to that question.
        expected_calls: the ``expected API calling`` entries, each a dict with ``name`` (as in
            the source), ``arguments`` (parsed dict; ``{}`` when unparseable),
            ``raw_arguments`` (the source string), ``parse_error`` (None, or why parsing
            failed; lenient repairs are noted as ``repaired: ...``) and ``resolved_name`` (the
            case's callable name ``name`` resolves to, see :func:`resolve_api_name`; None when
            it matches no API of the case). Empty for IBTC.
        relevant_apis: ``relevant APIs`` as ``[tool_name, api_name]`` pairs (empty when absent,
            as in 5 source cases).
        api_list: the raw ToolBench API specs offered to the agent.
    """

    category: str
    query_id: int
    query: str
    question_to_ask: str
    clarification: str
    expected_calls: list[dict[str, Any]] = field(default_factory=list)
    relevant_apis: list[list[str]] = field(default_factory=list)
    api_list: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> str:
        """``"<category>/<query_id>"``, e.g. ``"IMKI/1"``."""
        return case_key(self)


def case_key(case: Case) -> str:
    """The case's stable id, ``"<category>/<query_id>"`` (e.g. ``"IMKI/1"``)."""
    return f"{case.category}/{case.query_id}"


# --------------------------------------------------------------------------- a case's APIs

def api_specs(case: Case) -> dict[str, dict[str, Any]]:
    """The case's API specs by callable name, in ``api_list`` order (first of duplicates)."""
    out: dict[str, dict[str, Any]] = {}
    for spec in case.api_list:
        out.setdefault(api_callable_name(spec["tool_name"], spec["api_name"]), spec)
    return out


def resolve_api_name(case: Case, name: str) -> str | None:
    """The case's callable name that ``name`` refers to, or None.

    Tried in order, the first unique hit wins: the exact name; its :func:`standardize`-d form
    (case and punctuation: ``"Differentiate_for_x"``, ``"OHLCV&VWAP_Spot_for_x"``); the name
    before ToolBench's 64-character cut; the callable name that ends with ``"_" + name``
    (ToolBench's server matches calls with ``endswith``; e.g. ``analyse_for_working_days`` ->
    ``get_1_3_analyse_for_working_days``).
    """
    specs = api_specs(case)
    if name in specs:
        return name
    std = standardize(name) if isinstance(name, str) else ""
    if not std:
        return None
    if std in specs:
        return std
    full = {full_callable_name(s["tool_name"], s["api_name"]): n for n, s in specs.items()}
    if std in full:
        return full[std]
    ends = [n for n in specs if n.endswith("_" + std)]
    return ends[0] if len(ends) == 1 else None


def openai_tools(case: Case) -> list[dict[str, Any]]:
    """OpenAI tool schemas (``{"type": "function", "function": {...}}``) of the case's APIs.

    Names are :func:`harness.ntb.toolbench.api_callable_name`; an API listed twice in the source is offered once.
    """
    return [{"type": "function",
             "function": {"name": name, "description": tool_description(spec),
                          "parameters": parameters_schema(spec)}}
            for name, spec in api_specs(case).items()]


# --------------------------------------------------------------------------- loading

def _expected_call(entry: Mapping[str, Any], case: Case) -> dict[str, Any]:
    name = str(entry.get("name", ""))
    raw = entry.get("arguments", "")
    raw_text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    error: str | None = None
    try:
        args = parse_arguments(raw)
        if isinstance(raw, str) and raw.strip():
            try:
                json.loads(raw, strict=False)
            except json.JSONDecodeError:
                error = "repaired: not strict JSON"
    except ArgumentsError as exc:
        args, error = {}, str(exc)
    return {"name": name, "arguments": args, "raw_arguments": raw_text, "parse_error": error,
            "resolved_name": resolve_api_name(case, name)}


def _read_category(category: str) -> list[dict[str, Any]]:
    path = DATA_DIR / f"{category}.json"
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CaseError(f"Cannot read NoisyToolBench file {path}: {exc}") from exc
    if not isinstance(rows, list):
        raise CaseError(f"{path}: expected a JSON list of cases")
    return rows


def _case_from(category: str, row: Mapping[str, Any]) -> Case:
    case = Case(category=category, query_id=int(row["query_id"]), query=str(row["query"]),
                question_to_ask=str(row.get("question need to be asked") or ""),
                clarification=str(row.get("clarification") or ""),
                relevant_apis=[list(p) for p in row.get("relevant APIs") or []],
                api_list=list(row.get("api_list") or []))
    case.expected_calls = [_expected_call(e, case) for e in row.get("expected API calling") or []]
    return case


def _category(name: str) -> str:
    for cat in CATEGORIES:
        if cat.lower() == str(name).strip().lower():
            return cat
    raise CaseError(f"Unknown NoisyToolBench category {name!r}; choose from {', '.join(CATEGORIES)}.")


def load_cases(categories: Iterable[str] | None = None,
               ids: Iterable[int | str] | None = None) -> list[Case]:
    """Load cases, in category order (IMKI, IMR, IwE, IBTC) then ``query_id``.

    Args:
        categories: category names (case-insensitive); None for all four.
        ids: None for all; otherwise ``query_id`` numbers (``3`` or ``"3"``: that id in every
            selected category) and/or case keys (``"IMKI/3"``), all of which must exist among
            the selected categories.

    Raises:
        CaseError: an unknown category, or an id that selects no case (all are listed).
    """
    cats = list(CATEGORIES) if categories is None else list(dict.fromkeys(_category(c) for c in categories))
    if not cats:
        raise CaseError(f"No NoisyToolBench category selected; choose from {', '.join(CATEGORIES)}.")
    cases = [_case_from(cat, row) for cat in cats for row in _read_category(cat)]
    cases.sort(key=lambda c: (CATEGORIES.index(c.category), c.query_id))
    if ids is None:
        return cases
    numbers: set[int] = set()
    keys: set[str] = set()
    for item in ids:
        text = str(item).strip()
        if isinstance(item, int) or text.isdigit():
            numbers.add(int(text))
        elif "/" in text:
            cat, _, qid = text.partition("/")
            if not qid.strip().isdigit():
                raise CaseError(f"Bad NoisyToolBench case id {item!r}; use a number or CATEGORY/N (e.g. IMKI/3).")
            keys.add(f"{_category(cat)}/{int(qid)}")
        else:
            raise CaseError(f"Bad NoisyToolBench case id {item!r}; use a number or CATEGORY/N (e.g. IMKI/3).")
    chosen = [c for c in cases if c.query_id in numbers or case_key(c) in keys]
    unknown = sorted(str(n) for n in numbers if not any(c.query_id == n for c in chosen))
    unknown += sorted(k for k in keys if not any(case_key(c) == k for c in chosen))
    if unknown:
        raise CaseError(f"Unknown NoisyToolBench case id(s) in {', '.join(cats)}: {', '.join(unknown)}. "
                        f"Ids are 1-50 per category, or CATEGORY/N.")
    return chosen


def load_case(key: str) -> Case:
    """One case by key (``"IMKI/1"``).

    Raises:
        CaseError: a malformed or unknown key.
    """
    cat, sep, _ = str(key).partition("/")
    if not sep:
        raise CaseError(f"Bad NoisyToolBench case key {key!r}; use CATEGORY/N (e.g. IMKI/3).")
    return load_cases([cat], [key])[0]


@lru_cache(maxsize=1)
def data_sha256() -> str:
    """One sha256 over every shipped NoisyToolBench data file (cases, recorded observations,
    response examples, notes): each file's path relative to the data folder, a NUL, its bytes
    and a NUL, in sorted path order. Changes when any of them changes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in DATA_DIR.rglob("*") if p.is_file()):
        digest.update(path.relative_to(DATA_DIR).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
