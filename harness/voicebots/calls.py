"""The calls of a run to a team's voice bot, in the turn loop (docs/voice-bots.md).

- :class:`BotCalls`: one :class:`Call` (its :class:`~harness.voicebots.line.BotLine`, its
  two-channel timeline, the caller's next message) per interaction, opened on the first turn and
  hung up when the conversation ends (:meth:`BotCalls.end_conversation`, the turn loop's hook).
- :class:`BotCaller` wraps the (simulated) user: its message is spoken (TTS, sentence by
  sentence, as the other calls' callers) and passed through the line preset; the bot hears that
  audio and nothing else. The stored user message is the text the caller said (what the bot
  understood is the bot's own affair; a Realtime bot's transcript of it is kept as ``bot_heard``).
- :class:`VoiceBotAgent` is the ``Agent`` of the turn loop: it sends the caller's audio down the
  line in real time and hears the bot's turn out (:mod:`harness.voicebots.listen`).
"""
from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from graphs.protocols import Message, Problem, Reply, User
from harness.voice.audio import AudioError
from harness.voice.call import SpeechLink, noise_key
from harness.voice.callers import OPENERS, CallerPreset
from harness.voice.duplex import call_audio_ref
from harness.voice.timeline import Timeline
from harness.voicebots.line import BotLine
from harness.voicebots.listen import ListenSettings
from harness.voicebots.protocols import protocol_for


@dataclass
class Call:
    """One call in progress: its line, its timeline (both channels) and its turns so far."""

    line: BotLine
    timeline: Timeline = field(default_factory=Timeline)
    opener: tuple[np.ndarray, int, str] | None = None  # this call's barge-in opener, through the line
    turns: int = 0


class BotCalls:
    """The calls in progress (see the module docstring).

    Args:
        kind: ``twilio-ws`` or ``realtime-ws``.
        url: the bot's websocket address.
        headers: the handshake's headers (values expanded, never stored).
        name: the bot's name in the store and the report.
        link: the harness's speech (TTS for the caller, STT of what the bot said, the line, audio files).
        settings: how long the caller waits and when it cuts in.
        caller: the caller preset (its ``max_talk_s`` is the barge-in rule).
        turn_detection: Realtime: ``server_vad`` (the bot finds the caller's end) or ``commit``.
        seed: seeds the opener's choice.
    """

    def __init__(self, kind: str, url: str, headers: dict[str, str], name: str, link: SpeechLink,
                 settings: ListenSettings, caller: CallerPreset | None = None,
                 turn_detection: str = "server_vad", seed: int = 0):
        self.kind, self.url, self.headers, self.name = kind, url, headers, name
        self.link, self.settings, self.caller = link, settings, caller
        self.turn_detection, self.seed = turn_detection, seed
        self.calls: dict[str, Call] = {}
        #: the caller's next message as the bot will hear it (samples, rate), per interaction
        self.pending: dict[str, tuple[np.ndarray, int]] = {}

    async def call(self, interaction_id: str) -> Call:
        """The interaction's call, dialled on first use.

        Raises:
            OSError, TimeoutError, websockets' errors: the bot cannot be reached.
        """
        if interaction_id not in self.calls:
            line = BotLine(self.url, protocol_for(self.kind, interaction_id, self.turn_detection), self.headers)
            self.calls[interaction_id] = Call(line)
            await line.open()
        return self.calls[interaction_id]

    def pending_call(self, interaction_id: str) -> Call | None:
        """The call if it was dialled (without dialling)."""
        return self.calls.get(interaction_id)

    async def opener(self, call: Call, interaction_id: str, turn: int) -> tuple[np.ndarray, int, str] | None:
        """The caller's barge-in opener for this turn (None for a preset that never cuts in)."""
        if self.caller is None or self.caller.max_talk_s is None:
            return None
        options = OPENERS["too_long"]
        task = interaction_id.removeprefix(self.link.run_of(interaction_id) + ":")
        rng = np.random.default_rng([self.seed, zlib.crc32(f"{task}|{turn}|opener".encode())])
        text = options[int(rng.integers(len(options)))]
        speech = await self.link.speaker.aspeak(text)
        samples, rate = await asyncio.to_thread(self.link.channel.apply, speech.samples, speech.sample_rate,
                                                noise_key(interaction_id, turn, "opener"))
        return samples, rate, text

    def save_recording(self, interaction_id: str) -> str | None:
        """Write the call's two-channel WAV (caller left, bot right); returns its reference."""
        call = self.calls.get(interaction_id)
        if self.link.audio is None or call is None or not call.timeline.segments:
            return None
        ref = call_audio_ref(self.link.run_of(interaction_id), interaction_id)
        call.timeline.write_stereo(self.link.audio.path(ref))
        return ref

    async def end_conversation(self, interaction_id: str, stop_reason: str | None = None) -> None:
        """The conversation is over: the caller hangs up (if the bot has not), the recording is
        written, the call is forgotten."""
        call = self.calls.get(interaction_id)
        if call is None:
            self.pending.pop(interaction_id, None)
            return
        await call.line.hang_up()
        await asyncio.to_thread(self.save_recording, interaction_id)
        self.calls.pop(interaction_id, None)
        self.pending.pop(interaction_id, None)

    async def aclose(self) -> None:
        """Hang up every call still open (the run is over or interrupted)."""
        for iid in list(self.calls):
            await self.end_conversation(iid)


class BotCaller:
    """The caller of a call to a voice bot: the inner user's message, spoken and sent through the
    line preset; its audio is stored as the turn's ``user`` audio and queued for the bot."""

    def __init__(self, inner: User, calls: BotCalls):
        self.inner, self.calls = inner, calls

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        """The inner user's reply; its speech is ready for :class:`VoiceBotAgent`. A hang-up
        (``text`` None) hangs the call up."""
        iid, link = problem.interaction_id, self.calls.link
        reply = await self.inner.respond(problem, history, turn_index)
        if reply.text is None:
            await self.calls.end_conversation(iid, "user_ended")
            return reply
        measures: dict[str, Any] = {"spoken_text": reply.text, "channel": link.channel.describe(),
                                    "pipeline": "voice-bot"}
        spoken = await link.speak_sentences(reply.text)
        if spoken is None:   # nothing speakable: half a second of the line's silence
            measures.update(cleaned_text="", audio=None, silent=True)
            self.calls.pending[iid] = (np.zeros(8000, np.float32), 16000)
        else:
            heard, rate = await asyncio.to_thread(link.channel.apply, spoken.samples, spoken.sample_rate,
                                                  noise_key(iid, turn_index, "user"))
            self.calls.pending[iid] = (heard, rate)
            measures.update(cleaned_text=spoken.cleaned, tts_engine=spoken.engine, tts_ms=round(spoken.tts_ms, 1),
                            audio_s=round(len(spoken.samples) / float(spoken.sample_rate), 3))
            if link.audio is not None:
                try:
                    measures["audio"] = await asyncio.to_thread(link.audio.save, heard, rate, link.run_of(iid),
                                                                iid, turn_index, "user")
                except AudioError:
                    measures["audio"] = None
        return Reply(reply.text, reply.calls, {**(reply.extra or {}), "voice": measures})
