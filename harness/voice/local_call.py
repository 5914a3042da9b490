"""A live call on this machine's microphone and speakers (``sounddevice``/PortAudio).

Turn taking is push-to-talk (Enter starts and stops a message, ``q`` hangs up) or by voice
activity (:class:`EnergyVad`: a message ends after a pause, a long silence hangs up). The
caller's speech is transcribed for the agent; the agent's reply is spoken and played. The call
runs through the same SelfScore turn loop and store as a batch (one interaction), with the
caller's recordings and the agent's speech kept as audio files.

On a machine with no audio device, :func:`harness.voice.devices.require_devices` raises
:class:`NoAudioDevice` with a message that points to the browser mode (``python app.py``).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from time import perf_counter
from typing import Literal, Sequence

import numpy as np

from graphs.protocols import Agent, Message, Problem, Reply
from harness.voice.audio import STT_RATE, AudioError, check_speech
from harness.voice.call import SpeechLink
from harness.voice.devices import BROWSER_HINT, NoAudioDevice

@dataclass
class EnergyVad:
    """Energy-based voice activity: a message starts after ``start_blocks`` loud blocks and
    ends after ``pause_s`` of quiet; ``timeout_s`` without speech means the caller hung up.

    Feed blocks with :meth:`feed` until it returns True, then read :meth:`utterance`.
    """

    sample_rate: int = STT_RATE
    threshold_dbfs: float = -40.0
    start_blocks: int = 3
    pause_s: float = 0.8
    timeout_s: float = 15.0
    max_s: float = 60.0
    preroll_blocks: int = 10
    _pre: deque = field(default_factory=deque, repr=False)
    _blocks: list = field(default_factory=list, repr=False)
    _loud_run: int = 0
    _quiet_s: float = 0.0
    _waited_s: float = 0.0
    speaking: bool = False

    def feed(self, block: np.ndarray) -> bool:
        """Take one block of mono samples; True when the message (or the wait) is over."""
        block = np.asarray(block, dtype=np.float32).reshape(-1)
        dur = len(block) / self.sample_rate
        rms = float(np.sqrt(np.mean(block.astype(np.float64) ** 2))) if len(block) else 0.0
        loud = rms > 0 and 20 * np.log10(rms) > self.threshold_dbfs
        if not self.speaking:
            self._pre.append(block)
            while len(self._pre) > self.preroll_blocks:
                self._pre.popleft()
            self._loud_run = self._loud_run + 1 if loud else 0
            self._waited_s += dur
            if self._loud_run >= self.start_blocks:
                self.speaking, self._blocks = True, list(self._pre)
                return False
            return self._waited_s >= self.timeout_s
        self._blocks.append(block)
        self._quiet_s = 0.0 if loud else self._quiet_s + dur
        return self._quiet_s >= self.pause_s or sum(len(b) for b in self._blocks) / self.sample_rate >= self.max_s

    def utterance(self) -> np.ndarray | None:
        """The message's samples (with a short lead-in), or None if nobody spoke."""
        return np.concatenate(self._blocks) if self.speaking and self._blocks else None


class Microphone:
    """Records one message at 16 kHz; None means the caller hung up."""

    def __init__(self, sd, mode: Literal["push", "vad"] = "push", block_s: float = 0.03):
        self.sd, self.mode, self.block = sd, mode, int(STT_RATE * block_s)

    def listen(self) -> np.ndarray | None:
        """Record one message (push-to-talk or voice activity, per ``mode``); None if the caller hung up.

        Raises:
            NoAudioDevice: recording failed.
        """
        try:
            return self._push() if self.mode == "push" else self._vad()
        except self.sd.PortAudioError as exc:
            raise NoAudioDevice(f"Recording failed: {exc}. {BROWSER_HINT}") from exc

    def _push(self) -> np.ndarray | None:
        if input("[Enter] to talk, [q Enter] to hang up: ").strip().lower() == "q":
            return None
        blocks: list[np.ndarray] = []
        with self.sd.InputStream(samplerate=STT_RATE, channels=1, dtype="float32",
                                 callback=lambda data, *_: blocks.append(data[:, 0].copy())):
            input("... recording, [Enter] to stop: ")
        return np.concatenate(blocks) if blocks else np.zeros(0, np.float32)

    def _vad(self) -> np.ndarray | None:
        vad = EnergyVad()
        print("... listening (pause to end the message, stay silent to hang up)")
        with self.sd.InputStream(samplerate=STT_RATE, channels=1, dtype="float32", blocksize=self.block) as s:
            while not vad.feed(s.read(self.block)[0][:, 0]):
                pass
        return vad.utterance()


