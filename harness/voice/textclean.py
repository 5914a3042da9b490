"""Clean text for speech: what a TTS voice cannot say is removed or rewritten before speaking
(SELFSCORE.md, "Optional measures": the agent's text is cleaned of characters the TTS cannot
speak).

Rules, in order:
- fenced code blocks: a short one (up to :data:`MAX_SPOKEN_CODE_LINES` lines, each up to
  :data:`MAX_SPOKEN_CODE_CHARS` characters) is read as text, a longer one becomes
  :data:`CODE_OMITTED`; inline code keeps its text without the backticks;
- images become their alt text, links their text, bare URLs their host name
  ("https://askubuntu.com/q/1" -> "askubuntu.com"), e-mail addresses stay;
- markdown headings, emphasis, block quotes, list bullets, table pipes, horizontal rules and
  HTML tags are dropped; a list item or heading ends with a full stop so the voice pauses;
- emoji, pictographs, variation selectors, zero-width joiners and control characters are
  dropped; whitespace is collapsed.
"""
from __future__ import annotations

import re
import unicodedata

MAX_SPOKEN_CODE_LINES = 2
MAX_SPOKEN_CODE_CHARS = 80
CODE_OMITTED = "(a code example is omitted here)"

_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)
_INLINE_CODE = re.compile(r"`+([^`]*)`+")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_URL = re.compile(r"\b(?:https?|ftp)://([^/\s:?#]+)[^\s)\]>]*|\bwww\.([^/\s:?#]+)[^\s)\]>]*", re.I)
_HTML_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]+(.*?)[ \t#]*$", re.M)
_RULE = re.compile(r"^[ \t]*([-*_])([ \t]*\1){2,}[ \t]*$", re.M)
_QUOTE = re.compile(r"^[ \t]*>[ \t]?", re.M)
_BULLET = re.compile(r"^[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+", re.M)
_TABLE_SEP = re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$", re.M)
_EMPHASIS = re.compile(r"(?<![\w*])(\*\*\*|\*\*|\*|___|__|~~)(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_UNDERSCORE_EM = re.compile(r"(?<![\w])_(?=\S)(.+?)(?<=\S)_(?![\w])")
_DROP_CATEGORIES = {"So", "Cs", "Co", "Cn", "Cc", "Cf"}
_KEEP_CONTROL = {"\n", "\t"}
_SENTENCE_END = ".!?:;,"


def _code_block(match: re.Match) -> str:
    lines = [line.strip() for line in match.group(2).strip("\n").splitlines() if line.strip()]
    if lines and len(lines) <= MAX_SPOKEN_CODE_LINES and all(len(x) <= MAX_SPOKEN_CODE_CHARS for x in lines):
        return "\n".join(_end_line(x) for x in lines) + "\n"
    return CODE_OMITTED + "\n"


def _url(match: re.Match) -> str:
    host = (match.group(1) or match.group(2) or "").lower()
    return host.removeprefix("www.").rstrip(".")


def _speakable_char(ch: str) -> bool:
    if ch in _KEEP_CONTROL:
        return True
    if unicodedata.category(ch) in _DROP_CATEGORIES:
        return False
    return not (0x1F000 <= ord(ch) <= 0x1FAFF or 0x2600 <= ord(ch) <= 0x27BF or 0xFE00 <= ord(ch) <= 0xFE0F)


def _end_line(line: str) -> str:
    line = line.strip()
    return line if not line or line[-1] in _SENTENCE_END else line + "."


def clean_for_speech(text: str) -> str:
    """The words of ``text`` that a TTS voice can speak (see the module docstring for the rules).
    Returns "" when nothing speakable is left."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n"))
    text = _FENCE.sub(_code_block, text)
    text = _INLINE_CODE.sub(r"\1", text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _URL.sub(_url, text)
    text = _HTML_TAG.sub(" ", text)
    text = _TABLE_SEP.sub("", text)
    text = _RULE.sub("", text)
    marked = set()
    for rx in (_HEADING, _BULLET):
        for m in rx.finditer(text):
            marked.add(text.count("\n", 0, m.start()))
    text = _HEADING.sub(r"\1", text)
    text = _QUOTE.sub("", text)
    text = _BULLET.sub("", text)
    for _ in range(2):  # nested emphasis such as **_word_**
        text = _EMPHASIS.sub(r"\2", text)
        text = _UNDERSCORE_EM.sub(r"\1", text)
    text = "".join(ch for ch in text if _speakable_char(ch))
    lines = []
    for n, line in enumerate(text.split("\n")):
        if "|" in line and line.strip().startswith("|"):
            line = ", ".join(cell.strip() for cell in line.strip().strip("|").split("|") if cell.strip())
            line = _end_line(line)
        elif n in marked:
            line = _end_line(line)
        lines.append(line)
    text = "\n".join(lines)
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r" *\n+ *", "\n", text).strip()
    text = re.sub(r"\s*\n\s*", " ", text)
    return re.sub(r" +([.,!?;:])(?=\s|$)", r"\1", text)
