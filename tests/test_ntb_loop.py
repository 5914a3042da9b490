"""The NoisyToolBench tool loop on real cases, with scripted agents (fake chat models) through
the real graph, API environment, simulated user, store and scorer."""
import asyncio
import json

import pytest

from graphs.protocols import LLMCall
from harness.compose import Runtime
from harness.config import load_config
from harness.ntb.agent import NativeToolAgent, TextProtocolAgent
from harness.ntb.batch import arun_ntb
from harness.ntb.cases import load_case
from store import StoreReader
from tests.fakes import ScriptedChatModel


def agent_script(plan):
    """A text-protocol agent following ``plan(case_query, step_number) -> action dict``."""
    def respond(messages, kwargs):
        step = sum(1 for m in messages if m.type == "ai") + 1
        action = plan(str(messages[1].content), step)
        return json.dumps({"thought": "", "api_name": "", "arguments": {}, "text": "", **action})
    return respond


def judge_approves(messages, kwargs):
    name = kwargs["response_format"]["json_schema"]["name"]
    field = {"CallsVerdict": "all_expected_calls_made", "AnswerVerdict": "fulfilled",
             "LimitationVerdict": "limitation_stated"}[name]
    return json.dumps({"reason": "ok", field: True})


def run_with_fakes(tmp_path, responders: dict, overrides: dict):
    """An NTB batch on ``overrides`` (the store goes to ``tmp_path``) with a fake chat model per
    role answering through ``responders[role]``; returns the reader, the run id and the models."""
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), **overrides})
    models = {}

    def factory(role, spec):
        models[role] = ScriptedChatModel(responder=responders[role], prompts=[])
        return models[role]
    with Runtime(cfg, factory) as runtime:
        run_id, _ = asyncio.run(arun_ntb(runtime))
    return StoreReader(cfg.store), run_id, models


def run_cases(tmp_path, plan, ids, concurrency=4, **ntb):
    reader, run_id, _ = run_with_fakes(tmp_path, {"agent": agent_script(plan), "judge": judge_approves},
                                       {"run": {"concurrency": concurrency},
                                        "ntb": {"ids": ids, "api_simulator": False, **ntb}})
    return reader, run_id, {s["interaction_id"].split(":", 1)[1]: s["figures"] for s in reader.scores(run_id, "noisytoolbench")}


def ideal(case_key):
    case = load_case(case_key)

    def plan(query, step):
        if step == 1:
            return {"action": "ask_user", "text": case.question_to_ask}
        if step - 2 < len(case.expected_calls):
            call = case.expected_calls[step - 2]
            return {"action": "call_api", "api_name": call["resolved_name"] or call["name"],
                    "arguments": call["arguments"]}
        return {"action": "final_answer", "text": "Here are the results you asked for."}
    return plan


def test_ideal_agent_scores_full_marks_and_every_step_is_stored(tmp_path):
    reader, run_id, figures = run_cases(tmp_path, ideal("IMKI/2"), ["IMKI/2"])
    f = figures["IMKI/2"]
    assert (f["A1"], f["A2"], f["A3"], f["redundant_asking"]) == (1, 1, 1, 0)
    i = reader.interactions(run_id)[0]
    steps = [json.loads(t["extra_json"]) for t in reader.turns(i["id"])]
    assert [s["type"] for s in steps] == ["ask", "call", "answer"]
    assert steps[0]["matched"] and steps[0]["reply"] == load_case("IMKI/2").clarification
    assert steps[1]["source"] == "recorded" and i["stop_reason"] == "answered"
    assert f["threshold"] == 0.4 and f["embedding_model"].startswith("all-MiniLM")


def test_agent_that_never_asks_scores_a1_zero(tmp_path):
    case = load_case("IMKI/1")

    def plan(query, step):
        if step == 1:
            call = case.expected_calls[0]
            return {"action": "call_api", "api_name": call["resolved_name"], "arguments": {"date1": "12-01-2022", "date2": "12-31-2022"}}
        return {"action": "final_answer", "text": "Done."}
    _, _, figures = run_cases(tmp_path, plan, ["IMKI/1"])
    assert figures["IMKI/1"]["A1"] == 0 and figures["IMKI/1"]["A2"] == 0


