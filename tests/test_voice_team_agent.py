"""``deskbench call simulate --agent http --agent-url URL``: a team's own text agent on simulated
calls, voiced by the harness's TTS and heard through its STT (the tone speech of
tests/test_voice_stream_fakes.py, fake chat models for the caller and the judges), against a
real local HTTP agent (tests/agent_server.py). The agent does not stream: the streamed pipeline
falls back to its whole reply and speaks it sentence by sentence; turn-based and full-duplex
calls take it too; an agent that fails ends only its call, as an agent error."""
from __future__ import annotations

import json

import pytest

from harness.cli.main import main
from harness.compose import Runtime
from harness.config import load_config
from store import StoreReader
from tests.agent_server import ScriptedAgent, serve
from tests.fakes import default_responder, fake_factory
from tests.test_voice_stream_fakes import tone_link

SENTENCES = ["Reload the wifi driver first.", "Then turn off power saving.", "Tell me if it still drops."]


class ToneRuntime(Runtime):
    """The command's runtime on fake chat models and tone speech (no model is loaded)."""

    def __init__(self, config, chat_models=None):
        super().__init__(config, fake_factory(default_responder(solve_at=None)))
        self.voice_link = tone_link(config.store, stream=config.voice.streaming,
                                    first_chunk_words=config.voice.first_chunk_words)


def agent_reply(request: dict):
    """Three sentences and a trace; 'disk' fails with a 503."""
    if request["metadata"]["task_id"] == "disk":
        from starlette.responses import PlainTextResponse
        return PlainTextResponse("down", 503)
    return {"reply": " ".join(SENTENCES), "trace": {"tool_calls": [{"name": "kb", "arguments": {}}]}}


@pytest.fixture
def simulate(tmp_path, tasks_file, monkeypatch, capsys):
    """Run ``deskbench call simulate`` with the given extra flags; returns (reader, run id, output)."""
    monkeypatch.setattr("harness.compose.Runtime", ToneRuntime)
    bot = ScriptedAgent(agent_reply)

    def run(*flags: str, limit: int = 1):
        store = tmp_path / "s.sqlite"
        config = tmp_path / "retry.toml"
        config.write_text("[retry]\nbase_s = 0.0\nmax_attempts = 2\n")
        with serve(bot) as url:
            code = main(["call", "simulate", "--config", str(config), "--store", str(store), "--dataset",
                         str(tasks_file), "--limit", str(limit), "--max-turns", "2", "--user", "scripted",
                         "--agent", "http", "--agent-url", url, "--agent-name", "voicebot", "--quiet",
                         "--out", str(tmp_path / "out"), *flags])
        assert code == 0
        reader = StoreReader(store)
        return reader, reader.runs()[-1]["id"], capsys.readouterr().out, bot
    return run


def test_the_team_agent_is_voiced_sentence_by_sentence_when_it_does_not_stream(simulate):
    reader, run_id, out, bot = simulate()
    assert reader.run(run_id)["name"].startswith("voicebot_")
    turns = reader.turns(f"{run_id}:wifi")
    assert len(turns) == 2
    for t in turns:
        agent = json.loads(t["extra_json"])["agent"]
        voice = agent["voice"]
        assert agent["adapter"] == "http" and agent["messages"] == [" ".join(SENTENCES)]
        assert voice["pipeline"] == "streaming" and voice["llm_streamed"] is False
        assert voice["spoken_chunks"] == 3 and voice["spoken_text"] == " ".join(SENTENCES)
        assert t["agent_message"] == voice["heard_text"]  # the caller (and the judges) got what was heard
        assert voice["time_to_first_audio_ms"] > 0 and voice["audio"].endswith("-agent.wav")
    # the agent was sent what the harness's STT heard of the caller
    user_heard = [t["user_message"] for t in turns]
    assert [r["message"] for r in bot.requests] == user_heard
    assert "## Agent under test" in out and "## Voice" in out and "adapter `http`, agent `voicebot`" in out


@pytest.mark.parametrize("flags", [("--turn-based",), ("--duplex", "--compute", "modelled")],
                         ids=["turn-based", "duplex"])
def test_turn_based_and_duplex_calls_take_the_team_agent(simulate, flags):
    reader, run_id, _, _ = simulate(*flags)
    turns = reader.turns(f"{run_id}:wifi")
    assert turns
    agent = json.loads(turns[0]["extra_json"])["agent"]
    assert agent["adapter"] == "http" and agent["trace"]["tool_calls"][0]["name"] == "kb"
    assert agent["voice"]["heard_text"] == turns[0]["agent_message"]


def test_a_voiced_agent_that_fails_ends_only_its_call(simulate):
    reader, run_id, out, _ = simulate(limit=2)
    rows = {r["task_id"]: r for r in reader.interactions(run_id)}
    assert rows["disk"]["stop_reason"] == "agent_error" and rows["wifi"]["stop_reason"] == "max_turns"
    assert json.loads(rows["disk"]["error"])["status"] == 503
    assert "(`agent_error`): 1" in out


def test_call_simulate_maps_agent_to_run_agent():
    from ui.commands import build_parser
    parser = build_parser()
    sub = parser.parse_args(["call", "simulate", "--agent", "http", "--agent-url", "http://x:1/chat"])
    assert sub.agent == "http" and sub.agent_url == "http://x:1/chat"
    simulate = next(a for a in parser._subparsers._group_actions[0].choices["call"]._subparsers
                    ._group_actions[0].choices["simulate"]._actions if "--agent" in a.option_strings)
    assert simulate.config_key == "run.agent" and load_config().run.agent in simulate.choices
