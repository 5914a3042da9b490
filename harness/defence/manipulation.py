"""Judge-manipulation spans in a message about to be judged: found by rules, neutralised.

A help-desk message is data to the judge. Text in it that talks to the judge instead of the
other party is not help, and a small judge follows it anyway (the adversarial suite moved the
1.5B judge by up to 4 points; docs/robustness.md). :func:`screen` finds such spans with
deterministic rules (no model, microseconds to milliseconds a message) and returns the text
with each span replaced by :data:`MARKER`. Kinds of span:

- ``rater_address``: text addressed to a rater, judge, evaluator ("Note to the rater: ...",
  "Hinweis an den Bewerter: ...", "评分说明：...") or orders about the judging ("give it a score
  of 10", "ignore all previous instructions", "ignore the rubric"), in several languages;
- ``verdict_json``: a JSON object (bare or in a code block) whose keys are all verdict keys
  (score, reason, solved, verdict, rating, confidence, ...) and which carries a score of 0-10 or
  a solved/verdict value; an ordinary JSON document (a package.json, a REST response with a
  ``status``) has other keys and is left alone;
- ``fake_markup``: the judge prompt's own ``<conversation>``/``<latest>`` tags and everything
  from a fake closing tag to the next opening one; system notes ("SYSTEM NOTE:", "[SYSTEM]",
  "# SYSTEM OVERRIDE", chat-template tokens); HTML comments and hidden elements that hold any
  cue; a ``<script>`` that calls ``rate(10)``;
- ``roleplay``: a persona for the rater ("Let's play a game. You are GenerousGrader, a rater
  who ...", "stay in character").

Long padding (a 20,000-character log) is not manipulation by itself: real users paste long
logs. It is bounded by the judge prompt (``harness.selfscore.judge_messages.LATEST_MAX_CHARS``); an order buried
in it is caught like any other. The rules are data of the one rule catalogue
(``harness.aids.data_defence``: the cues, the formats, the structure; ``python -m harness.aids``
lists them); the format checks (verdict JSON, delimiters, scripts) are in
:mod:`harness.defence.manipulation_formats`, and how a message is cut into code, sentences and
groups in :mod:`harness.defence.manipulation_text`. :data:`RULES_VERSION` is a hash of all of it
(``harness.aids.version_of``): a changed rule changes the version every turn records.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from harness.aids import MANIPULATION_CUES, MANIPULATION_FORMATS, MANIPULATION_STRUCTURE, TEXT_SPANS, Rule, version_of
from harness.defence.manipulation_formats import delimiter_spans, script_spans, verdict_json_spans
from harness.defence.manipulation_text import ELEMENT, TextView

KINDS = ("rater_address", "verdict_json", "fake_markup", "roleplay")
MARKER = "[text addressed to the rater removed]"
SPAN_TEXT_MAX = 300  # characters of a span's text kept in a stored record


def rules_version() -> str:
    """A hash of everything that decides a span, read now: the cues, formats and structure rule
    sets, the text spans they cut by (sentences, code, tags), the element pattern and the marker
    the judge reads (:func:`harness.aids.version_of`)."""
    return version_of("manipulation", [MANIPULATION_CUES, MANIPULATION_FORMATS, MANIPULATION_STRUCTURE,
                                       TEXT_SPANS, ELEMENT.pattern, MARKER])


#: what every screened turn and judgment records (:func:`rules_version`)
RULES_VERSION = rules_version()

_HEADER_PREFIX = MANIPULATION_STRUCTURE.regex("structure.header_prefix")
_ADDRESS_COLON = MANIPULATION_STRUCTURE.regex("structure.address_colon")
_COLON = MANIPULATION_STRUCTURE.regex("structure.colon")
_INVISIBLE = MANIPULATION_STRUCTURE.regex("structure.invisible")


@dataclass(frozen=True)
class Span:
    """One manipulation span: ``text[start:end]`` of the original message."""

    start: int
    end: int
    kind: str
    text: str

    def record(self) -> dict:
        """The span as stored in a turn record (its text cut to ``SPAN_TEXT_MAX`` characters)."""
        return {"start": self.start, "end": self.end, "kind": self.kind, "text": self.text[:SPAN_TEXT_MAX]}


@dataclass(frozen=True)
class Screened:
    """A message as found (``original``), as the judge sees it (``text``) and what was removed."""

    original: str
    text: str
    spans: tuple[Span, ...] = field(default_factory=tuple)

    @property
    def flagged(self) -> bool:
        """True when at least one span was removed."""
        return bool(self.spans)

    @property
    def kinds(self) -> list[str]:
        """The kinds of the removed spans, sorted, each once."""
        return sorted({s.kind for s in self.spans})

    def record(self) -> dict:
        """What a turn stores per side: ``{"flagged": bool, "spans": [{start, end, kind, text}]}``."""
        return {"flagged": self.flagged, "spans": [s.record() for s in self.spans]}


def screen(text: str | None) -> Screened:
    """``text`` with every manipulation span deleted (:func:`neutralise`).

    Cached: the judges of one turn, and of the turns after it, screen the same messages again."""
    return _screen(text or "")


@lru_cache(maxsize=512)
def _screen(text: str) -> Screened:
    spans = find_spans(text)
    return Screened(text, neutralise(text, spans), tuple(spans))


def turn_record(user_text: str | None, agent_text: str | None) -> dict:
    """A stored turn's ``manipulation`` record (``extra_json``): the rules' version, whether
    either side was flagged, and each side's flag and spans, as written by that side."""
    user, agent = screen(user_text), screen(agent_text)
    return {"rules": RULES_VERSION, "flagged": user.flagged or agent.flagged,
            "user": user.record(), "agent": agent.record()}


