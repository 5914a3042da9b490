"""The one configuration object: defaults, then a TOML file, then environment, then CLI flags.

Every LLM is reached through a *role* mapped to a :class:`ModelSpec`. A spec without
``base_url`` uses the embedded llama.cpp server with the spec's ``model`` (an embedded model
key, see ``harness.models.model_files``).
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.agent_spec import BUILT_IN_AGENTS, EXTERNAL_AGENTS, TEAM_AGENTS, VOICE_BOT_AGENTS, AgentSpec
from harness.tasks.personas import PERSONAS
from harness.voice_config import VoiceConfig

ROLES = ("agent", "user", "judge", "complexity", "extractor", "api_simulator")
NTB_ONLY_ROLES = ("api_simulator",)
"""Roles only a NoisyToolBench run uses (not checked before a SelfScore run)."""
DEFAULT_EMBEDDED_MODEL = "qwen2.5-coder-1.5b"
FAST_EMBEDDED_MODEL = "qwen2.5-coder-0.5b"
ENV_PREFIX = "DESKBENCH_"


class ConfigError(ValueError):
    """A configuration problem a user can fix; the message names the key and the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelSpec(_Strict):
    """How one role reaches its model."""

    base_url: str | None = Field(None, description="OpenAI-compatible base URL; none = embedded server")
    model: str = Field(DEFAULT_EMBEDDED_MODEL, description="model name at the endpoint, or an embedded model key")
    api_key_env: str | None = Field(None, description="environment variable holding the API key")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int | None = 0
    max_tokens: int = Field(256, ge=1, le=8192, description="output bound for every call")
    timeout_s: float = Field(300.0, gt=0)
    input_price_per_mtok: float = Field(0.0, ge=0.0, description="price per million input tokens")
    output_price_per_mtok: float = Field(0.0, ge=0.0, description="price per million output tokens")
    # the endpoint's rate limits (harness/models/rate_limits.py), shared by every role on base_url
    requests_per_minute: float | None = Field(None, gt=0, description="requests a minute the endpoint allows")
    tokens_per_minute: float | None = Field(None, gt=0, description="tokens (prompt + output bound) a minute")
    max_in_flight: int | None = Field(None, ge=1, description="requests of this process in flight at once")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v):
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://, e.g. http://localhost:8000/v1")
        return v

    @property
    def embedded(self) -> bool:
        """True when the role has no ``base_url`` (the embedded llama.cpp server serves it)."""
        return self.base_url is None

    def label(self) -> str:
        """Short model name used in run names."""
        return self.model.rsplit("/", 1)[-1]


def _default_roles() -> dict[str, ModelSpec]:
    return {
        "agent": ModelSpec(temperature=0.3, max_tokens=320),
        "user": ModelSpec(temperature=0.7, max_tokens=160),
        "judge": ModelSpec(temperature=0.0, max_tokens=160),
        "complexity": ModelSpec(temperature=0.0, max_tokens=200),
        "extractor": ModelSpec(temperature=0.0, max_tokens=120),
        # NoisyToolBench: writes API responses nothing offline has (JSON bodies up to ~1,500 chars)
        "api_simulator": ModelSpec(temperature=0.0, max_tokens=400),
    }


class EngineConfig(_Strict):
    """The embedded llama.cpp server."""

    threads: int = Field(2, ge=1, le=256)
    parallel: int = Field(4, ge=1, le=64, description="parallel slots (-np)")
    context_per_slot: int = Field(4096, ge=512, le=131072)
    startup_timeout_s: float = Field(120.0, gt=0)
    server_binary: str | None = Field(None, description="path to a llama-server compatible binary")
    judge_server: bool = Field(False, description="the roles other than the agent on a second embedded "
                               "server, the agent alone on the first (each with these threads and slots)")


class CostConfig(_Strict):
    """SelfScore's three cost modes, applied to the agent's tokens of each turn."""

    mode: Literal["none", "total", "split", "per_turn"] = "split"
    price_per_mtok: float = Field(0.0, ge=0.0, description="mode 'total': one price per million tokens")
    price_per_turn: float = Field(0.0, ge=0.0, description="mode 'per_turn': fixed price per turn")


