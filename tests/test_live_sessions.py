"""Live sessions through the real turn loop (interrupt/resume), with fake chat models."""
import json

import pytest

from harness.compose import Runtime
from harness.config import load_config
from harness.live.guards import LiveError, RateLimiter, clean_message
from harness.live.sessions import LiveSessions
from harness.live.studies import Studies, StudySpec
from harness.study.agreement import human_llm_agreement
from harness.tasks.datasets import load_dataset
from store import StoreReader, StoreWriter
from tests.fakes import default_responder, fake_factory


@pytest.fixture
def live(tmp_path):
    # the fake judges' fixed scores, as given (the rubric bounds: tests/test_helpfulness_bounds.py)
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "scoring": {"helpfulness_bounds": False},
                                 "app": {"max_turns": 4, "messages_per_minute": 100}})
    runtime = Runtime(cfg, fake_factory(default_responder(solve_at=3)))
    writer, reader = StoreWriter(cfg.store), StoreReader(cfg.store, must_exist=False)
    sessions = LiveSessions(runtime, writer, reader)
    yield sessions
    writer.close()
    runtime.close()


async def send(live, session_id, text, **kw):
    updates = [u async for u in live.send(session_id, text, **kw)]
    assert updates[-1].view is not None
    return updates


async def test_user_mode_turns_are_judged_and_stored_like_batch_turns(live):
    view = await live.start(mode="user", question="My wifi drops every few minutes.")
    assert view.awaiting == "user" and view.messages == [] and view.scenario is None
    updates = await send(live, view.session_id, "My wifi drops every few minutes.")
    partials = [u.partial for u in updates if u.partial]
    assert partials and partials[-1].startswith("Step 1")
    view = updates[-1].view
    assert [m.role for m in view.messages] == ["user", "agent"]
    assert view.awaiting == "user" and view.status == "active"
    turn = view.turns[0]
    assert turn["user_helpfulness"] == 6 and turn["agent_helpfulness"] == 8 and turn["solved"] == 0
    sess = live.store.session(view.session_id)
    kinds = {j["kind"] for j in live.store.judgments(sess["interaction_id"])}
    assert {"complexity", "user_helpfulness", "agent_helpfulness", "solved"} <= kinds
    # the solved-check fires at the third agent reply: the session ends and is scored
    await send(live, view.session_id, "Still drops.")
    view = (await send(live, view.session_id, "Tried it, it works now."))[-1].view
    assert view.status == "ended" and view.stop_reason == "solved" and len(view.turns) == 3
    scores = live.reader.scores(sess["run_id"])
    assert len(scores) == 1 and scores[0]["figures"]["solved"]
    run = live.reader.run(sess["run_id"])
    assert run["kind"] == "live" and run["prompt_version"] and run["scorer_version"]
    with pytest.raises(LiveError, match="has ended"):
        await send(live, view.session_id, "hello?")


async def test_agent_mode_person_answers_the_simulated_user(live, tasks_file):
    task = load_dataset(str(tasks_file)).tasks[0]
    view = await live.start(mode="agent", task=task, dataset="tasks")
    assert view.awaiting == "agent" and [m.role for m in view.messages] == ["user"]
    assert view.messages[0].content == task.question and view.scenario == task.question
    view = (await send(live, view.session_id, "Update the iwlwifi firmware and reboot."))[-1].view
    assert [m.role for m in view.messages] == ["user", "agent", "user"]
    assert view.turns[0]["agent_message"] == "Update the iwlwifi firmware and reboot."
    assert view.turns[0]["agent_helpfulness"] == 8
    view = await live.end(view.session_id)
    assert view.status == "ended" and view.stop_reason == "agent_ended"
    assert live.reader.run(live.store.session(view.session_id)["run_id"])["kind"] == "live_human_agent"