def test_two_unrelated_questions_count_as_redundant(tmp_path):
    def plan(query, step):
        if step <= 2:
            return {"action": "ask_user", "text": ["What is your favourite colour?", "Do you like cats?"][step - 1]}
        return {"action": "final_answer", "text": "I could not help."}
    reader, run_id, figures = run_cases(tmp_path, plan, ["IMKI/1"])
    assert figures["IMKI/1"]["redundant_asking"] == 2 and figures["IMKI/1"]["A1"] == 0
    steps = [json.loads(t["extra_json"]) for t in reader.turns(reader.interactions(run_id)[0]["id"])]
    assert steps[0]["reply"] == "I could not provide relevant information for this question."  # official words


def test_ibtc_limitation_is_reported_separately(tmp_path):
    def plan(query, step):
        return {"action": "final_answer", "text": "Sorry, the available APIs cannot do this."}
    _, _, figures = run_cases(tmp_path, plan, ["IBTC/1"])
    f = figures["IBTC/1"]
    assert f["category"] == "IBTC" and f["limitation_stated"] in (1, True)


def test_step_cap_stops_the_loop(tmp_path):
    def plan(query, step):
        return {"action": "ask_user", "text": f"Question number {step}?"}
    reader, run_id, figures = run_cases(tmp_path, plan, ["IMR/1"], max_steps=4)
    i = reader.interactions(run_id)[0]
    assert i["stop_reason"] == "max_steps" and len(reader.turns(i["id"])) == 4


def test_invalid_text_actions_are_retried_then_recorded(tmp_path):
    def plan(query, step):
        return {"action": "dance"}
    reader, run_id, figures = run_cases(tmp_path, plan, ["IMKI/2"])
    i = reader.interactions(run_id)[0]
    steps = [json.loads(t["extra_json"]) for t in reader.turns(i["id"])]
    assert steps[-1]["type"] == "answer" and "unusable action" in steps[-1]["agent_error"]
    assert len([c for c in reader.llm_calls(i["id"]) if c["role"] == "agent"]) == 3


def test_native_tool_calls_path():
    from langchain_core.messages import AIMessage
    from harness.config import ModelSpec
    from harness.models.llm import RoleClient
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ToolCaller(ScriptedChatModel):
        def bind_tools(self, tools, **kw):
            return self.bind(tools=tools)

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            self.prompts.append((messages, kwargs))
            names = [t["function"]["name"] for t in kwargs["tools"]]
            msg = AIMessage("", tool_calls=[{"name": "ask_user", "args": {"question": "Which year?"}, "id": "c1"}])
            assert "ask_user" in names and "final_answer" in names
            return ChatResult(generations=[ChatGeneration(message=msg)])

    model = ToolCaller(responder=None, prompts=[])
    agent = NativeToolAgent(RoleClient("agent", ModelSpec(), model))
    action = asyncio.run(agent.act(load_case("IMKI/1"), []))
    assert action.kind == "ask" and action.text == "Which year?"
    steps = [{"type": "ask", "text": "Which year?", "reply": "Year 2023"}]
    msgs = agent.messages(load_case("IMKI/1"), steps)
    assert msgs[-1].type == "tool" and "Year 2023" in msgs[-1].content


def ideal_responders(role):
    """Fake endpoint responders: the agent plays each case's ideal plan, the judge approves."""
    from harness.ntb.cases import load_cases
    if role != "agent":
        return judge_approves
    by_query = {c.query: c for c in load_cases()}

    def respond(messages, body):
        return agent_script(ideal(by_query[str(messages[1].content)].key))(messages, body)
    return respond


def agent_judge_flags(url):
    """``--role`` flags putting the agent and the judge on the fake endpoint ``url``."""
    flags = []
    for r in ("agent", "judge"):
        flags += ["--role", f"{r}.base_url={url}", "--role", f"{r}.model={r}-fake"]
    return flags


