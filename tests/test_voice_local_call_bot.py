"""``deskbench call local``: a person at this machine's microphone, with a stand-in sound card
(a fake ``sounddevice``: the microphone gives recorded utterances, then silence; playback is
kept) and the tone speech of tests/test_voice_stream_fakes.py; fake chat models for the judges.
With the harness's own agent, and with a voice bot under test (``--agent twilio-ws``): the
person's recording goes down the bot's line in real time (tests/tone_bots.py) and the bot's
audio, as the line heard it, is played."""
from __future__ import annotations

import json

import numpy as np
import pytest

from harness.cli.local_call import LocalCallRuntime
from harness.cli.main import main
from harness.voice.audiostore import AudioStore
from harness.voice.call import SpeechLink
from store import StoreReader
from tests.fakes import default_responder, fake_factory
from tests.test_voice_stream_fakes import RATE, ToneSpeaker, ToneTranscriber, Vocabulary
from tests.tone_bots import ThreadedBot, ToneBot

VOCAB = Vocabulary()
SAID = ["My wifi drops every few minutes.", "I restarted it and it still drops."]
BOT = "Update the wifi driver now."


class FakeSoundDevice:
    """The microphone gives each utterance (then silence, so the VAD ends it); playback is kept."""

    PortAudioError = RuntimeError

    def __init__(self, utterances: list[np.ndarray]):
        self.queue = [np.concatenate([u, np.zeros(RATE, np.float32)]) for u in utterances]
        self.played: list[tuple[int, int]] = []

    def query_devices(self):
        return [{"name": "fake", "max_input_channels": 1, "max_output_channels": 1}]

    def InputStream(self, samplerate, channels, dtype, blocksize=None, callback=None):  # noqa: N802
        device = self

        class Stream:
            def __init__(self):
                self.audio = device.queue.pop(0) if device.queue else np.zeros(0, np.float32)
                self.at = 0

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def read(self, n):
                block = self.audio[self.at:self.at + n]
                self.at += n
                block = np.concatenate([block, np.zeros(n - len(block), np.float32)])
                return block.reshape(-1, 1), False
        return Stream()

    def play(self, samples, rate):
        self.played.append((len(samples), rate))

    def wait(self):
        pass


def tone_speech(text: str) -> np.ndarray:
    return ToneSpeaker(VOCAB).speak(text).samples


@pytest.fixture
def local_call(tmp_path, monkeypatch, capsys):
    """``deskbench call local --mode vad ...`` on the fake sound card; returns (code, reader, device, output)."""
    link = SpeechLink(ToneSpeaker(VOCAB), ToneTranscriber(VOCAB), None, AudioStore(tmp_path / "s.sqlite"),
                      tmp_path / "s.sqlite")

    class ToneLocalRuntime(LocalCallRuntime):
        def __init__(self, config, mic, first, sd, chat_models=None):
            super().__init__(config, mic, first, sd, fake_factory(default_responder(solve_at=None)))

    monkeypatch.setattr("harness.cli.local_call.LocalCallRuntime", ToneLocalRuntime)
    monkeypatch.setattr("harness.voice.call.build_link", lambda voice, store: link)

    def run(*flags):
        device = FakeSoundDevice([tone_speech(t) for t in SAID])
        monkeypatch.setattr("harness.voice.devices.require_devices", lambda: device)
        code = main(["call", "local", "--mode", "vad", "--max-turns", "3", "--store", str(tmp_path / "s.sqlite"),
                     "--out", str(tmp_path / "out"), *flags])
        return code, StoreReader(tmp_path / "s.sqlite"), device, capsys.readouterr().out
    return run


def test_a_local_call_with_the_harnesss_agent_is_stored_and_hangs_up_on_silence(local_call):
    code, reader, device, out = local_call()
    assert code == 0
    (run,) = reader.runs()
    (call,) = reader.interactions(run["id"])
    assert call["stop_reason"] == "user_ended"
    turns = reader.turns(call["id"])
    assert [t["user_message"].lower().rstrip(".") for t in turns] == [s.lower().rstrip(".") for s in SAID]
    assert len(device.played) == 2    # each reply spoken on the speakers


def test_a_local_call_to_a_voice_bot_sends_the_persons_recording_and_plays_the_bot(local_call):
    bot = ToneBot(lambda cid, turn: (tone_speech(BOT), RATE, BOT))
    with ThreadedBot(bot) as url:
        code, reader, device, out = local_call("--agent", "twilio-ws", "--agent-url", url + "/twilio",
                                               "--bot-turn-end", "600")
    assert code == 0
    (run,) = reader.runs()
    (call,) = reader.interactions(run["id"])
    assert reader.run(run["id"])["config"]["run"]["agent"] == "twilio-ws" and call["stop_reason"] == "user_ended"
    turns = reader.turns(call["id"])
    assert len(turns) == 2
    for t in turns:
        voice = json.loads(t["extra_json"])["agent"]["voice"]
        assert voice["pipeline"] == "voice-bot" and voice["wait_ms"] > 0
        assert t["agent_message"].lower().rstrip(".") == BOT.lower().rstrip(".")
    # the bot's audio, as heard on the line (8 kHz mu-law), was played for each turn
    assert [rate for _, rate in device.played] == [8000, 8000]
    assert bot.conversations == [call["id"]]
    assert "bot: " in out and "### Voice bot at the caller" in out