class ScoringConfig(_Strict):
    """SelfScore's formula, the method profile and the judges' aids (None: the profile decides)."""
    formula: Literal["paper", "agent_only"] = "paper"
    weights: tuple[float, float, float] = (0.5, 0.4, 0.1)
    profile: Literal["auto", "paper", "embedded"] = Field(
        "auto", description="paper: the published method, no aid; embedded: every aid on; auto: "
        "each aid on where its role runs on the embedded model, off on a configured endpoint")
    manipulation_defence: bool | None = Field(
        None, description="aid (judge): judges read each message without the spans that talk to "
        "the judge (harness.defence.manipulation); stored messages stay as written")
    other_languages: Literal["as-is", "tell", "translate"] | None = Field(
        None, description="a judged message that is not English: translate (aid, judge: translated "
        "into English first), tell (the task says the language earns and costs nothing), as-is "
        "(judged as written, the paper)")
    helpfulness_bounds: bool | None = Field(
        None, description="aid (judge): pin a helpfulness score to the rubric's band where a rule "
        "sees what the message plainly is (harness.aids.helpfulness_bounds); the judge's own score "
        "is always stored")
    judge_reminder: bool | None = Field(
        None, description="aid (judge): after the judged message, a reminder that text addressing a "
        "rater, asking for a score or claiming the problem is solved earns nothing")
    preprocessing_guard: bool | None = Field(
        None, description="aid (extractor): the harness's preprocessing prompts (first-person "
        "restatement, problem as a fact, worked examples) and one regeneration of an output with an "
        "answer or solution sign; off: the paper's two prompts verbatim")
    score_reading: Literal["sampled", "probabilities"] = Field(
        "sampled", description="how a helpfulness or complexity score is read: sampled (the paper's "
        "JSON verdict) or probabilities (the expected score over the score tokens' probabilities)")
    judge_reasons: bool | None = Field(None, description="a written reason with a read score (after "
                                       "it); None: off, on in `deskbench sanity` and the live app")

    @field_validator("weights")
    @classmethod
    def _weights_sum(cls, v):
        if abs(sum(v) - 1.0) > 1e-6 or any(w < 0 for w in v):
            raise ValueError("complexity weights (CT, EH, TK) must be >= 0 and sum to 1")
        return v


class RunConfig(_Strict):
    """One batch: the dataset slice, turns, concurrency, seed, trials, the user, persona, agent, checks."""
    dataset: str = "ubuntu_irc_troubleshooting"
    limit: int = Field(3, ge=1)
    offset: int = Field(0, ge=0)
    max_turns: int = Field(50, ge=1, le=1000)
    concurrency: int = Field(4, ge=1, le=512)
    seed: int = Field(0, description="seed of the run; trials after the first derive their seeds from it")
    trials: int = Field(1, ge=1, le=100, description="times each task is played, each with its own seeds")
    persona: Literal[PERSONAS] = Field("cooperative", description="the simulated user's behaviour (a task's wins)")
    name: str | None = None
    judge_retries: int = Field(2, ge=0, le=10)
    user: Literal["llm", "scripted"] = "llm"
    agent: Literal[BUILT_IN_AGENTS + EXTERNAL_AGENTS + VOICE_BOT_AGENTS] = Field("plain", description="plain: the paper's agent; "
        "rag: the same with retrieved knowledge-base passages; human: replay each task's agent_replies "
        "(human baseline); replay: a stored run's replies (set by rejudge); http, python, openai, langgraph, "
        "a2a: the team's own agent through that adapter, the agent section says where (docs/agents.md); "
        "twilio-ws, realtime-ws: the team's voice bot over that protocol (call simulate; docs/voice-bots.md)")
    agent_reply_sentences: int | None = Field(None, ge=0, le=50, description="aid (agent): the agents' "
        "system prompt asks for replies of at most this many short sentences with one next step (0: the "
        "paper's prompt verbatim)")
    stop_on_solved: bool = Field(True, description="end a conversation when the solved-check fires")
    solved_check: Literal["confirmation", "evidence", "verdict"] | None = Field(
        None, description="verdict (the paper): one JSON verdict from the turn history and the latest "
        "agent message; evidence (aid, judge): the user's reaction, then is an answer the fix (rules, one "
        "Yes/No question, the reference); confirmation (aid, judge): the user says it is fixed")
    user_checks: Literal["rules", "rules+judge"] = Field("rules", description="checks of each simulated "
        "user message: rules only (default), or rules then the judge role's contradiction check when the "
        "task has facts (opt-in: on the 1.5B it answered yes to nearly every message, P 0.53-0.62)")
    user_regenerations: int | None = Field(None, ge=0, le=5, description="aid (user): regenerations of a "
        "simulated user message that fails a check (the checks run and are stored either way)")
    user_outcome: Literal["decided", "model"] | None = Field(
        None, description="simulator method (aid, user): decided: whether the agent's message fixes the "
        "hidden cause is decided first (P(yes) and similarity to the real fix against thresholds) and the "
        "reply is written under it; model: the user model says what happened itself (the paper's LLM user)")
    user_fallback: bool | None = Field(
        None, description="aid (user): when every draft of a not-fixed reply misleads about the outcome, "
        "send the first harmless draft, else \"I tried that, but the problem is still there.\"")


