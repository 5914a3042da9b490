"""Defaults from one source, the config object (harness/config.py): every ``deskbench`` (and
``app.py``) option that sets a config key prints that key's effective default in its help (the
config's value, or for an aid setting the config leaves at None what the method profile makes of
it); an option with a default of its own prints that; no help prints "default None". Also: the
constructors that mirror a config default take the config's.

The option -> key tables live beside each parser (``RUN_OPTIONS`` in harness/cli/run_parser.py,
``NTB_OPTIONS`` ...); the parsers carry them as ``action.config_key``, which this test reads.
"""
from __future__ import annotations

import argparse
import inspect
import re

import pytest
from pydantic import BaseModel

import app
from harness.aids.profiles import AIDS
from harness.cli.defaults import config_default, effective_default
from harness.config import Config, NtbConfig, RagConfig, RunConfig, VoiceConfig
from ui.commands import build_parser

DEFAULTS = Config()
AID_SETTINGS = {a.setting: a for a in AIDS}
FIELDS = {name for section in (getattr(DEFAULTS, s) for s in Config.model_fields)
          if isinstance(section, BaseModel) for name in type(section).model_fields}
"""Every field name of every config section (an option's ``dest`` that matches one must say
where its default comes from)."""


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command, parser) of ``parser`` and of every subcommand's parser, depth first."""
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, (*path, name))


PARSERS = [(c or "deskbench", p) for c, p in walk(build_parser())] + [("app.py", app.build_parser())]
OPTIONS = [(command, parser, action) for command, parser in PARSERS for action in parser._actions
           if action.option_strings and not isinstance(action, argparse._HelpAction)]


