"""What a protocol module implements for :class:`examples.voice_bot.pipeline.CallPipeline`:
:class:`Transport` (how each step of the conversation looks on its wire) and the state of one
reply (:class:`ReplyState`) that the pipeline hands it.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from time import monotonic

from harness.voicebots.codec import WireFormat


def new_id(prefix: str) -> str:
    """A fresh id such as ``resp_3f9a...``."""
    return f"{prefix}_{secrets.token_hex(8)}"


@dataclass
class ReplyState:
    """One reply of the bot: number 0 is the greeting, k the k-th reply to the caller."""

    number: int
    heard: str = ""
    speech_end: float | None = None
    id: str = field(default_factory=lambda: new_id("resp"))
    item_id: str = field(default_factory=lambda: new_id("item"))
    spoken: list[str] = field(default_factory=list)
    audio_s: float = 0.0
    started: float = field(default_factory=monotonic)
    first_audio: float | None = None
    created: bool = False
    status: str = "in_progress"

    @property
    def name(self) -> str:
        """The reply's mark name: ``greeting`` or ``reply-K``."""
        return "greeting" if self.number == 0 else f"reply-{self.number}"

    @property
    def text(self) -> str:
        """What has been spoken so far."""
        return " ".join(self.spoken)


class Transport:
    """How a protocol puts the conversation on its wire; the defaults send nothing."""

    wire: WireFormat
    label: str = "call"

    def talking(self) -> bool:
        """Whether the caller may still be hearing the bot."""
        return False

    async def speech_started(self, at_s: float, item_id: str) -> None:
        """The caller started speaking ``at_s`` seconds into the call."""

    async def speech_stopped(self, at_s: float, item_id: str) -> None:
        """The caller stopped speaking."""

    async def committed(self, item_id: str) -> None:
        """The caller's utterance became an item of the conversation."""

    async def heard(self, item_id: str, text: str) -> None:
        """What speech to text made of the utterance."""

    async def reply_started(self, reply: ReplyState) -> None:
        """A reply begins."""

    async def reply_text(self, reply: ReplyState, delta: str) -> None:
        """Text of the reply, sent before its audio."""

    async def reply_audio(self, reply: ReplyState, data: bytes, seconds: float) -> None:
        """Audio of the reply, in the wire format."""
        raise NotImplementedError

    async def reply_done(self, reply: ReplyState) -> None:
        """All of the reply was sent."""

    async def interrupted(self, reply: ReplyState | None, reason: str) -> None:
        """The bot stopped talking: ``reply`` (if one was under way) was cancelled."""

    async def send_malformed(self, reply: ReplyState) -> None:
        """The ``malformed`` fault: frames the client cannot use, in place of the reply."""
        raise NotImplementedError

    async def hang_up(self, reason: str) -> None:
        """Close the call from the bot's side."""
        raise NotImplementedError
