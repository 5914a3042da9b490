"""Method profiles: which aids made for small local models are on, and what a score records.

SelfScore's method is the judges' questions (``harness.selfscore``). What makes the embedded
1.5B usable on top of it (a rule that bounds a score, a veto, a rewritten input, a shorter
agent reply, regenerated user messages) is an *aid*: named here, switchable, versioned, and
recorded on every judgment and score it shaped. Three profiles (config ``scoring.profile``):

- ``paper``: the published method and nothing else: the judge's own scores, the solved-check
  as one verdict from the turn history and the latest agent message, the paper's agent and
  preprocessing prompts, messages judged as written, a simulated user that says itself what
  happened (no outcome decided for it, nothing regenerated or replaced).
- ``embedded``: every aid on.
- ``auto`` (default): each aid follows its role; on where that role runs on the embedded
  model, off where it runs on a configured endpoint (the judges' aids follow the judge role,
  the reply cap the agent role, the user's regenerations the user role).

An aid's own setting (``scoring.helpfulness_bounds`` ...; None by default) overrides the
profile for that aid alone. :func:`resolve_profile` turns a config into the effective values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PROFILES = ("auto", "paper", "embedded")


@dataclass(frozen=True, slots=True)
class Aid:
    """One aid: where it is set, its value on and off, which role's model it is for."""

    name: str
    role: str
    setting: str          # the config key, "section.field"
    on: Any               # the value when the aid is on (the embedded profile's)
    off: Any              # the value when it is off (the paper's method)
    post_processing: bool  # pure post-processing of the judge's answer (rescore can undo it)
    what: str


AIDS: tuple[Aid, ...] = (
    Aid("helpfulness_bounds", "judge", "scoring.helpfulness_bounds", True, False, True,
        "pins a helpfulness score to the rubric's band where a rule sees what the message plainly is"),
    Aid("solved_rules", "judge", "run.solved_check", "evidence", "verdict", False,
        "the solved-check reads the evidence with rules first: the user's reaction (a confirmation, then "
        "two Yes/No questions), else whether an answer is the fix (rule vetoes, two Yes/No questions, "
        "the reference solution)"),
    Aid("manipulation_defence", "judge", "scoring.manipulation_defence", True, False, False,
        "judges read messages with the spans that address a rater removed"),
    Aid("translation", "judge", "scoring.other_languages", "translate", "as-is", False,
        "a message that is not English is translated before it is judged"),
    Aid("reply_cap", "agent", "run.agent_reply_sentences", 3, 0, False,
        "the agent's system prompt asks for at most 3 short sentences with one next step"),
    Aid("user_regenerations", "user", "run.user_regenerations", 2, 0, False,
        "a simulated user message that fails a rule check is regenerated (up to 2 times)"),
    Aid("judge_reminder", "judge", "scoring.judge_reminder", True, False, False,
        "a reminder after the judged message: text in it that addresses a rater, asks for a score or "
        "claims the problem is solved is not help and earns nothing"),
    Aid("preprocessing_guard", "extractor", "scoring.preprocessing_guard", True, False, False,
        "the extractor's prompts ask for a first-person restatement and a problem stated as a fact "
        "(a system message, the text between tags, worked examples), and an output that shows an "
        "answer or solution sign is regenerated once with a stricter prompt; off: the paper's two "
        "prompts verbatim, one call each"),
    Aid("user_outcome", "user", "run.user_outcome", "decided", "model", False,
        "a simulator method: whether the agent's message fixes the hidden cause is decided before "
        "the reply (the user model's P(yes) and the similarity to the real fix against thresholds; "
        "a question naming no term of the fix is no fix) and the reply is written under a note "
        "saying so; off: the user model reads the conversation and says what happened itself"),
    Aid("user_fallback", "user", "run.user_fallback", True, False, False,
        "when every draft of a not-fixed reply misleads about the outcome, the first harmless draft "
        "is sent, else the scripted \"I tried that, but the problem is still there.\""),
)
AID_NAMES = tuple(a.name for a in AIDS)
EMBEDDED_AIDS = {a.name: a.on for a in AIDS}
"""Every aid's value on the embedded profile (the default of constructors that take aids)."""
PAPER_AIDS = {a.name: a.off for a in AIDS}
"""Every aid's value on the paper profile (the method without aids)."""


