"""NoisyToolBench agent variants (current, Ask-when-Needed, no-ask), the official counting
rules (whole-message match, repeated matches, "limitation of toolset") and the recorded
settings, with fake chat models through the real graph, user, environment, store and scorer."""
import asyncio
import json

import pytest

from harness.config import load_config
from harness.models.llm import RoleClient
from harness.ntb import agent as ntb_agent
from harness.ntb.agent import NativeToolAgent, TextProtocolAgent
from harness.ntb.cases import load_case
from harness.ntb.user import NO_INFO, SimulatedToolUser
from tests.fakes import ScriptedChatModel
from tests.test_ntb_loop import agent_script, ideal, judge_approves, run_with_fakes


def run_variant(tmp_path, plan, ids, variant, **ntb):
    """Run ``ids`` with ``ntb.agent_variant = variant``; returns the reader, the run id, the
    figures per case and the fake models by role."""
    reader, run_id, models = run_with_fakes(
        tmp_path, {"agent": agent_script(plan), "judge": judge_approves,
                   "api_simulator": lambda m, k: '{"draws": [[1, 2, 3, 4, 5]]}'},
        {"ntb": {"ids": ids, "api_simulator": False, "agent_variant": variant, **ntb}})
    figures = {s["interaction_id"].split(":", 1)[1]: s for s in reader.scores(run_id, "noisytoolbench")}
    return reader, run_id, figures, models


def stored_steps(reader, run_id):
    [i] = reader.interactions(run_id)
    return [json.loads(t["extra_json"]) for t in reader.turns(i["id"])]


def schema_actions(kwargs):
    return kwargs["response_format"]["json_schema"]["schema"]["properties"]["action"]["enum"]


class Recorder(ScriptedChatModel):
    """Keeps the kwargs (response_format) of every call beside the prompts."""
    kwargs_seen: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.kwargs_seen.append(kwargs)
        return super()._generate(messages, stop, run_manager, **kwargs)


def text_agent(variant, replies):
    replies = list(replies)
    model = Recorder(responder=lambda m, k: replies.pop(0), prompts=[], kwargs_seen=[])
    from harness.config import ModelSpec
    return TextProtocolAgent(RoleClient("agent", ModelSpec(), model), retries=2, variant=variant), model


def action(**kw):
    return json.dumps({"thought": "", "action": "final_answer", "api_name": "", "arguments": {}, "text": "", **kw})


# --- the prompt each variant sends ----------------------------------------------------------------

def test_each_variant_sends_its_own_prompt_and_schema():
    case = load_case("IMKI/2")
    seen = {}
    for variant in ("current", "awn", "no-ask"):
        agent, model = text_agent(variant, [action(text="done")])
        asyncio.run(agent.act(case, []))
        system = str(model.prompts[0][0].content)
        seen[variant] = system
        assert "hot_100_for_billboard" in system and str(model.prompts[0][1].content) == case.query
        actions = schema_actions(model.kwargs_seen[0])
        assert actions == (["call_api", "final_answer"] if variant == "no-ask"
                           else ["call_api", "ask_user", "final_answer"])
    assert seen["current"].startswith(ntb_agent.SYSTEM.split("{apis}")[0])
    assert "ask_user" in seen["current"] and "Question:" not in seen["current"]
    # AwN: the reflection rules, the limitation sentence and ONE example naming the missing argument
    awn = seen["awn"]
    assert "Before each action" in awn and ntb_agent.LIMITATION_TEXT in awn
    assert awn.count("Example") == 1 and '"text": "Question: What is the hotel_id of your hotel?"' in awn
    assert len(awn) < len(seen["current"]) + 1200  # short: a 1.5B model reads it every step
    # no-ask: asking is not offered anywhere
    assert "ask_user" not in seen["no-ask"] and "Question:" not in seen["no-ask"]


def test_native_variants_offer_ask_user_except_no_ask():
    from harness.config import ModelSpec
    case = load_case("IMKI/2")
    for variant, has_ask in (("current", True), ("awn", True), ("no-ask", False)):
        agent = NativeToolAgent(RoleClient("agent", ModelSpec(), ScriptedChatModel(responder=None, prompts=[])), variant)
        names = [t["function"]["name"] for t in agent.tools(case)]
        assert ("ask_user" in names) == has_ask and "final_answer" in names
        system = str(agent.messages(case, [])[0].content)
        assert ("Question: What is the hotel_id" in system) == (variant == "awn")


def test_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="agent variant"):
        text_agent("sometimes-ask", [])


# --- AwN: the official markers --------------------------------------------------------------------

def test_awn_question_marker_makes_any_message_a_question():
    agent, _ = text_agent("awn", [action(action="final_answer", text="Question: Which date should the chart be for?")])
    act = asyncio.run(agent.act(load_case("IMKI/2"), []))
    assert act.kind == "ask" and act.text.startswith("Question:")
    quoting, _ = text_agent("awn", [action(action="final_answer", text="The trivia API says: Question: 2+2? Answer: 4")])
    assert asyncio.run(quoting.act(load_case("IMKI/2"), [])).kind == "answer"  # quoted API data is no question
    current, _ = text_agent("current", [action(action="final_answer", text="Question: Which date?")])
    assert asyncio.run(current.act(load_case("IMKI/2"), [])).kind == "answer"  # only AwN reads markers


