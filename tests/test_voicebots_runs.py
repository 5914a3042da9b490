"""``deskbench call simulate --agent twilio-ws|realtime-ws``: the command dials a scripted bot over
a real websocket in real time (tests/tone_bots.py), on fake chat models for the caller and the
judges and the tone speech of tests/test_voice_stream_fakes.py (bot and harness share its
vocabulary, so the harness's STT understands the bot). Checked: what the user sees (exit status,
the report's section), what the store keeps (the bot's words, the measures at the caller, both
channels' audio), a bot that never answers ending only its call as bot_timeout, and a resume
calling the bot again for exactly that call."""
from __future__ import annotations

import json
import wave

import pytest

from harness.cli.main import main
from harness.compose import Runtime
from harness.voice.audiostore import AudioStore
from harness.voice.call import SpeechLink
from harness.voice.duplex import call_audio_ref
from store import StoreReader
from tests.fakes import default_responder, fake_factory
from tests.test_voice_stream_fakes import ToneSpeaker, ToneTranscriber, Vocabulary
from tests.tone_bots import ThreadedBot, ToneBot

VOCAB = Vocabulary()
REPLY = "Restart the router now."


class ToneRuntime(Runtime):
    """The command's runtime on fake chat models and tone speech (no model is loaded)."""

    def __init__(self, config, chat_models=None):
        super().__init__(config, fake_factory(default_responder(solve_at=None)))
        self.voice_link = SpeechLink(ToneSpeaker(VOCAB), ToneTranscriber(VOCAB), None, AudioStore(config.store),
                                     config.store)


def bot_reply(cid: str, turn: int):
    speech = ToneSpeaker(VOCAB).speak(REPLY)
    return speech.samples, speech.sample_rate, REPLY


@pytest.fixture
def simulate(tmp_path, tasks_file, monkeypatch, capsys):
    """Run ``deskbench call simulate`` (or another command) against a tone bot at ``url``;
    returns (exit status, reader, run id, output)."""
    monkeypatch.setattr("harness.compose.Runtime", ToneRuntime)

    def run(url: str, path: str, *flags: str, command=("call", "simulate")):
        store = tmp_path / "s.sqlite"
        args = [*command, "--store", str(store), "--quiet", "--out", str(tmp_path / "out"), *flags]
        if command[0] == "call":
            args += ["--dataset", str(tasks_file), "--limit", "2", "--max-turns", "2", "--user", "scripted",
                     "--agent", path + "-ws", "--agent-url", f"{url}/{path}", "--agent-name", "phonebot",
                     "--first-audio-timeout", "1.5", "--bot-turn-end", "600"]
        code = main(args)
        reader = StoreReader(store)
        return code, reader, reader.runs()[-1]["id"], capsys.readouterr().out
    return run


@pytest.mark.parametrize("protocol", ["twilio", "realtime"])
def test_call_simulate_dials_the_bot_and_keeps_what_the_caller_heard(simulate, tmp_path, protocol):
    bot = ToneBot(bot_reply)
    with ThreadedBot(bot) as url:
        code, reader, run_id, out = simulate(url, protocol)
    assert code == 0
    run = reader.run(run_id)
    assert run["name"].startswith("phonebot_") and run["config"]["run"]["agent"] == f"{protocol}-ws"
    for task in ("wifi", "disk"):
        iid = f"{run_id}:{task}"
        turns = reader.turns(iid)
        assert len(turns) == 2 and reader.interaction(iid)["stop_reason"] == "max_turns"
        for t in turns:
            extra = json.loads(t["extra_json"])
            voice = extra["agent"]["voice"]
            assert extra["agent"]["adapter"] == f"{protocol}-ws" and voice["outcome"] == "reply"
            assert voice["heard_text"].lower().rstrip(".").split() == ["restart", "the", "router", "now"]
            # the judged text: the bot's transcript (Realtime), else what the harness heard
            assert t["agent_message"] == (REPLY if protocol == "realtime" else voice["heard_text"])
            assert 150 < voice["wait_ms"] < 1500 and voice["bot_speech_s"] > 0.5
            assert (tmp_path / voice["audio"]).exists() and (tmp_path / extra["user"]["voice"]["audio"]).exists()
            if protocol == "realtime":
                assert voice["transcript_wer"] == 0.0
        with wave.open(str(tmp_path / call_audio_ref(run_id, iid))) as w:
            assert w.getnchannels() == 2 and w.getnframes() / w.getframerate() > 4.0
    # one call per conversation, each hung up by the caller at its end
    assert sorted(bot.conversations) == [f"{run_id}:disk", f"{run_id}:wifi"]
    if protocol == "twilio":
        assert [m["event"] for m in bot.received].count("stop") == 2
    assert "### Voice bot at the caller" in out and "| wait_ms | 4 |" in out


def test_a_bot_that_never_answers_ends_only_its_call_and_a_resume_calls_it_again(simulate):
    bot = ToneBot(bot_reply, modes={":disk": "silent"})
    with ThreadedBot(bot) as url:
        code, reader, run_id, out = simulate(url, "twilio")
        assert code == 0
        disk = reader.interaction(f"{run_id}:disk")
        assert disk["stop_reason"] == "bot_timeout" and reader.turns(f"{run_id}:disk") == []
        error = json.loads(disk["error"])
        assert error["kind"] == "bot_timeout" and "said nothing" in error["error"] and "within 1.5 s" in error["error"]
        assert error["user_message"] and error["voice"]["outcome"] == "timeout"
        assert reader.interaction(f"{run_id}:wifi")["stop_reason"] == "max_turns"
        assert "bot_timeout 1" in out and "Calls the bot ended or failed:" in out
        # the bot is fixed: a resume calls it again for the failed call only
        bot.modes.clear()
        bot.conversations.clear()
        code, reader, _, out = simulate(url, "twilio", "--resume", run_id, command=("run",))
    assert code == 0
    assert reader.interaction(f"{run_id}:disk")["stop_reason"] == "max_turns"
    assert bot.conversations == [f"{run_id}:disk"]
