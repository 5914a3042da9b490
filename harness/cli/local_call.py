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
from harness.voice.local_call import MicUser, Microphone, PlayingAgent


class LocalCallRuntime(Runtime):
    """A runtime whose user is the microphone and whose agent plays its replies."""

    def __init__(self, config, mic: Microphone, first: np.ndarray, sd, chat_models=None):
        super().__init__(config, chat_models)
        self.mic, self.first, self.sd = mic, first, sd

    def user(self, scripts):
        """The caller at the microphone (``scripts`` are not used)."""
        return MicUser(self.mic, self.voice_link, self.first)

    def agent(self, replies, calls):
        """The configured text agent, its replies spoken and played on the speakers."""
        return PlayingAgent(self.text_agent(replies, calls), self.voice_link, self.sd)


def call_dataset(question: str) -> Dataset:
    """A one-task dataset whose question is the caller's first message."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    sha = hashlib.sha256(question.encode("utf-8")).hexdigest()
    return Dataset("local-call", Path("local-call"), sha, [Task(f"call-{stamp}", question)])
