"""What a SelfScore judge reads: the conversation neutralised and, where needed, in English.

The stored messages never change; only the judge's prompt does. Two defences, each recorded
on the judgment it shaped (``parsed``):

- the manipulation defence (``harness.defence.manipulation``): spans that address a rater, carry a
  verdict, fake the prompt's tags or start a role-play are removed
  (``parsed["manipulation_defence"]``);
- other languages (``harness.selfscore.languages``, mode ``as-is`` | ``tell`` | ``translate``): a message
  that is not English is judged on what it says (``parsed["other_languages"]``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from graphs.protocols import Judgment, Message
from harness.defence.manipulation import RULES_VERSION, screen
from harness.selfscore.languages import LANGUAGE_MODES, TRANSLATE_VERSION, Translations, is_english, tell_note_for


def neutralised_history(history: Sequence[Message]) -> tuple[list[Message], int]:
    """``history`` as a defended judge sees it: every message with its manipulation spans
    removed (``harness.defence.manipulation``), and how many spans were removed."""
    seen, removed = [], 0
    for m in history:
        screened = screen(m.content)
        seen.append(Message(m.role, screened.text))
        removed += len(screened.spans)
    return seen, removed


@dataclass
class JudgeView:
    """One judgment's view of the conversation (:meth:`JudgeInput.view`)."""

    messages: list[Message]
    removed: int | None = None           # manipulation spans removed (None: defence off)
    note: str | None = None              # the ``tell`` mode's note for the task, if any
    language: dict | None = None         # what was done about other languages, if anything
    calls: list = field(default_factory=list)  # translation calls made for this view

    @property
    def latest(self) -> str:
        """The text of the view's last message (empty when there is none)."""
        return self.messages[-1].content if self.messages else ""

    def task(self, task: str) -> str:
        """The rating task, with the ``tell`` note first when there is one."""
        return f"{self.note}\n{task}" if self.note else task

    def record(self, judgment: Judgment) -> Judgment:
        """``judgment`` with this view's defences in ``parsed`` and its calls counted."""
        if judgment.parsed is not None:
            extra = {}
            if self.removed is not None:
                extra["manipulation_defence"] = {"rules": RULES_VERSION, "spans_removed": self.removed}
            if self.language is not None:
                extra["other_languages"] = self.language
            judgment.parsed = {**judgment.parsed, **extra}
        if self.calls:
            judgment.calls = [*self.calls, *judgment.calls]
        return judgment


class JudgeInput:
    """Builds :class:`JudgeView` s for the judges of one run.

    Args:
        manipulation_defence: remove manipulation spans.
        other_languages: ``as-is``, ``tell`` or ``translate`` (see ``harness.selfscore.languages``).
        client: the judge role (needed for ``translate``).
        escape: how judged text is escaped inside a prompt.
    """

    def __init__(self, manipulation_defence: bool = True, other_languages: str = "as-is",
                 client=None, escape: Callable[[str], str] = lambda text: text):
        if other_languages not in LANGUAGE_MODES:
            raise ValueError(f"unknown scoring.other_languages {other_languages!r}; one of "
                             f"{', '.join(LANGUAGE_MODES)}")
        if other_languages == "translate" and client is None:
            raise ValueError("other_languages='translate' needs the judge role's client")
        self.manipulation_defence = manipulation_defence
        self.other_languages = other_languages
        self.translations = Translations(client, escape) if other_languages == "translate" else None

    def _neutralised(self, history: Sequence[Message]) -> tuple[list[Message], int | None]:
        if not self.manipulation_defence:
            return list(history), None
        return neutralised_history(history)

    async def view(self, history: Sequence[Message]) -> JudgeView:
        """``history`` as the judge reads it. A failed translation raises (the judgment fails
        with the call that failed, never judging the untranslated text silently)."""
        seen, removed = self._neutralised(history)
        if self.other_languages == "tell":
            note = tell_note_for(seen)
            return JudgeView(seen, removed, note, {"mode": "tell"} if note else None)
        if self.other_languages == "translate":
            english, done, calls = await self.translations.history(seen)
            if done:
                english, again = self._neutralised(english)
                removed = None if removed is None else removed + again
                return JudgeView(english, removed, None, {"mode": "translate", "version": TRANSLATE_VERSION,
                                                          "translated": done}, calls)
        return JudgeView(seen, removed)

    def rules_can_read(self, view: JudgeView) -> bool:
        """Whether the solved-check's English rules can read the view's latest message."""
        return self.other_languages != "tell" or is_english(view.latest)