def test_cli_run_export_rescore_transcripts_and_compare(tmp_path, capsys):
    import csv
    from harness.cli.main import main
    from tests.fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(ideal_responders) as server:
        flags = agent_judge_flags(server.base_url)
        store, out = tmp_path / "s.sqlite", tmp_path / "out"
        assert main(["ntb", "run", "--store", str(store), "--case", "IMKI/2", "--case", "IMR/2",
                     "--case", "IBTC/2", "--protocol", "text", "--no-api-simulator", "--quiet",
                     "--out", str(out), *flags]) == 0
        printed = capsys.readouterr().out
        assert "IMKI" in printed and "overall (off.)" in printed
        with open(out / "cases.csv") as f:
            stored = {(r["category"], r["query_id"]): r for r in csv.DictReader(f)}
        assert list(next(iter(stored.values())))[:8] == ["query_id", "query", "steps", "redundant_asking",
                                                         "A1", "A2", "A3", "reason"]
        assert stored[("IMKI", "2")]["A1"] == "1" and stored[("IMKI", "2")]["A3"] == "1"
        # the exported transcripts score identically, with and without the judge
        assert main(["score", "noisytoolbench", "--transcripts", str(out / "transcripts.jsonl"),
                     "--out", str(tmp_path / "again.csv"), *flags]) == 0
        with open(tmp_path / "again.csv") as f:
            again = {(r["category"], r["query_id"]): r for r in csv.DictReader(f)}
        keys = ("steps", "redundant_asking", "A1", "A2", "A3")
        assert {k: {m: v[m] for m in keys} for k, v in again.items()} == \
            {k: {m: v[m] for m in keys} for k, v in stored.items()}
        n_requests = len(server.requests)
        assert main(["score", "noisytoolbench", "--no-judge", "--transcripts", str(out / "transcripts.jsonl"),
                     "--out", str(tmp_path / "nojudge.csv")]) == 0
        assert len(server.requests) == n_requests
        run_id = StoreReader(store).runs()[0]["id"]
        capsys.readouterr()
        assert main(["ntb", "compare", "--store", str(store), run_id, run_id]) == 0
        assert "McNemar exact p = 1" in capsys.readouterr().out


def test_ibtc_without_a_final_answer_states_no_limitation(tmp_path):
    def plan(query, step):
        return {"action": "ask_user", "text": "Where should the delivery start?"}
    _, _, figures = run_cases(tmp_path, plan, ["IBTC/1"], max_steps=2)
    assert figures["IBTC/1"]["limitation_stated"] == 0


def test_resume_after_a_crash_finishes_without_redoing_steps(tmp_path, monkeypatch):
    from harness.models.llm import RoleClient
    from tests.test_resume_and_failures import Crash, crash_on_call
    clean_reader, clean_id, clean = run_cases(tmp_path / "clean", ideal("IMKI/2"), ["IMKI/2", "IMKI/3"])
    original = crash_on_call(monkeypatch, "agent", 4)
    with pytest.raises(Crash):
        run_cases(tmp_path / "crash", ideal("IMKI/2"), ["IMKI/2", "IMKI/3"], concurrency=1)
    monkeypatch.setattr(RoleClient, "complete", original)
    cfg = load_config(overrides={"store": str(tmp_path / "crash" / "s.sqlite"),
                                 "ntb": {"api_simulator": False}})
    reader = StoreReader(cfg.store)
    run = reader.runs()[0]
    assert run["status"] == "interrupted"
    before = {i["task_id"]: len(reader.turns(i["id"])) for i in reader.interactions(run["id"])}
    models = {"agent": agent_script(ideal("IMKI/2")), "judge": judge_approves}
    with Runtime(cfg, lambda role, spec: ScriptedChatModel(responder=models[role], prompts=[])) as rt:
        asyncio.run(arun_ntb(rt, resume=run["id"]))
    steps = {i["task_id"]: [json.loads(t["extra_json"]) for t in reader.turns(i["id"])]
             for i in reader.interactions(run["id"])}
    clean_steps = {i["task_id"]: [json.loads(t["extra_json"]) for t in clean_reader.turns(i["id"])]
                   for i in clean_reader.interactions(clean_id)}
    assert steps == clean_steps and sum(before.values()) < sum(len(s) for s in steps.values())
    resumed = {s["interaction_id"].split(":", 1)[1]: s["figures"] for s in reader.scores(run["id"], "noisytoolbench")}
    keep = ("A1", "A2", "A3", "redundant_asking", "steps")
    assert {k: {m: v[m] for m in keep} for k, v in resumed.items()} == \
        {k: {m: v[m] for m in keep} for k, v in clean.items()}


