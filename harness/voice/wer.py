"""Word error rate: (substitutions + deletions + insertions) / reference words, after the same
normalisation on both sides (case, punctuation, apostrophes, hyphenated words joined, numbers
zero to ninety-nine as digits), so that "It's 5 GB on Wi-Fi." and "its five gb on wifi" do not
count as errors."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
         "fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_ONES)}
_NUMBER_WORDS.update({w: str(20 + 10 * i) for i, w in enumerate(_TENS)})
_NUMBER_WORDS.update({f"{t}{sep}{o}": str(20 + 10 * i + j) for i, t in enumerate(_TENS)
                      for j, o in enumerate(_ONES[1:10], 1) for sep in (" ", "-")})
_COMPOUND = re.compile(r"\b(" + "|".join(_TENS) + r")[ -](" + "|".join(_ONES[1:10]) + r")\b")
_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def normalize(text: str) -> list[str]:
    """Lower-case words with punctuation and apostrophes dropped, hyphenated words joined
    ("wi-fi" -> "wifi") and the numbers zero to ninety-nine written as digits."""
    text = text.lower().replace("’", "'")
    text = _COMPOUND.sub(lambda m: _NUMBER_WORDS[f"{m.group(1)} {m.group(2)}"], text)
    text = _HYPHEN.sub("", text)
    words = [w.replace("'", "") for w in _WORD.findall(text)]
    return [_NUMBER_WORDS.get(w, w) for w in words]


@dataclass(frozen=True)
class WordErrors:
    """Edit counts of a hypothesis against a reference (normalised words)."""

    substitutions: int
    deletions: int
    insertions: int
    reference_words: int

    @property
    def errors(self) -> int:
        """Substitutions, deletions and insertions together."""
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float:
        """Errors per reference word; an empty reference gives 0.0 for an empty hypothesis
        and 1.0 otherwise."""
        if self.reference_words == 0:
            return 0.0 if self.insertions == 0 else 1.0
        return self.errors / self.reference_words


def word_errors(reference: str, hypothesis: str) -> WordErrors:
    """Levenshtein alignment of the normalised words, counting each kind of edit."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    # each cell: (total, substitutions, deletions, insertions); ties prefer substitutions
    prev = [(j, 0, 0, j) for j in range(len(hyp) + 1)]
    for i in range(1, len(ref) + 1):
        cur = [(i, 0, i, 0)]
        for j in range(1, len(hyp) + 1):
            if ref[i - 1] == hyp[j - 1]:
                cur.append(prev[j - 1])
                continue
            s, d, n = prev[j - 1], prev[j], cur[j - 1]
            cur.append(min((s[0] + 1, s[1] + 1, s[2], s[3]), (d[0] + 1, d[1], d[2] + 1, d[3]),
                           (n[0] + 1, n[1], n[2], n[3] + 1)))
        prev = cur
    _, subs, dels, ins = prev[-1]
    return WordErrors(subs, dels, ins, len(ref))


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate of ``hypothesis`` against ``reference``."""
    return word_errors(reference, hypothesis).wer


LENGTH_BUCKETS: tuple[tuple[int, int | None], ...] = ((1, 3), (4, 8), (9, 20), (21, None))
"""Utterance lengths (reference words, after normalisation) that WER is reported by."""


def length_bucket(words: int, buckets: tuple[tuple[int, int | None], ...] = LENGTH_BUCKETS) -> str:
    """The label ("1-3", "4-8", "9-20", "21+") of an utterance of ``words`` reference words
    ("0" for an empty reference)."""
    for lo, hi in buckets:
        if words >= lo and (hi is None or words <= hi):
            return f"{lo}+" if hi is None else f"{lo}-{hi}"
    return str(words)


@dataclass(frozen=True)
class BucketWER:
    """WER of a group of utterances: ``mean`` of the per-utterance WERs (what a voice run's
    ``stt_wer`` mean is) and ``corpus`` (all word errors / all reference words)."""

    n: int
    words: int
    errors: int
    mean: float

    @property
    def corpus(self) -> float:
        """All word errors over all reference words (0.0 with no reference word)."""
        return self.errors / self.words if self.words else 0.0


def summarize_errors(errors: Sequence[WordErrors]) -> BucketWER:
    """:class:`BucketWER` of some utterances' edit counts."""
    return BucketWER(len(errors), sum(e.reference_words for e in errors), sum(e.errors for e in errors),
                     sum(e.wer for e in errors) / len(errors) if errors else 0.0)


def wer_by_length(pairs: Iterable[tuple[str, str]],
                  buckets: tuple[tuple[int, int | None], ...] = LENGTH_BUCKETS) -> dict[str, BucketWER]:
    """WER of ``(reference, hypothesis)`` pairs grouped by the reference's length bucket, in
    bucket order (buckets with no utterance left out)."""
    groups: dict[str, list[WordErrors]] = {}
    for ref, hyp in pairs:
        e = word_errors(ref, hyp)
        groups.setdefault(length_bucket(e.reference_words, buckets), []).append(e)
    order = [length_bucket(lo, buckets) for lo, _ in buckets]
    return {label: summarize_errors(groups[label])
            for label in sorted(groups, key=lambda k: order.index(k) if k in order else -1)}
