"""The composition root: config in, collaborators out.

Builds role clients (starting the embedded engine only when a role needs it), the user, the
agent, the judges, the cost model and the turn loop graph. The batch runners
(``harness.selfscore.batch``, ``harness.ntb.batch``) are handed the :class:`Runtime` built here
and never import this module; :func:`run_selfscore` is the one-call batch with its own runtime.
"""
from __future__ import annotations

import asyncio
import re
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterable

from langchain_core.language_models import BaseChatModel

from graphs.protocols import Agent, LLMCall, User
from graphs.selfscore import build_selfscore_graph
from harness.agents.plain import PlainAgent
from harness.agents.scripted import ScriptedAgent
from harness.aids.profiles import Profile, resolve_profile
from harness.config import EXTERNAL_AGENTS, NTB_ONLY_ROLES, VOICE_BOT_AGENTS, Config, ConfigError, ModelSpec
from harness.models.engine import EngineManager
from harness.models.llm import RoleClient, chat_model_for
from harness.agents.prompts import agent_system
from harness.selfscore import prompts
from harness.selfscore.batch import Progress, ProgressFn, arun_selfscore
from harness.selfscore.cost import AgentTurnCost
from harness.selfscore.judges import SelfScoreJudges, StructuredJudge
from harness.selfscore.score_reading import score_reading_record
from harness.selfscore.scoring import turn_quality
from harness.simuser.users import ScriptedUser, SimulatedUser
from harness.tasks.datasets import Dataset

ChatModelFactory = Callable[[str, ModelSpec], BaseChatModel]


#: idle connections a role's pool keeps per conversation run at once (the judges of a turn run
#: together: a conversation has up to three requests of one role in flight)
POOL_PER_CONVERSATION = 4


