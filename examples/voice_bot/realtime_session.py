"""The Realtime session the bot keeps per call: what ``session.update`` may change (GA shape, or
the beta shape with ``input_audio_format`` / ``output_audio_format`` / ``turn_detection`` directly
in ``session``), and the session object the bot sends back (always the GA shape).

Audio is PCM16 mono at 24 kHz both ways (``{"type": "audio/pcm", "rate": 24000}``, beta
``"pcm16"``); any other format is refused with an ``error`` and the session is left as it was.
``turn_detection``: ``server_vad`` (or ``semantic_vad``, served the same way) with
``silence_duration_ms``, or ``null`` (the client commits and asks for responses).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from examples.voice_bot.transport import new_id

PCM = {"type": "audio/pcm", "rate": 24000}
VAD_TYPES = ("server_vad", "semantic_vad")
MODEL = "deskbench-voice-bot"


class SessionError(ValueError):
    """A ``session.update`` the bot cannot apply: ``code`` and ``param`` go in the error event."""

    def __init__(self, code: str, message: str, param: str | None = None):
        super().__init__(message)
        self.code, self.param = code, param


def _check_format(value: Any, param: str) -> None:
    if value is None or value == "pcm16":
        return
    if isinstance(value, dict) and value.get("type") == "audio/pcm" and value.get("rate", 24000) == 24000:
        return
    raise SessionError("unsupported_audio_format",
                       f"{param} {value!r} is not supported; this bot speaks PCM16 mono at 24 kHz "
                       "({\"type\": \"audio/pcm\", \"rate\": 24000}, beta \"pcm16\")", param)


@dataclass(frozen=True)
class SessionConfig:
    """One call's session: server-side endpointing or not, and its silence length."""

    id: str
    vad: bool = True
    silence_ms: int = 600
    prefix_ms: int = 300
    instructions: str = ""

    @classmethod
    def new(cls, silence_ms: int) -> "SessionConfig":
        """A fresh session with the bot's defaults."""
        return cls(new_id("sess"), silence_ms=silence_ms)

    def updated(self, session: Any) -> "SessionConfig":
        """This session with a ``session.update``'s ``session`` applied.

        Raises:
            SessionError: an unsupported audio format or session type, or a bad turn_detection.
        """
        if not isinstance(session, dict):
            raise SessionError("invalid_value", "session must be an object", "session")
        if session.get("type", "realtime") != "realtime":
            raise SessionError("unsupported_session_type",
                               f"session.type {session['type']!r} is not supported (only 'realtime')", "session.type")
        audio = session.get("audio") or {}
        audio_in, audio_out = audio.get("input") or {}, audio.get("output") or {}
        _check_format(audio_in.get("format"), "session.audio.input.format")
        _check_format(audio_out.get("format"), "session.audio.output.format")
        _check_format(session.get("input_audio_format"), "session.input_audio_format")
        _check_format(session.get("output_audio_format"), "session.output_audio_format")
        out = self
        if isinstance(session.get("instructions"), str):
            out = replace(out, instructions=session["instructions"])
        for holder, param in ((audio_in, "session.audio.input.turn_detection"),
                              (session, "session.turn_detection")):
            if "turn_detection" in holder:
                out = out._turn_detection(holder["turn_detection"], param)
        return out

    def _turn_detection(self, value: Any, param: str) -> "SessionConfig":
        if value is None:
            return replace(self, vad=False)
        if not isinstance(value, dict) or value.get("type", "server_vad") not in VAD_TYPES:
            raise SessionError("invalid_value", f"{param} must be null or of type server_vad", param)
        silence = value.get("silence_duration_ms", self.silence_ms)
        prefix = value.get("prefix_padding_ms", self.prefix_ms)
        if not isinstance(silence, int) or not 100 <= silence <= 10_000:
            raise SessionError("invalid_value", f"{param}.silence_duration_ms must be 100 to 10000 ms",
                               param + ".silence_duration_ms")
        return replace(self, vad=True, silence_ms=silence, prefix_ms=prefix if isinstance(prefix, int) else 300)

    def render(self) -> dict[str, Any]:
        """The session object of ``session.created`` / ``session.updated`` (GA shape)."""
        detection = ({"type": "server_vad", "silence_duration_ms": self.silence_ms,
                      "prefix_padding_ms": self.prefix_ms, "create_response": True, "interrupt_response": True}
                     if self.vad else None)
        return {"type": "realtime", "object": "realtime.session", "id": self.id, "model": MODEL,
                "output_modalities": ["audio"], "instructions": self.instructions,
                "audio": {"input": {"format": dict(PCM), "turn_detection": detection,
                                    "transcription": {"model": "whisper-base"}},
                          "output": {"format": dict(PCM), "voice": "piper-joe"}}}