class MicUser:
    """The caller at the microphone, as a ``graphs.protocols.User``. Turn 1 is the first
    message (recorded before the run, it is the problem's question)."""

    def __init__(self, mic: Microphone, link: SpeechLink, first: np.ndarray):
        self.mic, self.link, self.first = mic, link, first
        #: the last message's recording (16 kHz), for a voice bot's line
        self.last: np.ndarray | None = None

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        """Turn 1: the first message (its text is the problem's question); later turns: record and
        transcribe the next message, asking again on unusable audio. ``Reply(None)`` on hang-up."""
        import asyncio
        while True:
            samples = self.first if turn_index == 1 else await asyncio.to_thread(self.mic.listen)
            if samples is None:
                return Reply(None)
            try:
                samples = check_speech(samples, STT_RATE, "your message")
                text = problem.question if turn_index == 1 else (await self.link.transcriber.atranscribe(samples)).text
            except AudioError as exc:
                print(f"{exc} Try again.")
                continue
            self.last = samples
            voice = {"heard_text": text, "audio_s": round(len(samples) / STT_RATE, 3)}
            if self.link.audio is not None:
                voice["audio"] = self.link.audio.save(samples, STT_RATE, self.link.run_of(problem.interaction_id),
                                                      problem.interaction_id, turn_index, "user")
            print(f"you: {text}")
            return Reply(text, [], {"voice": voice})


class PlayingAgent:
    """An agent whose replies are spoken and played on the speakers (stored as text)."""

    def __init__(self, inner: Agent, link: SpeechLink, sd):
        self.inner, self.link, self.sd = inner, link, sd

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        """The inner agent's reply, printed, then spoken and played (the speech saved when the
        link keeps audio).

        Raises:
            NoAudioDevice: playback failed.
        """
        turn_index = sum(1 for m in history if m.role == "user")
        started = perf_counter()
        reply = await self.inner.respond(problem, history)
        voice = {"respond_ms": round((perf_counter() - started) * 1000.0, 1)}
        print(f"agent: {reply.text}")
        if reply.text:
            speech = await self.link.speaker.aspeak(reply.text)
            voice.update(cleaned_text=speech.cleaned_text, tts_ms=round(speech.ms, 1),
                         tts_first_audio_ms=round(speech.first_audio_ms, 1), audio_s=round(speech.seconds, 3))
            if self.link.audio is not None:
                voice["audio"] = self.link.audio.save(speech.samples, speech.sample_rate,
                                                      self.link.run_of(problem.interaction_id),
                                                      problem.interaction_id, turn_index, "agent")
            try:
                self.sd.play(speech.samples, speech.sample_rate)
                self.sd.wait()
            except self.sd.PortAudioError as exc:
                raise NoAudioDevice(f"Playback failed: {exc}. {BROWSER_HINT}") from exc
        return Reply(reply.text, reply.calls, {**(reply.extra or {}), "voice": voice})


def first_message(mic: Microphone, link: SpeechLink) -> tuple[np.ndarray, str] | None:
    """Record the caller's first message until it holds words; None if they hung up."""
    while True:
        samples = mic.listen()
        if samples is None:
            return None
        try:
            text = link.transcriber.transcribe(samples, STT_RATE).text
        except AudioError as exc:
            print(f"{exc} Try again.")
            continue
        if text.strip():
            return check_speech(samples, STT_RATE), text
        print("No words were heard; try again.")
