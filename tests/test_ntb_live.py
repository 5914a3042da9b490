"""A person as the NoisyToolBench user (harness/live/ntb_sessions.py): the batch's tool loop paused at
each question with interrupt() and resumed with the person's answer, with scripted agents (fake
chat models) through the real graph, API environment, store and scorer."""
import asyncio
import json
import re

import pytest

from harness.compose import Runtime
from harness.config import load_config
from harness.live.guards import LiveError
from harness.live.ntb_sessions import MODE, RUN_KIND, NtbLiveSessions
from harness.ntb import scoring
from harness.ntb.batch import score_row
from harness.ntb.cases import load_case
from harness.ntb.report import export_run
from store import StoreReader, StoreWriter
from tests.fakes import ScriptedChatModel
from tests.test_ntb_loop import judge_approves, run_with_fakes

CASE = load_case("IMKI/2")  # Hot 100 chart; the date is missing (clarification: 2022-07-20)
CALL = CASE.expected_calls[0]["resolved_name"]


def date_agent(question=lambda n: CASE.question_to_ask):
    """A text-protocol agent that asks for the date, calls the chart API with the date the
    user's reply holds (so the reply must reach it) and answers. ``question(n)``: the question
    of its n-th model call."""
    calls = {"n": 0}

    def respond(messages, kwargs):
        calls["n"] += 1
        replies = [str(m.content) for m in messages if m.type == "human" and str(m.content).startswith("User:")]
        observed = any(str(m.content).startswith("Observation:") for m in messages)
        if observed:
            action = {"action": "final_answer", "text": "Here is the Hot 100 chart of that date."}
        elif replies:
            found = re.search(r"\d{4}-\d{2}-\d{2}", replies[-1])
            action = {"action": "call_api", "api_name": CALL,
                      "arguments": {"date": found.group(0) if found else replies[-1]}}
        else:
            action = {"action": "ask_user", "text": question(calls["n"])}
        return json.dumps({"thought": "", "api_name": "", "arguments": {}, "text": "", **action})
    return respond


def make_live(tmp_path, agent, clock=None, **ntb):
    tmp_path.mkdir(parents=True, exist_ok=True)
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"),
                                 "app": {"messages_per_minute": 100},
                                 "retry": {"max_attempts": 1},
                                 "ntb": {"api_simulator": False, **ntb}})
    models = {}
    responders = {"agent": agent, "judge": judge_approves}

    def factory(role, spec):
        models[role] = ScriptedChatModel(responder=responders[role], prompts=[])
        return models[role]
    runtime = Runtime(cfg, factory)
    writer, reader = StoreWriter(cfg.store), StoreReader(cfg.store, must_exist=False)
    live = NtbLiveSessions(runtime, writer, reader, **({"clock": clock} if clock else {}))
    live.models = models
    return live


@pytest.fixture
def live(tmp_path):
    live = make_live(tmp_path, date_agent())
    yield live
    live.writer.close()
    live.runtime.close()


async def collect(gen):
    return [v async for v in gen]


