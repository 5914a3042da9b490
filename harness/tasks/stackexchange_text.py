"""Plain text from a Stack Exchange dump's markup: post bodies (HTML), tag lists and comments.

Used by :mod:`harness.tasks.stackexchange` while reading the dump and by
:mod:`harness.tasks.stackexchange_threads` for the asker's comments (the task's facts).
"""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser

_BLOCKS = {"p", "div", "blockquote", "pre", "ul", "ol", "dl", "dt", "dd", "table", "tr", "hr",
           "h1", "h2", "h3", "h4", "h5", "h6"}


class _TextExtractor(HTMLParser):
    """Collects the text of an HTML fragment; see :func:`html_to_text`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._pre = 0
        self._skip = 0
        self._links: list[tuple[str, int]] = []  # (href, index of the link's first part)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "br":
            self.parts.append("\n")
        elif tag == "li":
            self.parts.append("\n")
        elif tag in _BLOCKS:
            self.parts.append("\n\n")
        if tag == "pre":
            self._pre += 1
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            self.parts.append(f"[image: {alt}]" if alt else "[image]")
        elif tag == "a":
            self._links.append((dict(attrs).get("href") or "", len(self.parts)))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
        elif tag == "a" and self._links:
            href, start = self._links.pop()
            label = "".join(self.parts[start:]).strip()
            if href.startswith(("http://", "https://")) and label and label != href:
                self.parts.append(f" ({href})")
        if tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._pre:
            self.parts.append(data)
            return
        data = re.sub(r"\s+", " ", data)
        if not self.parts or self.parts[-1].endswith("\n"):
            data = data.lstrip()
        self.parts.append(data)


def html_to_text(html: str) -> str:
    """Plain text of a post's HTML body.

    ``<p>``, headings, lists and other blocks become blank lines, ``<br>`` and ``<li>`` line
    breaks; text inside ``<pre>`` (code blocks) is kept verbatim; other whitespace is
    collapsed as a browser would; entities are unescaped; absolute link targets are kept in
    parentheses after the link text and images become ``[image: alt]``.

    Args:
        html: the ``Body`` attribute of a post (HTML).

    Returns:
        The text, without trailing spaces and with at most one blank line in a row.
    """
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = [line.rstrip() for line in "".join(parser.parts).split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def parse_tags(raw: str | None) -> list[str]:
    """Tags of a question: ``<a><b>`` (older dumps) or ``|a|b|`` (newer dumps).

    Args:
        raw: the ``Tags`` attribute, or None.

    Returns:
        The tag names in order; ``[]`` when there are none.
    """
    raw = (raw or "").strip()
    if raw.startswith("<"):
        return [t.strip() for t in re.findall(r"<([^<>]+)>", raw) if t.strip()]
    return [t.strip() for t in raw.split("|") if t.strip()]


# Comment text is Markdown-ish plain text that may hold a few inline HTML tags; only those
# known tags are removed, so "<username>" or "<<joke>>" in a comment survive.
_COMMENT_TAG = re.compile(r"</?(?:a|b|i|em|strong|code|kbd|pre|p|br|span|div|sup|sub|s|strike|del|"
                          r"blockquote|ul|ol|li|img|hr)(?:\s[^<>]*)?/?>", re.I)


def comment_text(raw: str) -> str:
    """Plain text of a comment: inline HTML tags removed, entities unescaped, spaces collapsed.

    Args:
        raw: the ``Text`` attribute of a comment row.

    Returns:
        The text on one line, stripped.
    """
    return " ".join(html.unescape(_COMMENT_TAG.sub("", raw)).split())
