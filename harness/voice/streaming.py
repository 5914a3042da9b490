"""The agent's reply spoken while it is written: tokens -> sentences -> a TTS worker.

:func:`speak_streamed` runs any ``graphs.protocols.Agent`` whose model is reached through
``harness.models.llm.RoleClient`` (the plain and the RAG agent) with a callback handler attached to
the current run config; the handler makes the chat model stream (it is a LangChain streaming
handler, as LangGraph's message stream is) and feeds every token to a
:class:`SentenceSplitter`. Each finished sentence (the first one may end at a comma, so that
speech starts sooner) goes on a queue; a TTS worker speaks the queue in order while the rest is
generated. A model that does not stream (a fake chat model, ``stream=False``) gives its sentences
when the whole reply is done: the turn-based timing, through the same pipeline. So does an agent
whose text never passes through a chat model's callbacks (a team's own agent, reached through
``harness.adapters``): its whole reply is split and spoken sentence by sentence when it returns.

Times are milliseconds from the agent's request: when each sentence's text was complete
(``text_ms``) and when its audio was ready (``audio_ms``). A retried model call restarts the
pipeline (what the failed attempt had queued is dropped); if the agent's final text is not the
streamed text (an agent that rewrites its reply), the final text is spoken from its end.
"""
from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Callable, Sequence

import numpy as np
from langchain_core.callbacks import BaseCallbackHandler

from graphs.protocols import Agent, Message, Problem, Reply
from harness.voice.audio import resample
from harness.voice.textclean import clean_for_speech

_END = re.compile(r"[.!?](?=[\"')\]]*\s)")
_CLAUSE = re.compile(r"[,;:](?=\s)")
_ABBREV = {"e.g", "i.e", "etc", "mr", "mrs", "dr", "vs", "no", "fig", "approx", "st"}
MAX_WORDS = 40   # a chunk without any punctuation is cut here


class SentenceSplitter:
    """Cuts streamed text into speakable chunks: at a sentence end (., !, ? then a space), at
    a line break, never inside a code fence; the first chunk may end at a comma, semicolon or
    colon once it has ``first_chunk_words`` words (0: sentences only)."""

    def __init__(self, first_chunk_words: int = 4):
        self.first_chunk_words = first_chunk_words
        self.buffer = ""
        self.emitted = 0

    def feed(self, text: str) -> list[str]:
        """Add streamed text; returns the chunks it completed."""
        self.buffer += text
        out = []
        while (cut := self._cut()) is not None:
            chunk, self.buffer = self.buffer[:cut].strip(), self.buffer[cut:]
            if chunk:
                out.append(chunk)
                self.emitted += 1
        return out

    def flush(self) -> list[str]:
        """The rest, once the stream has ended."""
        rest, self.buffer = self.buffer.strip(), ""
        return [rest] if rest else []

    def _cut(self) -> int | None:
        text = self.buffer
        if text.count("```") % 2:           # inside a code fence: wait for it to close
            return None
        fence_end = text.rfind("```")
        floor = fence_end + 3 if fence_end >= 0 else 0
        newline = text.find("\n", floor)
        for m in _END.finditer(text, floor):
            if newline != -1 and newline < m.start():
                break
            word = re.findall(r"[\w.]+$", text[:m.start()])
            if word and (word[0].lower() in _ABBREV or word[0].isdigit()):
                continue                     # "e.g." or a list's "1."
            return m.end()
        if newline != -1:
            return newline + 1 if text[:newline].strip() or newline > 0 else None
        if self.emitted == 0 and self.first_chunk_words:
            for m in _CLAUSE.finditer(text, floor):
                if len(text[:m.start()].split()) >= self.first_chunk_words:
                    return m.end()
        words = list(re.finditer(r"\S+\s", text[floor:]))
        if len(words) > MAX_WORDS:
            return floor + words[MAX_WORDS - 1].end()
        return None


@dataclass
class SpokenChunk:
    """One spoken piece of the reply: its text, its audio and when each was ready (ms)."""

    text: str
    cleaned: str
    samples: np.ndarray = field(repr=False)
    sample_rate: int
    text_ms: float
    audio_ms: float
    tts_ms: float

    @property
    def seconds(self) -> float:
        """Duration of the chunk's audio, in seconds."""
        return len(self.samples) / float(self.sample_rate)


