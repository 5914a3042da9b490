"""The live app's spoken reply through the streamed pipeline of :mod:`harness.voice.streaming`.

When a participant sends a voice message (``LiveSessions.send_audio`` with ``voice.streaming``),
the agent's reply text streams to the page as before; here the same partial text feeds the
sentence splitter and the TTS worker (``SpeechPipeline``), so each finished sentence (the first
may end at a clause, ``voice.first_chunk_words``) is spoken while the rest is written. Every
chunk is handed out as a ``LiveUpdate(chunk=...)`` as soon as its audio is ready, between the
text updates, and the page plays it at once. Once the turn is stored, the chunks of the reply
are joined (``join_chunks``) into one WAV referenced from ``extra_json`` -> ``agent`` ->
``voice`` -> ``audio`` (so its voice can be rated, ``reply_spoken``), beside the pipeline's
measures (``SpokenReply.measures``) and ``time_to_first_audio_ms``.

Times: the stage times (``llm_first_sentence_ms``, ``tts_first_chunk_ms``,
``agent_first_audio_ms``) run from the agent's request (the paused graph resumed with the
message); ``time_to_first_audio_ms`` from the recording's arrival at the server (so it holds
the transcription of the whole recording) to the first chunk's audio. A model that does not
stream (a fake chat model) gives its whole reply in one piece: its sentences are spoken when it
is done, through the same chunks. A chunk with nothing speakable (only emoji, a rule) is
skipped, one the TTS engine refuses gives no audio; either way the text reply stands, and a
reply with no audio at all records ``tts_error``.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

import numpy as np

from graphs.protocols import Reply
from harness.config import VoiceConfig
from harness.live.views import LiveUpdate
from harness.voice.audio import AudioError, wav_bytes
from harness.voice.streaming import (SpeechPipeline, SpokenChunk, SpokenReply, chunk_tts_figures, contention,
                                     same_text)
from harness.voice.tts import SpeechError

if TYPE_CHECKING:
    from harness.live.sessions import LiveSessions

_DONE = object()


def chunk_wav(chunk: SpokenChunk) -> bytes:
    """One spoken chunk as WAV bytes (16-bit PCM mono), for the page to play."""
    return wav_bytes(chunk.samples, chunk.sample_rate)


@dataclass
class _NoAudio:
    """What the TTS worker gets for a chunk the engine refused: no samples."""

    sample_rate: int
    ms: float
    samples: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))


class _ForgivingSpeaker:
    """Wraps a ``Speaker``: a chunk it cannot speak (``SpeechError``) gives no audio instead of
    stopping the TTS worker, so the other chunks are still spoken; the messages are kept."""

    def __init__(self, speaker):
        self.speaker, self.errors = speaker, []

    async def aspeak(self, text: str):
        """The speaker's audio of ``text``, or no samples (the error kept) if it refuses."""
        started = perf_counter()
        try:
            return await self.speaker.aspeak(text)
        except SpeechError as exc:
            self.errors.append(str(exc))
            return _NoAudio(22050, (perf_counter() - started) * 1000.0)


class ReplySpeech:
    """One reply spoken while it streams: :meth:`start` at the agent's request, :meth:`feed`
    with each partial text (the reply so far), :meth:`finish` with the stored reply.
    ``on_chunk`` is called with each chunk that has audio as soon as it is spoken, in order
    (in the event loop); ``received``: ``perf_counter()`` when the recording arrived."""

    def __init__(self, speaker, first_chunk_words: int = VoiceConfig.model_fields["first_chunk_words"].default,
                 received: float | None = None,
                 on_chunk: Callable[[SpokenChunk], None] | None = None):
        self.speaker = _ForgivingSpeaker(speaker)
        self.first_chunk_words = first_chunk_words
        self.received = perf_counter() if received is None else received
        self.on_chunk = on_chunk
        self.pipeline: SpeechPipeline | None = None
        self.partials = 0
        self.last_text_ms: float | None = None

    def start(self) -> None:
        """The agent's request: the stage times count from now (once; needs an event loop)."""
        if self.pipeline is None:
            self.pipeline = SpeechPipeline(self.speaker, self.first_chunk_words, self._spoken)

    def _spoken(self, chunk: SpokenChunk) -> None:
        if len(chunk.samples) and self.on_chunk is not None:
            self.on_chunk(chunk)

    def feed(self, partial: str) -> None:
        """The reply's text so far. Text that does not continue what was fed is a new model
        call (a retry): the pipeline restarts and what the failed attempt queued is dropped."""
        self.start()
        self.partials += 1
        done = self.pipeline.streamed_text
        if partial.startswith(done):
            piece = partial[len(done):]
        else:
            self.pipeline.restart()
            piece = partial
        if piece:
            self.pipeline.text(piece)
        self.last_text_ms = self.pipeline.now_ms()

    async def finish(self, text: str) -> SpokenReply:
        """Speak what is left of the stored reply ``text`` and wait for the worker; a stored
        text other than the streamed one is spoken anew from its start. Returns the chunks
        with audio, in order."""
        self.start()
        pipeline = self.pipeline
        respond_ms = self.last_text_ms if self.last_text_ms is not None else pipeline.now_ms()
        if not same_text(text, pipeline.streamed_text):
            pipeline.restart_with(text, pipeline.now_ms())
        chunks = [c for c in await pipeline.finish() if len(c.samples)]
        return SpokenReply(Reply(text), chunks, respond_ms, self.partials > 1)

    def cancel(self) -> None:
        """Stop the TTS worker (the turn failed or the page went away)."""
        if self.pipeline is not None:
            self.pipeline.cancel()

    def first_audio_ms(self, spoken: SpokenReply) -> float | None:
        """The recording's arrival -> the first chunk's audio ready (ms)."""
        if not spoken.chunks or self.pipeline is None:
            return None
        return (self.pipeline.started - self.received) * 1000.0 + spoken.chunks[0].audio_ms


