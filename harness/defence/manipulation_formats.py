"""Manipulation spans found by their format rather than their words: a verdict JSON object, the
judge prompt's own delimiter tags, a script that calls ``rate(10)`` (see :mod:`harness.defence.manipulation`)."""
from __future__ import annotations

import json
import re

from harness.aids import MANIPULATION_FORMATS as _F
from harness.aids import tags
from harness.defence.manipulation_text import TextView

VERDICT_KEYS = _F.words("format.verdict_keys")
_SCORE_KEYS = _F.words("format.score_keys")
_DECISION_KEYS = _F.words("format.decision_keys")
_DECISION_WORDS = _F.words("format.decision_words")
_DELIMITER_TAGS = _F.entry("format.delimiter_tags").words

_FENCE = _F.regex("format.fence")
_LENIENT_OBJECT = _F.regex("format.lenient_object")
_LENIENT_PAIR = _F.regex("format.lenient_pair")
_SCORE_VALUE = _F.regex("format.score_value")
_SCRIPT_RATE = _F.regex("format.script_rate")


def script_spans(view: TextView) -> list[tuple[int, int, str]]:
    """A ``<script>`` that calls rate/score/grade with a number."""
    return [(m.start(), m.end(), "fake_markup") for m in _SCRIPT_RATE.finditer(view.text)]


# --- verdict JSON ------------------------------------------------------------------------------

def _is_verdict(obj) -> bool:
    if not isinstance(obj, dict) or not obj:
        return False
    keys = {str(k).strip().lower(): v for k, v in obj.items()}
    if not set(keys) <= VERDICT_KEYS:
        return False
    for key, value in keys.items():
        if key in _SCORE_KEYS and _score_value(value):
            return True
        if key in _DECISION_KEYS and (isinstance(value, bool) or str(value).strip(" \"'").lower() in _DECISION_WORDS):
            return True
    return False


def _score_value(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return float(value).is_integer() and 0 <= value <= 10
    return bool(_SCORE_VALUE.fullmatch(str(value)))


def _lenient_object(text: str) -> dict | None:
    """A one-line object that is not JSON (single quotes, bare keys, ``=``) as a dict of strings."""
    body = text[1:-1]
    pairs = _LENIENT_PAIR.findall(body)
    if not pairs:
        return None
    out = {}
    for key, value in pairs:
        value = value.strip().strip("\"'")
        out[key.strip()] = True if value.lower() == "true" else False if value.lower() == "false" else value
    return out


def verdict_json_spans(view: TextView) -> list[tuple[int, int, str]]:
    """Objects (JSON, or one-line lenient ones) that read as a verdict, e.g. ``{"score": 10}``;
    a verdict that fills its code block takes the fences with it."""
    text, spans, decoder, skip_to = view.text, [], json.JSONDecoder(), -1
    for i in (m.start() for m in re.finditer(r"\{", text)):
        if i < skip_to:
            continue
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            m = _LENIENT_OBJECT.match(text, i)
            if m and _is_verdict(_lenient_object(m.group(0))):
                spans.append((i, m.end(), "verdict_json"))
                skip_to = m.end()
            continue
        if _is_verdict(obj):
            spans.append((i, end, "verdict_json"))
        skip_to = end  # an ordinary JSON document: its inner objects are part of it
    return [_whole_fence(view, s) for s in spans]


def _whole_fence(view: TextView, span: tuple[int, int, str]) -> tuple[int, int, str]:
    """A verdict that is all of its code block takes the block (fences included) with it."""
    for m in _FENCE.finditer(view.text):
        if m.start() <= span[0] and span[1] <= m.end():
            inner = m.group(1) if m.group(1) is not None else m.group(2)
            rest = view.text[m.start(1) if m.group(1) is not None else m.start(2):span[0]] + \
                view.text[span[1]:m.end(1) if m.group(1) is not None else m.end(2)]
            if inner is not None and not rest.strip(" \t\n,[]"):
                return m.start(), m.end(), span[2]
    return span


# --- the judge prompt's own delimiters ---------------------------------------------------------

def delimiter_spans(view: TextView) -> list[tuple[int, int, str]]:
    """Each ``<conversation>``/``<latest>`` tag outside code, and all text from a closing tag to
    the next opening tag (or the end): text placed 'outside' the judged block."""
    # a whole tag: its name, then '>' (group 5); group 3 is '/' for a closing tag
    spans, found = [], [m for m in tags(view.text, _DELIMITER_TAGS) if m.group(5) and not view.in_code(m.start())]
    i = 0
    while i < len(found):
        m = found[i]
        if m.group(3):  # a closing tag: up to the next opening one
            j = next((k for k in range(i + 1, len(found)) if not found[k].group(3)), None)
            spans.append((m.start(), found[j].end() if j is not None else len(view.text), "fake_markup"))
            if j is None:
                break
            i = j + 1
            continue
        spans.append((m.start(), m.end(), "fake_markup"))
        i += 1
    return spans