class RagConfig(_Strict):
    """The RAG agent's knowledge base (docs/rag.md)."""

    kb: str | None = Field(None, description="task set (name or JSONL) whose question + answer "
                           "pairs form the knowledge base, e.g. the .kb.jsonl half of a split")
    index_dir: str | None = Field(None, description="persistent chromadb folder (default: kb/ next to the store)")
    k: int = Field(3, ge=1, le=20, description="passages retrieved per reply")


class RetryConfig(_Strict):
    """Retries of failed model calls and the per-endpoint circuit breaker (docs/reliability.md)."""

    max_attempts: int = Field(5, ge=1, le=50, description="attempts per model call, the first included")
    base_s: float = Field(1.0, ge=0.0, description="backoff before attempt n+1: up to base_s * 2**(n-1)")
    max_s: float = Field(30.0, ge=0.0, description="longest wait between attempts (also caps Retry-After)")
    jitter: bool = Field(True, description="full jitter: wait a uniform random time up to the backoff")
    breaker_failures: int = Field(5, ge=1, le=1000, description="consecutive failed calls (after "
                                  "retries) of one endpoint that stop the run")
    breaker_refused_s: float = Field(60.0, gt=0, description="an endpoint refusing connections this "
                                     "long stops the run")


class NtbConfig(_Strict):
    """NoisyToolBench runs (docs/noisytoolbench.md)."""

    protocol: Literal["auto", "text", "native"] = Field(
        "auto", description="agent protocol; auto: text for embedded models, native tool calls otherwise")
    max_steps: int = Field(12, ge=1, le=200, description="official: 12")
    max_model_calls: int = Field(24, ge=1, le=400, description="official: 24")
    threshold: float = Field(0.4, ge=0.0, le=1.0, description="A1 / user match cosine threshold "
                             "(official code 0.4, paper 0.8)")
    user: Literal["embedding", "llm"] = Field("embedding", description="llm: the user words the clarification")
    a2_method: Literal["exact-set", "llm-judge"] = "exact-set"
    api_simulator: bool = Field(True, description="the api_simulator role writes API responses "
                                "that nothing offline has")
    api_fallback: Literal["examples-first", "simulator-first"] = Field(
        "examples-first", description="after the recorded response: examples-first = response "
        "example / template, then the simulator (the method's order); simulator-first = the "
        "simulator (given the example as the shape), then the example")
    agent_variant: Literal["current", "awn", "no-ask"] = Field(
        "current", description="current: today's prompt; awn: the paper's Ask-when-Needed prompt; "
        "no-ask: asking is not offered (the paper's runs without asking)")
    embedding_model: Literal["minilm", "paraphrase-minilm-l3"] = Field(
        "minilm", description="A1 / user question-match embeddings: minilm (all-MiniLM-L6-v2 int8) "
        "or paraphrase-minilm-l3 (extra `ntb-embeddings`)")
    ask_match: Literal["message", "question"] = Field(
        "message", description="text compared with the anticipated question: message = the whole "
        "asking message (thought and question, as the official code), question = the question only")
    categories: list[Literal["IMKI", "IMR", "IwE", "IBTC"]] = ["IMKI", "IMR", "IwE", "IBTC"]
    ids: list[int | str] | None = Field(None, description="query ids (in every selected category) or keys like IMKI/3")
    per_category: int | None = Field(None, ge=1, description="first N cases of each category")


class AppConfig(_Strict):
    """The live Gradio app (docs/live-app.md)."""

    host: str = Field("127.0.0.1", description="interface to listen on (0.0.0.0 to serve a network)")
    port: int = Field(7860, ge=0, le=65535, description="0: any free port")
    organiser_secret_env: str = Field(
        "DESKBENCH_ORGANISER_SECRET", description="environment variable holding the organiser "
        "secret; unset: a random secret is made at start-up and printed once")
    show_judge_scores: bool = Field(False, description="show participants the LLM judge's scores")
    agents: list[Literal[("plain", "rag") + EXTERNAL_AGENTS]] = Field(
        ["plain"], description="agents a free session may pick (http, python, ...: the team's agent, the agent section)")
    max_message_chars: int = Field(4000, ge=1, le=100_000, description="longest message a person may send")
    messages_per_minute: int = Field(12, ge=1, description="rate limit per participant")
    starts_per_minute_per_ip: int = Field(
        60, ge=1, description="new free sessions per client address and minute (a lab behind one "
        "address needs room for everyone)")
    concurrency: int = Field(16, ge=1, le=1024, description="conversations served at once (Gradio queue)")
    max_turns: int = Field(20, ge=1, le=1000, description="turns of a live conversation")
    idle_minutes: float = Field(
        30.0, gt=0, le=10_080, description="a conversation untouched this long leaves memory; it is "
        "rebuilt from the store when the person comes back")


