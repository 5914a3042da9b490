"""Voice calls in the turn loop: wrappers that make any user and agent talk through speech.

Each message is cleaned and spoken (TTS), sent through the channel (optionally a telephone
band and noise at a set SNR), stored as the audio the listener heard, and transcribed (STT)
for the other side, so speech errors propagate as in a real call:

- :class:`VoiceUser` wraps a ``graphs.protocols.User``: the agent gets the transcript of what
  the (simulated) caller said.
- :class:`VoiceAgent` wraps a ``graphs.protocols.Agent``: the caller gets the transcript of
  what the agent said.
- :class:`StreamingVoiceUser` / :class:`StreamingVoiceAgent` (``voice.streaming``, the
  default): the same, through the streamed pipeline: the caller's speech transcribed chunk by
  chunk as it arrives (:mod:`harness.voice.chunked_stt`), the agent's reply streamed and spoken
  sentence by sentence (:mod:`harness.voice.streaming`), with per-stage latency measures.
  Full-duplex calls wrap these pieces in :mod:`harness.voice.duplex`.

The conversation history (and so the stored ``user_message``/``agent_message`` and what the
judges read) holds what each listener heard; the original text, the cleaned text, the audio
file and the measures go in ``Reply.extra["voice"]`` (the turn's ``extra_json``).
"""
from __future__ import annotations

import asyncio
import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any, Sequence

import numpy as np

from graphs.protocols import Agent, Message, Problem, Reply, User
from harness.voice.audio import TELEPHONE_RATE, add_noise, resample, telephone_band
from harness.voice.audiostore import AudioStore
from harness.voice.chunked_stt import transcribe_chunks
from harness.voice.lines import line_of
from harness.voice.streaming import SentenceSplitter, chunk_tts_figures, contention, speak_streamed
from harness.voice.stt import Transcriber
from harness.voice.textclean import clean_for_speech
from harness.voice.tts import Speaker
from harness.voice.wer import wer

PAUSE_S = 0.3          # a pause this long splits the caller's speech into STT chunks
CALLER_PAUSE_S = 0.4   # the simulated caller's pause between two of its sentences


@dataclass(frozen=True)
class Channel:
    """The line between the two sides: clean, a narrow-band telephone line, and/or white noise
    at ``snr_db``. The noise of each message is seeded by ``seed`` and the message's key
    (``noise_key``: the task, the turn and the side, not the run id), so a run is reproducible
    whatever the order its conversations ran in, and two runs of one task hear the same noise."""

    telephone: bool = False
    snr_db: float | None = None
    seed: int = 0

    @property
    def degraded(self) -> bool:
        """True when the channel changes the audio (telephone band or noise)."""
        return self.telephone or self.snr_db is not None

    def describe(self) -> dict[str, Any]:
        """The channel settings stored with each message (``telephone``, ``snr_db``)."""
        return {"telephone": self.telephone, "snr_db": self.snr_db}

    def apply(self, samples: np.ndarray, sample_rate: int, key: str) -> tuple[np.ndarray, int]:
        """The audio as the listener gets it, and its sample rate."""
        if self.telephone:
            samples, sample_rate = telephone_band(samples, sample_rate), TELEPHONE_RATE
        if self.snr_db is not None:
            rng = np.random.default_rng([self.seed, zlib.crc32(key.encode("utf-8"))])
            samples = add_noise(samples, self.snr_db, rng)
        return samples, sample_rate

def noise_key(interaction_id: str, *parts: object) -> str:
    """The key that seeds a message's line noise: the interaction id without its run prefix
    ("run:task" -> "task") and the message's place, so a rerun hears what the first run heard."""
    return "|".join([interaction_id.split(":", 1)[-1], *map(str, parts)])


