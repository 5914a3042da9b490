"""The default each option's help prints, taken from the config object (``harness.config``), the
one source of defaults.

A command module names the config key each of its options sets in a table (option -> key) and
hands it to :func:`config_options`; the option's help then ends with the key's effective
default: the config's value (``run.limit`` -> ``(default: 3)``), or for an aid setting the
config leaves at None, what the method profile makes of it, built from the aids table
(``harness.aids.profiles.AIDS``). :func:`show_defaults` then gives every other option with a
default of its own (argparse's, not a config key) that default, so no help prints
"(default None)" where something else is in effect. ``tests/test_cli_help_defaults.py`` reads
the tables back from the parsers (``action.config_key``).
"""
from __future__ import annotations

import argparse
import copy
from functools import lru_cache
from typing import Any, Mapping

from harness.aids.profiles import AIDS
from harness.config import Config

AID_SETTINGS = {a.setting: a for a in AIDS}
"""Aid setting (``section.key``) -> its aid: the keys the method profile decides when None."""

UNSET = {
    "run.name": "from the models, <agent>_<complexity model>_<judge model>",
    "rag.kb": "none: --agent rag needs one",
    "rag.index_dir": "kb/ next to the store",
    "voice.snr_db": "none: no noise",
    "voice.line": "none: the telephone and noise settings alone",
    "ntb.ids": "all",
    "ntb.per_category": "all",
    "agent.url": "none: --agent http, openai, langgraph and a2a need one",
    "agent.target": "none: --agent python and langgraph need one",
    "agent.model": "none: the first model the endpoint's /models lists",
    "agent.system_prompt": "none: the conversation alone",
    "agent.name": "the agent's host, target or model",
}
"""What a key left at None means, for the keys whose None the method profile does not decide."""

OptionKeys = Mapping[str, "str | tuple[str, str]"]
"""Option -> config key, or (config key, what None means for this command)."""


@lru_cache(maxsize=1)
def _defaults() -> Config:
    # built once and never changed: config_default hands out copies
    return Config()


def config_default(key: str) -> Any:
    """The config's default value of ``key`` (``"run.limit"`` -> 3, ``"store"``,
    ``"roles.agent.temperature"`` -> 0.3); None where the config leaves it unset.

    Raises:
        KeyError: ``key`` is not a config key.
    """
    node: Any = _defaults()
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif not isinstance(node, dict) and part in type(node).model_fields:
            node = getattr(node, part)
        else:
            raise KeyError(f"{key!r} is not a config key (docs/configuration.md lists them)")
    return copy.deepcopy(node)


def profile_phrase(key: str) -> str | None:
    """What the method profile makes of aid setting ``key`` when the config leaves it at None,
    from the aids table (e.g. ``from the method profile: 3 where the reply_cap aid is on, else
    0``); None for a key that is no aid setting."""
    aid = AID_SETTINGS.get(key)
    if aid is None:
        return None
    return f"from the method profile: {show(aid.on)} where the {aid.name} aid is on, else {show(aid.off)}"


def effective_default(key: str, unset: str | None = None) -> Any:
    """The default in effect for ``key``: the config's value; for an aid setting at None, the
    profile's phrase (:func:`profile_phrase`); for another key at None, ``unset`` or what
    :data:`UNSET` says None means (else ``"none"``)."""
    value = config_default(key)
    if value is not None:
        return value
    return profile_phrase(key) or unset or UNSET.get(key, "none")


def show(value: Any) -> str:
    """A default as help and docs write it: ``true``/``false``, ``none``, a list comma-joined."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(show(v) for v in value)
    return str(value)


def _switch(action: argparse.Action) -> bool:
    return action.nargs == 0 and isinstance(action.const, bool)


def _append(action: argparse.Action, text: str) -> None:
    # help strings are %-formatted by argparse: a literal % in a default must be doubled
    text = text.replace("%", "%%")
    action.help = f"{action.help} {text}" if action.help else text


def config_options(parser: argparse.ArgumentParser, options: OptionKeys) -> None:
    """Record which config key each of ``parser``'s ``options`` sets (``action.config_key``) and
    end its help with the key's effective default: ``(default: VALUE)``, or for a switch
    (``--duplex``) ``(default: KEY VALUE)``. An option with a default of its own (``demo
    --limit 2``) keeps it: that value, not the config's, is in effect, and its help says so.

    Raises:
        KeyError: an option ``parser`` does not have, or a key the config does not have.
    """
    for option, target in options.items():
        key, unset = (target, None) if isinstance(target, str) else target
        action = parser._option_string_actions.get(option)
        if action is None:
            raise KeyError(f"{parser.prog} has no option {option} to document")
        value = effective_default(key, unset)
        if _switch(action):
            action.config_key = key
            _append(action, f"(default: {key} {show(value)})")
        elif action.default is None:
            action.config_key = key
            _append(action, f"(default: {show(value)})")
        else:
            action.config_key = None  # its own default wins over the config's
            _append(action, f"(default: {show(action.default)})")


def stated_default(parser: argparse.ArgumentParser, option: str, phrase: str) -> None:
    """End ``option``'s help with ``(default: PHRASE)`` where neither the config nor argparse
    decides it (e.g. ``rejudge --profile``: the source run's); replaces a config default
    :func:`config_options` gave it.

    Raises:
        KeyError: an option ``parser`` does not have.
    """
    action = parser._option_string_actions.get(option)
    if action is None:
        raise KeyError(f"{parser.prog} has no option {option} to document")
    if getattr(action, "config_key", None) and action.help and "(default: " in action.help:
        action.help = action.help[:action.help.rindex(" (default: ")]
    action.config_key = None
    action.stated_default = phrase
    _append(action, f"(default: {phrase})")


def _actions(parser: argparse.ArgumentParser, seen: set[int]):
    """Every action of ``parser`` and of its subcommands' parsers, each once (``ray run`` shares
    the actions of ``run``)."""
    for action in parser._actions:
        if id(action) in seen:
            continue
        seen.add(id(action))
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _actions(sub, seen)
        else:
            yield action


def show_defaults(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give every option of ``parser`` (and of its subcommands) that has a default of its own,
    not a config key's, and whose help does not mention a default, ``(default: VALUE)``;
    returns ``parser``."""
    for action in _actions(parser, set()):
        if not action.option_strings or _switch(action) or action.default in (None, argparse.SUPPRESS) \
                or action.help == argparse.SUPPRESS or "default" in (action.help or ""):
            continue
        _append(action, f"(default: {show(action.default)})")
    return parser
