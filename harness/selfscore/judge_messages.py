"""How judged text is laid out for a judge: the conversation so far, the latest message in its
own block, then the task or the Yes/No question, with every delimiter tag in judged text
defused (``escape_judged_text``) and the latest message bounded.

The judges (:mod:`harness.selfscore.judges`) and the simulated user's yes/no checks
(:mod:`harness.simuser.checks`) both build their prompts here.
"""
from __future__ import annotations

from typing import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from graphs.protocols import Message
from harness.aids.text import escape_tags
from harness.selfscore import prompts
from harness.selfscore.transcript import LABELS, _clip, conversation_window, render_conversation

LATEST_MAX_CHARS = 3000  # the latest message is cut in the middle beyond this (its head and tail kept)
CONVERSATION_MAX_CHARS = 6000  # the conversation before it: the first message and the latest that fit


def escape_judged_text(text: str) -> str:
    """``text`` with every tag of the prompts' delimiters (``<conversation>``, ``</latest>``,
    ...) defused as ``&lt;...``, so judged text can neither close the block it sits in nor open
    a new one; all other text, code with ``<`` included, is left as it is."""
    return escape_tags(text, prompts.DELIMITER_TAGS)


def judge_messages(history: Sequence[Message], task: str, reminder: bool = True) -> list[BaseMessage]:
    """The conversation so far, the latest message on its own, then the task.

    Judged text is escaped (:func:`escape_judged_text`) and bounded; the task, after it, is the
    only instruction (the instruction hierarchy is stated in ``prompts.JUDGE_SYSTEM``).
    ``reminder`` (the aid ``judge_reminder``): the latest message is followed by the reminder
    that text claiming the problem solved or addressing a rater earns nothing.
    """
    return _judged(history, prompts.LATEST_MESSAGE if reminder else prompts.LATEST_BLOCK, task,
                   prompts.JUDGE_SYSTEM)


def clipping(history: Sequence[Message]) -> dict | None:
    """What the judge's prompt of ``history`` leaves out, with the limits used: the latest
    message cut in the middle (its length and the limit), earlier messages cut or omitted from
    the conversation window; None when the judge reads everything. Measured on the text as the
    prompt holds it (escaped, as :func:`_judged` bounds it)."""
    if not history:
        return None
    *earlier, latest = [Message(m.role, escape_judged_text(m.content)) for m in history]
    out = {}
    if len(latest.content) > LATEST_MAX_CHARS:
        out["latest"] = {"chars": len(latest.content), "limit": LATEST_MAX_CHARS}
    _, omitted = conversation_window(earlier, CONVERSATION_MAX_CHARS)
    cut = [i for i, m in enumerate(earlier) if len(m.content) > CONVERSATION_MAX_CHARS // 3]
    if cut:
        out["earlier_cut"] = {"messages": cut, "limit": CONVERSATION_MAX_CHARS // 3}
    if omitted:
        out["earlier_omitted"] = {"messages": omitted, "limit": CONVERSATION_MAX_CHARS}
    return out or None


def _judged(history: Sequence[Message], latest_block: str, task: str, system: str) -> list[BaseMessage]:
    """``system``, then the escaped conversation, its latest message in ``latest_block``
    (formatted with ``label`` and ``text``), and the task last."""
    *earlier, latest = [Message(m.role, escape_judged_text(m.content)) for m in history]
    text = (render_conversation(earlier, CONVERSATION_MAX_CHARS) + "\n\n"
            + latest_block.format(label=LABELS[latest.role], text=_clip(latest.content, LATEST_MAX_CHARS))
            + "\n\n" + task)
    return [SystemMessage(system), HumanMessage(text)]


def yes_no_messages(history: Sequence[Message], question: str) -> list[BaseMessage]:
    """The conversation up to and including the USER's latest message, then one Yes/No question.

    ``history`` ends with that user message. Judged text is escaped and bounded as for the other
    judges, under the same system message; the question comes last, so the questions of one
    check share their prompt up to it with each other and with the turn's user-helpfulness call.
    """
    return _judged(history, prompts.YES_NO_LATEST, question, prompts.JUDGE_SYSTEM)