def help_of(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The option's help as ``--help`` prints it (``%`` expanded), on one line."""
    return " ".join(parser._get_formatter()._expand_help(action).split()) if action.help else ""


def config_value(key: str):
    """The config's default of ``key``, read from the pydantic models (not via the CLI helper)."""
    node = DEFAULTS
    for part in key.split("."):
        node = node[part] if isinstance(node, dict) else getattr(node, part)
    return node


def text(value) -> str:
    """A value as help writes it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value)
    return str(value)


def profile_text(key: str) -> str:
    """What help says for an aid setting the method profile decides, from the aids table."""
    aid = AID_SETTINGS[key]
    return f"from the method profile: {text(aid.on)} where the {aid.name} aid is on, else {text(aid.off)}"


def switch(action: argparse.Action) -> bool:
    """A flag without a value that sets True or False (``--duplex``); a ``--reasons/--no-reasons``
    pair, whose unset means "the command decides", is documented like a valued option."""
    return action.nargs == 0 and isinstance(action.const, bool)


MAPPED = [(c, p, a) for c, p, a in OPTIONS if getattr(a, "config_key", None)]


def test_the_tables_cover_the_commands_that_read_the_config():
    by_command = {}
    for command, _, action in MAPPED:
        by_command.setdefault(command, set()).add(action.option_strings[-1])
    assert {"--limit", "--max-turns", "--concurrency", "--dataset", "--store", "--profile"} <= by_command["run"]
    assert by_command["ray run"] >= by_command["run"]          # ray run takes run's options
    assert {"--threshold", "--max-steps", "--agent-variant"} <= by_command["ntb run"]
    assert {"--tts", "--caller", "--duplex", "--snr"} <= by_command["call simulate"]
    assert {"--languages", "--no-defence"} <= by_command["robustness"]
    assert {"--host", "--port", "--kb"} <= by_command["app.py"]
    assert by_command["app"] == by_command["app.py"]
    assert len(MAPPED) > 100


@pytest.mark.parametrize("command,parser,action", MAPPED,
                         ids=[f"{c} {a.option_strings[-1]}" for c, _, a in MAPPED])
def test_an_option_that_sets_a_config_key_prints_its_effective_default(command, parser, action):
    key, shown = action.config_key, help_of(parser, action)
    value = config_value(key)
    if switch(action):
        want = profile_text(key) if value is None else text(value)
        assert f"(default: {key} {want})" in shown, shown
        return
    assert action.default is None, f"{command} {action.option_strings}: its own default hides {key}'s"
    if value is not None:
        assert f"(default: {text(value)})" in shown, shown
    elif key in AID_SETTINGS:
        assert f"(default: {profile_text(key)})" in shown, shown
    else:
        assert re.search(r"\(default: [^)]", shown) and "None" not in shown, shown
    assert shown.count("default") == 1, f"{command} {action.option_strings}: two defaults in {shown!r}"


OWN = [(c, p, a) for c, p, a in OPTIONS if not getattr(a, "config_key", None) and not switch(a)
       and a.default not in (None, argparse.SUPPRESS)]


@pytest.mark.parametrize("command,parser,action", OWN, ids=[f"{c} {a.option_strings[-1]}" for c, _, a in OWN])
def test_an_option_with_its_own_default_prints_that_default(command, parser, action):
    shown = help_of(parser, action)
    match = re.search(r"default:? ([^\s,;:)]+)", shown)
    assert match, f"{command} {action.option_strings}: no default in {shown!r}"
    said, real = match.group(1), action.default
    if isinstance(real, (int, float)) and not isinstance(real, bool):
        assert float(said) == float(real), shown
    else:
        assert said == text(real) or text(real).startswith(said), shown


def test_no_help_prints_default_none():
    for command, parser in PARSERS:
        shown = " ".join(parser.format_help().split())
        for bad in ("default None", "default: None", "(default: none)"):
            assert bad not in shown, f"`{command} --help` says {bad!r}"


NONE_DEFAULTS = [(c, p, a) for c, p, a in OPTIONS if a.default is None and a.dest in FIELDS]


@pytest.mark.parametrize("command,parser,action", NONE_DEFAULTS,
                         ids=[f"{c} {a.option_strings[-1]}" for c, _, a in NONE_DEFAULTS])
def test_an_option_named_like_a_config_field_says_where_its_default_comes_from(command, parser, action):
    assert getattr(action, "config_key", None) or getattr(action, "stated_default", None), \
        f"`{command} {action.option_strings[-1]}` looks like a config key: map it (config_options) " \
        "or state its default (stated_default)"


def test_the_helper_gives_config_and_profile_defaults():
    assert config_default("run.limit") == 3 and config_default("scoring.profile") == "auto"
    assert config_default("roles.agent.temperature") == 0.3 and config_default("store") == DEFAULTS.store
    assert effective_default("run.agent_reply_sentences") == \
        "from the method profile: 3 where the reply_cap aid is on, else 0"
    assert effective_default("run.limit") == 3
    with pytest.raises(KeyError):
        config_default("run.no_such_key")


def test_the_issue_cases_print_the_configs_defaults():
    by_command = {c: p for c, p in PARSERS}
    shown = " ".join(by_command["run"].format_help().split())
    assert "turns per conversation (default: 50)" in shown and "number of problems (default: 3)" in shown
    demo = " ".join(by_command["demo"].format_help().split())
    assert "number of problems (default: 2)" in demo          # demo's own, in effect over the config's
    robustness = " ".join(by_command["robustness"].format_help().split())
    assert "(default: from the method profile: translate where the translation aid is on, else as-is)" \
        in robustness


# --- constructors that mirror a config default -------------------------------------------------

def default_of(function, name: str):
    """The default of parameter ``name`` of ``function``."""
    return inspect.signature(function).parameters[name].default


def test_selfscore_and_ntb_constructors_take_the_configs_defaults():
    from harness.ntb.agent import NativeToolAgent, TextProtocolAgent
    from harness.ntb.batch import CaseEnvironment
    from harness.ntb.scoring import score_case
    from harness.ntb.transcripts import score_ntb_transcripts
    from harness.agents.rag import KnowledgeBase, RagAgent
    from harness.simuser.users import SimulatedUser

    ntb, run, rag = NtbConfig(), RunConfig(), RagConfig()
    assert default_of(SimulatedUser, "max_regenerations") == AID_SETTINGS["run.user_regenerations"].on
    assert default_of(RagAgent, "k") == default_of(KnowledgeBase.retrieve, "k") == rag.k
    for function in (score_case, score_ntb_transcripts):
        assert default_of(function, "threshold") == ntb.threshold
        assert default_of(function, "a2_method") == ntb.a2_method
        assert default_of(function, "ask_match") == ntb.ask_match
    assert default_of(score_ntb_transcripts, "concurrency") == run.concurrency
    assert default_of(TextProtocolAgent, "variant") == default_of(NativeToolAgent, "variant") == ntb.agent_variant
    assert default_of(CaseEnvironment, "simulator_first") == (ntb.api_fallback == "simulator-first")


def test_voice_constructors_match_the_voice_config():
    """The voice package may not import the config (docs/architecture.md), so its literals stay;
    this keeps them equal to VoiceConfig's."""
    from harness.live.speech import ReplySpeech
    from harness.voice.call import Channel, SpeechLink
    from harness.voice.duplex import DuplexHub
    from harness.voice.streaming import SentenceSplitter, speak_streamed
    from harness.voice.stt import Transcriber
    from harness.voice.timeline import Compute
    from harness.voice.tts import Speaker

    voice = VoiceConfig()
    assert default_of(Transcriber, "model") == voice.stt_model
    assert default_of(Transcriber, "beam_size") == voice.stt_beam_size
    assert default_of(Speaker, "engine") == voice.tts
    assert default_of(SpeechLink, "tts_check") == voice.tts_check
    assert default_of(SpeechLink, "stream") == default_of(speak_streamed, "stream") == voice.streaming
    assert default_of(SpeechLink, "endpoint_ms") == voice.endpoint_ms
    for function in (SpeechLink, SentenceSplitter, speak_streamed, ReplySpeech):
        assert default_of(function, "first_chunk_words") == voice.first_chunk_words, function
    assert (Channel().telephone, Channel().snr_db, Channel().seed) == (voice.telephone, voice.snr_db, voice.seed)
    assert default_of(DuplexHub, "seed") == voice.seed
    assert Compute().mode == voice.compute