class SpeechLink:
    """Carries text from one side to the other as speech and measures it.

    Args:
        speaker, transcriber: the TTS and STT engines.
        channel: the line between the sides.
        audio: where the heard audio is written (none: audio is not kept).
        store_path: the store, to find each interaction's run for the audio folders.
        tts_check: with a degraded channel, also transcribe the clean audio so that TTS
            accuracy is measured apart from the channel.
    """

    def __init__(self, speaker: Speaker, transcriber: Transcriber, channel: Channel | None = None,
                 audio: AudioStore | None = None, store_path: str | Path | None = None,
                 tts_check: bool = True, stream: bool = True, first_chunk_words: int = 4,
                 endpoint_ms: float = 0.0, pause_s: float = PAUSE_S):
        self.speaker, self.transcriber = speaker, transcriber
        self.channel = channel or Channel()
        self.audio, self.store_path, self.tts_check = audio, store_path, tts_check
        #: the streamed pipeline's settings (StreamingVoiceUser / StreamingVoiceAgent)
        self.stream, self.first_chunk_words = stream, first_chunk_words
        self.endpoint_ms, self.pause_s = endpoint_ms, pause_s
        self._runs: dict[str, str] = {}
        self._user_stt_ms: dict[tuple[str, int], float] = {}
        self._caller_tail: dict[tuple[str, int], float] = {}

    def run_of(self, interaction_id: str) -> str:
        """The run id of an interaction (from the store; else the id's part before ':')."""
        if interaction_id not in self._runs:
            row = None
            if self.store_path is not None and Path(self.store_path).exists():
                from store import StoreReader
                row = StoreReader(self.store_path).interaction(interaction_id)
            self._runs[interaction_id] = row["run_id"] if row else interaction_id.split(":", 1)[0]
        return self._runs[interaction_id]

    async def carry(self, text: str, interaction_id: str, turn_index: int, role: str) -> tuple[str, dict]:
        """Speak ``text`` as ``role``, pass it through the channel, keep the heard audio and
        transcribe it. Returns ``(what the listener heard, measures)``."""
        measures: dict[str, Any] = {"spoken_text": text, "channel": self.channel.describe()}
        cleaned = clean_for_speech(text)
        measures["cleaned_text"] = cleaned
        if not cleaned:  # nothing speakable: the line stays silent
            measures.update(heard_text="", audio=None, silent=True)
            return "", measures
        speech = await self.speaker.aspeak(cleaned)
        measures.update(tts_engine=speech.engine, tts_ms=round(speech.ms, 1),
                        tts_first_audio_ms=round(speech.first_audio_ms, 1))
        heard = await self.deliver(speech.samples, speech.sample_rate, cleaned, interaction_id,
                                   turn_index, role, measures)
        if role == "user":
            self._user_stt_ms[(interaction_id, turn_index)] = measures["stt_ms"]
        return heard, measures

    async def deliver(self, samples: np.ndarray, rate: int, cleaned: str, interaction_id: str,
                      turn_index: int, role: str, measures: dict, transcribe=None,
                      keep: dict | None = None) -> str:
        """Send spoken audio through the channel, keep what the listener got and transcribe it
        (``transcribe``: an async ``(samples, rate) -> (text, ms)`` instead of one STT pass).
        Adds ``heard_text``, ``audio``, ``audio_s``, ``stt_ms``, ``stt_wer``, ``tts_wer`` to
        ``measures``; returns the heard text."""
        key = noise_key(interaction_id, turn_index, role)
        heard, heard_rate = await asyncio.to_thread(self.channel.apply, samples, rate, key)
        if keep is not None:   # the caller of a duplex call lays this audio on its timeline
            keep.update(heard=heard, rate=heard_rate)
        if self.audio is not None:
            measures["audio"] = await asyncio.to_thread(
                self.audio.save, heard, heard_rate, self.run_of(interaction_id), interaction_id, turn_index, role)
        if transcribe is None:
            transcript = await self.transcriber.atranscribe(heard, heard_rate)
            text, stt_ms = transcript.text, transcript.ms
        else:
            text, stt_ms = await transcribe(heard, heard_rate)
        measures.update(heard_text=text, audio_s=round(len(samples) / float(rate), 3),
                        stt_ms=round(stt_ms, 1), stt_wer=round(wer(cleaned, text), 4))
        if not self.channel.degraded:
            measures["tts_wer"] = measures["stt_wer"]
        elif self.tts_check:
            clean = await self.transcriber.atranscribe(samples, rate)
            measures["tts_wer"] = round(wer(cleaned, clean.text), 4)
            measures["tts_check_stt_ms"] = round(clean.ms, 1)
        return text

    async def speak_sentences(self, text: str, pauses: Sequence[float] | None = None) -> SpokenText | None:
        """A caller's message spoken sentence by sentence, ``CALLER_PAUSE_S`` (or ``pauses[i]``
        after sentence ``i``) of silence between them, as a person pauses; None if nothing is
        speakable."""
        splitter = SentenceSplitter(first_chunk_words=0)
        sentences = [c for c in (clean_for_speech(t) for t in splitter.feed(text) + splitter.flush()) if c]
        if not sentences:
            return None
        parts, tts_ms, first_ms, rate, engine = [], 0.0, None, None, ""
        for i, sentence in enumerate(sentences):
            speech = await self.speaker.aspeak(sentence)
            samples = speech.samples
            if rate is None:
                rate, engine = speech.sample_rate, speech.engine
            elif speech.sample_rate != rate:
                samples = resample(samples, speech.sample_rate, rate)
            if i:
                pause = pauses[i - 1] if pauses is not None and i - 1 < len(pauses) else CALLER_PAUSE_S
                parts.append(np.zeros(int(pause * rate), np.float32))
            parts.append(samples)
            tts_ms += speech.ms
            first_ms = speech.ms if first_ms is None else first_ms
        return SpokenText(" ".join(sentences), np.concatenate(parts).astype(np.float32), rate,
                          tts_ms, first_ms or 0.0, engine, len(sentences))

    def caller_tail(self, interaction_id: str, turn_index: int) -> float | None:
        """The STT tail of the caller's message of that turn (once read)."""
        return self._caller_tail.pop((interaction_id, turn_index), None)

    def user_stt_ms(self, interaction_id: str, turn_index: int) -> float | None:
        """How long the caller's message of that turn took to transcribe (once read)."""
        return self._user_stt_ms.pop((interaction_id, turn_index), None)

