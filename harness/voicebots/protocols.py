"""The two wire protocols a voice bot speaks, from the phone line's side: what the harness sends
(``opening``, ``audio``, ``caller_done``, ``barge_in``, ``closing``, mark echoes) and what the bot's
messages mean (:meth:`parse` -> :class:`BotEvent`). docs/voice-bots.md lists every event.

- :class:`TwilioProtocol`: Twilio Media Streams (bidirectional). The harness is the phone line:
  ``connected``, ``start`` (``streamSid``, ``callSid``, custom parameters with the conversation
  id), ``media`` frames of base64 8 kHz mu-law, 20 ms each, ``mark`` echoes, ``stop``. The bot
  sends ``media``, ``mark`` and ``clear``.
- :class:`RealtimeProtocol`: the OpenAI Realtime API (GA event names; the beta names are read
  too). The harness is the client: ``session.update``, ``input_audio_buffer.append`` (PCM16
  24 kHz), with ``turn_detection = "commit"`` also ``input_audio_buffer.commit`` +
  ``response.create`` and ``response.cancel`` on a barge-in; the bot sends audio and transcript
  deltas, ``response.done``, ``error``.

A message the protocol cannot read (not JSON, a missing field, bad base64, audio that is a file
rather than samples) raises :class:`BotProtocolError`: the call ends with stop reason ``bot_error``.
"""
from __future__ import annotations

import base64
import binascii
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.voicebots.codec import MULAW_8K, PCM16_24K, WireFormat, WireFormatError


class BotProtocolError(Exception):
    """A bot message the protocol cannot read; ``kind`` is ``malformed`` or ``wrong_format``."""

    def __init__(self, message: str, kind: str = "malformed", raw: str = ""):
        super().__init__(message)
        self.kind, self.raw = kind, raw[:300]


@dataclass
class BotEvent:
    """One thing the bot did, in the protocol's terms mapped to the line's.

    ``kind``: ``audio`` (``samples`` at the wire rate), ``mark`` (``name``), ``clear``,
    ``transcript_delta`` / ``transcript_done`` (``text``), ``caller_heard`` (``text``: the bot's
    transcript of the caller), ``speech_started`` (the bot heard the caller start), ``response_started``,
    ``response_done`` (``status``), ``error`` (``text``), ``other``."""

    kind: str
    samples: np.ndarray | None = field(default=None, repr=False)
    name: str = ""
    text: str = ""
    status: str = ""
    raw_type: str = ""


def _b64(value: Any, what: str, raw: str) -> bytes:
    if not isinstance(value, str) or not value:
        raise BotProtocolError(f"{what} is missing or not a base64 string", raw=raw)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BotProtocolError(f"{what} is not valid base64 ({exc})", raw=raw) from exc


def _decode(fmt: WireFormat, data: bytes, raw: str) -> np.ndarray:
    try:
        return fmt.decode(data)
    except WireFormatError as exc:
        raise BotProtocolError(f"wrong audio format: {exc}", kind="wrong_format", raw=raw) from exc


def _json(message: str | bytes) -> dict:
    if isinstance(message, bytes):
        raise BotProtocolError(f"a binary frame of {len(message)} bytes; the protocol sends JSON text frames")
    try:
        data = json.loads(message)
    except ValueError as exc:
        raise BotProtocolError(f"not JSON ({exc.__class__.__name__}: {exc})", raw=message) from exc
    if not isinstance(data, dict):
        raise BotProtocolError("a JSON message that is not an object", raw=message)
    return data


