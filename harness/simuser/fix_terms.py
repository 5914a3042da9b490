"""Distinctive terms of a thread's real fix, and the ones an agent's message shares.

A term is distinctive when it looks technical (a digit, a dot, a slash, a hyphen: ``ntfs-3g``,
``services.msc``, ``~/.ssh/authorized_keys``) or is not a whole word of the MiniLM WordPiece
vocabulary (30,522 entries of common English: ``dhclient``, ``journalctl``, ``alsamixer`` are
split into pieces, ``line`` or ``check`` are not), and is not one of a few words every Linux or
Windows fix uses (``sudo``, ``apt``, ``reboot``) or that only look at the system (``grep``,
``dmesg``, ``lspci``). The simulated user's outcome decision
(``harness.simuser.users.SimulatedUser.outcome``) uses the overlap: a generic list of steps that
names none of the real fix's terms is not taken for the fix unless the model and the
similarity are confident, and a message that only asks something is no fix at all
(:func:`asks_only`; docs/selfscore.md).

A real #ubuntu thread's solution is its helpers' messages, each addressed to the asker by nick
(``keanu: try setting it to alsa``). A nick is not a term of the fix: a word that starts a line
as an address (``nick:`` or ``nick,``) is left out (``harness.aids.text.addressees``). Before, the
asker's nick counted as a term of every thread, and the replayed helpers' own questions passed at
the lower threshold.

The words, patterns and limits read here are data (``harness.aids.data_user.FIX_TERMS``, with
the term tokenizer of ``harness.aids.data_text``).
"""
from __future__ import annotations

import json
from functools import lru_cache

from harness.aids.data_text import TEXT
from harness.aids.data_user import FIX_TERMS
from harness.aids.text import addressees, strip_address, terms

_TECHNICAL_RE = TEXT.regex("term.technical")
# Words every fix uses, and commands that look at the system (or edit a file) rather than change
# it. A diagnostic step shares them with the thread's helpers (``dpkg -l | grep ubuntu-desktop``)
# but is not the fix: in a batch, ``dmesg | grep xorg`` in a generic list of steps lowered the
# threshold and a reinstall of the X server was taken for the thread's "install gdm".
GENERIC = FIX_TERMS.words("fix.generic_words")
_MIN_LENGTH = int(FIX_TERMS.limit("fix.min_length"))


@lru_cache(maxsize=1)
def _vocabulary() -> frozenset[str]:
    from harness.models.embeddings import model_files
    data = json.loads(model_files()[1].read_text(encoding="utf-8"))
    return frozenset(w for w in data["model"]["vocab"] if not w.startswith("##"))


_INFLECTIONS = FIX_TERMS.entry("fix.inflections").words


def is_generic(word: str) -> bool:
    """``word`` is a generic fix word or one of its inflections (``reinstalling``,
    ``restarted``, ``installation``): stripping a suffix, with a doubled final consonant undone
    (``grepping`` -> ``grep``), gives a word of :data:`GENERIC`. In a
    batch, "reinstalling" in a generic list of steps counted as a term of the real fix and a
    non-fix passed the outcome threshold (docs/selfscore.md)."""
    if word in GENERIC:
        return True
    for suffix in _INFLECTIONS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            doubled = stem[:-1] if len(stem) > 3 and stem[-1] == stem[-2] else stem
            if stem in GENERIC or doubled in GENERIC or stem + "e" in GENERIC:
                return True
    return False


def _words(text: str) -> set[str]:
    return {w.lower().rstrip(".") for w in terms(text)}


def distinctive_terms(text: str, known: str = "") -> set[str]:
    """The distinctive terms of ``text`` that ``known`` (e.g. the question) does not use; the
    nicks ``text`` addresses are none."""
    vocabulary = _vocabulary()
    seen = _words(known) | addressees(text)
    return {w for w in _words(text) if len(w) >= _MIN_LENGTH and not is_generic(w) and w not in seen
            and (_TECHNICAL_RE.search(w) or w not in vocabulary)}


def shared_fix_terms(message: str, solution: str, question: str = "") -> list[str]:
    """Distinctive terms of ``solution`` (not in ``question``) that ``message`` uses, sorted."""
    return sorted(distinctive_terms(solution, question) & _words(message))


_SENTENCE_RE = FIX_TERMS.regex("asks.sentence")
_SUGGESTION_RE = FIX_TERMS.regex("asks.suggestion")
_QUOTED_RE = FIX_TERMS.regex("asks.quoted")


def asks_only(message: str) -> bool:
    """``message`` only asks something: every sentence of three words or more is a question, none
    suggests an action ("did you try ...", "how about ...") and none holds code in backticks or
    quotes. Such a message tells the user to do nothing, so it cannot fix the problem; the
    user model's Yes/No said yes to real helpers' questions ("keanu: are there any error
    messages?", P 0.66) and the similarity with a thread whose solution holds that very question
    was high. A question that names a term of the fix is left to the scores (the caller
    checks)."""
    text = strip_address(message)  # a leading "nick:"
    if not text.strip() or "`" in text or _QUOTED_RE.search(text):
        return False
    sentences = [s.strip() for s in _SENTENCE_RE.findall(text) if len(s.split()) >= 3]
    return bool(sentences) and all(s.endswith("?") and not _SUGGESTION_RE.search(s) for s in sentences)


def asks_something(message: str) -> bool:
    """``message`` asks the user something: one of its sentences of three words or more is a
    question that suggests no action (``asks.suggestion``), whatever else it says. A vague
    persona (``harness.simuser.personas``) withholds its facts the first time it is asked."""
    text = strip_address(message)
    return any(s.strip().endswith("?") and not _SUGGESTION_RE.search(s.strip())
               for s in _SENTENCE_RE.findall(text) if len(s.split()) >= 3)