@dataclass
class SpokenReply:
    """The agent's reply and its spoken chunks."""

    reply: Reply
    chunks: list[SpokenChunk]
    respond_ms: float
    streamed: bool

    @property
    def cleaned_text(self) -> str:
        """The spoken chunks' cleaned text, joined by spaces (what the TTS said)."""
        return " ".join(c.cleaned for c in self.chunks)

    def measures(self) -> dict[str, Any]:
        """The pipeline's per-stage figures (ms from the agent's request)."""
        out: dict[str, Any] = {"pipeline": "streaming", "llm_streamed": self.streamed,
                               "spoken_chunks": len(self.chunks)}
        if self.chunks:
            first = self.chunks[0]
            out.update(llm_first_sentence_ms=round(first.text_ms, 1),
                       tts_first_chunk_ms=round(first.audio_ms - first.text_ms, 1),
                       agent_first_audio_ms=round(first.audio_ms, 1),
                       playback_stall_ms=round(playback(self.chunks)[1], 1))
        return out

    def audio(self, gap_s: float = 0.1) -> tuple[np.ndarray, int]:
        """The chunks one after another with ``gap_s`` of silence between them."""
        return join_chunks(self.chunks, gap_s)


def chunk_tts_figures(chunks: Sequence[SpokenChunk]) -> dict[str, float]:
    """``tts_ms`` (all chunks' synthesis) and ``tts_first_audio_ms`` (the first chunk's) of a
    reply spoken in chunks (at least one)."""
    return {"tts_ms": round(sum(c.tts_ms for c in chunks), 1),
            "tts_first_audio_ms": round(chunks[0].tts_ms, 1)}


def join_chunks(chunks: Sequence[SpokenChunk], gap_s: float = 0.1) -> tuple[np.ndarray, int]:
    """The chunks' audio one after another at the first chunk's rate (others resampled), with
    ``gap_s`` of silence between them; returns the samples and the rate."""
    rate = chunks[0].sample_rate
    gap = np.zeros(int(gap_s * rate), np.float32)
    parts: list[np.ndarray] = []
    for i, c in enumerate(chunks):
        if i:
            parts.append(gap)
        parts.append(c.samples if c.sample_rate == rate else resample(c.samples, c.sample_rate, rate))
    return np.concatenate(parts).astype(np.float32), rate


def playback(chunks: Sequence[SpokenChunk], gap_s: float = 0.1) -> tuple[list[float], float]:
    """Each chunk's start (ms from the request) when played as soon as it is ready and the
    one before has finished, and the total stall (silence waiting for audio) after the first."""
    starts, end, stall = [], None, 0.0
    for c in chunks:
        due = c.audio_ms if end is None else max(c.audio_ms, end + gap_s * 1000.0)
        if end is not None:
            stall += due - (end + gap_s * 1000.0)
        starts.append(due)
        end = due + c.seconds * 1000.0
    return starts, stall


class _TokenFeed(BaseCallbackHandler):
    """A LangChain callback handler: streamed tokens into the splitter, chunks onto the queue.
    Having ``tap_output_aiter`` makes it a streaming handler, so the chat model streams."""

    run_inline = True   # called in the event loop (the queue is an asyncio.Queue)

    def __init__(self, pipeline: "SpeechPipeline"):
        self.pipeline, self.attempts, self.tokens = pipeline, 0, 0

    def tap_output_aiter(self, run_id, output):
        return output

    def tap_output_iter(self, run_id, output):
        return output

    def on_chat_model_start(self, *args, **kwargs) -> None:
        self.attempts += 1
        if self.attempts > 1:   # a retry: what the failed attempt queued is dropped
            self.pipeline.restart()

    def on_llm_new_token(self, token: str, **kwargs) -> None:
        if token:
            self.tokens += 1
            self.pipeline.text(token)


