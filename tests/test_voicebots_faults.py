"""A voice bot that misbehaves, called by ``deskbench call simulate``: the reference bot of
examples/voice_bot (scripted replies, real Whisper and piper, in a thread of the test process)
with each of its fault modes from turn 2, dialled over both protocols by the harness with its own
real speech (piper, Whisper) and fake chat models for the caller and the judges. Each call ends
with a named stop reason, turn 1 (what was heard before the fault) stays stored, the failure
names what happened, and the command exits 0 with the report saying so. The caller waits up to 30 s
for the first audio: the bot's Whisper and piper share the test machine's cores."""
from __future__ import annotations

import json

import pytest

from examples.voice_bot.server import BotThread
from harness.cli.main import main
from harness.compose import Runtime
from store import StoreReader
from tests.fakes import default_responder, fake_factory

REPLIES = ["Please restart the router and wait one minute.", "Then unplug it for ten seconds."]


class FakeModelsRuntime(Runtime):
    """The command's runtime on fake chat models (the caller's and the judges'); speech is real."""

    def __init__(self, config, chat_models=None):
        super().__init__(config, fake_factory(default_responder(solve_at=None)))


# hang-up before answering, malformed frames and silence are also met on both protocols by the
# scripted tone bots of tests/test_voicebots.py and tests/test_voicebots_runs.py
@pytest.mark.parametrize("mode, path, stop, fault", [
    ("malformed", "twilio", "bot_error", "malformed"),
    ("wrong-format", "realtime", "bot_error", "wrong_format"),
    ("hangup-mid-reply", "twilio", "bot_hung_up", None),
])
def test_a_misbehaving_bot_ends_its_call_with_a_named_stop_reason(tmp_path, tasks_file, monkeypatch, capsys,
                                                                    mode, path, stop, fault):
    monkeypatch.setattr("harness.compose.Runtime", FakeModelsRuntime)
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(REPLIES))
    store = tmp_path / "s.sqlite"
    with BotThread(["--script", str(script), "--fault", mode, "--fault-turn", "2"]) as bot:
        code = main(["call", "simulate", "--store", str(store), "--dataset", str(tasks_file), "--limit", "1",
                     "--max-turns", "3", "--user", "scripted", "--agent", f"{path}-ws", "--agent-url",
                     bot.url(f"/{path}"), "--first-audio-timeout", "30", "--quiet", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0
    reader = StoreReader(store)
    (call,) = reader.interactions(reader.runs()[-1]["id"])
    assert call["status"] == "completed" and call["stop_reason"] == stop, call
    turns = reader.turns(call["id"])
    first = json.loads(turns[0]["extra_json"])["agent"]["voice"]
    assert first["outcome"] == "reply" and "router" in first["heard_text"].lower()   # turn 1, as heard
    if mode == "hangup-mid-reply":
        # the bot spoke, then closed the call: the turn is kept and the call ends there
        assert len(turns) == 2 and call["error"] is None
        assert json.loads(turns[1]["extra_json"])["agent"]["voice"]["outcome"] == "hung_up"
    else:
        assert len(turns) == 1
        error = json.loads(call["error"])
        assert error["kind"] == stop and error["turn"] == 2 and error["user_message"]
        if fault:
            assert error["fault"] == fault
    assert f"{stop} 1" in out and "### Voice bot at the caller" in out


def test_realtime_commit_mode_the_harness_commits_and_asks_for_each_response(tmp_path, tasks_file, monkeypatch,
                                                                              capsys):
    monkeypatch.setattr("harness.compose.Runtime", FakeModelsRuntime)
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(REPLIES))
    store = tmp_path / "s.sqlite"
    with BotThread(["--script", str(script)]) as bot:
        code = main(["call", "simulate", "--store", str(store), "--dataset", str(tasks_file), "--limit", "1",
                     "--max-turns", "2", "--user", "scripted", "--agent", "realtime-ws", "--agent-url",
                     bot.url("/realtime"), "--turn-detection", "commit", "--first-audio-timeout", "30", "--quiet", "--out", str(tmp_path / "out")])
    assert code == 0
    reader = StoreReader(store)
    (call,) = reader.interactions(reader.runs()[-1]["id"])
    turns = reader.turns(call["id"])
    assert call["stop_reason"] == "max_turns" and len(turns) == 2
    for t, reply in zip(turns, REPLIES):
        voice = json.loads(t["extra_json"])["agent"]["voice"]
        # no server VAD: the bot answered the harness's commit + response.create, with its transcript
        assert t["agent_message"] == reply and voice["bot_transcript"] == reply
        assert "input_audio_buffer.speech_started" not in voice["events"] and voice["events"]["response.done"] == 1
        assert voice["transcript_wer"] is not None and voice["transcript_wer"] < 0.3