@dataclass
class SpokenText:
    """A message spoken sentence by sentence (:meth:`SpeechLink.speak_sentences`)."""

    cleaned: str
    samples: np.ndarray
    sample_rate: int
    tts_ms: float
    first_audio_ms: float
    engine: str
    sentences: int


def _with_voice(reply: Reply, text: str, measures: dict) -> Reply:
    return Reply(text, reply.calls, {**(reply.extra or {}), "voice": {**measures, **contention(reply.calls)}})


def _turn_of(history: Sequence[Message]) -> int:
    """The index of the turn an agent answers: the caller's messages so far."""
    return sum(1 for m in history if m.role == "user")


class _SpokenUser(ABC):
    """What :class:`VoiceUser` and :class:`StreamingVoiceUser` share: time the inner user's
    message, pass a hang-up through untouched, carry the text (:meth:`_carry`) and add
    ``respond_ms`` to its measures."""

    def __init__(self, inner: User, link: SpeechLink):
        self.inner, self.link = inner, link

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        """The inner user's message, as the agent heard it (``Reply.extra["voice"]``: measures)."""
        started = perf_counter()
        reply = await self.inner.respond(problem, history, turn_index)
        respond_ms = (perf_counter() - started) * 1000.0
        if reply.text is None:  # the caller hung up
            return reply
        heard, measures = await self._carry(reply.text, problem.interaction_id, turn_index)
        measures["respond_ms"] = round(respond_ms, 1)
        return _with_voice(reply, heard, measures)

    @abstractmethod
    async def _carry(self, text: str, interaction_id: str, turn_index: int) -> tuple[str, dict]:
        """``(heard text, measures)`` of the caller's message ``text``."""


