"""People chat with a team's own agent in the live app (``python app.py --agent http --agent-url
URL``): a real local HTTP agent (a Starlette app under uvicorn in a thread, tests/agent_server.py),
fake chat models for the judges and the simulated user. A free session and a study can pick it,
its turns are stored with its trace like batch turns, a spoken reply of an agent that does not
stream is spoken sentence by sentence, and when it fails the person is told what failed and the
conversation is stored as an agent error."""
from __future__ import annotations

import json
from time import perf_counter

import pytest

from harness.compose import Runtime
from harness.config import ConfigError, load_config
from harness.live.guards import LiveError
from harness.live.services import AppServices
from harness.live.sessions import LiveSessions
from harness.live.speech import speak_while_streaming
from harness.live.studies import Studies, StudySpec
from harness.live.results import conversation_markdown
from harness.voice.audiostore import AudioStore
from store import StoreReader, StoreWriter
from tests.agent_server import ScriptedAgent, serve
from tests.fakes import default_responder, fake_factory
from tests.test_voice_stream_fakes import ToneSpeaker, Vocabulary
from ui.helpdesk_view import status_line

REPLY = "Reload the driver first. Then turn off power saving. Tell me if it still drops."
TRACE = {"tool_calls": [{"name": "kb_search", "arguments": {"q": "wifi drops"}, "result": "KB-12"}],
         "retrieved": [{"id": "KB-12", "text": "iwlwifi power saving", "score": 0.8}]}


def team_config(tmp_path, url: str, **app):
    return load_config(overrides={
        "store": str(tmp_path / "s.sqlite"), "retry": {"base_s": 0.0, "max_attempts": 2},
        "scoring": {"helpfulness_bounds": False}, "agent": {"url": url, "name": "supportbot"},
        "run": {"agent": "http"},
        "app": {"agents": ["http"], "max_turns": 4, "messages_per_minute": 100, **app}})


@pytest.fixture
def bot():
    agent = ScriptedAgent(lambda req: {"reply": REPLY, "trace": TRACE})
    with serve(agent) as url:
        agent.url = url
        yield agent


@pytest.fixture
def live(tmp_path, bot):
    cfg = team_config(tmp_path, bot.url)
    runtime = Runtime(cfg, fake_factory(default_responder(solve_at=None)))
    writer, reader = StoreWriter(cfg.store), StoreReader(cfg.store, must_exist=False)
    yield LiveSessions(runtime, writer, reader)
    writer.close()
    runtime.close()


async def send(live, session_id, text):
    updates = [u async for u in live.send(session_id, text)]
    return updates[-1].view


async def test_a_free_session_chats_with_the_team_agent_and_stores_its_trace(live, bot):
    view = await live.start(mode="user", agent="http", question="My wifi drops every few minutes.")
    view = await send(live, view.session_id, "My wifi drops every few minutes.")
    assert view.status == "active" and view.messages[-1].content == REPLY
    assert bot.requests[0]["message"] == "My wifi drops every few minutes." and bot.requests[0]["turn"] == 1
    turn = view.turns[0]
    agent = json.loads(turn["extra_json"])["agent"]
    assert agent["adapter"] == "http" and agent["agent"] == "supportbot" and agent["trace"] == TRACE
    assert agent["usage"] == "not reported" and turn["input_tokens"] is None and turn["cost"] is None
    assert turn["agent_helpfulness"] == 8  # judged like any reply
    view = await send(live, view.session_id, "Still drops.")
    assert bot.requests[1]["messages"][1] == {"role": "assistant", "content": REPLY}
    sess = live.store.session(view.session_id)
    calls = [c for c in live.reader.llm_calls(sess["interaction_id"]) if c["role"] == "agent"]
    assert [c["purpose"] for c in calls] == ["agent:http", "agent:http"] and calls[0]["model"] == "supportbot"
    assert live.reader.run(sess["run_id"])["name"].startswith("live-free:supportbot_")
    shown = conversation_markdown(live.reader, live.store, sess["interaction_id"])
    assert "tool call **kb_search**" in shown and "cost not reported" in shown


