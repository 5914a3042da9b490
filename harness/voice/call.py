"""Voice calls in the turn loop: wrappers that make any user and agent talk through speech.

Each message is cleaned and spoken (TTS), sent through the channel (optionally a telephone
band and noise at a set SNR), stored as the audio the listener heard, and transcribed (STT)
for the other side, so speech errors propagate as in a real call:

- :class:`VoiceUser` wraps a ``graphs.protocols.User``: the agent gets the transcript of what
  the (simulated) caller said.
- :class:`VoiceAgent` wraps a ``graphs.protocols.Agent``: the caller gets the transcript of
  what the agent said.

The conversation history (and so the stored ``user_message``/``agent_message`` and what the
judges read) holds what each listener heard; the original text, the cleaned text, the audio
file and the measures go in ``Reply.extra["voice"]`` (the turn's ``extra_json``).
"""
from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any, Sequence

import numpy as np

from graphs.protocols import Agent, Message, Problem, Reply, User
from harness.voice.audio import TELEPHONE_RATE, add_noise, telephone_band
from harness.voice.audiostore import AudioStore
from harness.voice.stt import Transcriber
from harness.voice.textclean import clean_for_speech
from harness.voice.tts import Speaker
from harness.voice.wer import wer

@dataclass(frozen=True)
class Channel:
    """The line between the two sides: clean, a narrow-band telephone line, and/or white noise
    at ``snr_db``. The noise of each message is seeded by ``seed`` and the message's key, so a
    run is reproducible whatever the order its conversations ran in."""

    telephone: bool = False
    snr_db: float | None = None
    seed: int = 0

    @property
    def degraded(self) -> bool:
        return self.telephone or self.snr_db is not None

    def describe(self) -> dict[str, Any]:
        return {"telephone": self.telephone, "snr_db": self.snr_db}

    def apply(self, samples: np.ndarray, sample_rate: int, key: str) -> tuple[np.ndarray, int]:
        """The audio as the listener gets it, and its sample rate."""
        if self.telephone:
            samples, sample_rate = telephone_band(samples, sample_rate), TELEPHONE_RATE
        if self.snr_db is not None:
            rng = np.random.default_rng([self.seed, zlib.crc32(key.encode("utf-8"))])
            samples = add_noise(samples, self.snr_db, rng)
        return samples, sample_rate

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
                 tts_check: bool = True):
        self.speaker, self.transcriber = speaker, transcriber
        self.channel = channel or Channel()
        self.audio, self.store_path, self.tts_check = audio, store_path, tts_check
        self._runs: dict[str, str] = {}
        self._user_stt_ms: dict[tuple[str, int], float] = {}

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
        key = f"{interaction_id}|{turn_index}|{role}"
        heard, rate = await asyncio.to_thread(self.channel.apply, speech.samples, speech.sample_rate, key)
        if self.audio is not None:
            measures["audio"] = await asyncio.to_thread(
                self.audio.save, heard, rate, self.run_of(interaction_id), interaction_id, turn_index, role)
        transcript = await self.transcriber.atranscribe(heard, rate)
        measures.update(
            heard_text=transcript.text, tts_engine=speech.engine, tts_ms=round(speech.ms, 1),
            tts_first_audio_ms=round(speech.first_audio_ms, 1), audio_s=round(speech.seconds, 3),
            stt_ms=round(transcript.ms, 1), stt_wer=round(wer(cleaned, transcript.text), 4))
        if not self.channel.degraded:
            measures["tts_wer"] = measures["stt_wer"]
        elif self.tts_check:
            clean = await self.transcriber.atranscribe(speech.samples, speech.sample_rate)
            measures["tts_wer"] = round(wer(cleaned, clean.text), 4)
            measures["tts_check_stt_ms"] = round(clean.ms, 1)
        if role == "user":
            self._user_stt_ms[(interaction_id, turn_index)] = transcript.ms
        return transcript.text, measures

    def user_stt_ms(self, interaction_id: str, turn_index: int) -> float | None:
        """How long the caller's message of that turn took to transcribe (once read)."""
        return self._user_stt_ms.pop((interaction_id, turn_index), None)

def _with_voice(reply: Reply, text: str, measures: dict) -> Reply:
    return Reply(text, reply.calls, {**(reply.extra or {}), "voice": measures})

class VoiceUser:
    """A ``User`` whose every message reaches the agent as speech (see the module docstring)."""

    def __init__(self, inner: User, link: SpeechLink):
        self.inner, self.link = inner, link

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        started = perf_counter()
        reply = await self.inner.respond(problem, history, turn_index)
        respond_ms = (perf_counter() - started) * 1000.0
        if reply.text is None:  # the caller hung up
            return reply
        heard, measures = await self.link.carry(reply.text, problem.interaction_id, turn_index, "user")
        measures["respond_ms"] = round(respond_ms, 1)
        return _with_voice(reply, heard, measures)

class VoiceAgent:
    """An ``Agent`` whose every reply reaches the caller as speech (see the module docstring).

    ``time_to_first_audio_ms`` of a reply is the caller's STT time + the agent's time + the
    time until the reply's first sentence was synthesized: the silence the caller hears."""

    def __init__(self, inner: Agent, link: SpeechLink):
        self.inner, self.link = inner, link

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        turn_index = sum(1 for m in history if m.role == "user")
        started = perf_counter()
        reply = await self.inner.respond(problem, history)
        respond_ms = (perf_counter() - started) * 1000.0
        heard, measures = await self.link.carry(reply.text or "", problem.interaction_id, turn_index, "agent")
        measures["respond_ms"] = round(respond_ms, 1)
        user_stt = self.link.user_stt_ms(problem.interaction_id, turn_index)
        if user_stt is not None and "tts_first_audio_ms" in measures:
            measures["time_to_first_audio_ms"] = round(user_stt + respond_ms + measures["tts_first_audio_ms"], 1)
        return _with_voice(reply, heard, measures)

def build_link(voice_config, store_path: str | Path | None) -> SpeechLink:
    """The speech link of a ``harness.config.VoiceConfig``, keeping audio beside the store."""
    return SpeechLink(
        Speaker(voice_config.tts),
        Transcriber(voice_config.stt_model, beam_size=voice_config.stt_beam_size),
        Channel(voice_config.telephone, voice_config.snr_db, voice_config.seed),
        AudioStore(store_path) if store_path else None, store_path, voice_config.tts_check)