class TwilioProtocol:
    """Twilio Media Streams, the harness as the phone line (see the module docstring)."""

    name = "twilio-ws"
    wire = MULAW_8K
    sends_transcripts = False

    def __init__(self, conversation_id: str, parameters: dict[str, str] | None = None):
        self.stream_sid = "MZ" + uuid.uuid4().hex
        self.call_sid = "CA" + uuid.uuid4().hex
        self.account_sid = "AC" + "0" * 32
        self.parameters = {"conversation_id": conversation_id, **(parameters or {})}
        self._seq = 0
        self._chunk = 0

    def _next(self) -> str:
        self._seq += 1
        return str(self._seq)

    def opening(self) -> list[dict]:
        """``connected`` and ``start``."""
        return [{"event": "connected", "protocol": "Call", "version": "1.0.0"},
                {"event": "start", "sequenceNumber": self._next(), "streamSid": self.stream_sid,
                 "start": {"accountSid": self.account_sid, "streamSid": self.stream_sid, "callSid": self.call_sid,
                           "tracks": ["inbound"], "customParameters": dict(self.parameters),
                           "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}}]

    def audio(self, frame: bytes) -> dict:
        """One 20 ms ``media`` frame of the caller's audio."""
        self._chunk += 1
        return {"event": "media", "sequenceNumber": self._next(), "streamSid": self.stream_sid,
                "media": {"track": "inbound", "chunk": str(self._chunk), "timestamp": str(self._chunk * 20),
                          "payload": base64.b64encode(frame).decode("ascii")}}

    def mark_echo(self, name: str) -> dict:
        """The echo of the bot's mark once the audio before it has played."""
        return {"event": "mark", "sequenceNumber": self._next(), "streamSid": self.stream_sid, "mark": {"name": name}}

    def caller_done(self) -> list[dict]:
        """Nothing: on a phone line the bot finds the caller's end of speech itself."""
        return []

    def barge_in(self) -> list[dict]:
        """Nothing: the bot hears the caller and sends ``clear``."""
        return []

    def truncate(self, played_ms: float) -> list[dict]:
        """Nothing: Twilio's bot learns what played from its marks."""
        return []

    def closing(self) -> list[dict]:
        """``stop``: the caller hung up."""
        return [{"event": "stop", "sequenceNumber": self._next(), "streamSid": self.stream_sid,
                 "stop": {"accountSid": self.account_sid, "callSid": self.call_sid}}]

    def parse(self, message: str | bytes) -> list[BotEvent]:
        """The bot's message as events.

        Raises:
            BotProtocolError: not JSON, an unknown shape, a media payload that is not base64 or is a file.
        """
        data = _json(message)
        raw = message if isinstance(message, str) else ""
        event = data.get("event")
        if event == "media":
            media = data.get("media")
            if not isinstance(media, dict):
                raise BotProtocolError("a media event without its media object", raw=raw)
            samples = _decode(self.wire, _b64(media.get("payload"), "media.payload", raw), raw)
            return [BotEvent("audio", samples=samples, raw_type="media")]
        if event == "mark":
            mark = data.get("mark")
            if not isinstance(mark, dict) or not isinstance(mark.get("name"), str):
                raise BotProtocolError("a mark event without mark.name", raw=raw)
            return [BotEvent("mark", name=mark["name"], raw_type="mark")]
        if event == "clear":
            return [BotEvent("clear", raw_type="clear")]
        if not isinstance(event, str):
            raise BotProtocolError("a message without an event name", raw=raw)
        return [BotEvent("other", raw_type=event)]


# GA names first; the beta names they replace map to the same events
_REALTIME_AUDIO = ("response.output_audio.delta", "response.audio.delta")
_REALTIME_TEXT_DELTA = ("response.output_audio_transcript.delta", "response.audio_transcript.delta")
_REALTIME_TEXT_DONE = ("response.output_audio_transcript.done", "response.audio_transcript.done")


class RealtimeProtocol:
    """The OpenAI Realtime API, the harness as the client (see the module docstring)."""

    name = "realtime-ws"
    wire = PCM16_24K
    sends_transcripts = True

    def __init__(self, conversation_id: str, turn_detection: str = "server_vad", silence_ms: int = 500):
        self.conversation_id = conversation_id
        self.turn_detection, self.silence_ms = turn_detection, silence_ms
        self.item_id: str | None = None         # the bot's audio item now playing (for truncate)
        self.response_id: str | None = None

    def opening(self) -> list[dict]:
        """``session.update``: the audio formats, turn detection and input transcription."""
        detection = ({"type": "server_vad", "silence_duration_ms": self.silence_ms}
                     if self.turn_detection == "server_vad" else None)
        fmt = {"type": "audio/pcm", "rate": self.wire.rate}
        return [{"type": "session.update", "session": {
            "type": "realtime",
            "audio": {"input": {"format": fmt, "turn_detection": detection,
                                "transcription": {"model": "whisper-1"}},
                      "output": {"format": fmt}},
            "metadata": {"conversation_id": self.conversation_id}}}]

    def audio(self, frame: bytes) -> dict:
        """``input_audio_buffer.append`` of one 20 ms frame."""
        return {"type": "input_audio_buffer.append", "audio": base64.b64encode(frame).decode("ascii")}

    def mark_echo(self, name: str) -> dict:  # pragma: no cover - Realtime has no marks
        """Realtime has no marks."""
        raise NotImplementedError

    def caller_done(self) -> list[dict]:
        """With ``commit`` turn detection: commit the caller's audio and ask for a response."""
        if self.turn_detection == "server_vad":
            return []
        return [{"type": "input_audio_buffer.commit"}, {"type": "response.create"}]

    def barge_in(self) -> list[dict]:
        """With ``commit`` turn detection: cancel the response the caller talks over."""
        return [] if self.turn_detection == "server_vad" else [{"type": "response.cancel"}]

    def truncate(self, played_ms: float) -> list[dict]:
        """``conversation.item.truncate``: the bot's item was heard up to ``played_ms``."""
        if not self.item_id:
            return []
        return [{"type": "conversation.item.truncate", "item_id": self.item_id, "content_index": 0,
                 "audio_end_ms": int(max(0, played_ms))}]

    def closing(self) -> list[dict]:
        """Nothing: the client closes the socket."""
        return []

    def parse(self, message: str | bytes) -> list[BotEvent]:
        """The server's event as line events.

        Raises:
            BotProtocolError: not JSON, no ``type``, an audio delta that is not base64 PCM16.
        """
        data = _json(message)
        raw = message if isinstance(message, str) else ""
        kind = data.get("type")
        if not isinstance(kind, str):
            raise BotProtocolError("an event without its type", raw=raw)
        if kind in _REALTIME_AUDIO:
            self.item_id = data.get("item_id") or self.item_id
            return [BotEvent("audio", samples=_decode(self.wire, _b64(data.get("delta"), f"{kind}.delta", raw), raw),
                             raw_type=kind)]
        if kind in _REALTIME_TEXT_DELTA:
            return [BotEvent("transcript_delta", text=str(data.get("delta") or ""), raw_type=kind)]
        if kind in _REALTIME_TEXT_DONE:
            return [BotEvent("transcript_done", text=str(data.get("transcript") or ""), raw_type=kind)]
        if kind == "response.created":
            self.response_id = (data.get("response") or {}).get("id")
            return [BotEvent("response_started", raw_type=kind)]
        if kind == "response.done":
            return [BotEvent("response_done", status=str((data.get("response") or {}).get("status") or ""),
                             raw_type=kind)]
        if kind == "input_audio_buffer.speech_started":
            return [BotEvent("speech_started", raw_type=kind)]
        if kind == "conversation.item.input_audio_transcription.completed":
            return [BotEvent("caller_heard", text=str(data.get("transcript") or ""), raw_type=kind)]
        if kind == "error":
            err = data.get("error") or {}
            return [BotEvent("error", text=f"{err.get('type', '')} {err.get('code', '')}: "
                             f"{err.get('message', '')}".strip(), raw_type=kind)]
        return [BotEvent("other", raw_type=kind)]


def protocol_for(kind: str, conversation_id: str, turn_detection: str = "server_vad"):
    """The protocol object of ``run.agent`` ``twilio-ws`` or ``realtime-ws``.

    Raises:
        ValueError: another kind.
    """
    if kind == "twilio-ws":
        return TwilioProtocol(conversation_id)
    if kind == "realtime-ws":
        return RealtimeProtocol(conversation_id, turn_detection)
    raise ValueError(f"{kind!r} is not a voice bot protocol (twilio-ws, realtime-ws)")