async def test_the_persons_answer_reaches_the_agent_and_each_step_is_a_stored_batch_step(live):
    views = await collect(live.start("IMKI/2"))
    view = views[-1]
    assert view.case == "IMKI/2" and view.instruction == CASE.query and view.meaning == CASE.clarification
    assert view.question == CASE.question_to_ask and view.status == "active" and view.steps == []
    views = await collect(live.answer(view.session_id, "Oh, the chart of 2022-07-20 please.",
                                      question=view.question))
    # a view after each stored step (ask, call, answer), then the final one
    assert [len(v.steps) for v in views] == [1, 2, 3, 3]
    view = views[-1]
    assert view.status == "ended" and view.stop_reason == "answered" and view.question is None
    # the person's words are what the agent read, and it called the API with the date they gave
    agent_prompts = live.models["agent"].prompts
    assert str(agent_prompts[1][-1].content) == "User: Oh, the chart of 2022-07-20 please."
    ask, call, answer = view.steps
    assert ask["reply"] == "Oh, the chart of 2022-07-20 please." and ask["person"] is True
    assert ask["matched"] and ask["similarity"] >= ask["threshold"] == 0.4
    assert ask["embedding_model"].startswith("all-MiniLM") and ask["ask_match"] == "message"
    assert call["arguments"] == {"date": "2022-07-20"} and call["source"] == "recorded"
    assert answer["type"] == "answer"
    sess = live.store.session(view.session_id)
    assert sess["mode"] == MODE and sess["task_id"] == "IMKI/2" and sess["status"] == "ended"
    turns = live.reader.turns(sess["interaction_id"])
    assert [t["agent_message"] for t in turns][0] == CASE.question_to_ask
    assert json.loads(turns[1]["agent_message"]) == {"name": CALL, "arguments": {"date": "2022-07-20"}}
    assert turns[1]["user_message"] == call["observation"]
    calls = live.reader.llm_calls(sess["interaction_id"])
    assert [c["turn_index"] for c in calls if c["role"] == "agent"] == [1, 2, 3]
    run = live.reader.run(sess["run_id"])
    assert run["kind"] == RUN_KIND and run["prompt_version"] == "ntb-agent-1"
    assert run["scorer_version"] == scoring.SCORER_VERSION and run["dataset"] == "noisytoolbench"
    (row,) = live.reader.scores(sess["run_id"], "noisytoolbench")
    f = row["figures"]
    assert (f["A1"], f["A2"], f["A3"], f["redundant_asking"], f["steps"]) == (1, 1, 1, 0, 3)
    assert row["judge_model"] == f["judge_model"] and row["prompt_version"] == scoring.PROMPT_VERSION
    assert row["scorer_version"] == scoring.SCORER_VERSION and f["agent_variant"] == "current"
    assert view.scores == f


async def test_a_wrong_answer_leads_the_agent_astray_and_the_scores_say_so(live):
    view = (await collect(live.start("IMKI/2")))[-1]
    view = (await collect(live.answer(view.session_id, "2021-01-01", question=view.question)))[-1]
    assert view.steps[1]["arguments"] == {"date": "2021-01-01"}
    # the question was the anticipated one (A1), but the call is not the expected one
    assert (view.scores["A1"], view.scores["A2"], view.scores["A3"]) == (1, 0, 0)


def test_live_scores_equal_the_batch_scores_of_the_same_transcript(live, tmp_path):
    """The simulated user answers with the clarification; a person who types exactly that
    gets the same stored steps and the same score figures as the batch."""
    async def play():
        view = (await collect(live.start("IMKI/2")))[-1]
        return (await collect(live.answer(view.session_id, CASE.clarification)))[-1]
    view = asyncio.run(play())  # the batch below runs its own event loop
    sess = live.store.session(view.session_id)
    live_turns = live.reader.turns(sess["interaction_id"])
    (live_score,) = live.reader.scores(sess["run_id"], "noisytoolbench")

    (tmp_path / "batch").mkdir()
    reader, run_id, _ = run_with_fakes(tmp_path / "batch", {"agent": date_agent(), "judge": judge_approves},
                                       {"ntb": {"ids": ["IMKI/2"], "api_simulator": False}})
    (interaction,) = reader.interactions(run_id)
    batch_turns = reader.turns(interaction["id"])
    (batch_score,) = reader.scores(run_id, "noisytoolbench")
    assert live_score["figures"] == batch_score["figures"]
    for column in ("scorer", "scorer_version", "formula", "weights_json", "judge_model", "prompt_version"):
        assert live_score[column] == batch_score[column]
    columns = ("turn_index", "agent_message", "user_message", "input_tokens", "output_tokens")
    assert [{c: t[c] for c in columns} for t in live_turns] == [{c: t[c] for c in columns} for t in batch_turns]
    live_steps = [json.loads(t["extra_json"]) for t in live_turns]
    batch_steps = [json.loads(t["extra_json"]) for t in batch_turns]
    assert [{k: v for k, v in s.items() if k != "person"} for s in live_steps] == batch_steps
    # and the batch scorer on the stored steps gives the stored figures
    rescored = asyncio.run(scoring.score_case(CASE, live_steps, judge=live.runtime.structured_judge("judge")))
    assert rescored == {k: v for k, v in live_score["figures"].items() if k not in ("agent_variant", "protocol", "task_id", "trial")}
    assert score_row(sess["interaction_id"], live_score["figures"])["figures_json"] == live_score["figures_json"]