async def test_ratings_are_stored_beside_llm_judgments_and_agreement_is_computed(live):
    view = await live.start(mode="user", question="Disk full but du shows half used.")
    view = (await send(live, view.session_id, "Disk full but du shows half used."))[-1].view
    live.rate(view.session_id, 1, 7, False, rater="p-1")
    live.rate(view.session_id, 1, 9, False, rater="p-1")  # a new rating replaces the old one
    with pytest.raises(LiveError, match="1 to 10"):
        live.rate(view.session_id, 1, 11, None, rater="p-1")
    with pytest.raises(LiveError, match="no reply 5"):
        live.rate(view.session_id, 5, 5, None, rater="p-1")
    sess = live.store.session(view.session_id)
    human = live.store.human_judgments(sess["interaction_id"])
    assert [(j["kind"], j["score"], j["rater"]) for j in human] == [
        ("human_agent_helpfulness", 9, "p-1"), ("human_solved", 0, "p-1")]
    rows = live.store.human_vs_llm(sess["run_id"])
    assert rows[0]["human_helpfulness"] == 9 and rows[0]["llm_helpfulness"] == 8
    agreement = human_llm_agreement(rows)
    assert agreement["helpfulness"]["n"] == 1 and agreement["helpfulness"]["mean_difference"] == 1
    assert agreement["solved"]["percent_agreement"] == 1.0


async def test_sessions_are_isolated_and_survive_a_lost_checkpoint(live):
    a = await live.start(mode="user", question="Problem A: printer offline.")
    b = await live.start(mode="user", question="Problem B: bluetooth mouse lags.")
    await send(live, a.session_id, "Problem A: printer offline.")
    view_b = await live.view(b.session_id)
    assert view_b.messages == []
    with pytest.raises(LiveError, match="No such session"):
        await live.view(a.session_id, participant_id="someone-else")
    # the app restarted: the paused graph is gone, the store rebuilds it
    live.checkpointer.delete_thread(a.session_id)
    view = (await send(live, a.session_id, "It still says offline."))[-1].view
    assert [t["turn_index"] for t in view.turns] == [1, 2]
    assert view.turns[1]["user_message"] == "It still says offline."


async def test_ending_before_the_first_turn_stores_no_score(live):
    view = await live.start(mode="user", question="Screen flickers.")
    view = await live.end(view.session_id)
    assert view.status == "abandoned"
    sess = live.store.session(view.session_id)
    assert live.reader.interaction(sess["interaction_id"])["status"] == "abandoned"
    assert live.reader.scores(sess["run_id"]) == []


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("   \n ", "empty"), (None, "empty"), ("x" * 5001, "limit is 4,000"),
    ("\x00\x01\x02\x03\x04abc", "binary"), ("\ufffd" * 20, "binary"),
])
def test_bad_messages_are_refused_with_the_fix(text, message):
    with pytest.raises(LiveError, match=message):
        clean_message(text, 4000)


def test_control_characters_are_removed():
    assert clean_message("line one\x1b[31m\nline\ttwo\x07", 100) == "line one[31m\nline\ttwo"


def test_rate_limit_per_participant():
    now = [0.0]
    limiter = RateLimiter(2, clock=lambda: now[0])
    limiter.check("a"), limiter.check("a"), limiter.check("b")
    with pytest.raises(LiveError, match="too fast"):
        limiter.check("a")
    now[0] = 61.0
    limiter.check("a")


def test_studies_balance_tasks_and_pseudonymise(live, tasks_file):
    studies = Studies(live.store)
    sid = studies.create(StudySpec(name="Wifi study", dataset=str(tasks_file), task_limit=3,
                                   agents=["plain"], max_sessions=2))
    with pytest.raises(LiveError, match="consent"):
        studies.join(sid, "alice-01", consented=False)
    alice, bob = studies.join(sid, "alice-01", True), studies.join(sid, "bob-02", True)
    assert alice.startswith("p-") and "alice" not in alice
    assert studies.join(sid, "alice-01", True) == alice  # the same code finds the same pseudonym
    seen = []
    for pid in (alice, bob, alice):
        task, agent, dataset = studies.next_assignment(sid, pid)
        live.open(mode="user", agent=agent, study_id=sid, participant_id=pid, task=task,
                  dataset=dataset.name)
        seen.append(task.id)
    assert seen == ["wifi", "disk", "dns"]  # least-covered first, never twice for one person
    with pytest.raises(LiveError, match="all 2 conversations"):
        studies.next_assignment(sid, alice)
    with pytest.raises(LiveError, match="No such study"):
        studies.join("nope", "alice-01", True)
    with pytest.raises(LiveError, match="Task pool"):
        studies.create(StudySpec(name="x", dataset="missing.jsonl"))
    rows = live.store.sessions_of_study(sid)
    assert all("alice" not in json.dumps(r) for r in rows)


