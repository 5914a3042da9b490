"""NoisyToolBench cases, ToolBench API naming, OpenAI tool schemas and argument normalisation.

The four case files (``IMKI``, ``IMR``, ``IwE``, ``IBTC``; 50 cases each) ship in
``harness/data/noisytoolbench/`` (see its SOURCE.md). The category is the file name.

Naming follows ToolBench (``toolbench/utils.py`` and ``api_json_to_openai_json``), checked
against the data: the callable name of an API is ``<api>_for_<tool>`` where both parts are
:func:`standardize`-d, a reserved word as API name gets an ``is_`` prefix, and names longer
than 64 characters keep their LAST 64 characters (ToolBench's ``name[-64:]``). Parameter names
are standardised the same way (``countryCode`` -> ``countrycode``, ``id`` -> ``is_id``); the
recorded observations are keyed by those names.

:func:`normalise_arguments` is the one comparison key for arguments, used by the offline
environment to find recorded responses and by the deterministic A2 scorer; its rules are
documented on :func:`canonical_arguments`.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Iterable, Mapping

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "noisytoolbench"
CATEGORIES: tuple[str, ...] = ("IMKI", "IMR", "IwE", "IBTC")
CATEGORY_NAMES = {
    "IMKI": "instruction missing key information",
    "IMR": "instruction with multiple or ambiguous references",
    "IwE": "instruction with errors",
    "IBTC": "instruction beyond the tools' capabilities",
}
NAME_MAX = 64
"""ToolBench keeps the last 64 characters of a longer callable name."""
DESCRIPTION_MAX = 256
"""ToolBench's cut for API and parameter descriptions."""
RESERVED_NAMES = frozenset({"from", "class", "return", "false", "true", "id", "and"})
"""Names ToolBench prefixes with ``is_`` (its ``change_name``)."""

JSON_TYPES = {"STRING": "string", "NUMBER": "number", "INTEGER": "integer", "BOOLEAN": "boolean",
              "ARRAY": "array", "OBJECT": "object", "ENUM": "string"}
"""Spec type (upper-cased) -> JSON-schema type; anything else is ``string``. ToolBench maps
NUMBER to ``integer``; ``number`` is used here because some NUMBER parameters take decimals
(coordinates, prices)."""


class CaseError(ValueError):
    """An unknown category or case id, or an unreadable case file."""


class ArgumentsError(ValueError):
    """Arguments that are not (and cannot be repaired into) a JSON object."""


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


# --------------------------------------------------------------------------- naming

_NON_NAME = re.compile(r"[^\u4e00-\u9fa5a-zA-Z0-9_]")


def standardize(text: str) -> str:
    """ToolBench's ``standardize``: the name form used for tools, APIs and parameters.

    Characters other than ASCII letters, digits, ``_`` and CJK ideographs become ``_``, runs
    of ``_`` collapse to one, the result is lower-cased and stripped of ``_`` at both ends, and
    a name starting with a digit gets a ``get_`` prefix (``"9GAG API (Detailed)"`` ->
    ``"get_9gag_api_detailed"``). ToolBench's pattern also keeps a literal ``^`` by accident;
    no name in the data has one, and it is not kept here.
    """
    out = re.sub(r"_+", "_", _NON_NAME.sub("_", text)).lower().strip("_")
    if out[:1].isdigit():
        out = "get_" + out
    return out


def parameter_name(name: str) -> str:
    """The ToolBench form of a parameter name: standardised, reserved words ``is_``-prefixed."""
    std = standardize(name)
    return f"is_{std}" if std in RESERVED_NAMES else std


def api_callable_name(tool_name: str, api_name: str) -> str:
    """ToolBench's callable name of an API: ``<api>_for_<tool>``, last 64 characters kept.

    Example: tool ``"Fantasy 5"``, API ``"Drawings Between Dates"`` ->
    ``"drawings_between_dates_for_fantasy_5"``.
    """
    return full_callable_name(tool_name, api_name)[-NAME_MAX:]


def full_callable_name(tool_name: str, api_name: str) -> str:
    """The callable name before ToolBench's 64-character cut (some expected calls use it)."""
    return f"{parameter_name(api_name)}_for_{standardize(tool_name)}"


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


# --------------------------------------------------------------------------- tool schemas

def _cut(text: str, limit: int = DESCRIPTION_MAX) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def json_type(spec_type: Any) -> str:
    """JSON-schema type of a ToolBench parameter type (:data:`JSON_TYPES`; else ``string``)."""
    return JSON_TYPES.get(str(spec_type or "").strip().upper(), "string")


def parameters_schema(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON schema of an API spec's parameters (ToolBench parameter names).

    Each property has the mapped ``type`` and the spec's description (cut at 256
    characters); a non-empty spec ``default`` is added to the description as an example, and
    a spec type other than the plain ones (``ENUM``, ``DATE (YYYY-MM-DD)``) is named there.
    ``required`` lists the required parameters.
    """
    props: dict[str, Any] = {}
    required: list[str] = []
    for group in ("required_parameters", "optional_parameters"):
        for param in spec.get(group) or []:
            pname = parameter_name(str(param.get("name", "")))
            if not pname or pname in props:
                continue
            raw_type = str(param.get("type") or "STRING")
            ptype = json_type(raw_type)
            desc = _cut(param.get("description", ""))
            if raw_type.strip().upper() not in JSON_TYPES and raw_type.strip().lower() != ptype:
                desc = f"{desc} (type: {raw_type})".strip()
            default = param.get("default")
            if default is not None and str(default) != "":
                desc = f"{desc} Example: {json.dumps(default, ensure_ascii=False)}".strip()
            prop: dict[str, Any] = {"type": ptype, "description": desc}
            if ptype == "array":
                prop["items"] = {"type": "string"}
            props[pname] = prop
            if group == "required_parameters":
                required.append(pname)
    return {"type": "object", "properties": props, "required": required}


def tool_description(spec: Mapping[str, Any]) -> str:
    """ToolBench's function description: the tool sentence plus the API description (cut)."""
    tool = standardize(spec.get("tool_name", ""))
    text = f'This is the subfunction for tool "{tool}", you can use this tool.'
    desc = _cut(spec.get("api_description", ""))
    return f'{text} The description of this function is: "{desc}"' if desc else text