class Runtime:
    """Owns the engine and the role clients of one process; close it to stop the engine."""

    def __init__(self, config: Config, chat_models: ChatModelFactory | None = None):
        self.config = config
        self.engine = EngineManager(config.engine)
        self._chat_models = chat_models or self._default_chat_model
        self._clients: dict[str, RoleClient] = {}

    @cached_property
    def profile(self) -> Profile:
        """The run's method profile: each aid's effective value (``harness.aids.profiles``)."""
        return resolve_profile(self.config)

    @cached_property
    def aid_versions(self) -> dict[str, str]:
        """Every aid's version (:func:`aid_versions`), hashed once per runtime: the rule sets and
        prompts are constants of the process, and a record is made for every judge set built
        (per judgment when transcripts are scored), where hashing the catalogue took 1.5 ms."""
        return aid_versions()

    def profile_record(self, profile: Profile | None = None) -> dict:
        """What the run, each judgment and each score row store of ``profile`` (default the
        runtime's): its name, every aid's value, source and version."""
        record = (profile or self.profile).record(self.aid_versions, context_limits(self.config))
        return {**record, "score_reading": {**score_reading_record(self.config.scoring.score_reading),
                                            "reasons": self.judge_reasons()},
                "judge_sees_trace": self.config.agent.judge_sees_trace}

    def _default_chat_model(self, role: str, spec: ModelSpec) -> BaseChatModel:
        url = spec.base_url or self.engine.base_url(spec.model, self.engine_instance(role))
        # a pool of the role's own, a few idle connections per conversation at once kept open
        model = chat_model_for(spec, url, pool_size=max(100, POOL_PER_CONVERSATION * self.config.run.concurrency))
        # Only the agent's reply is streamed (to a live session's page); judges, the user and
        # the extractor always make one plain request, whatever callbacks are attached.
        model.disable_streaming = role != "agent"
        return model

    def check_models(self, roles: Iterable[str] | None = None) -> None:
        """Assemble and verify every embedded model the roles use, so that a missing or broken
        model is reported before a run stores anything (fast once assembled).

        Args:
            roles: the roles to check; default every role but the NoisyToolBench-only ones
                (``config.NTB_ONLY_ROLES``), which a NoisyToolBench run names itself.

        Raises:
            ModelFileError: naming the model and the install command.
            ConfigError: the team's agent under test cannot be built or reached; a persona that
                needs a decided outcome on a profile that leaves it to the user model.
        """
        run = self.config.run
        if run.user == "llm" and run.persona != "cooperative" and self.profile.value("user_outcome") == "model":
            raise ConfigError(f"the {run.persona!r} persona plans its replies on a decided outcome, which "
                              f"this profile leaves to the user model (user_outcome=model: "
                              f"{self.profile.settings['user_outcome'].source}); pass --aid user_outcome=on "
                              "or run the cooperative persona")
        if self.config.run.agent in EXTERNAL_AGENTS:
            self.external_agent  # noqa: B018 - built and reached (ConfigError names the fault) before a run is stored
        if self.calls_a_bot:  # dialled once (ConfigError names the fault) before a run is stored
            from harness.voicebots import check_bot
            check_bot(self.config)
        if self._chat_models != self._default_chat_model:
            return  # the caller supplies the chat models (tests, other factories)
        from harness.models.model_files import ensure_model
        names = [r for r in self.config.roles if r not in NTB_ONLY_ROLES] if roles is None else roles
        if self.config.run.agent in EXTERNAL_AGENTS + VOICE_BOT_AGENTS:  # the team's agent answers; no agent model runs
            names = [r for r in names if r != "agent"]
        for model in {self.config.role(r).model for r in names if self.config.role(r).embedded}:
            ensure_model(model)

    def client(self, role: str) -> RoleClient:
        """The role's :class:`RoleClient`, built once; an embedded role's client can restart its
        server (``heal``) when the default chat models are used."""
        if role not in self._clients:
            spec = self.config.role(role)
            heal = None
            if spec.embedded and self._chat_models == self._default_chat_model:
                heal = lambda model=spec.model, at=self.engine_instance(role): self.engine.heal(model, at)  # noqa: E731
            self._clients[role] = RoleClient(role, spec, self._chat_models(role, spec), heal)
        return self._clients[role]

    #: a written reason with every read score when ``scoring.judge_reasons`` is unset: off in
    #: batches; the live app sets it on (the organiser reads them), ``deskbench sanity`` asks for them
    reasons_by_default = False

    def judge_reasons(self, default: bool | None = None) -> bool:
        """Whether a score read from probabilities gets a written reason: ``scoring.judge_reasons``,
        unset: ``default``, else :attr:`reasons_by_default`."""
        reasons = self.config.scoring.judge_reasons
        if reasons is None:
            reasons = self.reasons_by_default if default is None else default
        return reasons

    def structured_judge(self, role: str, reasons_default: bool | None = None) -> StructuredJudge:
        """A :class:`StructuredJudge` on the role's client (``run.judge_retries`` retries), reading
        scores as ``scoring.score_reading`` says, with reasons per
        ``scoring.judge_reasons`` (unset: ``reasons_default``, else :attr:`reasons_by_default`)."""
        return StructuredJudge(self.client(role), self.config.run.judge_retries,
                               reading=self.config.scoring.score_reading, reasons=self.judge_reasons(reasons_default))

    def user(self, scripts: dict[str, list[str]], openings: dict[str, str] | None = None) -> User:
        """The configured user: LLM-simulated, or scripted from each task's ``followups``
        (turn 1 from ``openings`` where given: a replayed conversation's first message);
        speaking through ``voice_link`` when ``voice.enabled`` (docs/voice.md)."""
        user = (ScriptedUser(scripts, openings) if self.config.run.user == "scripted"
                else self.simulated_user())
        if self.calls_a_bot:  # the caller of a team's voice bot (docs/voice-bots.md)
            from harness.voicebots import BotCaller
            return BotCaller(user, self.bot_calls)
        return self.voice_side("user", user) if self.speaks else user

    def simulated_user(self) -> SimulatedUser:
        """The LLM-simulated user with the configured checks and regenerations."""
        run = self.config.run
        return SimulatedUser(self.client("user"),
                             self.client("judge") if run.user_checks == "rules+judge" else None,
                             self.profile.value("user_regenerations"),
                             outcome=self.profile.value("user_outcome"),
                             fallback=self.profile.value("user_fallback"))

    def agent(self, replies: dict[str, list[str]], calls: dict[str, list[LLMCall]],
              traces: dict[str, list] | None = None) -> Agent:
        """The configured agent (see ``text_agent``), speaking through ``voice_link`` when
        ``voice.enabled`` (docs/voice.md)."""
        if self.calls_a_bot:
            from harness.voicebots import VoiceBotAgent
            return VoiceBotAgent(self.bot_calls)
        agent = self.text_agent(replies, calls, traces)
        return self.voice_side("agent", agent) if self.speaks else agent

    @property
    def calls_a_bot(self) -> bool:
        """The agent under test is a team's voice bot (``run.agent`` twilio-ws or realtime-ws)."""
        return self.config.run.agent in VOICE_BOT_AGENTS

    @cached_property
    def bot_calls(self):
        """The calls to the team's voice bot (``harness.voicebots.BotCalls``) on ``voice_link``."""
        from harness.voicebots import build_bot_calls
        return build_bot_calls(self.config, self.voice_link)

    @property
    def speaks(self) -> bool:
        """Voice on, except when re-judging (a stored voice run's messages were already heard)."""
        return self.config.voice.enabled and self.config.run.agent != "replay"

    def engine_instance(self, role: str) -> str:
        """The embedded server a role uses: the first (``""``), or with ``engine.judge_server``
        a second one (``"judges"``) for every role but the agent."""
        return "judges" if self.config.engine.judge_server and role != "agent" else ""

    @property
    def yields_to_agent(self) -> bool:
        """Whether the other roles yield the endpoint to the agent: a voice call with
        ``voice.judging = "yield"`` (``harness.models.traffic``)."""
        return self.speaks and self.config.voice.judging == "yield"

    def voice_side(self, side: str, inner):
        """``inner`` speaking through the voice link: full-duplex on one clock
        (``voice.duplex``), the streamed pipeline (``voice.streaming``, the default) or
        turn-based (docs/voice.md)."""
        voice = self.config.voice
        if voice.duplex:
            from harness.voice.duplex import DuplexVoiceAgent, DuplexVoiceUser
            return (DuplexVoiceUser if side == "user" else DuplexVoiceAgent)(inner, self.voice_hub)
        if voice.streaming:
            from harness.voice.call import StreamingVoiceAgent, StreamingVoiceUser
            return (StreamingVoiceUser if side == "user" else StreamingVoiceAgent)(inner, self.voice_link)
        from harness.voice.call import VoiceAgent, VoiceUser
        return (VoiceUser if side == "user" else VoiceAgent)(inner, self.voice_link)

    @cached_property
    def voice_hub(self):
        """The duplex calls in progress (one clock and timeline per call), on ``voice_link``."""
        from harness.voice.callers import caller_preset
        from harness.voice.duplex import DuplexHub
        from harness.voice.timeline import Compute
        voice = self.config.voice
        return DuplexHub(self.voice_link, caller_preset(voice.caller), Compute(voice.compute), voice.seed)

    @cached_property
    def voice_link(self):
        """The speech link (TTS, channel, STT, audio files) shared by the voice user and agent."""
        from harness.voice.call import build_link
        return build_link(self.config.voice, self.config.store)

    def text_agent(self, replies: dict[str, list[str]], calls: dict[str, list[LLMCall]],
                   traces: dict[str, list] | None = None) -> Agent:
        """The paper's plain agent, the RAG agent, the team's own (``external_agent``), or
        replayed replies (a human baseline's, or a stored run's when re-judging, with the traces
        an agent under test reported)."""
        if self.config.run.agent in ("human", "replay"):
            return ScriptedAgent(replies, calls, traces)
        return self.llm_agent(self.config.run.agent)

    @cached_property
    def external_agent(self) -> Agent:
        """The team's own agent under test (``run.agent`` one of ``EXTERNAL_AGENTS``), built once
        and checked before anything is stored (docs/agents.md)."""
        from harness.adapters import build_external_agent, check_agent
        found = check_agent(self.config)  # one probe: reachable, and the openai endpoint's first model
        if self.config.run.agent == "openai" and not self.config.agent.model:
            if not found:
                raise ConfigError("--agent openai needs the model's name: pass --agent-model NAME (the "
                                  "endpoint's /models lists none).")
            self.config.agent.model = found
        return build_external_agent(self.config)

    def llm_agent(self, kind: str) -> Agent:
        """The agent model's help-desk agent: ``plain`` (the paper's) or ``rag``; for an external
        kind, the team's own agent (:attr:`external_agent`)."""
        if kind in EXTERNAL_AGENTS:
            return self.external_agent
        system = agent_system(self.profile.value("reply_cap"))
        if kind == "rag":
            from harness.agents.rag import RagAgent
            return RagAgent(self.client("agent"), self.knowledge_base(), k=self.config.rag.k,
                            system_prompt=system)
        return PlainAgent(self.client("agent"), system)

    def knowledge_base(self):
        """The RAG knowledge base, built (incrementally) from ``rag.kb`` on first use."""
        from harness.agents.rag import KnowledgeBase
        from harness.tasks.datasets import load_dataset
        if not self.config.rag.kb:
            raise ConfigError("--agent rag needs a knowledge base: pass --kb TASKS (e.g. the "
                              ".kb.jsonl half written by `deskbench import ... --split SEED`).")
        kb_set = load_dataset(self.config.rag.kb)
        collection = re.sub(r"[^A-Za-z0-9_-]", "-", f"kb-{kb_set.name}-{kb_set.sha256[:12]}")[:200]
        index_dir = self.config.rag.index_dir or str(Path(self.config.store).parent / "kb")
        kb = KnowledgeBase(index_dir, collection=collection)
        kb.build(kb_set.tasks)
        return kb

    def turn_judges(self, profile: Profile | None = None, reasons_default: bool | None = None) -> SelfScoreJudges:
        """The per-turn judges on the judge role, with the aids of ``profile`` (default the
        runtime's): the solved-check method, manipulation defence, helpfulness bounds and
        handling of other languages; every judgment records the profile."""
        profile = profile or self.profile
        judge = self.structured_judge("judge", reasons_default)
        return SelfScoreJudges(judge, **profile.judge_aids(),
                               profile_record=self.profile_record(profile))

    def selfscore_graph(self, user: User, agent: Agent, sink, checkpointer=None):
        """The SelfScore turn-loop graph of ``user`` and ``agent``: the turn judges, the agent's cost
        model, ``sink`` for each finished turn, and the solved-check stop."""
        cfg = self.config
        judges = self.turn_judges()
        if cfg.agent.judge_sees_trace:
            from harness.selfscore.trace_judges import TraceJudges
            judges = TraceJudges(judges)
        return build_selfscore_graph(
            user=user, agent=agent, judges=judges,
            cost=AgentTurnCost(cfg.cost, cfg.role("agent")), sink=sink, turn_quality=turn_quality,
            stop_on_solved=cfg.run.stop_on_solved, checkpointer=checkpointer,
        )

    def close(self) -> None:
        """Stop the embedded servers this runtime started."""
        self.engine.close()

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def aid_versions() -> dict[str, str]:
    """The version of each aid, computed now by ``harness.aids.version_of`` from everything that
    decides it (rule sets, limits, prompt texts): a changed rule, threshold or prompt sentence
    changes the version a run records (docs/rules.md, "Recorded versions")."""
    from harness.agents import AGENT_REPLY_BOUND
    from harness.aids import bounds_version, version_of
    from harness.defence import rules_version
    from harness.selfscore import solved_rules_version, translate_version
    from harness.simuser import user_checks_version
    return {"helpfulness_bounds": bounds_version(), "solved_rules": solved_rules_version(),
            "manipulation_defence": rules_version(), "translation": translate_version(),
            "reply_cap": version_of("reply-cap", [AGENT_REPLY_BOUND]),
            "user_regenerations": user_checks_version(), **simulator_and_prompt_versions()}