async def test_ending_while_a_question_waits_stores_it_unanswered_and_scores_the_session(live):
    view = (await collect(live.start("IMKI/2")))[-1]
    view = await live.end(view.session_id)
    assert view.status == "ended" and view.stop_reason == "user_ended"
    (ask,) = view.steps
    assert ask["type"] == "ask" and ask["reply"] is None and ask["unanswered"] and ask["matched"]
    f = view.scores
    assert (f["A1"], f["A2"], f["A3"], f["redundant_asking"], f["steps"]) == (1, 0, 0, 0, 1)
    sess = live.store.session(view.session_id)
    assert [c["turn_index"] for c in live.reader.llm_calls(sess["interaction_id"]) if c["role"] == "agent"] == [1]


async def test_bad_input_is_refused_with_the_problem_and_the_fix(live):
    for bad in ("IMKI/99", "nonsense", "XYZ/3"):
        with pytest.raises(LiveError, match=r"Unknown NoisyToolBench case .*e\.g\. IMKI/3"):
            live.open(bad)
    assert live.case("imki/2").key == "IMKI/2" and live.case(" iwe/7 ").key == "IwE/7"
    assert live.case("").category in scoring.CATEGORIES  # empty: a random case
    view = (await collect(live.start("IMKI/2")))[-1]
    for empty in ("", "   ", None):
        with pytest.raises(LiveError, match="answer is empty"):
            await collect(live.answer(view.session_id, empty))
    with pytest.raises(LiveError, match="No such NoisyToolBench session"):
        await collect(live.answer("not-a-session", "2022-07-20"))
    with pytest.raises(LiveError, match="No such NoisyToolBench session"):
        await live.end("not-a-session")
    with pytest.raises(LiveError, match="No such NoisyToolBench session"):
        await collect(live.proceed("not-a-session"))
    assert "not-a-session" not in live._locks  # a bogus id leaves nothing in memory
    with pytest.raises(LiveError, match="No such NoisyToolBench session"):
        await live.view(view.session_id, participant_id="someone-else")
    await live.end(view.session_id)
    with pytest.raises(LiveError, match="already ended .*Start a new case"):
        await collect(live.answer(view.session_id, "2022-07-20"))
    with pytest.raises(LiveError, match="already ended"):
        await live.end(view.session_id)
    with pytest.raises(LiveError, match="already ended"):
        await collect(live.proceed(view.session_id))
    # nothing of the refused answers was stored
    assert len(live.reader.turns(live.store.session(view.session_id)["interaction_id"])) == 1


async def test_after_a_restart_the_agent_asks_anew_and_an_answer_to_the_old_question_is_refused(tmp_path):
    first = make_live(tmp_path, date_agent(lambda n: f"Which date do you mean? (call {n})"))
    view = (await collect(first.start("IMKI/2")))[-1]
    assert view.question == "Which date do you mean? (call 1)"
    first.writer.close()
    # the app restarted: a new process, the same store
    again = make_live(tmp_path, date_agent(lambda n: f"Which date do you mean? (restored, call {n})"))
    shown = (await again.view(view.session_id))
    assert shown.paused and shown.question is None
    with pytest.raises(LiveError, match="question has changed"):
        await collect(again.answer(view.session_id, "2022-07-20", question=view.question))
    view = await again.view(view.session_id)
    assert view.question == "Which date do you mean? (restored, call 1)" and view.steps == []
    view = (await collect(again.answer(view.session_id, "2022-07-20", question=view.question)))[-1]
    assert view.status == "ended" and view.scores["A2"] == 1
    assert view.steps[0]["text"] == "Which date do you mean? (restored, call 1)"
    again.writer.close()