def test_awn_limitation_ends_the_case_without_counting_as_a_question(tmp_path):
    def plan(query, step):
        return {"action": "ask_user", "thought": "No API can do this.", "text": ntb_agent.LIMITATION_TEXT}
    reader, run_id, figures, models = run_variant(tmp_path, plan, ["IMKI/2"], "awn")
    steps = stored_steps(reader, run_id)
    assert [s["type"] for s in steps] == ["answer"] and steps[0]["limitation"] is True
    f = figures["IMKI/2"]["figures"]
    assert (f["A1"], f["redundant_asking"], f["steps"], f["A3"]) == (0, 0, 1, 0)
    assert reader.interactions(run_id)[0]["stop_reason"] == "answered"


def test_a_limitation_answer_scores_a3_zero_without_a_judge_call():
    """Official: the "limitation of toolset" message ends the case with no final answer."""
    from harness.config import ModelSpec
    from harness.ntb.scoring import score_case
    from harness.selfscore.judges import StructuredJudge
    case = load_case("IMKI/2")
    call = case.expected_calls[0]
    steps = [{"type": "call", "name": call["name"], "arguments": call["arguments"], "observation": "{}"},
             {"type": "answer", "text": ntb_agent.LIMITATION_TEXT, "limitation": True}]
    model = ScriptedChatModel(responder=judge_approves, prompts=[])
    judge = StructuredJudge(RoleClient("judge", ModelSpec(), model), 0)
    row = asyncio.run(score_case(case, steps, judge=judge))
    assert (row["A2"], row["A3"], row["judged"]["A3"]) == (1, 0, "rule") and model.calls == 0
    assert "limitation" in row["reason"]
    plain = asyncio.run(score_case(case, [steps[0], {"type": "answer", "text": "Here it is."}], judge=judge))
    assert plain["A3"] == 1 and model.calls == 1


def test_awn_run_asks_then_calls_and_records_the_variant(tmp_path):
    case = load_case("IMKI/2")
    base = ideal("IMKI/2")

    def plan(query, step):
        out = base(query, step)
        if out["action"] == "ask_user":
            out = {**out, "thought": "hot_100 needs a date; none given.", "text": "Question: " + case.question_to_ask}
        return out
    reader, run_id, figures, models = run_variant(tmp_path, plan, ["IMKI/2"], "awn")
    steps = stored_steps(reader, run_id)
    assert [s["type"] for s in steps] == ["ask", "call", "answer"]
    assert steps[0]["reply"] == case.clarification and steps[0]["ask_match"] == "message"
    row = figures["IMKI/2"]
    f = row["figures"]
    assert (f["A1"], f["A2"], f["A3"], f["redundant_asking"]) == (1, 1, 1, 0)
    assert f["agent_variant"] == "awn" and f["ask_match"] == "message"
    assert json.loads(row["weights_json"])["agent_variant"] == "awn"
    assert f["asks"][0]["compared"].startswith("hot_100 needs a date")  # the whole message was embedded
    run = reader.run(run_id)
    assert run["config"]["ntb"]["agent_variant"] == "awn" and run["prompt_version"] == "ntb-agent-awn-1"
    assert "+awn_ntb_" in run["name"]
    assert "Before each action" in str(models["agent"].prompts[0][0].content)


# --- no-ask: never reaches the user ---------------------------------------------------------------

def test_no_ask_never_reaches_the_user(tmp_path, monkeypatch):
    asked = []

    async def spy(self, case, question, steps, thought=None):
        asked.append(question)
        raise AssertionError("a no-ask run forwarded a question to the user")
    monkeypatch.setattr(SimulatedToolUser, "reply", spy)

    def plan(query, step):  # the model ignores the schema and asks anyway, every time
        return {"action": "ask_user", "text": "Which date do you mean?"}
    reader, run_id, figures, models = run_variant(tmp_path, plan, ["IMKI/2"], "no-ask")
    assert asked == []
    steps = stored_steps(reader, run_id)
    assert [s["type"] for s in steps] == ["answer"]
    assert steps[0]["ask_blocked"] is True and "not forwarded" in steps[0]["agent_error"]
    assert steps[0]["text"] == "Which date do you mean?"
    prompts = models["agent"].prompts
    assert len(prompts) == 3  # retried like any unusable action (run.judge_retries = 2)
    assert "asking the user is not available" in str(prompts[1][-1].content)
    f = figures["IMKI/2"]["figures"]
    assert (f["A1"], f["redundant_asking"], f["agent_variant"]) == (0, 0, "no-ask")
    assert reader.run(run_id)["prompt_version"] == "ntb-agent-noask-1"


