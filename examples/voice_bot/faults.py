"""Faults the bot can be told to commit (``--fault MODE --fault-turn N``), so that the harness's
handling of a misbehaving bot can be tested against a real one.

=================== ==========================================================================
``hangup``          close the socket right after the caller's N-th utterance ends, before answering
``malformed``       in place of the N-th reply: a text frame that is not JSON, then a JSON frame
                    whose audio field is missing (Twilio ``media.payload``, Realtime ``delta``)
``wrong-format``    the N-th reply's audio sent as a WAV file's bytes (RIFF header included), in
                    one payload / delta, instead of raw samples
``silent``          never answer from the N-th reply on; the socket stays open
``hangup-mid-reply`` close the socket half-way through the N-th reply's audio
=================== ==========================================================================

Replies are counted per call from 1 (a greeting is not one); utterances likewise.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.voice.audio import wav_bytes
from harness.voicebots.codec import WireFormat

FAULT_MODES = ("hangup", "malformed", "wrong-format", "silent", "hangup-mid-reply")
NOT_JSON = "this is not JSON {{{"


@dataclass(frozen=True)
class FaultPlan:
    """Which fault, if any, and from which turn."""

    mode: str | None = None
    turn: int = 1

    def __post_init__(self):
        if self.mode is not None and self.mode not in FAULT_MODES:
            raise ValueError(f"unknown fault {self.mode!r}; choose from {', '.join(FAULT_MODES)}")
        if self.turn < 1:
            raise ValueError(f"--fault-turn must be 1 or more, not {self.turn}")

    def hangs_up_after(self, utterance: int) -> bool:
        """Whether to hang up once the caller's ``utterance``-th utterance has ended."""
        return self.mode == "hangup" and utterance == self.turn

    def for_reply(self, number: int) -> str | None:
        """The fault to commit in reply ``number`` (0, the greeting, never has one)."""
        if number < 1 or self.mode in (None, "hangup"):
            return None
        if self.mode == "silent":
            return "silent" if number >= self.turn else None
        return self.mode if number == self.turn else None

    def describe(self) -> str:
        """``"none"`` or ``"MODE at turn N"``."""
        return "none" if self.mode is None else f"{self.mode} at turn {self.turn}"


def wav_payload(data: bytes, wire: WireFormat) -> bytes:
    """``data`` (audio in ``wire``'s format) as a 16-bit PCM WAV file's bytes, at the same rate."""
    return wav_bytes(wire.decode(data), wire.rate)
