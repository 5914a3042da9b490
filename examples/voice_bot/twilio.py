"""Twilio Media Streams, the bot's side (path ``/twilio``): the harness is the phone line.

Line -> bot (JSON text frames): ``connected``; ``start`` (``streamSid``, ``start.callSid``,
``start.mediaFormat`` audio/x-mulaw 8000 Hz mono, ``start.customParameters``); ``media`` every
20 ms (``media.payload``: base64 of 160 bytes of mu-law, silence included); ``mark`` (the echo of
a mark the bot sent, once the audio before it has been played); ``stop`` (the caller hung up).

Bot -> line: ``media`` (``media.payload``: the reply's mu-law audio, 100 ms a message, sent as
fast as piper makes it); ``mark`` (``reply-K`` or ``greeting``) after each reply's audio;
``clear`` on barge-in (drop the audio not played yet). The bot is *talking* from a reply's first
``media`` until the line echoes its mark. There are no transcripts and no error events in this
protocol: frames the bot cannot use are logged and skipped.
"""
from __future__ import annotations

import base64
import binascii
import json

from websockets.exceptions import ConnectionClosed

from examples.voice_bot.faults import NOT_JSON
from examples.voice_bot.pipeline import CallPipeline, Services
from examples.voice_bot.transport import ReplyState, Transport
from harness.voicebots.codec import MULAW_8K, WireFormatError


class TwilioCall(Transport):
    """One call on ``/twilio``."""

    wire = MULAW_8K

    def __init__(self, ws, services: Services):
        self.ws, self.services, self.label = ws, services, "twilio"
        self.stream_sid: str | None = None
        self.pipeline = CallPipeline(services, self)
        self._marks: set[str] = set()
        self._unmarked = False
        self._skipped = 0

    async def run(self) -> None:
        """Serve the call until the line stops or hangs up."""
        try:
            async for message in self.ws:
                if not await self.handle(message):
                    break
        except ConnectionClosed:
            pass
        finally:
            await self.pipeline.close()
            self.services.log(f"{self.label}: call ended")

    async def handle(self, message: str | bytes) -> bool:
        """Act on one frame from the line; False once the line sent ``stop``."""
        try:
            event = json.loads(message)
            kind = event["event"]
        except (ValueError, TypeError, KeyError):
            return self._skip(f"a frame that is not a Twilio event: {str(message)[:60]!r}")
        if kind == "start":
            await self._start(event)
        elif kind == "media":
            await self._media(event)
        elif kind == "mark":
            self._marks.discard(str((event.get("mark") or {}).get("name")))
        elif kind == "stop":
            self.services.log(f"{self.label}: the caller hung up")
            return False
        return True

    def _skip(self, what: str) -> bool:
        self._skipped += 1
        if self._skipped <= 3:
            self.services.log(f"{self.label}: skipped {what}")
        return True

    async def _start(self, event: dict) -> None:
        start = event.get("start") or {}
        self.stream_sid = event.get("streamSid") or start.get("streamSid") or "MZ"
        media_format = start.get("mediaFormat") or {}
        if media_format.get("encoding", "audio/x-mulaw") != "audio/x-mulaw" \
                or int(media_format.get("sampleRate", 8000)) != 8000:
            self.services.log(f"{self.label}: the line offers {media_format}; taking it as mu-law 8 kHz")
        conversation = (start.get("customParameters") or {}).get("conversation_id")
        self.label = f"twilio {start.get('callSid') or self.stream_sid}" + (f" ({conversation})" if conversation else "")
        self.services.log(f"{self.label}: call started")
        await self.pipeline.greet()

    async def _media(self, event: dict) -> None:
        if self.stream_sid is None:
            return
        media = event.get("media") or {}
        if media.get("track", "inbound") != "inbound":
            return
        try:
            samples = MULAW_8K.decode(base64.b64decode(media["payload"], validate=True))
        except (KeyError, TypeError, binascii.Error, WireFormatError) as exc:
            self._skip(f"a media frame without usable audio ({type(exc).__name__})")
            return
        await self.pipeline.feed(samples)

    async def _send(self, event: dict) -> None:
        await self.ws.send(json.dumps({**event, "streamSid": self.stream_sid}))

    def talking(self) -> bool:
        """From a reply's first audio until the line echoes its mark."""
        return self._unmarked or bool(self._marks)

    async def reply_audio(self, reply: ReplyState, data: bytes, seconds: float) -> None:
        """One ``media`` message."""
        self._unmarked = True
        await self._send({"event": "media", "media": {"payload": base64.b64encode(data).decode("ascii")}})

    async def reply_done(self, reply: ReplyState) -> None:
        """The reply's ``mark`` (when it had audio)."""
        if self._unmarked:
            self._marks.add(reply.name)
            self._unmarked = False
            await self._send({"event": "mark", "mark": {"name": reply.name}})

    async def interrupted(self, reply: ReplyState | None, reason: str) -> None:
        """``clear``, when audio may still be playing."""
        if self.talking():
            self._marks.clear()
            self._unmarked = False
            await self._send({"event": "clear"})

    async def send_malformed(self, reply: ReplyState) -> None:
        """A text frame that is not JSON, then a ``media`` message without ``payload``."""
        await self.ws.send(NOT_JSON)
        await self._send({"event": "media", "media": {}})

    async def hang_up(self, reason: str) -> None:
        """Close the socket."""
        await self.ws.close(1000, reason)
