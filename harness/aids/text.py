"""The text units the rules count in: words, terms, IRC addresses, and how much of one message
copies another. The tokenizers are rules of :data:`harness.aids.data_text.TEXT` (versioned with it).
"""
from __future__ import annotations

from difflib import SequenceMatcher

from harness.aids.data_text import TEXT_SPANS, TEXT

_UTTERANCE = TEXT.regex("word.utterance")
_TERM = TEXT.regex("word.term")
_PLAIN = TEXT.regex("word.plain")
_ADDRESS = TEXT.regex("address.nick")
_MIN_WORDS = int(TEXT.limit("copied.min_words"))
_MIN_RUN = int(TEXT.limit("copied.min_run"))


def utterance_words(text: str) -> list[str]:
    """The words of a short message, lowercased (``word.utterance``: "k" and "don't" are words)."""
    return [w.lower() for w in _UTTERANCE.findall(text or "")]


def terms(text: str) -> list[str]:
    """The terms of ``text`` as written (``word.term``: two characters or more, ``~/.ssh/config`` one term)."""
    return _TERM.findall(text or "")


def plain_words(text: str) -> list[str]:
    """The plain words of ``text``, lowercased (``word.plain``)."""
    return _PLAIN.findall((text or "").lower())


def addressees(text: str) -> set[str]:
    """Words that start a line as an address (``keanu: try ...``, ``sree, open ...``): IRC nicks
    (``address.nick``)."""
    return {m.group(1).lower() for m in _ADDRESS.finditer(text or "")}


def without_addresses(text: str, nicks: set[str] | None = None) -> str:
    """``text`` with the address that starts a line (``keanu: try ...`` -> ``try ...``) removed,
    for the nicks ``text`` itself addresses (or ``nicks``): a nick says nothing about the fix,
    and the rare word pulled the embedding similarity of a real fix with an agent's message
    down, and of two lines of the same helper up."""
    nicks = addressees(text) if nicks is None else nicks
    return _ADDRESS.sub(lambda m: "" if m.group(1).lower() in nicks else m.group(0), text or "")


def strip_address(text: str) -> str:
    """``text`` without any address that starts a line, whoever it names."""
    return _ADDRESS.sub("", text or "")


def copied_fraction(message: str, earlier: str, min_run: int = _MIN_RUN) -> float:
    """The share of the message's words that stand in runs of at least ``min_run`` words copied
    from ``earlier`` (0.0 for a message under 8 words, ``copied.min_words``: short replies repeat
    words by nature)."""
    words = [w.lower() for w in terms(message)]
    if len(words) < _MIN_WORDS:
        return 0.0
    before = [w.lower() for w in terms(earlier)]
    blocks = SequenceMatcher(None, words, before, autojunk=False).get_matching_blocks()
    return sum(b.size for b in blocks if b.size >= min_run) / len(words)


_SENTENCE_END = TEXT_SPANS.regex("sentence.end")
#: a code region: a fenced block (closed or to the end) or inline backticks (``code.span``)
CODE_SPAN = TEXT_SPANS.regex("code.span")
_TAG = TEXT_SPANS.regex("tag.any")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, none empty (``sentence.end``: after ``.``, ``!`` or
    ``?`` and a closing bracket after one, after a CJK full stop, and at line breaks)."""
    return [s.strip() for s in _SENTENCE_END.split((text or "").strip()) if s.strip()]


def sentence_ends(text: str, start: int = 0, end: int | None = None):
    """The matches of ``sentence.end`` in ``text[start:end]``: a sentence ends at a match's
    ``start()`` and the next begins at its ``end()``."""
    return _SENTENCE_END.finditer(text, start, len(text) if end is None else end)


def tags(text: str, names) -> list:
    """The tags of ``text`` (``tag.any``: ``<latest>``, ``</ conversation>``, ``&lt;latest>``)
    whose name is one of ``names`` (case ignored), as matches: group 1 ``<`` or ``&lt;``, group
    2 the rest of the tag up to its name, group 3 ``/`` for a closing tag, group 4 the name,
    group 5 the closing ``>`` (None when the tag goes on, e.g. with attributes)."""
    wanted = {n.lower() for n in names}
    return [m for m in _TAG.finditer(text or "") if m.group(4).lower() in wanted]


def escape_tags(text: str, names) -> str:
    """``text`` with every tag named in ``names`` defused as ``&lt;...`` (an already escaped
    ``&lt;`` tag and all other text left as they are)."""
    wanted = {n.lower() for n in names}
    return _TAG.sub(lambda m: "&lt;" + m.group(2) + (m.group(5) or "")
                    if m.group(1) == "<" and m.group(4).lower() in wanted else m.group(0), text or "")