class _SpokenAgent(ABC):
    """What :class:`VoiceAgent` and :class:`StreamingVoiceAgent` share: the turn's index, the
    reply spoken (:meth:`_speak`, whose measures hold ``respond_ms``), the caller's silence
    (``time_to_first_audio_ms``, when :meth:`_speak` could measure it) added last."""

    def __init__(self, inner: Agent, link: SpeechLink):
        self.inner, self.link = inner, link

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        """The inner agent's reply, as the caller heard it (``Reply.extra["voice"]``: measures)."""
        reply, heard, measures, first_audio_ms = await self._speak(problem, history, _turn_of(history))
        if first_audio_ms is not None:
            measures["time_to_first_audio_ms"] = round(first_audio_ms, 1)
        return _with_voice(reply, heard, measures)

    @abstractmethod
    async def _speak(self, problem: Problem, history: Sequence[Message],
                     turn_index: int) -> tuple[Reply, str, dict, float | None]:
        """``(reply, heard text, measures, the caller's silence in ms or None)``."""


class VoiceUser(_SpokenUser):
    """A ``User`` whose every message reaches the agent as speech (see the module docstring)."""

    async def _carry(self, text: str, interaction_id: str, turn_index: int) -> tuple[str, dict]:
        return await self.link.carry(text, interaction_id, turn_index, "user")


class VoiceAgent(_SpokenAgent):
    """An ``Agent`` whose every reply reaches the caller as speech (see the module docstring).

    ``time_to_first_audio_ms`` of a reply is the caller's STT time + the agent's time + the
    time until the reply's first sentence was synthesized: the silence the caller hears."""

    async def _speak(self, problem: Problem, history: Sequence[Message],
                     turn_index: int) -> tuple[Reply, str, dict, float | None]:
        started = perf_counter()
        reply = await self.inner.respond(problem, history)
        respond_ms = (perf_counter() - started) * 1000.0
        heard, measures = await self.link.carry(reply.text or "", problem.interaction_id, turn_index, "agent")
        measures["respond_ms"] = round(respond_ms, 1)
        user_stt = self.link.user_stt_ms(problem.interaction_id, turn_index)
        first = None
        if user_stt is not None and "tts_first_audio_ms" in measures:
            first = user_stt + respond_ms + measures["tts_first_audio_ms"]
        return reply, heard, measures, first


def build_link(voice_config, store_path: str | Path | None) -> SpeechLink:
    """The speech link of a ``harness.config.VoiceConfig``, keeping audio beside the store."""
    return SpeechLink(
        Speaker(voice_config.tts),
        Transcriber(voice_config.stt_model, beam_size=voice_config.stt_beam_size),
        line_of(voice_config),
        AudioStore(store_path) if store_path else None, store_path, voice_config.tts_check,
        stream=getattr(voice_config, "streaming", True),
        first_chunk_words=getattr(voice_config, "first_chunk_words", 4),
        endpoint_ms=getattr(voice_config, "endpoint_ms", 0.0))


class StreamingVoiceUser(_SpokenUser):
    """A ``User`` whose message is spoken sentence by sentence and transcribed as it arrives:
    split on pauses, each chunk transcribed while later audio is still arriving, so only the
    last chunk's recognition (``stt_tail_ms``) is left when the caller stops
    (:mod:`harness.voice.chunked_stt`)."""

    async def _carry(self, text: str, interaction_id: str, turn_index: int) -> tuple[str, dict]:
        heard, measures = await carry_streamed(self.link, text, interaction_id, turn_index)
        if "stt_tail_ms" in measures:
            self.link._caller_tail[(interaction_id, turn_index)] = measures["stt_tail_ms"]
        return heard, measures