def test_llm_user_words_the_clarification_itself():
    from harness.config import ModelSpec
    from harness.models.embeddings import embed, model_id
    from harness.models.llm import RoleClient
    from harness.ntb.user import SimulatedToolUser
    case = load_case("IMKI/2")
    model = ScriptedChatModel(responder=lambda m, k: "It is for the year 2023, thanks.", prompts=[])
    user = SimulatedToolUser(embed, 0.4, model_id(), RoleClient("user", ModelSpec(), model))
    outcome = asyncio.run(user.reply(case, case.question_to_ask, []))
    assert outcome.text == "It is for the year 2023, thanks." and outcome.detail["matched"]
    assert case.clarification in str(model.prompts[0][0].content) and len(outcome.calls) == 1
    # asked again: answered again (as the official user does), but counted as redundant
    again = asyncio.run(user.reply(case, case.question_to_ask, [{"type": "ask", "matched": True}]))
    assert again.detail["redundant"] and again.detail["repeated"] and again.detail["matched"]
    assert again.text == "It is for the year 2023, thanks." and len(again.calls) == 1


def _length_cut() -> Exception:
    import openai
    from openai.types.chat import ChatCompletion
    completion = ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "length",
                     "message": {"role": "assistant", "content": '{"thought": "I think that'}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 320, "total_tokens": 330}})
    exc = openai.LengthFinishReasonError(completion=completion)
    exc.llm_calls = [LLMCall("agent", "agent:ntb-step", "m", error="unknown: LengthFinishReasonError")]
    return exc


class _CutThenOk:
    """A client whose first ``n_cuts`` JSON actions run into the token cap."""

    def __init__(self, n_cuts: int, answer: str = json.dumps({"thought": "t", "action": "final_answer", "api_name": "",
                                                     "arguments": {}, "text": "Done."})):
        self.n_cuts, self.answer, self.seen = n_cuts, answer, []

    async def complete(self, messages, purpose, response_format=None):
        self.seen.append(messages)
        if len(self.seen) <= self.n_cuts:
            raise _length_cut()
        return self.answer, LLMCall("agent", purpose, "m", 10, 5)


def test_an_action_cut_at_the_token_cap_is_retried_not_a_failed_case():
    case = load_case("IMKI/2")
    client = _CutThenOk(1)
    action = asyncio.run(TextProtocolAgent(client, retries=2).act(case, []))
    assert action.kind == "answer" and action.text == "Done." and action.error is None
    assert [c.error is not None for c in action.calls] == [True, False]  # both calls kept
    assert "cut off at the length limit" in client.seen[1][-1].content
    # cut every time: the step is the agent's unusable action (recorded), the case goes on
    client = _CutThenOk(9)
    action = asyncio.run(TextProtocolAgent(client, retries=2).act(case, []))
    assert len(client.seen) == 3 and action.kind == "answer" and "token cap" in action.error


@pytest.mark.parametrize("agent_class", ["text", "native"])
def test_earlier_api_responses_are_cut_in_the_agents_prompt_the_latest_is_whole(agent_class):
    from harness.ntb import agent as ntb_agent
    case = load_case("IMKI/2")
    long = "x" * 2500
    steps = [{"type": "call", "name": "a", "arguments": {}, "observation": f"first {long}", "thought": "t"},
             {"type": "ask", "text": "Which date?", "reply": "2022-07-20", "thought": "t"},
             {"type": "call", "name": "a", "arguments": {}, "observation": f"second {long}", "thought": "t"}]
    cls = TextProtocolAgent if agent_class == "text" else NativeToolAgent
    texts = [m.content for m in cls(None).messages(case, steps)]
    first = next(t for t in texts if "first" in t)
    second = next(t for t in texts if "second" in t)
    assert first.endswith(ntb_agent.CUT_MARK) and len(first) == ntb_agent.EARLIER_OBSERVATION_CHARS + len(ntb_agent.CUT_MARK)
    assert second == f"Observation: second {long}"        # the latest whole (under 3,000 characters)
    assert any(t == "User: 2022-07-20" for t in texts)   # the user's reply never cut
