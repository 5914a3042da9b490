"""A person as the NoisyToolBench user on the real embedded model: the app's NoisyToolBench
sessions (``AppServices.ntb``) with the embedded agent, API simulator and judge. The "person"
answers each question with the case's clarification in their own words, until the agent answers,
a cap is reached or three answers were given (then the session is ended). Checks that every step
is stored as a batch step and that the session is scored like a batch case. Slow."""
import asyncio
import json

import pytest

from harness.config import load_config
from harness.live.ntb_sessions import MODE, RUN_KIND
from harness.live.services import AppServices
from harness.ntb import scoring
from harness.ntb.cases import load_case

SOURCES = ("recorded", "response_example", "template", "llm_simulated", "error")


@pytest.mark.integration
def test_a_person_answers_the_embedded_agent_and_the_session_is_scored(tmp_path):
    cfg = load_config(overrides={"store": str(tmp_path / "ntb.sqlite"), "app": {"port": 0},
                                 "ntb": {"max_steps": 4}})
    case = load_case("IMKI/2")
    words = f"Sorry, I meant {case.clarification}."
    services = AppServices(cfg, organiser_secret="x")

    async def play():
        ntb, view = services.ntb, None
        async for view in ntb.start("IMKI/2"):
            assert view.instruction == case.query and view.meaning == case.clarification
        answers = 0
        while view.status == "active" and view.question and answers < 3:
            async for view in ntb.answer(view.session_id, words, question=view.question):
                pass
            answers += 1
        if view.status == "active":
            view = await ntb.end(view.session_id)
        return view

    try:
        view = asyncio.run(play())
        sess = services.ntb.store.session(view.session_id)
        reader = services.reader
        turns = reader.turns(sess["interaction_id"])
        calls = reader.llm_calls(sess["interaction_id"])
        (score,) = reader.scores(sess["run_id"], scoring.SCORER_NAME)
        run = reader.run(sess["run_id"])
    finally:
        services.close()

    assert view.status == "ended" and sess["mode"] == MODE and run["kind"] == RUN_KIND
    assert view.stop_reason in ("answered", "max_steps", "max_model_calls", "user_ended")
    steps = [json.loads(t["extra_json"]) for t in turns]
    assert steps == view.steps and 1 <= len(steps) <= 4
    for turn, step in zip(turns, steps):
        assert step["type"] in ("ask", "call", "answer")
        if step["type"] == "ask":
            assert step["person"] is True and turn["agent_message"] == step["text"]
            assert step["reply"] == (None if step.get("unanswered") else words) == turn["user_message"]
            # cosine similarity: an unrelated question can score below zero
            assert isinstance(step["matched"], bool) and -1.0001 <= step["similarity"] <= 1.0001
            assert step["threshold"] == cfg.ntb.threshold
        elif step["type"] == "call":
            assert step["source"] in SOURCES and turn["user_message"] == step["observation"]
    assert any(c["role"] == "agent" and c["model"] == cfg.role("agent").model for c in calls)
    f = score["figures"]
    assert f["case"] == "IMKI/2" and f["steps"] == len(steps) and f["A1"] in (0, 1)
    assert f["A2"] in (0, 1, None) and f["A3"] in (0, 1, None) and f["redundant_asking"] >= 0
    assert score["prompt_version"] == scoring.PROMPT_VERSION and score["scorer_version"] == scoring.SCORER_VERSION
    assert f["agent_variant"] == cfg.ntb.agent_variant and f["protocol"] == "text"
    if f["judge_model"] is not None:
        assert f["judge_model"] == score["judge_model"] == cfg.role("judge").model
    # the batch scorer, without a judge, agrees on everything that needs none
    rescored = asyncio.run(scoring.score_case(case, steps))
    assert (rescored["A1"], rescored["redundant_asking"], rescored["steps"]) == \
        (f["A1"], f["redundant_asking"], f["steps"])