async def test_exports_are_pseudonymous_and_hold_no_secrets(live, tasks_file, tmp_path, monkeypatch):
    from harness.live import results

    monkeypatch.setenv("MY_API_KEY", "sk-very-secret-key")
    live.config.roles["judge"].api_key_env = "MY_API_KEY"  # only the variable's name is kept
    studies = Studies(live.store)
    sid = studies.create(StudySpec(name="Export study", dataset=str(tasks_file), task_limit=2))
    pid = studies.join(sid, "secret-code-42", True)
    task, agent, dataset = studies.next_assignment(sid, pid)
    session = live.open(mode="user", agent=agent, study_id=sid, participant_id=pid, task=task,
                        dataset=dataset.name)
    await live.begin(session)
    await send(live, session, "My wifi keeps dropping.", participant_id=pid)
    live.rate(session, 1, 6, False, rater=pid, participant_id=pid)
    await live.end(session, participant_id=pid)
    run_id = live.store.session(session)["run_id"]
    paths = results.export_with_sessions(live.reader, live.store, run_id, tmp_path / "out")
    assert {p.name for p in paths} >= {"interactions.jsonl", "turns.jsonl", "sessions.jsonl",
                                       "human_ratings.csv"}
    text = "".join(p.read_text() for p in paths)
    assert pid in text                      # the pseudonym is there ...
    for secret in ("secret-code-42", session, "sk-very-secret-key"):
        assert secret not in text           # ... codes, session tokens and keys are not
    summary, png = results.run_summary(live.reader, live.store, run_id, tmp_path / "out")
    assert "Human ratings vs the LLM judge" in summary and png.exists()
    viewer = results.conversation_markdown(live.reader, live.store, live.store.session(session)["interaction_id"])
    assert "human_agent_helpfulness** 6 by person " + pid in viewer
    assert "agent_helpfulness** 8 by" in viewer


async def test_a_participant_over_the_rate_limit_is_refused_and_nothing_is_stored(live):
    live.limiter = RateLimiter(1)
    view = await live.start(mode="user", question="Keyboard repeats keys.")
    await send(live, view.session_id, "Keyboard repeats keys.")
    with pytest.raises(LiveError, match="too fast"):
        await send(live, view.session_id, "Again?")
    assert len((await live.view(view.session_id)).turns) == 1


async def test_a_failing_model_keeps_the_conversation_and_asks_to_send_again(tmp_path):
    failures = {"agent": 1}
    base = default_responder(solve_at=None)

    def responders(role):
        inner = base(role)

        def respond(messages, kwargs):
            if role == "agent" and failures["agent"]:
                failures["agent"] -= 1
                err = RuntimeError("upstream said no")
                err.status_code = 400  # not retryable: fails for good at once
                return err
            return inner(messages, kwargs)
        return respond

    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "app": {"max_turns": 4}})
    runtime = Runtime(cfg, fake_factory(responders))
    writer, reader = StoreWriter(cfg.store), StoreReader(cfg.store, must_exist=False)
    live = LiveSessions(runtime, writer, reader)
    view = await live.start(mode="user", question="Sound crackles.")
    with pytest.raises(LiveError, match="send your message again"):
        await send(live, view.session_id, "Sound crackles.")
    assert (await live.view(view.session_id)).turns == []
    view = (await send(live, view.session_id, "Sound crackles.")).pop().view
    assert [t["user_message"] for t in view.turns] == ["Sound crackles."]
    writer.close()


