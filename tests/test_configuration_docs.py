"""docs/configuration.md against the config object (harness/config.py, the one source of
defaults): every key of every section is documented, nothing else is, and each documented
default is the config's (``profile`` for an aid setting the method profile decides, ``none`` for
a key left unset). The format is the one line at the top of the doc's "Keys" section."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from harness.aids.profiles import AIDS
from harness.config import Config, ModelSpec, load_config

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
TEXT = DOC.read_text(encoding="utf-8")
AID_SETTINGS = {a.setting for a in AIDS}
DEFAULTS = Config()
ROW = re.compile(r"^\| *(`[^|]*`) *\| *([^|]*?) *\| *(.*?) *\|$")
VALUE = re.compile(r"(?:(\w+) )?`([^`]*)`")


def keys_section() -> str:
    """The "## Keys" section of the doc."""
    return TEXT.split("\n## Keys", 1)[1].split("\n## ", 1)[0]


def documented() -> dict[str, str]:
    """Documented key (``section.key``, ``roles.key``, ``store``) -> its default cell, read from
    the tables under each ``### `section``` heading (a heading without one: the top level)."""
    rows: dict[str, str] = {}
    section = ""
    for line in keys_section().splitlines():
        if line.startswith("### "):
            named = re.search(r"`([^`]+)`", line)
            section = named.group(1).split(".")[0] if named else ""
            continue
        match = ROW.match(line)
        if not match or match.group(1) == "key":
            continue
        for key in re.findall(r"`([^`]+)`", match.group(1)):
            full = f"{section}.{key}" if section else key
            assert full not in rows, f"{full} is documented twice"
            rows[full] = match.group(2)
    return rows


def config_keys() -> dict[str, object]:
    """Every config key with its default: ``section.key`` for each section model, ``roles.key``
    (its default per role), and the top-level scalars."""
    keys: dict[str, object] = {}
    for name in Config.model_fields:
        value = getattr(DEFAULTS, name)
        if isinstance(value, BaseModel):
            keys.update({f"{name}.{k}": getattr(value, k) for k in type(value).model_fields})
        elif name == "roles":
            keys.update({f"roles.{k}": {r: getattr(spec, k) for r, spec in value.items()}
                         for k in ModelSpec.model_fields})
        else:
            keys[name] = value
    return keys


UNSET, PROFILE = "<none>", "<profile>"  # the two words a cell writes without TOML


def parse(text: str):
    """A default as the doc writes it: ``none`` (:data:`UNSET`), ``profile`` (:data:`PROFILE`),
    else a TOML value."""
    if text in ("none", "profile"):
        return UNSET if text == "none" else PROFILE
    return tomllib.loads(f"v = {text}")["v"]


def same(doc_value, config_value) -> bool:
    """Equal, a tuple matching a list (TOML has arrays only), a bool only a bool."""
    if isinstance(config_value, tuple):
        config_value = list(config_value)
    if isinstance(config_value, bool) or isinstance(doc_value, bool):
        return doc_value is config_value
    return doc_value == config_value


DOCUMENTED = documented()
CONFIG = config_keys()


def test_the_doc_states_its_format_once_at_the_top_of_the_key_list():
    first = keys_section().strip().splitlines()[0]
    assert first.startswith("Format of every table below") and "tests/test_configuration_docs.py" in first


def test_every_config_key_is_documented_and_nothing_else():
    missing = sorted(set(CONFIG) - set(DOCUMENTED))
    stale = sorted(set(DOCUMENTED) - set(CONFIG))
    assert not missing, f"config keys missing from docs/configuration.md: {missing}"
    assert not stale, f"docs/configuration.md documents keys the config does not have: {stale}"


@pytest.mark.parametrize("key", sorted(k for k in CONFIG if not k.startswith("roles.")))
def test_each_documented_default_is_the_configs(key):
    if key not in DOCUMENTED:
        pytest.skip("reported by test_every_config_key_is_documented_and_nothing_else")
    value = CONFIG[key]
    found = VALUE.findall(DOCUMENTED[key])
    assert len(found) == 1 and not found[0][0], \
        f"{key}: the default cell should be one value in backticks, got {DOCUMENTED[key]!r}"
    doc = parse(found[0][1])
    if value is None:
        want = "profile" if key in AID_SETTINGS else "none"
        assert doc == (PROFILE if key in AID_SETTINGS else UNSET), f"{key}: the config leaves it unset; write `{want}`"
    else:
        assert same(doc, value), f"{key}: docs say {found[0][1]}, the config's default is {value!r}"


@pytest.mark.parametrize("key", sorted(k for k in CONFIG if k.startswith("roles.")))
def test_each_documented_role_default_is_the_configs(key):
    if key not in DOCUMENTED:
        pytest.skip("reported by test_every_config_key_is_documented_and_nothing_else")
    per_role = CONFIG[key]
    base, by_role = None, {}
    for role, text in VALUE.findall(DOCUMENTED[key]):
        if role:
            by_role[role] = parse(text)
        else:
            assert base is None, f"{key}: two defaults without a role in {DOCUMENTED[key]!r}"
            base = parse(text)
    assert set(by_role) <= set(per_role), f"{key}: unknown roles {set(by_role) - set(per_role)}"
    for role, value in per_role.items():
        doc = by_role.get(role, base)
        assert doc is not None, f"{key}: no default for role {role}"
        if value is None:
            assert doc == UNSET, f"{key} ({role}): the config leaves it unset; write `none`"
        else:
            assert same(doc, value), f"{key} ({role}): docs say {doc!r}, the config's default is {value!r}"


def test_the_aid_settings_say_profile_and_nothing_else_does():
    profile_keys = {k for k, cell in DOCUMENTED.items() if "`profile`" in cell}
    assert profile_keys == AID_SETTINGS & set(CONFIG)


def test_the_example_file_is_a_valid_config(tmp_path):
    example = TEXT.split("## Example file", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "example.toml"
    path.write_text(example, encoding="utf-8")
    config = load_config(path, environ={})
    assert config.roles["agent"].base_url == "https://api.openai.com/v1"
