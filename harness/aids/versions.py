"""Versions made from content: a name and a hash of everything that decides what an aid or a
simulator method does (its prompt texts, rule sets, thresholds), so a changed text, rule or
threshold can never keep an old recorded version."""
from __future__ import annotations

import hashlib
import json
from typing import Any


def _canonical(part: Any) -> str:
    """One part as text: a rule set by its own content version, anything else as sorted JSON
    (strings as themselves)."""
    if hasattr(part, "version") and hasattr(part, "rules"):
        return f"ruleset:{part.version}"
    if isinstance(part, str):
        return part
    return json.dumps(part, sort_keys=True, default=repr)


def content_version(name: str, *parts: Any) -> str:
    """``name-<10 hex digits>``: the sha256 of ``parts`` in order (texts, numbers, lists, dicts,
    :class:`harness.aids.rules.RuleSet` s by their versions)."""
    digest = hashlib.sha256("\x1f".join(_canonical(p) for p in parts).encode("utf-8")).hexdigest()
    return f"{name}-{digest[:10]}"
