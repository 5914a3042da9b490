"""One call's conversation, whatever the protocol: endpointing on the caller's audio, Whisper on
each utterance, the agent's reply streamed sentence by sentence into piper, the audio sent as it
is made, and barge-in.

A protocol module (:mod:`.twilio`, :mod:`.realtime`) decodes the caller's audio, feeds it to
:meth:`CallPipeline.feed` and implements :class:`Transport`: how each step looks on its wire.

Turn taking, with server-side endpointing (:class:`.endpointer.Endpointer`):

* speech starts while the bot is not talking: announced at once (``speech_started``);
* speech starts while the bot is talking (from its first audio until the caller has heard it
  all, as the transport knows it): announced only once it spans ``--barge-in-ms``; then the
  reply is stopped (no more audio; the transport clears what was sent) -- a barge-in. A reply
  still being prepared is stopped the same way by speech that long. Shorter sounds over the
  bot's voice (a cough, "mhm") are ignored;
* speech stops (``--end-silence-ms`` of quiet): the utterance is transcribed and, unless the
  caller has started speaking again meanwhile, answered. What the caller said and was not
  answered yet is answered together.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from time import monotonic
from typing import AsyncIterator, Callable

import numpy as np
from websockets.exceptions import ConnectionClosed

from examples.voice_bot.endpointer import Endpointer, Utterance, VadEvent
from examples.voice_bot.faults import FaultPlan, wav_payload
from examples.voice_bot.transport import ReplyState, Transport, new_id
from harness.voice.audio import STT_RATE, AudioError, resample
from harness.voice.streaming import SentenceSplitter
from harness.voice.stt import Transcriber
from harness.voice.tts import Speaker, SpeechError
from harness.voice.vad import speech_span

CHUNK_S = 0.1                  # audio per outgoing message
MAX_BUFFER_S = 60.0            # caller audio kept for a client's commit (turn_detection null)
FALLBACK = "Sorry, I am having trouble right now. Could you say that again?"


@dataclass
class BotOptions:
    """The bot's behaviour, from the command line."""

    end_silence_ms: int = 600
    barge_in_ms: int = 300
    greeting: str | None = None
    fault: FaultPlan = field(default_factory=FaultPlan)
    max_sentences: int = 4


@dataclass
class Services:
    """What every call shares: the models (loaded once per process), the agent, the options and
    where the per-turn log lines go."""

    transcriber: Transcriber
    speaker: Speaker
    agent: object
    options: BotOptions
    log: Callable[[str], None] = field(default=lambda line: print(line, flush=True))


async def _once(text: str) -> AsyncIterator[str]:
    yield text