async def test_a_failed_model_call_keeps_the_stored_steps_and_continue_goes_on(tmp_path):
    state = {"fail": False}
    agent = date_agent()

    def flaky(messages, kwargs):
        if state["fail"]:
            state["fail"] = False
            return RuntimeError("the agent's endpoint fell over")
        return agent(messages, kwargs)
    live = make_live(tmp_path, flaky)
    view = (await collect(live.start("IMKI/2")))[-1]
    state["fail"] = True
    with pytest.raises(LiveError, match="did not answer.*press Continue"):
        await collect(live.answer(view.session_id, "2022-07-20", question=view.question))
    view = await live.view(view.session_id)
    assert view.paused and view.question is None and view.status == "active"
    assert [s["reply"] for s in view.steps] == ["2022-07-20"]  # the answer is kept
    views = await collect(live.proceed(view.session_id))
    assert views[-1].status == "ended" and [s["type"] for s in views[-1].steps] == ["ask", "call", "answer"]
    live.writer.close()


async def test_idle_sessions_leave_memory_and_are_rebuilt_from_the_store(tmp_path):
    now = {"t": 0.0}
    live = make_live(tmp_path, date_agent(), clock=lambda: now["t"])
    view = (await collect(live.start("IMKI/2")))[-1]
    now["t"] += live.config.app.idle_minutes * 60 + 61
    assert live.evict_idle() == [view.session_id] and live.checkpointer.storage.get(view.session_id) is None
    # the same question is asked again on the rebuild, so the page's answer stands
    view = (await collect(live.answer(view.session_id, "2022-07-20", question=view.question)))[-1]
    assert view.status == "ended" and [s["type"] for s in view.steps] == ["ask", "call", "answer"]
    live.writer.close()


async def test_sessions_of_one_configuration_share_a_run_that_ntb_export_reads(live, tmp_path):
    a = (await collect(live.start("IMKI/2")))[-1]
    await collect(live.answer(a.session_id, "2022-07-20"))
    b = (await collect(live.start("IMKI/2")))[-1]
    await live.end(b.session_id)
    run_ids = {live.store.session(s)["run_id"] for s in (a.session_id, b.session_id)}
    assert run_ids == {live.run_id()} and live.run_id().startswith("live-ntb-current-")
    files = export_run(live.reader, live.run_id(), tmp_path / "out")
    lines = [json.loads(x) for x in files[1].read_text().splitlines()]
    assert [len(x["steps"]) for x in lines] == [3, 1] and lines[0]["category"] == "IMKI"
    # the Organiser's conversation viewer shows a session's steps
    from harness.live.results import conversation_markdown
    shown = conversation_markdown(live.reader, live.store, live.store.session(a.session_id)["interaction_id"])
    assert CASE.question_to_ask in shown and "2022-07-20" in shown
    other = make_live(tmp_path / "other", date_agent(), agent_variant="awn")
    assert other.run_id().startswith("live-ntb-awn-") and other.run_id() != live.run_id()
    other.writer.close()


def test_the_page_shows_questions_calls_and_scores():
    from harness.live.ntb_views import NOISE, NtbSessionView
    from ui.ntb_tab import chat_messages, private_text, scores_text, status_line
    steps = [{"type": "ask", "text": "Which date?", "reply": "2022-07-20"},
             {"type": "call", "name": CALL, "arguments": {"date": "2022-07-20"}, "observation": "x" * 5000,
              "source": "recorded"},
             {"type": "answer", "text": "Here it is."}]
    view = NtbSessionView("s", "IMKI/2", "IMKI", CASE.query, CASE.clarification, NOISE["IMKI"], "ended",
                          steps, None, False, "answered",
                          {"A1": 1, "A2": 1, "A3": None, "redundant_asking": 0, "steps": 3,
                           "judge_model": "judge-x", "prompt_version": "ntb-judge-p1",
                           "scorer_version": "ntb-1.2"}, "current", 12)
    messages = chat_messages(view)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "assistant"]
    assert CALL in messages[3]["content"] and "recorded" in messages[3]["content"]
    assert len(messages[3]["content"]) < 2000  # a long observation is cut on the page
    assert "Private" in private_text(view) and CASE.clarification in private_text(view)
    assert "| 1 | 1 | n/a | 0 | 3 |" in scores_text(view) and "judge-x" in scores_text(view)
    assert "final answer" in status_line(view)