class SpeechPipeline:
    """Sentence queue -> TTS worker (one sentence at a time, in order). It is also fed from
    text streamed elsewhere (``text`` with each piece, ``restart`` on a retry, ``restart_with``
    for a rewritten reply, then ``finish``): the live app feeds it the reply's streamed partial
    text (``harness.live.speech``). ``on_chunk``, if
    given, is called (in the event loop) with each chunk of the current attempt as soon as
    its audio is ready, in order; a chunk of a dropped attempt is not passed on."""

    def __init__(self, speaker, first_chunk_words: int,
                 on_chunk: Callable[[SpokenChunk], None] | None = None):
        self.speaker, self.first_chunk_words = speaker, first_chunk_words
        self.on_chunk = on_chunk
        self.started = perf_counter()
        self.generation = 0
        self.streamed_text = ""
        self.splitter = SentenceSplitter(first_chunk_words)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.chunks: list[SpokenChunk] = []
        self.worker = asyncio.create_task(self._work())

    def now_ms(self) -> float:
        """Milliseconds since the pipeline started."""
        return (perf_counter() - self.started) * 1000.0

    def text(self, token: str) -> None:
        """Feed one streamed piece of text; each chunk the splitter completes is queued for speech."""
        self.streamed_text += token
        for chunk in self.splitter.feed(token):
            self.queue.put_nowait((self.generation, chunk, self.now_ms()))

    def restart(self) -> None:
        """Drop the current attempt (a retry): chunks queued or spoken for it are not passed on."""
        self.generation += 1
        self.streamed_text = ""
        self.splitter = SentenceSplitter(self.first_chunk_words)

    def restart_with(self, text: str, at_ms: float) -> None:
        """Restart with a rewritten reply: all of ``text`` is queued at once, stamped ``at_ms``."""
        self.restart()
        for chunk in self.splitter.feed(text) + self.splitter.flush():
            self.queue.put_nowait((self.generation, chunk, at_ms))

    async def finish(self, at_ms: float | None = None) -> list[SpokenChunk]:
        """Queue the text left over, wait for the worker, and return the current attempt's chunks.
        The left-over text was complete when the reply ended: ``at_ms`` when given (the moment
        the model's reply came back), else now."""
        done_ms = self.now_ms() if at_ms is None else at_ms
        for chunk in self.splitter.flush():
            self.queue.put_nowait((self.generation, chunk, done_ms))
        self.queue.put_nowait(None)
        await self.worker
        return [c for g, c in self.chunks if g == self.generation]

    async def _work(self) -> None:
        while (item := await self.queue.get()) is not None:
            generation, text, text_ms = item
            if generation != self.generation:
                continue
            cleaned = clean_for_speech(text)
            if not cleaned:
                continue
            speech = await self.speaker.aspeak(cleaned)
            chunk = SpokenChunk(text, cleaned, speech.samples, speech.sample_rate,
                                text_ms, self.now_ms(), speech.ms)
            self.chunks.append((generation, chunk))
            if self.on_chunk is not None and generation == self.generation:
                self.on_chunk(chunk)

    def cancel(self) -> None:
        """Cancel the TTS worker (nothing more is spoken)."""
        self.worker.cancel()


def _attach(handler) -> Any:
    """Run config with ``handler`` added to the current callbacks; returns the reset token."""
    from langchain_core.runnables.config import var_child_runnable_config
    current = dict(var_child_runnable_config.get() or {})
    callbacks = current.get("callbacks")
    if callbacks is None:
        callbacks = [handler]
    elif isinstance(callbacks, list):
        callbacks = [*callbacks, handler]
    else:   # a callback manager (inside a LangGraph node)
        callbacks = callbacks.copy()
        callbacks.add_handler(handler, inherit=True)
    return var_child_runnable_config.set({**current, "callbacks": callbacks})


def same_text(a: str, b: str) -> bool:
    """The same words with the same spacing apart (streamed text against a stored reply)."""
    return " ".join(a.split()) == " ".join(b.split())


async def speak_streamed(inner: Agent, problem: Problem, history: Sequence[Message], speaker,
                         first_chunk_words: int = 4, stream: bool = True,
                         on_chunk: Callable[[SpokenChunk], None] | None = None) -> SpokenReply:
    """The agent's reply, each sentence spoken as soon as it is complete (module docstring).

    Args:
        inner: the agent.
        speaker: a ``harness.voice.tts.Speaker`` (or anything with ``aspeak``).
        stream: False: the model answers in one piece (the turn-based pipeline's timing).
        on_chunk: called with each chunk as soon as its audio is ready (to play it).
    """
    from langchain_core.runnables.config import var_child_runnable_config
    pipeline = SpeechPipeline(speaker, first_chunk_words, on_chunk)
    feed = _TokenFeed(pipeline)
    token = _attach(feed) if stream else None
    try:
        reply = await inner.respond(problem, history)
    except BaseException:
        pipeline.cancel()
        raise
    finally:
        if token is not None:
            var_child_runnable_config.reset(token)
    respond_ms = pipeline.now_ms()
    streamed = feed.tokens > 0
    text = reply.text or ""
    if not streamed or not same_text(text, pipeline.streamed_text):
        # no stream, or the agent's final text is not what it streamed: speak the final text
        pipeline.restart_with(text, respond_ms)
    chunks = await pipeline.finish(respond_ms)
    return SpokenReply(reply, chunks, respond_ms, streamed)


def contention(calls: Sequence[Any]) -> dict[str, Any]:
    """How much of the agent's model time was shared with other requests on its endpoint
    (``contended_ms`` of its calls, the harness's bookkeeping; ``LLMCall`` objects or stored
    ``llm_calls`` rows): ``agent_contended_ms`` and ``agent_contended_share`` (0: the agent had
    the endpoint to itself), added to the reply's voice measures; empty when no agent call
    carries the bookkeeping."""
    def get(c, key):
        return c.get(key) if isinstance(c, dict) else getattr(c, key)
    mine = [c for c in calls if get(c, "role") == "agent" and get(c, "error") is None
            and get(c, "contended_ms") is not None]
    spent = sum(get(c, "latency_ms") for c in mine)
    if not mine or spent <= 0:
        return {}
    shared = sum(get(c, "contended_ms") for c in mine)
    return {"agent_contended_ms": round(shared, 1), "agent_contended_share": round(min(1.0, shared / spent), 3)}