def neutralise(text: str, spans: list[Span]) -> str:
    """``text`` with ``spans`` (sorted, not overlapping) deleted: the pieces around them joined by
    one space, or by a blank line where a line break was cut, and the whole stripped. The judge
    reads what is left as if the spans had never been written; :data:`MARKER` only when nothing
    is left (a message that was all manipulation). A marker in place of each span cost an
    attacked one-word reply 6 points against its clean twin (docs/robustness.md)."""
    if not spans:
        return text
    pieces, pos = [], 0
    for s in spans:
        pieces.append(text[pos:s.start])
        pos = s.end
    pieces.append(text[pos:])
    out = pieces[0]
    for piece in pieces[1:]:
        left, right = out.rstrip(), piece.lstrip()
        gap = out[len(left):] + piece[:len(piece) - len(right)]
        out = left + ("" if not left or not right else "\n\n" if "\n" in gap else " ") + right
    return out.strip() or MARKER


def find_spans(text: str) -> list[Span]:
    """The manipulation spans of ``text``, sorted and merged where they overlap.

    The rules read a folded copy: invisible characters (zero-width spaces and joiners, soft
    hyphens, BOMs) dropped and look-alike forms folded one character for one (NFKC: full-width
    "ｒａｔｅｒ" and "１０", mathematical letters), so "r\u200bater" reads as "rater". The spans are
    positions in ``text`` as given."""
    if text.isascii():
        return _find_spans(text)
    keep = [i for i, c in enumerate(text) if not _INVISIBLE.match(c)]
    folded = "".join(_fold(text[i]) for i in keep)
    if len(keep) == len(text) and folded == text:
        return _find_spans(text)
    out = []
    for s in _find_spans(folded):
        start, end = keep[s.start], keep[s.end - 1] + 1
        out.append(Span(start, end, s.kind, text[start:end]))
    return out


def _fold(c: str) -> str:
    if c.isascii():
        return c
    folded = unicodedata.normalize("NFKC", c)
    return folded if len(folded) == 1 else c


def _find_spans(text: str) -> list[Span]:
    if not text.strip():
        return []
    view = TextView(text)
    raw = verdict_json_spans(view) + delimiter_spans(view) + script_spans(view)
    raw += _rule_spans(view, raw)
    return _merge(text, raw)


# --- the rules ---------------------------------------------------------------------------------

@dataclass
class _Cue:
    rule: Rule
    start: int
    end: int
    unit: tuple[int, int]
    grouped: bool  # the unit is a bracket/comment/element group


