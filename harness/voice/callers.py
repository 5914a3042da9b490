"""How the simulated caller behaves on a full-duplex call: presets and the barge-in rules.

A :class:`CallerPreset` says how long the caller thinks before answering, whether it hesitates
between its sentences, whether it backchannels ("mhm") while the agent talks, and when it
barges in. :func:`barge_in` applies the rules to one agent reply, in the reply's own speech
time (seconds of agent audio from its first sentence, stalls left out), so what is cut never
depends on how fast this machine computed:

- **too long**: the reply passes ``max_talk_s`` seconds of speech, or starts a sentence after
  ``max_sentences`` sentences;
- **wrong**: a sentence repeats a sentence the agent said in an earlier turn (60% or more of
  its content words, at least 4 of them): the caller already heard that;
- **remembers a fact**: a sentence mentions a content word of one of the task's facts that the
  caller has not said yet (and that is not in the question): the caller cuts in to tell it.

The earliest rule wins; the caller starts talking ``reaction_s`` after the trigger (the middle
of the triggering sentence for the last two). A trigger after the reply's end is no barge-in.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence


class CallerError(ValueError):
    """An unknown caller preset; the message lists the valid ones."""


@dataclass(frozen=True)
class CallerPreset:
    """How a simulated duplex caller behaves: think pauses, hesitations, backchannels,
    and when it cuts in (talk too long, too many sentences, a repetition, a fact)."""
    name: str
    description: str
    think_s: tuple[float, float] = (0.5, 1.0)       # pause before answering (uniform, seeded)
    hesitation_rate: float = 0.0                    # chance of a pause between two of its sentences
    hesitation_s: float = 0.9
    backchannel_every_s: float | None = None        # "mhm" after a sentence, this often
    max_talk_s: float | None = None
    max_sentences: int | None = None
    barge_on_repeat: bool = False
    barge_on_fact: bool = False
    reaction_s: float = 0.3


PRESETS: dict[str, CallerPreset] = {p.name: p for p in (
    CallerPreset("patient", "waits for the agent to finish, thinks before answering, hesitates "
                 "between sentences, says 'mhm' now and then; never interrupts",
                 think_s=(0.6, 1.4), hesitation_rate=0.3, backchannel_every_s=5.0),
    CallerPreset("impatient", "answers quickly; cuts in when a reply runs past 10 s or 3 "
                 "sentences, or repeats itself", think_s=(0.2, 0.5), max_talk_s=10.0,
                 max_sentences=3, barge_on_repeat=True, reaction_s=0.3),
    CallerPreset("interrupting", "cuts in after 6 s or 2 sentences, on a repetition, and to tell "
                 "a fact the agent's words remind it of; says 'mhm' often", think_s=(0.1, 0.3),
                 backchannel_every_s=4.0, max_talk_s=6.0, max_sentences=2, barge_on_repeat=True,
                 barge_on_fact=True, reaction_s=0.2),
)}

OPENERS = {
    "too_long": ("Sorry, can I stop you there?", "Okay, hold on a second.", "Wait, wait, let me stop you."),
    "wrong": ("No, wait, you said that already.", "Sorry, you already told me that."),
    "fact": ("Sorry, I just remembered something.", "Oh wait, one thing I forgot to say."),
}
BACKCHANNELS = ("Mhm.", "Okay.", "Right.")

_STOP = set("""about above after again against their there these those which while would could
should other being where shall every under until with from have this that your what when then
them they will just into also been only some more most very such than here like make sure
check first next please try""".split())


def caller_preset(name: str) -> CallerPreset:
    """The preset ``name``.

    Raises:
        CallerError: unknown name; the message lists the valid ones.
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise CallerError(f"Unknown caller preset {name!r}; use one of: {', '.join(PRESETS)}.") from None


def content_words(text: str) -> set[str]:
    """Lower-case words of 5+ letters that carry meaning (a short stop list left out)."""
    return {w for w in re.findall(r"[a-z][a-z0-9'-]{4,}", text.lower()) if w not in _STOP}


@dataclass(frozen=True)
class Barge:
    """A barge-in decided for one reply: why, when (the reply's speech time, s), which
    sentence triggered it, and the fact to tell (for ``fact``)."""

    reason: str
    at_s: float
    sentence: int
    fact: str | None = None


def barge_in(preset: CallerPreset, sentences: Sequence[tuple[str, float, float]],
             earlier: Sequence[str] = (), facts: Sequence[str] = (), known: str = "") -> Barge | None:
    """The caller's barge-in into one reply, or None (see the module docstring).

    Args:
        sentences: ``(text, start_s, end_s)`` of each spoken sentence in the reply's speech time.
        earlier: the agent's sentences of earlier turns.
        facts: the task's facts the caller has not told yet.
        known: what the caller has already said (and the question).
    """
    if not sentences:
        return None
    end = sentences[-1][2]
    found: list[Barge] = []
    if preset.max_talk_s is not None and end > preset.max_talk_s:
        i = next(i for i, s in enumerate(sentences) if s[2] > preset.max_talk_s)
        found.append(Barge("too_long", preset.max_talk_s + preset.reaction_s, i))
    if preset.max_sentences is not None and len(sentences) > preset.max_sentences:
        i = preset.max_sentences
        found.append(Barge("too_long", sentences[i][1] + preset.reaction_s, i))
    known_words = content_words(known)
    earlier_sets = [w for w in (content_words(e) for e in earlier) if len(w) >= 4]
    for i, (text, start, stop) in enumerate(sentences):
        middle = start + 0.5 * (stop - start) + preset.reaction_s
        words = content_words(text)
        if preset.barge_on_repeat and len(words) >= 4 and any(
                len(words & e) / len(words | e) >= 0.6 for e in earlier_sets):
            found.append(Barge("wrong", middle, i))
        if preset.barge_on_fact:
            for fact in facts:
                if (words & content_words(fact)) - known_words:
                    found.append(Barge("fact", middle, i, fact))
                    break
    found = [b for b in found if b.at_s < end]
    return min(found, key=lambda b: b.at_s) if found else None