def openai_tools(case: Case) -> list[dict[str, Any]]:
    """OpenAI tool schemas (``{"type": "function", "function": {...}}``) of the case's APIs.

    Names are :func:`api_callable_name`; an API listed twice in the source is offered once.
    """
    return [{"type": "function",
             "function": {"name": name, "description": tool_description(spec),
                          "parameters": parameters_schema(spec)}}
            for name, spec in api_specs(case).items()]


# --------------------------------------------------------------------------- arguments

_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_PLAIN_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?")


def parse_arguments(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Arguments as a dict, repairing what can be repaired.

    A mapping is copied; None and a blank string are ``{}``; a string is read as JSON (control
    characters allowed), then with trailing commas removed, then as a Python literal (single
    quotes, ``True``/``None``).

    Raises:
        ArgumentsError: the text is none of those, or is not an object.
    """
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        raise ArgumentsError(f"arguments must be a JSON object, got {type(raw).__name__}")
    text = raw.strip()
    if not text:
        return {}
    value, error = _lenient_load(text)
    if error:
        raise ArgumentsError(error)
    if not isinstance(value, dict):
        raise ArgumentsError(f"arguments must be a JSON object, got {type(value).__name__}: {text[:80]}")
    return value


def _lenient_load(text: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text, strict=False), None
    except json.JSONDecodeError as exc:
        first = f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    try:
        return json.loads(_TRAILING_COMMA.sub(r"\1", text), strict=False), None
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text), None
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None, first


def _scalar(value: Any) -> str:
    """The canonical string of a scalar (see :func:`canonical_arguments`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return _decimal(Decimal(repr(value)) if isinstance(value, float) else Decimal(value))
    text = str(value).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    if text.lower() in ("true", "false"):
        return text.lower()
    if _PLAIN_NUMBER.fullmatch(text):
        try:
            return _decimal(Decimal(text))
        except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
            return text
    return text


def _decimal(number: Decimal) -> str:
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


def _value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k).strip(): _value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    if value is None:
        return None
    return _scalar(value)


def _is_unset(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def canonical_arguments(arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Arguments in canonical form: the comparison form behind :func:`normalise_arguments`.

    Rules (pure and deterministic):

    1. A string is parsed with :func:`parse_arguments` (JSON, lenient repairs); it must be an
       object. None and ``""`` are ``{}``.
    2. Top-level keys become ToolBench parameter names (:func:`parameter_name`): lower case,
       non-alphanumerics to ``_``, ``id``/``from``/... get ``is_``. So ``countryCode`` ==
       ``countrycode`` and ``id`` == ``is_id``. If two keys collide, a key already in
       canonical form wins, then the alphabetically first.
    3. Unset arguments are dropped: value None or a blank string (an optional parameter left
       empty is the same as one not given).
    4. Scalars become strings, so ``5``, ``5.0``, ``"5"`` and ``" 5 "`` are all ``"5"``:
       strings are stripped of surrounding whitespace and of one pair of matching surrounding
       quotes (``"'Star Wars'"`` -> ``"Star Wars"``, as written in 5 expected calls); inner
       text and letter case are kept;
       booleans and the strings ``true``/``false`` (any case) become ``"true"``/``"false"``;
       numbers, and strings that are plain decimals without leading zeros
       (``-?(0|[1-9]\\d*)(\\.\\d+)?``), become their shortest exact decimal (``"1.50"`` ->
       ``"1.5"``, ``2.0`` -> ``"2"``). Strings with leading zeros (``"02134"``), exponents or
       other text are compared as text.
    5. Lists keep their order, elements canonicalised; nested objects keep their keys
       (stripped) with canonical values.

    Raises:
        ArgumentsError: ``arguments`` is not a JSON object.
    """
    parsed = parse_arguments(arguments)
    out: dict[str, Any] = {}
    for key in sorted(parsed, key=lambda k: (parameter_name(str(k)) != str(k), str(k))):
        value = parsed[key]
        name = parameter_name(str(key))
        if _is_unset(value) or not name or name in out:
            continue
        out[name] = _value(value)
    return out


def normalise_arguments(arguments: str | Mapping[str, Any] | None) -> str:
    """Canonical JSON of arguments: equal for calls that mean the same thing.

    Keys are sorted and the JSON is compact (``{"a":"1","b":"x"}``); see
    :func:`canonical_arguments` for the rules (key names, unset arguments, scalars as
    strings). It is a comparison key, not arguments to send.

    Raises:
        ArgumentsError: ``arguments`` is not a JSON object.
    """
    return json.dumps(canonical_arguments(arguments), sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))


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