async def test_a_free_session_rater_is_named_without_any_part_of_the_token(live):
    view = await live.start(mode="user", question="Trackpad freezes.")
    await send(live, view.session_id, "Trackpad freezes.")
    live.rate(view.session_id, 1, 5, None)
    (rating,) = live.store.human_judgments(live.store.session(view.session_id)["interaction_id"])
    assert rating["rater"].startswith("anon-")
    assert not any(view.session_id[i:i + 6] in rating["rater"] for i in range(len(view.session_id) - 5))


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def idle_live(tmp_path):
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"),
                                 "app": {"max_turns": 6, "messages_per_minute": 100, "idle_minutes": 30}})
    runtime = Runtime(cfg, fake_factory(default_responder(solve_at=None)))
    writer, reader = StoreWriter(cfg.store), StoreReader(cfg.store, must_exist=False)
    clock = FakeClock()
    sessions = LiveSessions(runtime, writer, reader, clock=clock)
    yield sessions, clock
    writer.close()
    runtime.close()


async def test_idle_conversations_leave_memory_and_continue_from_the_store(idle_live):
    live, clock = idle_live
    idle = await live.start(mode="user", question="Wi-Fi drops every hour.")
    await send(live, idle.session_id, "Wi-Fi drops every hour.")
    clock.now += 20 * 60
    busy = await live.start(mode="user", question="Keyboard repeats keys.")
    await send(live, busy.session_id, "Keyboard repeats keys.")
    assert live.in_memory() == 2
    clock.now += 11 * 60  # the first: 31 minutes idle; the second: 11
    assert live.evict_idle() == [idle.session_id]
    assert live.in_memory() == 1
    # the person comes back: the view is the stored one, and the next message continues it
    view = await live.view(idle.session_id)
    assert view.status == "active" and [t["turn_index"] for t in view.turns] == [1]
    view = (await send(live, idle.session_id, "It happened again.")).pop().view
    assert [t["user_message"] for t in view.turns] == ["Wi-Fi drops every hour.", "It happened again."]
    assert live.in_memory() == 2
    # ending frees the memory at once
    await live.end(idle.session_id)
    await live.end(busy.session_id)
    assert live.in_memory() == 0 and live.evict_idle() == []


async def test_sweeps_run_as_people_send_and_spare_a_turn_in_flight(idle_live):
    live, clock = idle_live
    old = await live.start(mode="user", question="Printer jams.")
    clock.now += 31 * 60
    async with live._locks[old.session_id]:  # a turn of the old session is in flight
        assert live.evict_idle() == []
    new = await live.start(mode="user", question="Mouse lags.")  # activity sweeps the idle one
    assert live.in_memory() == 1
    await send(live, new.session_id, "Mouse lags.")
    view = (await send(live, old.session_id, "Printer jams.")).pop().view
    assert [t["user_message"] for t in view.turns] == ["Printer jams."]


async def test_a_restored_agent_session_never_stores_a_reply_to_an_unread_message(idle_live, tasks_file):
    live, clock = idle_live
    task = load_dataset(str(tasks_file)).tasks[0]
    view = await live.start(mode="agent", task=task, dataset="tasks")
    await send(live, view.session_id, "Restart the router, please.")
    clock.now += 31 * 60
    assert live.evict_idle() == [view.session_id]
    # the person's page still shows the old customer message: the reply is refused, nothing
    # is stored, and the customer's message written anew is shown
    with pytest.raises(LiveError, match="restored"):
        await send(live, view.session_id, "Did that help?")
    shown = await live.view(view.session_id)
    assert len(shown.turns) == 1 and shown.messages[-1].role == "user"
    view = (await send(live, view.session_id, "Did that help?")).pop().view
    assert [t["agent_message"] for t in view.turns] == ["Restart the router, please.", "Did that help?"]
    # a person who reloads the page sees the rewritten message before answering
    clock.now += 31 * 60
    live.evict_idle()
    reloaded = await live.view(view.session_id)
    assert reloaded.messages[-1].role == "user" and len(reloaded.messages) == 5


