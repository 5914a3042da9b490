"""The text of a message as :mod:`harness.defence.manipulation` reads it: code regions, lines,
sentences, and the groups a span can sit in (brackets, HTML comments, one-line elements)."""
from __future__ import annotations

import bisect
import re

from harness.aids import CODE_SPAN, MANIPULATION_STRUCTURE, sentence_ends

_COMMENT = MANIPULATION_STRUCTURE.regex("structure.comment")
# outside the catalogue: the closing tag names the opening one by a back-reference, which the rule
# engine's joined expressions cannot hold (its text is part of the defence's version)
ELEMENT = re.compile(r"<([A-Za-z][\w-]*)\b[^<>\n]{0,300}>[^\n]{0,600}?</\1\s*>")
_HIDDEN = MANIPULATION_STRUCTURE.regex("structure.hidden")
_BACK = int(MANIPULATION_STRUCTURE.limit("structure.bracket_back"))
_FORWARD = int(MANIPULATION_STRUCTURE.limit("structure.bracket_forward"))


class TextView:
    """A message with its code regions and bracket/comment/element groups, for the rules."""

    def __init__(self, text: str):
        self.text = text
        self.code = [(m.start(), m.end()) for m in CODE_SPAN.finditer(text)]
        self._code_starts = [s for s, _ in self.code]
        self.comments = [(m.start(), m.end()) for m in _COMMENT.finditer(text)]
        self.elements = [(m.start(), m.end(), bool(_HIDDEN.search(m.group(0)[:m.group(0).find(">")])))
                         for m in ELEMENT.finditer(text)]

    def in_code(self, pos: int) -> bool:
        """Whether ``pos`` lies inside a code region (fenced block or inline code)."""
        i = bisect.bisect_right(self._code_starts, pos) - 1
        return i >= 0 and self.code[i][0] <= pos < self.code[i][1]

    def line(self, start: int, end: int) -> tuple[int, int]:
        """The ``(start, end)`` of the line(s) around ``start:end`` (end without the newline)."""
        line_end = self.text.find("\n", end)
        return self.text.rfind("\n", 0, start) + 1, len(self.text) if line_end < 0 else line_end

    def sentence(self, start: int, end: int) -> tuple[int, int]:
        """The ``(start, end)`` of the sentence around ``start:end``, within its line (leading
        spaces skipped)."""
        line_start, line_end = self.line(start, end)
        s = line_start
        for m in sentence_ends(self.text, line_start, start):
            s = m.end()
        m = next(iter(sentence_ends(self.text, max(end, s), line_end)), None)
        e = m.start() if m else line_end
        while s < e and self.text[s].isspace():
            s += 1
        return s, e

    def group(self, start: int, end: int) -> tuple[int, int] | None:
        """The smallest bracket pair, HTML comment or one-line element around ``start:end``."""
        found = [(s, e) for s, e in self.comments if s <= start and end <= e]
        found += [(s, e) for s, e, _ in self.elements if s <= start and end <= e]
        brackets = _bracket_around(self.text, start, end)
        if brackets:
            found.append(brackets)
        return min(found, key=lambda g: g[1] - g[0]) if found else None

    def hidden(self, start: int, end: int) -> tuple[int, int] | None:
        """The HTML comment or hidden element around ``start:end``: hiding makes any cue count."""
        for s, e in self.comments:
            if s <= start and end <= e:
                return s, e
        for s, e, is_hidden in self.elements:
            if is_hidden and s <= start and end <= e:
                return s, e
        return None


def _bracket_around(text: str, start: int, end: int) -> tuple[int, int] | None:
    line_start, line_end = text.rfind("\n", 0, start) + 1, text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    depth, opener = 0, None
    for i in range(start - 1, max(line_start, start - _BACK) - 1, -1):
        c = text[i]
        if c in ")]":
            depth += 1
        elif c in "([":
            if depth == 0:
                opener = i
                break
            depth -= 1
    if opener is None:
        return None
    close, depth = {"(": ")", "[": "]"}[text[opener]], 0
    for i in range(opener + 1, min(line_end, opener + _FORWARD)):
        c = text[i]
        if c == text[opener]:
            depth += 1
        elif c == close:
            if depth == 0:
                return (opener, i + 1) if i + 1 >= end else None
            depth -= 1
    return None
