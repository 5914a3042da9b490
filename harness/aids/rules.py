"""The engine of the judgment rules: named, versioned regular expressions, word lists and limits.

A :class:`Rule` is one regular expression with an id (``persists.still``), what a hit decides,
the language it reads and why it exists (the measurement or example that justified it). A
:class:`RuleSet` holds the rules of one decision, with the word lists and limits that decision
reads, and answers three questions about a text:

- :meth:`RuleSet.first`: the earliest hit (at one place, the rule listed first wins), what one
  regular expression ``A|B|C`` of the rules' alternatives finds with ``search``;
- :meth:`RuleSet.all`: the hits left to right, never overlapping, what that expression finds
  with ``finditer``;
- :meth:`RuleSet.each`: the first hit of each rule that matches, in the rules' order (a list of
  separate expressions, each searched on its own).

The three are answered by one compiled alternation of the rules (each rule a named group with its
own flags), so a rule set splits an old alternation into named rules without changing a verdict.
A rule set's :attr:`RuleSet.version` is its name and a hash of its content (ids, patterns, flags,
what each decides, the word lists and limits): a changed rule can never keep an old version.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

_FLAGS = {"i": re.I, "m": re.M, "s": re.S}
# a numbered back-reference would point at another rule's group once the rules are joined
_BACKREF = re.compile(r"\\[1-9]|\(\?P=")


@lru_cache(maxsize=None)
def _compile(pattern: str, flags: str) -> re.Pattern:
    value = 0
    for letter in flags:
        value |= _FLAGS[letter]
    return re.compile(pattern, value)


@dataclass(frozen=True, slots=True)
class Rule:
    """One regular expression that decides something.

    Attributes:
        id: unique among all rules, ``family.name`` (``persists.still``).
        pattern: the regular expression's source.
        decides: what a hit decides ("user reply: the problem persists -> helpfulness floor 5").
        why: one sentence: the measurement or the example that justified the rule.
        language: the language the rule reads (``en``).
        flags: the regular expression's flags as letters of ``ims`` (ignore case, multi-line,
            dot matches newline); most rules read English case-insensitively (``"i"``).
        traits: how the deciding code reads a hit, as names and values (the manipulation
            defence's ``strength``, ``scope``, ``kind``; a preprocessing sign's name); given as
            a dict, kept as sorted pairs, part of the version.
    """

    id: str
    pattern: str
    decides: str
    why: str
    language: str = "en"
    flags: str = "i"
    traits: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.traits, dict):
            object.__setattr__(self, "traits", tuple(sorted((str(k), str(v)) for k, v in self.traits.items())))
        if not (self.id and self.pattern and self.decides and self.why and self.language):
            raise ValueError(f"rule {self.id!r}: id, pattern, decides, why and language are required")
        if set(self.flags) - set(_FLAGS):
            raise ValueError(f"rule {self.id!r}: flags are letters of 'ims', not {self.flags!r}")
        if _BACKREF.search(self.pattern):
            raise ValueError(f"rule {self.id!r}: no back-references (rules are joined into one expression)")
        self.regex  # compiles, or raises re.error naming the pattern

    @property
    def regex(self) -> re.Pattern:
        """The compiled pattern (compiled once per pattern and flags)."""
        return _compile(self.pattern, self.flags)

    def trait(self, name: str, default: str = "") -> str:
        """The value of trait ``name`` (``default`` when the rule has none)."""
        for key, value in self.traits:
            if key == name:
                return value
        return default


@dataclass(frozen=True, slots=True)
class WordList:
    """A list of words (or suffixes) a decision reads, in the order given.

    Attributes:
        id: unique among all rules, word lists and limits (``ack.words``).
        words: the words; a string is split on whitespace.
        decides: what the list decides.
        why: one sentence: why these words.
        language: the language of the words.
    """

    id: str
    words: tuple[str, ...]
    decides: str
    why: str
    language: str = "en"

    def __post_init__(self) -> None:
        if isinstance(self.words, str):
            object.__setattr__(self, "words", tuple(self.words.split()))
        if not (self.id and self.words and self.decides and self.why and self.language):
            raise ValueError(f"word list {self.id!r}: id, words, decides, why and language are required")

    @property
    def as_set(self) -> frozenset[str]:
        """The words as a set."""
        return frozenset(self.words)


@dataclass(frozen=True, slots=True)
class Limit:
    """A number a decision reads: a band's floor or cap, a threshold, a count.

    Attributes:
        id: unique among all rules, word lists and limits (``band.outcome``).
        value: the number.
        decides: what it decides.
        why: one sentence: the measurement or example behind the number.
    """

    id: str
    value: float
    decides: str
    why: str

    def __post_init__(self) -> None:
        if not (self.id and self.decides and self.why):
            raise ValueError(f"limit {self.id!r}: id, decides and why are required")


@dataclass(frozen=True, slots=True)
class Hit:
    """One match of a rule: the rule's id and the matched text (and where it stands)."""

    rule_id: str
    text: str
    start: int = 0
    end: int = 0