def simulator_and_prompt_versions() -> dict[str, str]:
    """The versions of the aids that are prompt texts and simulator methods, each a hash of the
    texts and thresholds that decide what it does (a changed text changes its version)."""
    from harness.aids import version_of
    from harness.selfscore import guard_version
    from harness.simuser import fallback_version, outcome_version
    return {"judge_reminder": version_of("judge-reminder", [prompts.LATEST_MESSAGE]),
            "preprocessing_guard": guard_version(), "user_outcome": outcome_version(),
            "user_fallback": fallback_version()}


def context_limits(config: Config) -> dict:
    """What every profile keeps for the models' context, with the values used: how much of the
    conversation and of the latest message a judge reads, how much history the agent and the
    simulated user read, and every role's output cap (``max_tokens``)."""
    from harness.agents.history import HISTORY_CHARS
    from harness.selfscore import CONVERSATION_MAX_CHARS, LATEST_MAX_CHARS
    from harness.simuser import OUTCOME_AGENT_CHARS, OUTCOME_SOLUTION_CHARS
    return {"judge_latest_message_chars": LATEST_MAX_CHARS,
            "judge_conversation_chars": CONVERSATION_MAX_CHARS,
            "judge_earlier_message_chars": CONVERSATION_MAX_CHARS // 3,
            "history_chars": HISTORY_CHARS,
            "user_outcome_agent_chars": OUTCOME_AGENT_CHARS,
            "user_outcome_solution_chars": OUTCOME_SOLUTION_CHARS,
            "max_tokens": {role: config.role(role).max_tokens for role in sorted(config.roles)}}


def run_selfscore(config: Config, dataset: Dataset | None = None, resume: str | None = None,
                  on_progress: ProgressFn | None = None, chat_models=None) -> tuple[str, Progress]:
    """Synchronous :func:`arun_selfscore` with its own runtime (stopped at the end).

    ``chat_models`` replaces how role clients are built (tests pass fakes).
    """
    with Runtime(config, chat_models) as runtime:
        return asyncio.run(arun_selfscore(runtime, dataset, resume, on_progress))