async def carry_streamed(link: SpeechLink, text: str, interaction_id: str, turn_index: int,
                         pauses: Sequence[float] | None = None, stt_cost=None,
                         prefix: tuple[np.ndarray, int, str, float] | None = None,
                         keep: dict | None = None) -> tuple[str, dict]:
    """The caller's message through the streamed pipeline: per-sentence TTS, the channel,
    chunked STT. Returns ``(heard text, measures)``.

    Args:
        pauses: seconds of silence after each sentence (default ``CALLER_PAUSE_S``).
        stt_cost: a modelled STT cost (``harness.voice.timeline.Compute.stt_cost``).
        prefix: ``(samples, rate, text, gap_s)`` already said before the message (a duplex
            caller's barge-in opener), sent and transcribed with it.
        keep: filled with the heard audio (``heard``, ``rate``).
    """
    spoken_text = text if prefix is None else f"{prefix[2]} {text}"
    measures: dict[str, Any] = {"spoken_text": spoken_text, "channel": link.channel.describe()}
    spoken = await link.speak_sentences(text, pauses)
    if spoken is None and prefix is None:
        measures.update(cleaned_text="", heard_text="", audio=None, silent=True)
        return "", measures
    if prefix is not None:
        samples, rate, said, gap_s = prefix
        parts, cleaned = [samples], clean_for_speech(said)
        if spoken is not None:
            body = spoken.samples if spoken.sample_rate == rate else resample(spoken.samples, spoken.sample_rate, rate)
            parts += [np.zeros(int(gap_s * rate), np.float32), body]
            cleaned = f"{cleaned} {spoken.cleaned}"
        spoken = SpokenText(cleaned, np.concatenate(parts).astype(np.float32), rate,
                            spoken.tts_ms if spoken else 0.0, spoken.first_audio_ms if spoken else 0.0,
                            link.speaker.engine, (spoken.sentences if spoken else 0) + 1)
    measures.update(cleaned_text=spoken.cleaned, tts_engine=spoken.engine, tts_ms=round(spoken.tts_ms, 1),
                    tts_first_audio_ms=round(spoken.first_audio_ms, 1), pipeline="streaming")
    chunked = {}

    async def by_chunks(samples, rate):
        result = await transcribe_chunks(link.transcriber, samples, rate, link.pause_s,
                                         endpoint_ms=link.endpoint_ms, stt_cost=stt_cost)
        chunked["result"] = result
        return result.text, result.stt_ms

    heard = await link.deliver(spoken.samples, spoken.sample_rate, spoken.cleaned, interaction_id,
                               turn_index, "user", measures, by_chunks, keep)
    measures.update(chunked["result"].measures, speech_end_s=round(chunked["result"].speech_end_s, 3))
    return heard, measures


class StreamingVoiceAgent(_SpokenAgent):
    """An ``Agent`` whose reply is spoken while it is written (:mod:`harness.voice.streaming`).

    ``time_to_first_audio_ms`` is, as in :class:`VoiceAgent`, the silence the caller hears
    after it stops speaking, here: ``endpoint_ms`` + the caller's STT tail + the LLM's time to
    its first sentence + that sentence's TTS (``stt_tail_ms``, ``llm_first_sentence_ms``,
    ``tts_first_chunk_ms``)."""

    async def _speak(self, problem: Problem, history: Sequence[Message],
                     turn_index: int) -> tuple[Reply, str, dict, float | None]:
        iid = problem.interaction_id
        spoken = await speak_streamed(self.inner, problem, history, self.link.speaker,
                                      self.link.first_chunk_words, self.link.stream)
        reply = spoken.reply
        measures: dict[str, Any] = {"spoken_text": reply.text or "", "channel": self.link.channel.describe(),
                                    "cleaned_text": spoken.cleaned_text, **spoken.measures(),
                                    "respond_ms": round(spoken.respond_ms, 1)}
        tail = self.link.caller_tail(iid, turn_index)
        if not spoken.chunks:
            measures.update(heard_text="", audio=None, silent=True)
            return reply, "", measures, None
        measures.update(tts_engine=self.link.speaker.engine, **chunk_tts_figures(spoken.chunks))
        samples, rate = spoken.audio()
        heard = await self.link.deliver(samples, rate, spoken.cleaned_text, iid, turn_index, "agent", measures)
        if tail is None:
            return reply, heard, measures, None
        measures["stt_tail_ms"] = tail
        measures["endpoint_ms"] = self.link.endpoint_ms
        return reply, heard, measures, self.link.endpoint_ms + tail + measures["agent_first_audio_ms"]
