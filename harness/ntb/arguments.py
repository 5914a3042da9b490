"""Tool-call arguments: lenient parsing and the one comparison key of NoisyToolBench.

:func:`normalise_arguments` is the comparison key for arguments, used by the offline
environment to find recorded responses and by the deterministic A2 scorer; its rules are
documented on :func:`canonical_arguments`.
"""
from __future__ import annotations

import ast
import json
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Mapping

from harness.ntb.toolbench import parameter_name


class ArgumentsError(ValueError):
    """Arguments that are not (and cannot be repaired into) a JSON object."""


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
