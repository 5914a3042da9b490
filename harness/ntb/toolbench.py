"""ToolBench's naming rules and OpenAI tool schemas, as NoisyToolBench's APIs use them.

Naming follows ToolBench (``toolbench/utils.py`` and ``api_json_to_openai_json``), checked
against the data: the callable name of an API is ``<api>_for_<tool>`` where both parts are
:func:`standardize`-d, a reserved word as API name gets an ``is_`` prefix, and names longer
than 64 characters keep their LAST 64 characters (ToolBench's ``name[-64:]``). Parameter names
are standardised the same way (``countryCode`` -> ``countrycode``, ``id`` -> ``is_id``); the
recorded observations are keyed by those names.

The functions here work on one API spec or on names; those that need a whole case
(:func:`harness.ntb.cases.api_specs`, ``resolve_api_name``, ``openai_tools``) live with the case.
"""
from __future__ import annotations

import json
import re
from typing import Any, Mapping

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
