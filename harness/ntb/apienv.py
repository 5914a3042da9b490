"""The offline API environment of a NoisyToolBench case.

The original benchmark called live RapidAPI endpoints through ToolBench's server. Offline, a
call is validated like a server would (known API, JSON-object arguments, required parameters
present, typed parameters well-typed) and then answered from, in order of preference:

1. ``recorded``: a real response recorded in the official run logs
   (``recorded_observations.json``) for the same case, API and normalised arguments
   (:func:`harness.ntb.arguments.normalise_arguments`); by default also one recorded for the same
   API and arguments in another case (the same real call);
2. ``response_example`` / ``template``: ToolBench's response example for the API
   (``response_examples/<category>/<tool>.json``) or the spec's ``template_response``. Both are
   type skeletons (``{"price": "float"}``), not values;
3. ``llm_simulated``: a simulator model writes a plausible JSON body from the spec and the
   arguments (as StableToolBench does); its call is recorded;
4. ``error``: no offline response exists.

Invalid calls get a ToolBench-style error without consulting any data. Every observation is a
JSON string ``{"error": "...", "response": "..."}`` as ToolBench's server returns; recorded
observations are served verbatim, including the 500 that the official logs cut at 1,027
characters (so they are not always complete JSON).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, Mapping

from langchain_core.messages import HumanMessage, SystemMessage

from graphs.protocols import LLMCall
from harness.models.llm import RoleClient
from harness.ntb.arguments import ArgumentsError, normalise_arguments
from harness.ntb.cases import DATA_DIR, Case, api_specs, resolve_api_name
from harness.ntb.toolbench import json_type, parameter_name, standardize

Source = Literal["recorded", "response_example", "template", "llm_simulated", "error"]
SIMULATOR_PROMPT_VERSION = "ntb-apisim-1"
MAX_OBSERVATION_CHARS = 2048
"""Simulated responses are cut here (recorded ones are served as recorded)."""
MAX_EXAMPLE_CHARS = 2048
"""Response examples and templates are cut here (some describe very large bodies)."""

SIMULATOR_SYSTEM = """You simulate a REST API that is offline. Given the API's documentation and the arguments \
of one call, reply with ONLY the JSON body the real API would plausibly return: realistic, \
specific values consistent with the arguments, at most 10 items in any list, under 1500 \
characters. No explanations, no markdown. If the arguments cannot work for this API, reply \
with the JSON error object the API would return."""


@dataclass
class ApiResult:
    """The outcome of one API call.

    Attributes:
        observation: what the agent sees: a JSON string ``{"error": ..., "response": ...}``.
        source: ``recorded``, ``response_example``, ``template``, ``llm_simulated`` or
            ``error``.
        error: why the call failed (invalid call, no offline response, simulator failure);
            None when a response was served.
        calls: the simulator's model calls (empty unless ``llm_simulated`` or a simulator
            failure).
        api: the callable name the call resolved to; None for an unknown API.
        valid: False when the call itself was invalid (unknown API, arguments not an object,
            missing or ill-typed parameter); a valid call may still get ``source="error"``.
    """

    observation: str
    source: Source
    error: str | None = None
    calls: list[LLMCall] = field(default_factory=list)
    api: str | None = None
    valid: bool = True


def observation(response: str = "", error: str = "") -> str:
    """A ToolBench-style observation string."""
    return json.dumps({"error": error, "response": response})


# --------------------------------------------------------------------------- offline data

@lru_cache(maxsize=1)
def recorded_index() -> tuple[dict[tuple[str, int, str, str], str], dict[tuple[str, str], str]]:
    """Recorded observations by (category, query_id, api, normalised arguments), and by
    (api, normalised arguments) across cases; the first of colliding entries is kept."""
    rows = json.loads((DATA_DIR / "recorded_observations.json").read_text(encoding="utf-8"))
    by_case: dict[tuple[str, int, str, str], str] = {}
    by_call: dict[tuple[str, str], str] = {}
    for row in rows:
        try:
            args = normalise_arguments(row["arguments"])
        except ArgumentsError:
            continue
        by_case.setdefault((row["category"], int(row["query_id"]), row["api"], args), row["observation"])
        by_call.setdefault((row["api"], args), row["observation"])
    return by_case, by_call


@lru_cache(maxsize=128)
def _examples_file(category_name: str, tool_slug: str) -> tuple[tuple[str, Any], ...]:
    folder = DATA_DIR / "response_examples" / category_name
    for slug in dict.fromkeys((tool_slug, tool_slug.removeprefix("get_"))):
        path = folder / f"{slug}.json"
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            return tuple((str(e.get("name", "")), e.get("schema")) for e in data.get("api_list") or [])
    return ()