async def test_the_agents_failure_ends_the_conversation_with_a_clear_message(live, bot):
    view = await live.start(mode="user", agent="http", question="My disk is full.")
    await send(live, view.session_id, "My disk is full.")
    bot.failures = [(503, "maintenance window", None)] * 2
    view = await send(live, view.session_id, "du shows half used.")
    assert view.status == "ended" and view.stop_reason == "agent_error" and len(view.turns) == 1
    assert view.agent_error["kind"] == "server_error" and view.agent_error["status"] == 503
    line = status_line(view)
    assert "agent under test failed at turn 2" in line and "supportbot (http)" in line
    assert "server error, HTTP 503" in line and "after 2 attempt(s)" in line
    sess = live.store.session(view.session_id)
    row = live.reader.interaction(sess["interaction_id"])
    detail = json.loads(row["error"])
    assert row["status"] == "completed" and detail["user_message"] == "du shows half used."
    failed = [c for c in live.reader.llm_calls(sess["interaction_id"]) if c["error"]]
    assert len(failed) == 2 and all(c["turn_index"] == 2 for c in failed)
    assert live.reader.scores(sess["run_id"])[0]["figures"]["stop_reason"] == "agent_error"
    with pytest.raises(LiveError, match="has ended"):
        await send(live, view.session_id, "hello?")


async def test_a_failure_on_the_first_message_is_an_agent_error_not_an_abandoned_session(live, bot):
    bot.failures = [(500, "boom", None)] * 2
    view = await live.start(mode="user", agent="http", question="Printer offline.")
    view = await send(live, view.session_id, "Printer offline.")
    assert (view.status, view.stop_reason, view.turns) == ("ended", "agent_error", [])
    assert "at turn 1" in status_line(view)


async def test_a_spoken_reply_of_an_agent_that_does_not_stream_is_spoken_sentence_by_sentence(live, tmp_path):
    view = await live.start(mode="user", agent="http", question="My wifi drops.")
    updates = [u async for u in speak_while_streaming(
        live, view.session_id, "My wifi drops.", {"transcript": "My wifi drops."}, 1,
        ToneSpeaker(Vocabulary()), AudioStore(live.config.store), perf_counter())]
    chunks = [u.chunk for u in updates if u.chunk is not None]
    assert [c.text for c in chunks] == ["Reload the driver first.", "Then turn off power saving.",
                                        "Tell me if it still drops."]
    final = updates[-1]
    assert final.audio and final.view.turns[0]["agent_message"] == REPLY
    agent = json.loads(final.view.turns[0]["extra_json"])["agent"]
    assert agent["trace"] == TRACE and agent["voice"]["spoken_chunks"] == 3
    assert agent["voice"]["llm_streamed"] is False


def test_sessions_and_studies_pick_the_apps_agents(live, tmp_path):
    with pytest.raises(LiveError, match="Unknown agent 'openai'"):
        live.open(mode="user", agent="openai", question="hi")
    with pytest.raises(LiveError, match="one or more of plain, rag; got"):
        Studies(live.store).create(StudySpec(name="s", dataset="lfrqa_technology", agents=["http"]))
    studies = Studies(live.store, live.app.agents)
    study_id = studies.create(StudySpec(name="Team bot", dataset="lfrqa_technology", task_limit=2,
                                        agents=["http"]))
    assert studies.study(study_id)["config"]["agents"] == ["http"]


def test_the_app_serves_the_agent_run_agent_names(tmp_path, bot):
    cfg = team_config(tmp_path, bot.url)
    cfg.run.agent = "plain"
    with pytest.raises(ConfigError, match="run.agent is 'plain'"):
        AppServices(cfg, chat_models=fake_factory(default_responder()))


def test_the_organiser_offers_the_apps_agents_and_creates_a_study_of_the_team_agent(tmp_path, bot):
    import gradio as gr
    from ui.organiser import OrganiserHandlers, build_organiser
    services = AppServices(team_config(tmp_path, bot.url), chat_models=fake_factory(default_responder()),
                           organiser_secret="s3cret")
    try:
        with gr.Blocks() as page:
            build_organiser(services)
        boxes = [b for b in page.blocks.values() if isinstance(b, gr.CheckboxGroup)]
        assert [c[1] for c in boxes[0].choices] == ["http"] and boxes[0].value == ["http"]
        note = OrganiserHandlers(services).guarded(OrganiserHandlers(services).create_study, 3)(
            "s3cret", "Team bot", "lfrqa_technology", 2, ["http"], "user", 1, "I agree.")[0]
        assert note.startswith("Study created")
    finally:
        services.close()