def test_no_ask_recovers_when_the_retry_calls_an_api():
    replies = [action(action="ask_user", text="Which date?"),
               action(action="call_api", api_name="hot_100_for_billboard", arguments={"date": "2022-07-20"})]
    agent, _ = text_agent("no-ask", replies)
    act = asyncio.run(agent.act(load_case("IMKI/2"), []))
    assert act.kind == "call" and len(act.calls) == 2 and not act.flags


def test_native_no_ask_records_a_written_ask_as_the_answer():
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from harness.config import ModelSpec

    class AsksAnyway(ScriptedChatModel):
        def bind_tools(self, tools, **kw):
            return self.bind(tools=tools)

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            self.prompts.append(kwargs["tools"])
            msg = AIMessage("I need the date.", tool_calls=[{"name": "ask_user", "args": {"question": "Which date?"}, "id": "c1"}])
            return ChatResult(generations=[ChatGeneration(message=msg)])
    model = AsksAnyway(responder=None, prompts=[])
    agent = NativeToolAgent(RoleClient("agent", ModelSpec(), model), "no-ask")
    act = asyncio.run(agent.act(load_case("IMKI/2"), []))
    assert act.kind == "answer" and act.text == "Which date?" and act.flags == {"ask_blocked": True}
    assert "ask_user" not in [t["function"]["name"] for t in model.prompts[0]]


# --- what is compared with the anticipated question ----------------------------------------------

class RecordingEmbedder:
    model_id = "recording-embedder"

    def __init__(self):
        self.texts = []

    def __call__(self, texts):
        self.texts.append(list(texts))
        return [[1.0, 0.0] for _ in texts]


def test_user_compares_the_whole_message_or_the_question_alone():
    case = load_case("IMKI/2")
    for mode, expected in (("message", "I lack the date.\nWhich date?"), ("question", "Which date?")):
        emb = RecordingEmbedder()
        user = SimulatedToolUser(emb, 0.4, emb.model_id, ask_match=mode)
        out = asyncio.run(user.reply(case, "Which date?", [], thought="I lack the date."))
        assert emb.texts[0][0] == expected and out.detail["ask_match"] == mode


def test_scoring_embeds_what_the_user_compared():
    from harness.ntb.scoring import ask_match_text, score_case
    step = {"type": "ask", "text": "Question: Which date?", "thought": "The date is missing."}
    assert ask_match_text(step, "message") == "The date is missing.\nQuestion: Which date?"
    assert ask_match_text(step, "question") == "Question: Which date?"
    assert ask_match_text({"type": "ask", "text": "Which date?"}, "message") == "Which date?"
    with pytest.raises(ValueError, match="ask_match"):
        ask_match_text(step, "everything")
    emb = RecordingEmbedder()
    row = asyncio.run(score_case(load_case("IMKI/2"), [step, {"type": "answer", "text": "x"}],
                                 embedder=emb, ask_match="question"))
    assert emb.texts[0][1] == "Question: Which date?" and row["ask_match"] == "question"
    assert row["embedding_model"] == "recording-embedder"


def test_a_repeated_matching_question_is_answered_again_and_counted_redundant(tmp_path):
    case = load_case("IMKI/2")

    def plan(query, step):
        if step <= 2:
            return {"action": "ask_user", "text": case.question_to_ask}
        return {"action": "final_answer", "text": "Here you are."}
    reader, run_id, figures, _ = run_variant(tmp_path, plan, ["IMKI/2"], "current")
    asks = [s for s in stored_steps(reader, run_id) if s["type"] == "ask"]
    assert [a["reply"] for a in asks] == [case.clarification, case.clarification]  # official user
    assert [a["redundant"] for a in asks] == [False, True] and asks[1]["repeated"]
    f = figures["IMKI/2"]["figures"]
    assert (f["A1"], f["redundant_asking"], f["steps"]) == (1, 1, 3)


def test_non_matching_question_gets_the_official_reply():
    user = SimulatedToolUser(lambda texts: [[1.0, 0.0], [0.0, 1.0]], 0.4, "orthogonal")
    out = asyncio.run(user.reply(load_case("IMKI/2"), "Do you like cats?", []))
    assert out.text == NO_INFO == "I could not provide relevant information for this question."
    assert out.detail["redundant"] and not out.detail["matched"]


def test_ntb_run_cli_flags_reach_the_config():
    import argparse
    from harness.cli.ntb import add_ntb_commands, ntb_config
    parser = argparse.ArgumentParser()
    add_ntb_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["ntb", "run", "--agent-variant", "no-ask", "--embedding-model", "minilm",
                              "--ask-match", "question", "--api-fallback", "simulator-first"])
    ntb = ntb_config(args).ntb
    assert (ntb.agent_variant, ntb.embedding_model, ntb.ask_match, ntb.api_fallback) == \
        ("no-ask", "minilm", "question", "simulator-first")
    assert load_config().ntb.agent_variant == "current" and load_config().ntb.ask_match == "message"