def response_example(spec: Mapping[str, Any]) -> Any | None:
    """ToolBench's response example (a type skeleton) for an API spec, or None.

    Files are ``response_examples/<category_name>/<standardised tool name>.json``; the entry
    is the one whose ``name`` is the spec's ``api_name`` (exactly, else standardised). Empty
    examples count as none.
    """
    entries = _examples_file(str(spec.get("category_name", "")), standardize(str(spec.get("tool_name", ""))))
    api = str(spec.get("api_name", ""))
    for match in (lambda n: n == api, lambda n: standardize(n) == standardize(api)):
        for name, schema in entries:
            if match(name) and schema not in (None, "", {}, []):
                return schema
    return None


def _as_text(value: Any, limit: int = MAX_EXAMPLE_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text[:limit]


# --------------------------------------------------------------------------- validation

_NUMBER = re.compile(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")
_BOOLEAN_TEXT = {"true", "false", "1", "0"}


def _type_problem(value: Any, spec_type: str) -> str | None:
    """Why ``value`` does not fit a parameter of ``spec_type``, or None."""
    kind = json_type(spec_type)
    if kind in ("number", "integer"):
        if isinstance(value, bool) or isinstance(value, (list, dict)):
            return "a number"
        if isinstance(value, int):
            return None
        if isinstance(value, float):
            ok = math.isfinite(value) and (kind == "number" or value.is_integer())
            return None if ok else f"a{'n integer' if kind == 'integer' else ' number'}"
        text = str(value)
        if not _NUMBER.fullmatch(text) or (kind == "integer" and not float(text).is_integer()):
            return "an integer" if kind == "integer" else "a number"
        return None
    if kind == "boolean":
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return None
        return None if isinstance(value, str) and value.strip().lower() in _BOOLEAN_TEXT else "a boolean (true or false)"
    if kind == "array":
        return None if isinstance(value, (list, str)) else "an array"
    if kind == "object":
        return None if isinstance(value, (dict, str)) else "an object"
    return "a string" if isinstance(value, (list, dict)) else None


def validate_call(spec: Mapping[str, Any], api: str, arguments: Mapping[str, Any]) -> str | None:
    """The error a server would give for ``arguments`` to ``spec``, or None when valid.

    Argument names are matched in ToolBench form (:func:`parameter_name`); None and blank
    values count as absent; names the spec does not know are ignored, as HTTP APIs do.
    """
    given = {parameter_name(str(k)): v for k, v in arguments.items()
             if v is not None and not (isinstance(v, str) and not v.strip())}
    required = [parameter_name(str(p.get("name", ""))) for p in spec.get("required_parameters") or []]
    missing = [name for name in required if name not in given]
    if missing:
        names = ", ".join(repr(m) for m in missing)
        return (f"Missing required parameter{'s' if len(missing) > 1 else ''} {names} for {api} "
                f"(required: {', '.join(required)}).")
    for param in [*(spec.get("required_parameters") or []), *(spec.get("optional_parameters") or [])]:
        name = parameter_name(str(param.get("name", "")))
        if name in given:
            want = _type_problem(given[name], str(param.get("type") or "STRING"))
            if want:
                return (f"Invalid value for parameter '{name}' of {api}: expected {want} "
                        f"({param.get('type')}), got {json.dumps(given[name], ensure_ascii=False)[:80]}.")
    return None


def _parse_strict(arguments: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments as ToolBench's server reads them: a JSON object (blank text is ``{}``)."""
    if isinstance(arguments, Mapping):
        return dict(arguments), None
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}, None
    if not isinstance(arguments, str):
        return None, f"Tool input parse error: arguments must be a JSON object, got {type(arguments).__name__}."
    try:
        value = json.loads(arguments, strict=False)
    except json.JSONDecodeError as exc:
        return None, f"Tool input parse error: arguments are not valid JSON ({exc.msg} at column {exc.colno})."
    if not isinstance(value, dict):
        return None, f"Tool input parse error: arguments must be a JSON object, got {type(value).__name__}."
    return value, None


# --------------------------------------------------------------------------- environment

class ApiEnvironment:
    """Serves one case's API calls offline.

    Args:
        case: the case whose ``api_list`` defines the callable APIs.
        simulator: a role client that simulates APIs without an offline response; None to
            answer those calls with ``source="error"``.
        share_recorded: also serve a response recorded for the same API and arguments in
            another case (still ``source="recorded"``).
        prefer_simulator: ask the simulator before using response examples and templates
            (they are type skeletons; the simulator then gets them as the response shape).
            Off by default: the method's order is recorded, examples, simulator.

    A simulated response is kept for the environment's lifetime: repeating the same call
    (same API, same normalised arguments) returns it again without a model call (``calls``
    empty), so the environment stays consistent within a conversation.
    """

    def __init__(self, case: Case, simulator: RoleClient | None = None, *,
                 share_recorded: bool = True, prefer_simulator: bool = False):
        self.case = case
        self.simulator = simulator
        self.share_recorded = share_recorded
        self.prefer_simulator = prefer_simulator
        self.specs = api_specs(case)
        self._simulated: dict[tuple[str, str], str] = {}

    @property
    def api_names(self) -> list[str]:
        """The callable names of the case's APIs."""
        return list(self.specs)

    async def call(self, name: str, arguments: dict[str, Any] | str) -> ApiResult:
        """Call API ``name`` with ``arguments`` (a dict or JSON text).

        Returns:
            The observation and its source; invalid calls come back with ``valid=False`` and
            ``source="error"`` without any data being consulted.
        """
        args, problem = _parse_strict(arguments)
        api = resolve_api_name(self.case, name) if isinstance(name, str) else None
        if api is None:
            return self._error(f"No such function name: {name}. Available functions: "
                               f"{', '.join(self.specs)}.", api=None, valid=False)
        if problem:
            return self._error(problem, api=api, valid=False)
        problem = validate_call(self.specs[api], api, args)
        if problem:
            return self._error(problem, api=api, valid=False)
        key = normalise_arguments(args)
        found = self._recorded(api, key)
        if found:
            return found
        if self.prefer_simulator and self.simulator is not None:
            simulated = await self._simulate(api, args, key)
            if simulated.source == "llm_simulated":
                return simulated
            return self._example(api) or simulated
        found = self._example(api)
        if found:
            return found
        if self.simulator is not None:
            return await self._simulate(api, args, key)
        return self._error(f"No offline response for {api} with these arguments: it was not recorded, "
                           "the API has no response example, and no API simulator is configured.", api=api)

    def _error(self, message: str, api: str | None, valid: bool = True,
               calls: list[LLMCall] | None = None) -> ApiResult:
        return ApiResult(observation(error=message), "error", message, calls or [], api, valid)

    def _recorded(self, api: str, key: str) -> ApiResult | None:
        by_case, by_call = recorded_index()
        text = by_case.get((self.case.category, self.case.query_id, api, key))
        if text is None and self.share_recorded:
            text = by_call.get((api, key))
        return None if text is None else ApiResult(text, "recorded", api=api)

    def _shape(self, api: str) -> tuple[Source, str] | None:
        spec = self.specs[api]
        example = response_example(spec)
        if example is not None:
            return "response_example", _as_text(example)
        template = spec.get("template_response")
        if template not in (None, "", {}, []):
            return "template", _as_text(template)
        return None

    def _example(self, api: str) -> ApiResult | None:
        shape = self._shape(api)
        return None if shape is None else ApiResult(observation(shape[1]), shape[0], api=api)

    async def _simulate(self, api: str, args: Mapping[str, Any], key: str) -> ApiResult:
        if (api, key) in self._simulated:
            return ApiResult(observation(self._simulated[(api, key)]), "llm_simulated", api=api)
        assert self.simulator is not None
        try:
            text, call = await self.simulator.complete(self._simulator_messages(api, args), purpose="api_simulation",
                                                       response_format={"type": "json_object"})
        except Exception as exc:  # the simulator's failure is the call's failure, recorded
            failed = getattr(exc, "llm_call", None)
            return self._error(f"API simulator failed: {type(exc).__name__}: {exc}"[:300], api=api,
                               calls=[failed] if failed else [])
        body = _strip_fences(text)[:MAX_OBSERVATION_CHARS]
        if not body:
            return self._error("API simulator returned an empty response.", api=api, calls=[call])
        self._simulated[(api, key)] = body
        return ApiResult(observation(body), "llm_simulated", calls=[call], api=api)

    def _simulator_messages(self, api: str, args: Mapping[str, Any]) -> list:
        spec = self.specs[api]
        params = [{"name": p.get("name"), "type": p.get("type"), "required": group == "required_parameters",
                   "description": str(p.get("description") or "")[:200]}
                  for group in ("required_parameters", "optional_parameters")
                  for p in spec.get(group) or []]
        shape = self._shape(api)
        lines = [f"API: {api} ({spec.get('method', 'GET')})",
                 f"Tool: {spec.get('tool_name')} (category {spec.get('category_name')})",
                 f"Description: {str(spec.get('api_description') or '')[:500]}",
                 f"Parameters: {json.dumps(params, ensure_ascii=False)}"]
        if shape:
            lines.append(f"Response shape (field types only): {shape[1][:1000]}")
        lines.append(f"Call arguments: {json.dumps(dict(args), ensure_ascii=False)}")
        return [SystemMessage(SIMULATOR_SYSTEM), HumanMessage("\n".join(lines))]


def _strip_fences(text: str) -> str:
    text = (text or "").strip()
    match = re.fullmatch(r"```[a-zA-Z]*\s*(.*?)\s*```", text, re.S)
    return match.group(1).strip() if match else text