def reply_voice(spoken: SpokenReply, speech: ReplySpeech, ref: str | None) -> dict[str, Any]:
    """What the turn stores under ``agent`` -> ``voice`` for a streamed spoken reply."""
    out: dict[str, Any] = {**spoken.measures(), "spoken_text": spoken.cleaned_text}
    if spoken.chunks:
        first_audio = speech.first_audio_ms(spoken)
        out.update(**chunk_tts_figures(spoken.chunks), time_to_first_audio_ms=round(first_audio, 1),
                   audio_s=round(sum(c.seconds for c in spoken.chunks), 3))
    if ref is not None:
        out["audio"] = ref
    if speech.speaker.errors:
        out["tts_chunk_errors"] = list(speech.speaker.errors)
    return out


async def _interleave(work: Awaitable["LiveUpdate"], ready: asyncio.Queue,
                      ) -> AsyncIterator["LiveUpdate"]:
    """Run ``work`` and yield what it puts on ``ready`` as it comes, then its result (or its
    exception). Closing the generator early cancels the work."""
    async def run():
        try:
            return await work
        finally:
            ready.put_nowait(_DONE)

    task = asyncio.ensure_future(run())
    try:
        while (item := await ready.get()) is not _DONE:
            yield item
        yield task.result()
    finally:
        if not task.done():
            task.cancel()


async def speak_while_streaming(sessions: "LiveSessions", session_id: str, text: str,
                                voice: dict[str, Any], turn: int, speaker, files, received: float,
                                participant_id: str | None = None, rate_key: str | None = None,
                                ) -> AsyncIterator["LiveUpdate"]:
    """The person's transcribed message sent (``sessions.send``) and the agent's reply spoken
    while it streams: yields the text updates and, between them, ``LiveUpdate(chunk=...)``
    for each spoken chunk; last the view, with ``audio`` (the whole reply's WAV) once it is
    stored. ``turn``: the turn being answered; ``files``: the ``AudioStore``;
    ``received``: ``perf_counter()`` when the recording arrived.

    Raises:
        LiveError: everything ``LiveSessions.send`` refuses (before the reply: nothing is
            spoken; a model that fails for good mid-reply: what was already played stays
            heard, nothing of the turn is stored).
    """
    events: asyncio.Queue = asyncio.Queue()
    speech = ReplySpeech(speaker, sessions.config.voice.first_chunk_words, received,
                         on_chunk=lambda chunk: events.put_nowait(LiveUpdate(chunk=chunk)))

    async def work() -> LiveUpdate:
        try:
            last = None
            async for update in sessions.send(session_id, text, participant_id, rate_key,
                                              voice=voice, on_resume=speech.start):
                if update.view is None:
                    speech.feed(update.partial or "")
                    events.put_nowait(update)
                else:
                    last = update
            stored = next((t for t in last.view.turns if t["turn_index"] == turn), None)
            if stored is None or not stored["agent_message"]:
                speech.cancel()
                return last
            spoken = await speech.finish(stored["agent_message"])
            return await _store(sessions, session_id, files, speech, spoken, turn)
        except BaseException:
            speech.cancel()
            raise

    async for update in _interleave(work(), events):
        yield update


async def _store(sessions: "LiveSessions", session_id: str, files, speech: ReplySpeech,
                 spoken: SpokenReply, turn: int) -> "LiveUpdate":
    """The joined chunks written as the turn's agent WAV and the voice figures merged into
    the stored turn; returns the final update (``audio`` is None when nothing was spoken)."""
    sess = sessions.store.session(session_id)
    iid, run_id = sess["interaction_id"], sess["run_id"]
    ref = error = None
    if spoken.chunks:
        samples, rate = spoken.audio()
        try:
            ref = files.save(samples, rate, run_id, iid, turn, "agent")
        except AudioError as exc:
            error = str(exc)
    else:
        error = "Nothing to speak: the reply holds no speakable words after removing markdown, " \
                "code, URLs and emoji."
    values = reply_voice(spoken, speech, ref)
    values.update(contention([c for c in sessions.reader.llm_calls(iid) if c["turn_index"] == turn]))
    if error is not None:
        values["tts_error"] = error
    sessions.store.merge_turn_extra(iid, turn, "agent", {"voice": values})
    view = await sessions.view(session_id)
    return LiveUpdate(view=view, audio=None if ref is None else str(files.path(ref)))

