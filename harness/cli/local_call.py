"""The composition of ``deskbench call local``: a runtime whose user is this machine's microphone
and whose agent plays its replies (:mod:`harness.voice.local_call` holds the microphone, the
voice activity detector and the two wrappers), and the one-task dataset of the call."""
from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from harness.compose import Runtime
from harness.tasks.datasets import Dataset, Task
from harness.voice.audio import STT_RATE
from harness.voice.devices import NoAudioDevice
from harness.voice.local_call import BROWSER_HINT, MicUser, Microphone, PlayingAgent


class LocalCallRuntime(Runtime):
    """A runtime whose user is the microphone and whose agent plays its replies; with a voice
    bot under test (``--agent twilio-ws|realtime-ws``), the person's recorded messages go down the
    bot's line and the bot's audio, as the line heard it, is played."""

    def __init__(self, config, mic: Microphone, first: np.ndarray, sd, chat_models=None):
        super().__init__(config, chat_models)
        self.mic, self.first, self.sd = mic, first, sd

    def user(self, scripts, openings=None):
        """The caller at the microphone (``scripts`` and ``openings`` are not used)."""
        user = MicUser(self.mic, self.voice_link, self.first)
        return MicBotCaller(user, self.bot_calls) if self.calls_a_bot else user

    def agent(self, replies, calls, traces=None):
        """The configured text agent, its replies spoken and played on the speakers; or the voice
        bot, its audio played as the line heard it."""
        if self.calls_a_bot:  # the runtime's agent is then the bot (harness.voicebots.VoiceBotAgent)
            return PlayingBot(super().agent(replies, calls, traces), self.sd)
        return PlayingAgent(self.text_agent(replies, calls, traces), self.voice_link, self.sd)


class MicBotCaller:
    """The person at the microphone calling a voice bot: their recorded message (not the harness's
    TTS) is what the bot hears."""

    def __init__(self, inner: MicUser, calls):
        self.inner, self.calls = inner, calls

    async def respond(self, problem, history, turn_index: int):
        """The person's message; its recording is queued for the bot's line."""
        reply = await self.inner.respond(problem, history, turn_index)
        if reply.text is None:
            await self.calls.end_conversation(problem.interaction_id, "user_ended")
        elif self.inner.last is not None:
            self.calls.pending[problem.interaction_id] = (self.inner.last, STT_RATE)
        return reply


class PlayingBot:
    """The voice bot under test; each turn's audio, as the caller's line heard it, is played."""

    def __init__(self, inner, sd):
        self.inner, self.sd = inner, sd

    async def respond(self, problem, history):
        """The bot's turn (see ``harness.voicebots.VoiceBotAgent``), printed and played.

        Raises:
            NoAudioDevice: playback failed.
        """
        import asyncio
        reply = await self.inner.respond(problem, history)
        print(f"bot: {reply.text}  (you waited {(reply.extra or {}).get('latency_ms')} ms)")
        heard = self.inner.last_heard
        if heard is not None and len(heard[0]):
            try:
                await asyncio.to_thread(self._play, *heard)
            except self.sd.PortAudioError as exc:
                raise NoAudioDevice(f"Playback failed: {exc}. {BROWSER_HINT}") from exc
        return reply

    def _play(self, samples: np.ndarray, rate: int) -> None:
        self.sd.play(samples, rate)
        self.sd.wait()

    async def end_conversation(self, interaction_id: str, stop_reason: str | None = None) -> None:
        """Hang the bot's call up."""
        await self.inner.end_conversation(interaction_id, stop_reason)


def call_dataset(question: str) -> Dataset:
    """A one-task dataset whose question is the caller's first message."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    sha = hashlib.sha256(question.encode("utf-8")).hexdigest()
    return Dataset("local-call", Path("local-call"), sha, [Task(f"call-{stamp}", question)])