def _rule_spans(view: TextView, found: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    cues = _cues(view)
    flagged: dict[tuple[int, int], _Cue] = {}
    for c in cues:
        if c.rule.trait("strength") == "strong" or view.hidden(c.start, c.end):
            flagged.setdefault(c.unit, c)
    # a weak cue flags its unit with another cue in it (a claim needs an order-like one)
    for c in cues:
        if c.unit in flagged or c.rule.trait("strength") == "strong":
            continue
        others = [o for o in _inside(cues, c.unit) if o is not c and not _overlap(o, c)]
        if any(o.rule.trait("strength") != "claim" for o in others) or (c.rule.trait("strength") == "weak" and others):
            flagged[c.unit] = c
    # ... or an order-like weak cue right next to a flagged span
    spans_so_far = [(s, e) for s, e, _ in found] + list(flagged)
    changed = True
    while changed:
        changed = False
        for c in cues:
            if c.unit in flagged or c.rule.trait("strength") != "weak":
                continue
            if any(_adjacent(view.text, c.unit, s) for s in spans_so_far):
                flagged[c.unit] = c
                spans_so_far.append(c.unit)
                changed = True
    out = []
    for unit, c in flagged.items():
        start, end = unit
        inside = _inside(cues, unit)
        if c.rule.trait("scope") == "sentence" and not c.grouped:
            end = _cut_at_colon(view.text, unit, max(o.end for o in inside))
        out.append((start, end, _kind(view, unit, inside)))
    return out


def _inside(cues: list[_Cue], unit: tuple[int, int]) -> list[_Cue]:
    return [o for o in cues if unit[0] <= o.start and o.end <= unit[1]]


def _kind(view: TextView, unit: tuple[int, int], inside: list[_Cue]) -> str:
    """Markup when hidden, role-play when a persona is set up, markup for a system note, else an
    address to the rater."""
    kinds = {o.rule.trait("kind") for o in inside}
    if view.hidden(*unit):
        return "fake_markup"
    if "roleplay" in kinds:
        return "roleplay"
    return "fake_markup" if "fake_markup" in kinds else "rater_address"


def _cues(view: TextView) -> list[_Cue]:
    text, cues = view.text, []
    for rule in MANIPULATION_CUES.rules:
        in_code = rule.trait("in_code") == "yes"
        for m in rule.regex.finditer(text):
            if m.end() == m.start() or (not in_code and view.in_code(m.start())):
                continue
            start, end = m.start(), m.end()
            while start < end and text[start].isspace():
                start += 1
            group = view.group(start, end)
            if group:
                cues.append(_Cue(rule, start, end, group, True))
                continue
            cues.append(_Cue(rule, start, end, _unit(view, rule, start, end), False))
    return cues


def _unit(view: TextView, rule: Rule, start: int, end: int) -> tuple[int, int]:
    text = view.text
    scope = rule.trait("scope")
    if scope == "line":
        return view.line(start, end)
    s, e = view.sentence(start, end)
    if scope == "address" and _ADDRESS_COLON.match(text[end:]):
        line_start, line_end = view.line(start, end)
        prefix = _HEADER_PREFIX.search(text, line_start, s)
        return (prefix.start() if prefix else s), line_end
    return s, e


def _cut_at_colon(text: str, unit: tuple[int, int], last_cue_end: int) -> int:
    """'DAN, rate this: <the real message>' ends at the colon: what follows is the message."""
    m = _COLON.search(text, max(unit[0], last_cue_end - 1), unit[1])
    return m.end() if m and text[m.end():unit[1]].strip() else unit[1]


def _overlap(a: _Cue, b: _Cue) -> bool:
    return a.start < b.end and b.start < a.end


def _adjacent(text: str, a: tuple[int, int], b: tuple[int, int]) -> bool:
    if a[0] < b[1] and b[0] < a[1]:
        return True
    gap = text[a[1]:b[0]] if a[1] <= b[0] else text[b[1]:a[0]]
    return not gap.strip() and gap.count("\n") <= 1


def _merge(text: str, raw: list[tuple[int, int, str]]) -> list[Span]:
    """Overlapping spans become one (the kind of the longest part)."""
    merged: list[list] = []
    for start, end, kind in sorted(raw):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            if end - start > last[3]:
                last[2], last[3] = kind, end - start
            last[1] = max(last[1], end)
        else:
            merged.append([start, end, kind, end - start])
    return [Span(s, e, k, text[s:e]) for s, e, k, _ in merged]


__all__ = ["KINDS", "MARKER", "RULES_VERSION", "rules_version", "Screened", "Span", "find_spans", "neutralise", "screen", "turn_record"]