class CallPipeline:
    """The conversation of one call (see the module docstring)."""

    def __init__(self, services: Services, transport: Transport):
        self.services, self.t, self.options = services, transport, services.options
        self.conversation = services.agent.conversation()
        self.vad, self.end_silence_ms = True, self.options.end_silence_ms
        self.endpointer = self._endpointer(self.end_silence_ms)
        self.utterances = self.replies = 0
        self._reply: ReplyState | None = None
        self._reply_task: asyncio.Task | None = None
        self._hearing: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._item, self._announced, self._seq = "", False, 0
        self._unanswered: list[str] = []
        self._speech_end: float | None = None
        self._buffer: list[np.ndarray] = []

    def _endpointer(self, end_silence_ms: int) -> Endpointer:
        return Endpointer(self.t.wire.rate, end_silence_ms=end_silence_ms, confirm_ms=self.options.barge_in_ms)

    def configure(self, vad: bool, end_silence_ms: int) -> None:
        """Server-side endpointing on or off (a Realtime client's ``turn_detection``)."""
        if (vad, end_silence_ms) != (self.vad, self.end_silence_ms):
            self.vad, self.end_silence_ms, self._buffer = vad, end_silence_ms, []
            self.endpointer = self._endpointer(end_silence_ms)

    @property
    def pending(self) -> bool:
        """Whether a reply is being prepared or sent."""
        return self._reply_task is not None and not self._reply_task.done()

    async def feed(self, samples: np.ndarray) -> None:
        """The caller's next audio, at the wire's rate."""
        if not self.vad:
            self._buffer.append(samples)
            while len(self._buffer) > 1 and sum(map(len, self._buffer)) > MAX_BUFFER_S * self.t.wire.rate:
                self._buffer.pop(0)
            return
        for event in self.endpointer.push(samples):
            await getattr(self, f"_on_{event.kind}")(event)

    async def _on_start(self, event: VadEvent) -> None:
        self._item, self._announced = new_id("item"), not self.t.talking()
        if self._announced:
            self._seq += 1
            await self.t.speech_started(event.at_s, self._item)

    async def _on_confirmed(self, event: VadEvent) -> None:
        stopping = self.pending or self.t.talking()
        reply = await self.stop_reply() if stopping else None
        if not self._announced:
            self._announced, self._seq = True, self._seq + 1
            await self.t.speech_started(self.endpointer.start_s, self._item)
        if stopping:
            self.services.log(f"{self.t.label}: barge-in ({self.options.barge_in_ms} ms of caller speech "
                              f"while the bot was {'talking' if reply is None or reply.audio_s else 'thinking'})")
            await self.t.interrupted(reply, "turn_detected")

    async def _on_stop(self, event: VadEvent) -> None:
        if not self._announced:
            return  # a short sound over the bot's voice
        utterance = event.utterance
        await self.t.speech_stopped(utterance.end_s, self._item)
        speech_end = monotonic() - max(0.0, self.endpointer.stream_s - utterance.end_s)
        await self.take_turn(utterance, self._item, speech_end, respond=True)

    async def commit(self) -> str | None:
        """The caller's audio so far becomes an utterance now (a client's commit); returns its
        item id, or None when there is nothing to commit."""
        if self.vad:
            utterance = self.endpointer.force_stop()
            if utterance is None or not self._announced:
                return None
            await self._on_stop(VadEvent("stop", utterance.end_s, utterance))
            return self._item
        audio = np.concatenate(self._buffer) if self._buffer else np.zeros(0, np.float32)
        self._buffer = []
        rate = self.t.wire.rate
        if len(audio) < 0.1 * rate:
            return None
        start, end = speech_span(audio, rate)
        audio = audio[max(0, int((start - 0.3) * rate)):int((end + 0.2) * rate)]
        item = new_id("item")
        await self.take_turn(Utterance(audio, rate, start, end), item, monotonic(), respond=False)
        return item

    def clear(self) -> None:
        """Drop the caller's audio not committed yet (a client's clear)."""
        self._buffer = []
        if self.vad and self.endpointer.speaking:
            self.endpointer = self._endpointer(self.end_silence_ms)

    async def take_turn(self, utterance: Utterance, item_id: str, speech_end: float, respond: bool) -> None:
        """The caller's utterance ended: transcribe it and (``respond``) answer it."""
        self.utterances += 1
        if self.options.fault.hangs_up_after(self.utterances):
            self.services.log(f"{self.t.label}: fault hangup after utterance {self.utterances}")
            await self.t.hang_up("fault: hangup")
            return
        await self.t.committed(item_id)
        self._speech_end = speech_end
        previous, seq = self._hearing, self._seq
        self._hearing = self._spawn(self._hear(utterance, item_id, previous, seq if respond else None))

    async def _hear(self, utterance: Utterance, item_id: str, previous: asyncio.Task | None,
                    seq: int | None) -> None:
        if previous is not None:
            await asyncio.wait([previous])
        text = await self.transcribe(utterance)
        await self.t.heard(item_id, text)
        if text:
            self.conversation.hear(text)
            self._unanswered.append(text)
        else:
            self.services.log(f"{self.t.label}: heard no words in {utterance.seconds:.1f} s of sound")
        if seq is not None and seq == self._seq and self._unanswered:
            await self.start_reply()

    async def transcribe(self, utterance: Utterance) -> str:
        """Whisper's text for the utterance ("" when it holds no usable audio)."""
        samples = resample(utterance.samples, utterance.rate, STT_RATE)
        try:
            return (await self.services.transcriber.atranscribe(samples, STT_RATE)).text.strip()
        except AudioError:
            return ""

    async def greet(self) -> None:
        """Speak the ``--greeting``, if there is one."""
        if self.options.greeting:
            await self.start_reply(self.options.greeting)

    async def start_reply(self, greeting: str | None = None) -> ReplyState:
        """Start answering (or greeting); a reply still under way is stopped first."""
        if self.pending:
            await self.t.interrupted(await self.stop_reply(), "superseded")
        if greeting is None:
            self.replies += 1
        reply = ReplyState(0 if greeting is not None else self.replies)
        self._reply = reply
        self._reply_task = self._spawn(self._run_reply(reply, self._hearing, greeting))
        return reply

    async def stop_reply(self) -> ReplyState | None:
        """Cancel the reply under way and wait until it has stopped; returns it (None if none)."""
        task, reply = self._reply_task, self._reply
        if task is None or task.done():
            return None
        task.cancel()
        await asyncio.wait([task])
        return reply

    async def cancel(self, reason: str) -> bool:
        """Stop the reply under way (a client's cancel); False when there was none."""
        reply = await self.stop_reply()
        if reply is None:
            return False
        await self.t.interrupted(reply, reason)
        return True

    async def _run_reply(self, reply: ReplyState, hearing: asyncio.Task | None, greeting: str | None) -> None:
        if hearing is not None and greeting is None:
            await asyncio.wait([hearing])
        if greeting is None:
            reply.heard, reply.speech_end, self._unanswered = " ".join(self._unanswered), self._speech_end, []
        fault = self.options.fault.for_reply(reply.number)
        if fault == "silent":
            reply.status = "silent (fault)"
            return self._log_reply(reply)
        reply.created = True
        await self.t.reply_started(reply)
        try:
            source = _once(greeting) if greeting is not None else self.conversation.reply()
            if fault == "malformed":
                _ = [piece async for piece in source]
                await self.t.send_malformed(reply)
                reply.status = "malformed (fault)"
            elif fault in ("wrong-format", "hangup-mid-reply"):
                await self._whole(reply, source, fault)
            else:
                await self._stream(reply, source)
            if reply.status == "in_progress":
                reply.status = "completed"
            if fault != "hangup-mid-reply":
                await self.t.reply_done(reply)
        except asyncio.CancelledError:
            reply.status = "cancelled" if reply.status == "in_progress" else reply.status
            raise
        finally:
            self.conversation.said(reply.text)
            self._log_reply(reply)

    async def _sentences(self, source: AsyncIterator[str]) -> AsyncIterator[str]:
        """The reply cut into sentences as it is written, at most ``--max-sentences`` of them
        (then the agent's stream is closed); :data:`FALLBACK` if the agent fails before its first."""
        splitter, given, whole = SentenceSplitter(), 0, 0
        limit = self.options.max_sentences or 10**9
        try:
            async for piece in source:
                for chunk in splitter.feed(piece):
                    given += 1
                    whole += not chunk.endswith((",", ";", ":"))  # a first chunk may end at a comma
                    yield chunk
                    if whole >= limit:
                        return
            for chunk in splitter.flush():
                given += 1
                yield chunk
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:  # the model failed: say so rather than go quiet
            self.services.log(f"{self.t.label}: the agent failed: {type(exc).__name__}: {exc}")
            if not given:
                yield FALLBACK
        finally:
            if hasattr(source, "aclose"):
                await source.aclose()

    async def _stream(self, reply: ReplyState, source: AsyncIterator[str]) -> None:
        """Each sentence spoken and sent while the next ones are written."""
        queue: asyncio.Queue[str | None] = asyncio.Queue()

        async def write() -> None:
            try:
                async for sentence in self._sentences(source):
                    queue.put_nowait(sentence)
            finally:
                queue.put_nowait(None)

        writer = asyncio.create_task(write())
        try:
            while (sentence := await queue.get()) is not None:
                speech = await self._speak(sentence)
                if speech is not None:
                    await self._said(reply, speech[0])
                    await self._send(reply, speech[1])
            await writer
        finally:
            writer.cancel()
            await asyncio.wait([writer])

    async def _speak(self, sentence: str) -> tuple[str, bytes] | None:
        """The sentence as spoken (cleaned of markdown, links, ...) and its audio in the wire's
        format; None when nothing in it is speakable."""
        try:
            speech = await self.services.speaker.aspeak(sentence)
        except SpeechError:
            return None
        return speech.cleaned_text, self.t.wire.encode(speech.samples, speech.sample_rate)

    async def _said(self, reply: ReplyState, spoken: str) -> None:
        await self.t.reply_text(reply, spoken if not reply.spoken else " " + spoken)
        reply.spoken.append(spoken)

    def _seconds(self, data: bytes) -> float:
        return len(data) / (len(self.t.wire.silence()) * 1000.0 / self.t.wire.frame_ms)

    async def _send(self, reply: ReplyState, data: bytes) -> None:
        step = len(self.t.wire.silence()) * round(CHUNK_S * 1000) // self.t.wire.frame_ms
        for i in range(0, len(data), step):
            piece = data[i:i + step]
            if reply.first_audio is None:
                reply.first_audio = monotonic()
            await self.t.reply_audio(reply, piece, self._seconds(piece))
            reply.audio_s += self._seconds(piece)

    async def _whole(self, reply: ReplyState, source: AsyncIterator[str], fault: str) -> None:
        """The faults that need the whole reply first: ``wrong-format`` (sent as one WAV file)
        and ``hangup-mid-reply`` (half of it sent, then the socket closed)."""
        pieces = []
        async for sentence in self._sentences(source):
            speech = await self._speak(sentence)
            if speech is not None:
                await self._said(reply, speech[0])
                pieces.append(speech[1])
        data = b"".join(pieces)
        if fault == "wrong-format":
            reply.first_audio, reply.status = monotonic(), "wrong-format (fault)"
            await self.t.reply_audio(reply, wav_payload(data, self.t.wire), self._seconds(data))
            reply.audio_s = self._seconds(data)
            return
        half = data[:len(data) // 2 - (len(data) // 2) % 2]
        await self._send(reply, half)
        reply.status = "hung up mid-reply (fault)"
        self.services.log(f"{self.t.label}: fault hangup-mid-reply after {reply.audio_s:.2f} s of "
                          f"{self._seconds(data):.2f} s")
        await self.t.hang_up("fault: hangup-mid-reply")

    def _log_reply(self, reply: ReplyState) -> None:
        who = "greeting" if reply.number == 0 else f"turn {reply.number}"
        if reply.first_audio is None:
            latency = "no audio"
        elif reply.speech_end is None:
            latency = f"first audio {1000 * (reply.first_audio - reply.started):.0f} ms after the reply began"
        else:
            latency = f"first audio {1000 * (reply.first_audio - reply.speech_end):.0f} ms after the caller stopped"
        self.services.log(f"{self.t.label} {who}: heard {reply.heard!r} -> replied {reply.text!r} "
                          f"({latency}; {reply.status})")

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None \
                and not isinstance(task.exception(), ConnectionClosed):
            self.services.log(f"{self.t.label}: error: {task.exception()!r}")

    async def close(self) -> None:
        """The call ended: stop everything under way."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