async def test_one_sweep_drops_many_idle_conversations_and_keeps_the_others_intact(idle_live):
    live, clock = idle_live
    idle = []
    for problem in ("Printer jams.", "Mouse lags.", "Screen flickers."):
        view = await live.start(mode="user", question=problem)
        await send(live, view.session_id, problem)
        idle.append(view.session_id)
    clock.now += 40 * 60
    kept = await live.start(mode="user", question="Fan is loud.")  # this start sweeps the rest
    await send(live, kept.session_id, "Fan is loud.")
    assert live.in_memory() == 1 and live.evict_idle() == []
    saver = live.checkpointer
    assert not any(k[0] in idle for table in (saver.writes, saver.blobs) for k in table)
    graph = live._graph("user", "plain")
    assert (await graph.aget_state(live._thread(kept.session_id))).next  # still paused, not rebuilt
    for session_id in idle:
        view = (await send(live, session_id, "Any news?")).pop().view
        assert [t["turn_index"] for t in view.turns] == [1, 2]


async def test_a_spoken_reply_can_be_rated_for_its_voice_and_a_written_one_cannot(live):
    from harness.study.voice_report import voice_lines, voice_summary

    view = await live.start(mode="user", question="Printer offline.")
    await send(live, view.session_id, "Printer offline.")
    iid = live.store.session(view.session_id)["interaction_id"]
    with pytest.raises(LiveError, match="was not spoken"):
        live.rate(view.session_id, 1, None, None, naturalness=4)
    # the app's voice path records the spoken reply's audio on the turn (send_audio)
    live.store.merge_turn_extra(iid, 1, "agent", {"voice": {"audio": "audio/x/1-agent.wav"}})
    for bad in (0, 6, 2.5):
        with pytest.raises(LiveError, match="from 1 \\(bad\\) to 5"):
            live.rate(view.session_id, 1, None, None, comprehensibility=bad)
    assert live.store.human_judgments(iid) == []
    live.rate(view.session_id, 1, None, None, naturalness=4, comprehensibility=5)
    live.rate(view.session_id, 1, 7, None, naturalness=3)  # a re-rating replaces the earlier one
    kinds = {j["kind"]: j["score"] for j in live.store.human_judgments(iid)}
    assert kinds == {"human_agent_helpfulness": 7, "human_tts_naturalness": 3,
                     "human_tts_comprehensibility": 5}
    summary = voice_summary(live.reader, live.store.session(view.session_id)["run_id"])
    assert summary["people.naturalness"] == {"n": 1, "mean": 3.0, "p50": 3.0, "p95": 3.0}
    assert summary["people.comprehensibility"]["mean"] == 5.0
    lines = voice_lines(live.reader, live.store.session(view.session_id)["run_id"])
    assert any(line.startswith("| people | naturalness | 1 | 3.00") for line in lines)


async def test_a_reply_retried_mid_stream_is_shown_once_not_twice(tmp_path):
    """The agent's stream breaks after two words (a retryable 503); the retry streams the
    reply again from the start, and the page shows it once."""
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk
    from tests.fakes import ScriptedChatModel

    class StreamingModel(ScriptedChatModel):
        def _stream(self, messages, stop=None, run_manager=None, **kwargs):
            self.calls += 1
            words = self.responder(messages, kwargs).split(" ")
            for i, word in enumerate(words):
                if self.calls == 1 and i == 2:
                    err = RuntimeError("stream broke")
                    err.status_code = 503
                    raise err
                chunk = ChatGenerationChunk(message=AIMessageChunk(word if i == 0 else " " + word))
                if run_manager:
                    run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk

    responders = default_responder(solve_at=None)

    def factory(role, spec):
        cls = StreamingModel if role == "agent" else ScriptedChatModel
        return cls(responder=responders(role), prompts=[])

    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "app": {"max_turns": 4},
                                 "retry": {"base_s": 0.0}})
    runtime = Runtime(cfg, factory)
    writer, reader = StoreWriter(cfg.store), StoreReader(cfg.store, must_exist=False)
    live = LiveSessions(runtime, writer, reader)
    view = await live.start(mode="user", question="Sound crackles.")
    updates = await send(live, view.session_id, "Sound crackles.")
    partials = [u.partial for u in updates if u.partial is not None]
    reply = updates[-1].view.turns[0]["agent_message"]
    assert partials[-1] == reply and all(reply.startswith(p) for p in partials)
    assert len(partials) > len(reply.split(" "))  # the broken stream's words were shown first
    writer.close()
    runtime.close()
