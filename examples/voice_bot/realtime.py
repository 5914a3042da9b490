"""The OpenAI Realtime API (GA event names), the bot's side (path ``/realtime``, also
``/v1/realtime``): the harness is the client, sending the caller's audio.

Bot -> client on connect: ``session.created``. Client -> bot:

* ``session.update`` -> ``session.updated`` (the effective session; see :mod:`.realtime_session`);
* ``input_audio_buffer.append`` (``audio``: base64 PCM16 24 kHz, silence included);
* with ``turn_detection`` null: ``input_audio_buffer.commit`` -> ``input_audio_buffer.committed``
  (then ``conversation.item.input_audio_transcription.completed``), ``response.create`` -> a
  response, ``response.cancel`` -> ``response.done`` cancelled; ``input_audio_buffer.clear`` ->
  ``input_audio_buffer.cleared``;
* ``conversation.item.truncate`` (what was played) -> ``conversation.item.truncated``; the bot
  stops counting itself as talking.

With ``server_vad`` (the default) the bot sends ``input_audio_buffer.speech_started``
(``audio_start_ms``, ``item_id``), ``input_audio_buffer.speech_stopped``,
``input_audio_buffer.committed``, ``conversation.item.input_audio_transcription.completed``
(``transcript``) and then answers by itself. A response: ``response.created``,
``response.output_item.added``, per sentence ``response.output_audio_transcript.delta`` then its
``response.output_audio.delta`` messages (100 ms each, kept at most :data:`LEAD_S` ahead of real
time), ``response.output_audio.done``, ``response.output_audio_transcript.done``,
``response.output_item.done``, ``response.done`` (status ``completed``). The bot is *talking*
until the audio sent would have finished playing, counted from the first delta. On barge-in:
``input_audio_buffer.speech_started``, then, if the response was still being sent,
``response.done`` with status ``cancelled``. A bad client event (unknown type, not JSON, invalid
base64, a field missing) is answered with ``error`` and the call goes on.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import json
from time import monotonic
from typing import Any

from websockets.exceptions import ConnectionClosed

from examples.voice_bot.faults import NOT_JSON
from examples.voice_bot.pipeline import CallPipeline, Services
from examples.voice_bot.realtime_session import SessionConfig, SessionError
from examples.voice_bot.transport import ReplyState, Transport, new_id
from harness.voicebots.codec import PCM16_24K, WireFormatError

LEAD_S = 1.0      # audio sent ahead of the caller's playback, at most


class RealtimeCall(Transport):
    """One call on ``/realtime``."""

    wire = PCM16_24K

    def __init__(self, ws, services: Services):
        self.ws, self.services = ws, services
        self.session = SessionConfig.new(services.options.end_silence_ms)
        self.label = f"realtime {self.session.id}"
        self.pipeline = CallPipeline(services, self)
        self._playout_end = 0.0
        self._last_item: str | None = None
        self._played_item: str | None = None
        self._handlers = {
            "session.update": self._session_update, "input_audio_buffer.append": self._append,
            "input_audio_buffer.commit": self._commit, "input_audio_buffer.clear": self._clear,
            "response.create": self._response_create, "response.cancel": self._response_cancel,
            "conversation.item.truncate": self._truncate}

    async def run(self) -> None:
        """Serve the call until the client closes it."""
        try:
            await self._event("session.created", session=self.session.render())
            self.services.log(f"{self.label}: call started")
            await self.pipeline.greet()
            async for message in self.ws:
                await self.handle(message)
        except ConnectionClosed:
            pass
        finally:
            await self.pipeline.close()
            self.services.log(f"{self.label}: call ended")

    async def handle(self, message: str | bytes) -> None:
        """Act on one client event (an ``error`` event for one the bot cannot use)."""
        if isinstance(message, bytes):
            return await self.error("invalid_event", "binary frames are not events; send JSON text frames")
        try:
            event = json.loads(message)
        except ValueError as exc:
            return await self.error("invalid_json", f"the frame is not JSON: {exc}")
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            return await self.error("invalid_event", "an event is a JSON object with a string 'type'")
        handler = self._handlers.get(event["type"])
        if handler is None:
            return await self.error("unknown_event", f"unknown or unsupported event type {event['type']!r}",
                                    event.get("event_id"), "type")
        await handler(event)

    async def _event(self, kind: str, **fields: Any) -> None:
        await self.ws.send(json.dumps({"type": kind, "event_id": new_id("event"), **fields}))

    async def error(self, code: str, message: str, event_id: str | None = None, param: str | None = None) -> None:
        """An ``error`` event (``invalid_request_error``); the call goes on."""
        await self._event("error", error={"type": "invalid_request_error", "code": code, "message": message,
                                          "param": param, "event_id": event_id})

    async def _session_update(self, event: dict) -> None:
        try:
            self.session = self.session.updated(event.get("session"))
        except SessionError as exc:
            return await self.error(exc.code, str(exc), event.get("event_id"), exc.param)
        self.pipeline.configure(self.session.vad, self.session.silence_ms)
        await self._event("session.updated", session=self.session.render())

    async def _append(self, event: dict) -> None:
        audio = event.get("audio")
        if not isinstance(audio, str):
            return await self.error("missing_field", "input_audio_buffer.append needs 'audio' (base64 PCM16)",
                                    event.get("event_id"), "audio")
        try:
            samples = PCM16_24K.decode(base64.b64decode(audio, validate=True))
        except (binascii.Error, WireFormatError) as exc:
            return await self.error("invalid_audio", f"'audio' is not base64 PCM16 at 24 kHz: {exc}",
                                    event.get("event_id"), "audio")
        await self.pipeline.feed(samples)

    async def _commit(self, event: dict) -> None:
        if await self.pipeline.commit() is None:
            await self.error("input_audio_buffer_commit_empty", "the input audio buffer holds no speech to commit",
                             event.get("event_id"))

    async def _clear(self, event: dict) -> None:
        self.pipeline.clear()
        await self._event("input_audio_buffer.cleared")

    async def _response_create(self, event: dict) -> None:
        if self.pipeline.pending:
            return await self.error("conversation_already_has_active_response",
                                    "a response is already in progress", event.get("event_id"))
        await self.pipeline.start_reply()

    async def _response_cancel(self, event: dict) -> None:
        if not await self.pipeline.cancel("client_cancelled"):
            await self.error("response_cancel_not_active", "there is no response in progress to cancel",
                             event.get("event_id"))

    async def _truncate(self, event: dict) -> None:
        item_id, end_ms = event.get("item_id"), event.get("audio_end_ms")
        if not isinstance(item_id, str) or not isinstance(end_ms, int) or end_ms < 0:
            return await self.error("missing_field", "conversation.item.truncate needs 'item_id' and "
                                    "'audio_end_ms' (ms of audio played)", event.get("event_id"), "item_id")
        if item_id == self._played_item:
            self._playout_end = min(self._playout_end, monotonic())
        await self._event("conversation.item.truncated", item_id=item_id,
                          content_index=event.get("content_index", 0), audio_end_ms=end_ms)

    # -- the conversation on the wire (Transport) --

    def talking(self) -> bool:
        """Until the audio sent would have finished playing."""
        return monotonic() < self._playout_end

    async def speech_started(self, at_s: float, item_id: str) -> None:
        """``input_audio_buffer.speech_started``."""
        await self._event("input_audio_buffer.speech_started", audio_start_ms=int(at_s * 1000), item_id=item_id)

    async def speech_stopped(self, at_s: float, item_id: str) -> None:
        """``input_audio_buffer.speech_stopped``."""
        await self._event("input_audio_buffer.speech_stopped", audio_end_ms=int(at_s * 1000), item_id=item_id)

    async def committed(self, item_id: str) -> None:
        """``input_audio_buffer.committed``."""
        await self._event("input_audio_buffer.committed", previous_item_id=self._last_item, item_id=item_id)
        self._last_item = item_id

    async def heard(self, item_id: str, text: str) -> None:
        """``conversation.item.input_audio_transcription.completed``."""
        await self._event("conversation.item.input_audio_transcription.completed", item_id=item_id,
                          content_index=0, transcript=text)

    def _item(self, reply: ReplyState, status: str) -> dict:
        content = [{"type": "output_audio", "transcript": reply.text}] if status != "in_progress" else []
        return {"id": reply.item_id, "object": "realtime.item", "type": "message", "role": "assistant",
                "status": status, "content": content}

    def _response(self, reply: ReplyState, status: str, reason: str | None = None) -> dict:
        details = {"type": status, "reason": reason} if reason else None
        output = [] if status == "in_progress" else [self._item(reply, "completed" if status == "completed"
                                                               else "incomplete")]
        return {"object": "realtime.response", "id": reply.id, "status": status, "status_details": details,
                "output": output, "output_modalities": ["audio"], "usage": None}

    async def reply_started(self, reply: ReplyState) -> None:
        """``response.created`` and ``response.output_item.added``."""
        await self._event("response.created", response=self._response(reply, "in_progress"))
        await self._event("response.output_item.added", response_id=reply.id, output_index=0,
                          item=self._item(reply, "in_progress"))
        self._last_item = reply.item_id

    def _part(self, reply: ReplyState) -> dict:
        return {"response_id": reply.id, "item_id": reply.item_id, "output_index": 0, "content_index": 0}

    async def reply_text(self, reply: ReplyState, delta: str) -> None:
        """``response.output_audio_transcript.delta``."""
        await self._event("response.output_audio_transcript.delta", **self._part(reply), delta=delta)

    async def reply_audio(self, reply: ReplyState, data: bytes, seconds: float) -> None:
        """``response.output_audio.delta``, at most :data:`LEAD_S` ahead of the caller's playback."""
        ahead = self._playout_end - monotonic() - LEAD_S
        if ahead > 0:
            await asyncio.sleep(ahead)
        await self._event("response.output_audio.delta", **self._part(reply),
                          delta=base64.b64encode(data).decode("ascii"))
        self._playout_end = max(self._playout_end, monotonic()) + seconds
        self._played_item = reply.item_id

    async def reply_done(self, reply: ReplyState) -> None:
        """The response's closing events, ``response.done`` (completed) last."""
        await self._event("response.output_audio.done", **self._part(reply))
        await self._event("response.output_audio_transcript.done", **self._part(reply), transcript=reply.text)
        await self._event("response.output_item.done", response_id=reply.id, output_index=0,
                          item=self._item(reply, "completed"))
        await self._event("response.done", response=self._response(reply, "completed"))

    async def interrupted(self, reply: ReplyState | None, reason: str) -> None:
        """``response.done`` cancelled, when a response was under way; the bot stops talking."""
        self._playout_end = min(self._playout_end, monotonic())
        if reply is not None and reply.created:
            await self._event("response.done", response=self._response(reply, "cancelled", reason))

    async def send_malformed(self, reply: ReplyState) -> None:
        """A text frame that is not JSON, then a ``response.output_audio.delta`` without ``delta``."""
        await self.ws.send(NOT_JSON)
        await self._event("response.output_audio.delta", **self._part(reply))

    async def hang_up(self, reason: str) -> None:
        """Close the socket."""
        await self.ws.close(1000, reason)