class RuleSet:
    """The rules of one decision (in order), with the word lists and limits it reads.

    Args:
        name: the set's name, the first part of its version (``persists``, ``hb``).
        rules: the rules; a hit of any decides.
        word_lists: the word lists the decision reads.
        limits: the numbers the decision reads.

    Raises:
        ValueError: two entries share an id.
    """

    def __init__(self, name: str, rules: Sequence[Rule] = (), word_lists: Sequence[WordList] = (),
                 limits: Sequence[Limit] = ()):
        self.name = name
        self.rules = tuple(rules)
        self.word_lists = tuple(word_lists)
        self.limits = tuple(limits)
        ids = [e.id for e in (*self.rules, *self.word_lists, *self.limits)]
        doubled = sorted({i for i in ids if ids.count(i) > 1})
        if doubled:
            raise ValueError(f"rule set {name!r}: ids used twice: {', '.join(doubled)}")
        self._entries = {e.id: e for e in (*self.rules, *self.word_lists, *self.limits)}
        # one alternation, each rule a named group with its own flags: search and finditer then
        # find what the old single expression found, and the group names the rule
        self._groups = {f"_r{i}": rule.id for i, rule in enumerate(self.rules)}
        alternatives = [f"(?P<_r{i}>(?{r.flags}:{r.pattern}))" if r.flags else f"(?P<_r{i}>(?:{r.pattern}))"
                        for i, r in enumerate(self.rules)]
        self._joined = re.compile("|".join(alternatives)) if alternatives else None
        self.version = f"{name}-{hashlib.sha256(self.canonical().encode()).hexdigest()[:10]}"

    @classmethod
    def joined(cls, name: str, sets: Iterable["RuleSet"]) -> "RuleSet":
        """One set holding every entry of ``sets`` (an entry two sets share counts once): the
        version of everything one decision reads, e.g. all rules of the helpfulness bounds.

        Raises:
            ValueError: two different entries share an id.
        """
        entries: dict[str, object] = {}
        for s in sets:
            for e in (*s.rules, *s.word_lists, *s.limits):
                if entries.setdefault(e.id, e) != e:
                    raise ValueError(f"rule set {name!r}: two different entries with id {e.id!r}")
        kept = list(entries.values())
        return cls(name, [e for e in kept if isinstance(e, Rule)], [e for e in kept if isinstance(e, WordList)],
                   [e for e in kept if isinstance(e, Limit)])

    def canonical(self) -> str:
        """The content the version hashes: each rule's id, pattern, flags and what it decides,
        each word list's id, words and what it decides, each limit's id, value and what it decides."""
        return json.dumps({"rules": [[r.id, r.pattern, r.flags, r.decides] + ([[list(t) for t in r.traits]]
                                                                               if r.traits else [])
                                     for r in self.rules],
                           "word_lists": [[w.id, list(w.words), w.decides] for w in self.word_lists],
                           "limits": [[x.id, x.value, x.decides] for x in self.limits]},
                          ensure_ascii=False, separators=(",", ":"))

    def _hit(self, m: re.Match) -> Hit:
        group = m.lastgroup if m.lastgroup in self._groups else next(g for g in self._groups if m.group(g) is not None)
        return Hit(self._groups[group], m.group(0), m.start(), m.end())

    def first(self, text: str) -> Hit | None:
        """The earliest hit in ``text`` (at one place, the rule listed first), or None."""
        m = self._joined.search(text or "") if self._joined else None
        return self._hit(m) if m else None

    def all(self, text: str) -> list[Hit]:
        """The hits in ``text`` left to right, never overlapping (a hit ends where the scan goes on)."""
        return [self._hit(m) for m in self._joined.finditer(text or "")] if self._joined else []

    def each(self, text: str) -> list[Hit]:
        """The first hit of each rule that matches ``text``, in the rules' order."""
        out = []
        for rule in self.rules:
            m = rule.regex.search(text or "")
            if m:
                out.append(Hit(rule.id, m.group(0), m.start(), m.end()))
        return out

    def sub(self, replacement: str, text: str) -> str:
        """``text`` with every hit of :meth:`all` replaced by ``replacement``."""
        return self._joined.sub(replacement, text or "") if self._joined else (text or "")

    def entry(self, entry_id: str) -> Rule | WordList | Limit:
        """The rule, word list or limit with id ``entry_id``.

        Raises:
            KeyError: the set has no such entry.
        """
        return self._entries[entry_id]

    def regex(self, rule_id: str) -> re.Pattern:
        """The compiled pattern of the rule ``rule_id`` alone (for a tokenizer's ``findall``)."""
        return self._entries[rule_id].regex

    def words(self, list_id: str) -> frozenset[str]:
        """The words of the word list ``list_id``, as a set."""
        return self._entries[list_id].as_set

    def limit(self, limit_id: str) -> float:
        """The value of the limit ``limit_id``."""
        return self._entries[limit_id].value

    def __repr__(self) -> str:
        return f"RuleSet({self.version!r}, {len(self.rules)} rules, {len(self.word_lists)} word lists, " \
               f"{len(self.limits)} limits)"


def version_of(name: str, parts: Iterable[object]) -> str:
    """The version of everything one aid decides by: ``name`` and a hash of ``parts`` in order.

    Each part is a :class:`RuleSet` (its content, :meth:`RuleSet.canonical`), a :class:`Rule`,
    :class:`WordList` or :class:`Limit` (its content as one set's), or a string (a prompt's
    text, a template): a changed rule, limit or prompt sentence changes the version, so no
    recorded version can outlive what it names. Every aid version is made here.

    Raises:
        TypeError: a part of another type.
    """
    pieces = []
    for part in parts:
        if isinstance(part, RuleSet):
            pieces.append(["set", part.name, part.canonical()])
        elif isinstance(part, Rule):
            pieces.append(["entry", RuleSet("_", [part]).canonical()])
        elif isinstance(part, WordList):
            pieces.append(["entry", RuleSet("_", word_lists=[part]).canonical()])
        elif isinstance(part, Limit):
            pieces.append(["entry", RuleSet("_", limits=[part]).canonical()])
        elif isinstance(part, str):
            pieces.append(["text", part])
        else:
            raise TypeError(f"version_of({name!r}): a part is a rule set, rule, word list, limit or "
                            f"string, not {type(part).__name__}")
    digest = hashlib.sha256(json.dumps(pieces, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()
    return f"{name}-{digest[:10]}"