def _get(config, dotted: str) -> Any:
    section, key = dotted.split(".")
    return getattr(getattr(config, section), key)


@dataclass(frozen=True)
class AidSetting:
    """One aid's effective value in a run and where it came from."""

    aid: Aid
    value: Any
    source: str  # "scoring.helpfulness_bounds" (set), "profile paper", "auto: judge role is embedded", ...

    @property
    def on(self) -> bool:
        """Whether the aid changes anything (its value is not the paper's)."""
        return self.value != self.aid.off


@dataclass(frozen=True)
class Profile:
    """The effective method profile of a run: every aid's value, and the profile's name."""

    requested: str
    settings: dict[str, AidSetting]

    def value(self, name: str) -> Any:
        """The effective value of aid ``name`` (e.g. ``"run.solved_check"``'s for ``solved_rules``)."""
        return self.settings[name].value

    def on(self, name: str) -> bool:
        """Whether aid ``name`` is on."""
        return self.settings[name].on

    @property
    def name(self) -> str:
        """``paper`` when no aid is on, ``embedded`` when every aid is at its embedded value,
        else ``mixed`` (the record lists which are on)."""
        if not any(s.on for s in self.settings.values()):
            return "paper"
        if all(s.value == s.aid.on for s in self.settings.values()):
            return "embedded"
        return "mixed"

    def aids_on(self) -> list[str]:
        """Names of the aids that are on."""
        return [n for n, s in self.settings.items() if s.on]

    def record(self, versions: dict[str, str], limits: dict[str, Any] | None = None) -> dict:
        """What a run, a judgment or a score row stores: the profile's name, what was asked,
        every aid's value, version (``versions[name]``, when on) and source, and the context
        ``limits`` every profile keeps (clipping and output caps, with the values used)."""
        record = {"profile": self.name, "requested": self.requested,
                  "aids": {n: {"on": s.on, "value": s.value, "version": versions.get(n) if s.on else None,
                               "role": s.aid.role, "source": s.source} for n, s in self.settings.items()}}
        if limits is not None:
            record["limits"] = limits
        return record

    def judge_aids(self) -> dict[str, Any]:
        """The judges' aid values as :class:`harness.selfscore.judges.SelfScoreJudges` takes them."""
        return {"solved_method": self.value("solved_rules"),
                "manipulation_defence": self.value("manipulation_defence"),
                "other_languages": self.value("translation"),
                "helpfulness_bounds": self.value("helpfulness_bounds"),
                "judge_reminder": self.value("judge_reminder")}


def resolve_profile(config, profile: str | None = None, overrides: dict[str, Any] | None = None) -> Profile:
    """The effective profile of ``config`` (``scoring.profile``, or ``profile`` when given).

    Args:
        config: a :class:`harness.config.Config`.
        profile: ``auto``, ``paper`` or ``embedded``; default the config's.
        overrides: aid name -> value, above everything (a command's flag, e.g. ``--no-defence``).

    Raises:
        ValueError: for an unknown profile or aid name.
    """
    requested = profile or config.scoring.profile
    if requested not in PROFILES:
        raise ValueError(f"unknown method profile {requested!r}; one of {', '.join(PROFILES)}")
    unknown = set(overrides or {}) - set(AID_NAMES)
    if unknown:
        raise ValueError(f"unknown aid(s) {sorted(unknown)}; aids are {', '.join(AID_NAMES)}")
    settings = {}
    for aid in AIDS:
        explicit = _get(config, aid.setting)
        if overrides and aid.name in overrides:
            value, source = overrides[aid.name], "command flag"
        elif explicit is not None:
            value, source = explicit, aid.setting
        elif requested == "paper":
            value, source = aid.off, "profile paper"
        elif requested == "embedded":
            value, source = aid.on, "profile embedded"
        else:
            embedded = config.role(aid.role).embedded
            value = aid.on if embedded else aid.off
            source = f"auto: {aid.role} role is {'embedded' if embedded else 'an endpoint'}"
        settings[aid.name] = AidSetting(aid, value, source)
    return Profile(requested, settings)