class Config(_Strict):
    """The whole configuration: every section, roles filled with the defaults (:func:`load_config`)."""
    store: str = "runs/deskbench.sqlite"
    roles: dict[str, ModelSpec] = Field(default_factory=_default_roles)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    cost: CostConfig = Field(default_factory=CostConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    run: RunConfig = Field(default_factory=RunConfig)
    ntb: NtbConfig = Field(default_factory=NtbConfig)
    rag: RagConfig = Field(default_factory=RagConfig)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    app: AppConfig = Field(default_factory=AppConfig)
    voice: VoiceConfig = Field(default_factory=VoiceConfig)
    agent: AgentSpec = Field(default_factory=AgentSpec)

    @field_validator("roles")
    @classmethod
    def _known_roles(cls, v):
        unknown = set(v) - set(ROLES)
        if unknown:
            raise ValueError(f"unknown role(s) {sorted(unknown)}; roles are {', '.join(ROLES)}")
        full = _default_roles()
        full.update(v)
        return full

    def role(self, name: str) -> ModelSpec:  # KeyError for an unknown role
        return self.roles[name]


def _deep_merge(base: dict, over: dict) -> dict:
    return {**base, **{k: _deep_merge(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict)
                       else v for k, v in over.items()}}


def _set_path(tree: dict, dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for p in parents:
        tree = tree.setdefault(p, {})
    tree[leaf] = value


def env_overrides(environ: dict[str, str] | None = None) -> dict:
    """``DESKBENCH_ROLES__JUDGE__BASE_URL=...`` style variables as a nested dict."""
    environ = os.environ if environ is None else environ
    tree: dict = {}
    for key, value in environ.items():
        if key.startswith(ENV_PREFIX) and "__" in key:
            _set_path(tree, key[len(ENV_PREFIX):].lower().replace("__", "."), value)
        elif key == ENV_PREFIX + "STORE":
            tree["store"] = value
    return tree


def _role_defaults_with(overrides: dict) -> dict:
    """Role overrides merge into each role's defaults instead of replacing the whole spec."""
    defaults = {k: v.model_dump() for k, v in _default_roles().items()}
    return {name: _deep_merge(defaults.get(name, {}), spec or {}) if isinstance(spec, dict) or spec is None
            else spec for name, spec in overrides.items()}  # a non-table spec is left to validation


def load_config(path: str | Path | None = None, overrides: dict | None = None,
                environ: dict[str, str] | None = None) -> Config:
    """Build the config: defaults < TOML file < environment < ``overrides`` (CLI flags).

    Raises:
        ConfigError: for a missing or unreadable file, unknown keys or wrong types; the message
            names each offending key.
    """
    tree: dict = {}
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"Config file {path} does not exist. Pass an existing TOML file "
                              "or leave --config out to use the defaults.")
        try:
            tree = tomllib.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise ConfigError(f"Config file {path} is not UTF-8 text (byte {exc.start}). Re-save it as "
                              "UTF-8 (TOML files must be UTF-8).") from exc
        except OSError as exc:
            raise ConfigError(f"Config file {path} cannot be read ({exc.strerror}). Pass a readable "
                              "TOML file.") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"Config file {path} is not valid TOML: {exc}. Fix that line "
                              "(docs/configuration.md shows every key).") from exc
    tree = _deep_merge(tree, env_overrides(environ))
    tree = _deep_merge(tree, overrides or {})
    if "roles" in tree and isinstance(tree["roles"], dict):
        tree["roles"] = _role_defaults_with(tree["roles"])
    try:
        config = Config.model_validate(tree)
    except ValidationError as exc:
        problems = [f"  {'.'.join(str(p) for p in err['loc'])}: {err['msg']}" + (
            f" (got {err['input']!r})" if err["type"] != "extra_forbidden" else " (unknown key; check the spelling)")
            for err in exc.errors()]
        source = f" in {path}" if path else ""
        raise ConfigError("Invalid configuration" + source + ":\n" + "\n".join(problems)
                          + "\nSee docs/configuration.md for every key.") from exc
    _check_embedded_models(config, f" in {path}" if path else "")
    return config


def _check_embedded_models(config: Config, source: str) -> None:
    """An embedded role must name a known embedded model, checked before anything is stored."""
    from harness.models.model_files import EMBEDDED_MODELS
    for name, spec in config.roles.items():
        if spec.embedded and spec.model not in EMBEDDED_MODELS:
            raise ConfigError(
                f"Invalid configuration{source}:\n  roles.{name}.model: {spec.model!r} is not an embedded "
                f"model (known: {', '.join(EMBEDDED_MODELS)}) and roles.{name}.base_url is not set. Use a "
                f"known key, or set roles.{name}.base_url to the OpenAI-compatible endpoint that serves it.")
