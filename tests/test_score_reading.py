"""Scores read from the score tokens' probabilities: the distribution, "10" on a digit-splitting
tokenizer, the fallback without log-probabilities, failures, reasons after the score, and the
judges and the profile that use it (harness/selfscore/score_reading.py)."""
from __future__ import annotations

import asyncio
import math

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from graphs.protocols import Message
from harness.config import ModelSpec, load_config
from harness.models.llm import RoleClient
from harness.selfscore.judges import SelfScoreJudges, StructuredJudge, judge_complexity
from harness.selfscore.judgment_rows import judgment_row
from harness.selfscore.score_reading import SCORE_READING_VERSION, read_judgment, read_score
from tests.fakes import ScriptedChatModel, default_responder, fake_factory


def lp(p: float) -> float:
    return math.log(p)


def answer(text: str, *positions: dict[str, float]) -> AIMessage:
    """A reply ``text`` whose generated positions offer ``positions`` (token -> probability)."""
    content = []
    for i, alts in enumerate(positions):
        written = text[i] if i < len(text) else ""
        content.append({"token": written, "logprob": lp(alts.get(written, 1e-6)),
                        "top_logprobs": [{"token": t, "logprob": lp(p)} for t, p in alts.items()]})
    return AIMessage(text, response_metadata={"logprobs": {"content": content}})


def client(responder) -> tuple[RoleClient, ScriptedChatModel]:
    model = ScriptedChatModel(responder=responder, prompts=[])
    return RoleClient("judge", ModelSpec(model="fake-judge"), model), model


ASK = [HumanMessage("Rate it. Answer with the score only: one number from 1 to 10, not JSON.")]


def test_the_expected_score_weighs_every_score_token_and_ignores_other_tokens():
    fake, model = client(lambda m, kw: answer("8", {"8": 0.5, " 7": 0.25, "9": 0.125, "The": 0.125}))
    reading = asyncio.run(read_score(fake, ASK, "judge:x"))
    # 8*0.5 + 7*0.25 + 9*0.125 over 0.875 of score mass
    assert reading.expected == round((4 + 1.75 + 1.125) / 0.875, 2) == 7.86
    assert reading.distribution == pytest.approx({8: 0.5 / 0.875, 7: 0.25 / 0.875, 9: 0.125 / 0.875})
    assert reading.score_mass == pytest.approx(0.875)
    assert reading.written == 8 and reading.mode == "probabilities" and reading.ten == "not needed"
    assert 0 < reading.entropy_bits < math.log2(3) + 1e-9
    assert model.calls == 1


def test_a_written_1_is_split_into_1_and_10_by_the_next_position():
    reply = answer("10", {"1": 0.6, "9": 0.4}, {"0": 0.75, "}": 0.25})
    reading = asyncio.run(read_score(client(lambda m, kw: reply)[0], ASK, "judge:x"))
    assert reading.ten == "the second position"
    assert reading.distribution == pytest.approx({1: 0.15, 10: 0.45, 9: 0.4})
    assert reading.expected == round(0.15 + 4.5 + 3.6, 2)


def test_a_1_the_judge_did_not_write_is_resolved_by_continuing_a_prefilled_1():
    def respond(messages, kw):
        if isinstance(messages[-1], AIMessage) and messages[-1].content == "1":
            return answer("1", {"0": 0.2, "": 0.8})  # the server echoes the prefill
        return answer("8", {"8": 0.7, "1": 0.3})
    fake, model = client(respond)
    reading = asyncio.run(read_score(fake, ASK, "judge:x"))
    assert reading.ten == "a prefilled '1'" and [c.purpose for c in reading.calls] == ["judge:x", "judge:x:ten"]
    assert reading.distribution == pytest.approx({8: 0.7, 1: 0.24, 10: 0.06})


def test_an_endpoint_that_does_not_continue_the_prefill_counts_1_as_1_and_says_so():
    def respond(messages, kw):
        return answer("7", {"7": 0.9}) if isinstance(messages[-1], AIMessage) else answer("8", {"8": 0.7, "1": 0.3})
    reading = asyncio.run(read_score(client(respond)[0], ASK, "judge:x"))
    assert reading.ten.startswith("unresolved") and reading.distribution == pytest.approx({8: 0.7, 1: 0.3})


def test_a_10_token_of_its_own_needs_no_second_position():
    reading = asyncio.run(read_score(client(lambda m, kw: answer("9", {"9": 0.5, "10": 0.4, "1": 0.1}))[0],
                                     ASK, "judge:x"))
    assert reading.ten == "a token of its own" and reading.distribution == pytest.approx({9: 0.5, 10: 0.4, 1: 0.1})


def test_without_log_probabilities_the_written_score_stands_and_the_judgment_says_so():
    judgment = asyncio.run(read_judgment(client(lambda m, kw: "7")[0], 0, False, "agent_helpfulness", {None: ASK}))
    assert judgment.ok and judgment.value == 7
    assert judgment.parsed["score_reading"] == "sampled (no log-probabilities)"
    assert judgment.parsed["distribution"] == {"7": 1.0}


def test_no_score_is_retried_with_a_reminder_then_failed_never_defaulted():
    fake, model = client(lambda m, kw: answer("The", {"The": 0.9, "I": 0.1}))
    judgment = asyncio.run(read_judgment(fake, 1, False, "agent_helpfulness", {None: ASK}))
    assert judgment.status == "failed" and judgment.value is None and "no score token" in judgment.error
    assert model.calls == 2 and "one number from 1 to 10" in str(model.prompts[-1][-1].content)
    assert len(judgment.calls) == 2  # every attempt's call is kept


def test_a_reason_comes_after_the_read_score_and_cannot_move_it():
    def respond(messages, kw):
        if "reason for your score" in str(messages[-1].content):
            return "It is clearly a 10, the best reply ever."
        return answer("3", {"3": 0.5, "4": 0.5})
    fake, model = client(respond)
    judgment = asyncio.run(read_judgment(fake, 0, True, "agent_helpfulness", {None: ASK}))
    assert judgment.value == 3.5 and judgment.reason.startswith("It is clearly")
    assert judgment.parsed["reason_after_score"] is True
    reason_prompt = model.prompts[-1]
    assert isinstance(reason_prompt[-2], AIMessage) and reason_prompt[-2].content == "3"
    quiet = asyncio.run(read_judgment(client(respond)[0], 0, False, "agent_helpfulness", {None: ASK}))
    assert quiet.reason is None and len(quiet.calls) == 1 and quiet.value == 3.5


def conversation():
    return [Message("user", "My wifi drops every few minutes on Ubuntu 20.04."),
            Message("agent", "Please contact your system administrator.")]


def test_the_agent_helpfulness_judge_reads_its_score_and_the_bounds_pin_the_expected_value():
    def respond(messages, kw):
        assert "Answer with the score only" in str(messages[-1].content)  # no reason asked first
        return answer("6", {"6": 0.5, "7": 0.5})
    fake, _ = client(respond)
    judges = SelfScoreJudges(StructuredJudge(fake, 0, reading="probabilities", reasons=False))
    judgment = asyncio.run(judges.agent_helpfulness(None, conversation()))
    assert judgment.parsed["judge_value"] == 6.5 and judgment.parsed["expected"] == 6.5
    assert judgment.value == judgment.parsed["bounds"]["cap"] < 6.5  # a deflection is capped
    row = judgment_row(judgment, "i1", 0)
    assert row["judge_score"] == 6.5 and row["score"] == judgment.value
    assert judgment.parsed["score_reading"] == "probabilities" and judgment.parsed["reason_after_score"] is False
    assert judges.profile_record["score_reading"]["reading"] == "probabilities"
    assert judges.profile_record["score_reading"]["version"].endswith("+" + SCORE_READING_VERSION)
    assert judgment.parsed["profile"] == "embedded"  # every judge aid at its embedded value


def test_complexity_reads_each_dimension_from_its_own_question():
    asked = []

    def respond(messages, kw):
        asked.append(str(messages[-1].content).rsplit("\n", 1)[-1])
        return answer("5", {"5": 0.5, "6": 0.5})
    judge = StructuredJudge(client(respond)[0], 0, reading="probabilities", reasons=False)
    judgment = asyncio.run(judge_complexity(judge, "My wifi drops."))
    assert judgment.value == {"critical_thinking": 5.5, "error_handling": 5.5, "topic_knowledge": 5.5}
    assert [a.split(" score only")[0] for a in asked] == [
        f"Answer with the {d}" for d in ("critical_thinking", "error_handling", "topic_knowledge")]
    assert set(judgment.parsed["readings"]) == {"critical_thinking", "error_handling", "topic_knowledge"}


def test_an_unknown_score_reading_is_refused():
    with pytest.raises(ValueError, match="unknown score reading"):
        StructuredJudge(client(lambda m, kw: "1")[0], 0, reading="guess")


@pytest.mark.parametrize("profile, judge_url", [
    ("paper", None), ("embedded", None), ("auto", None), ("auto", "http://judge.example/v1")])
def test_every_profile_reads_the_sampled_score_unless_the_setting_asks_for_probabilities(profile, judge_url):
    # probabilities did not pass its agreement gate on the embedded judge (docs/selfscore.md)
    from harness.compose import Runtime
    roles = {"judge": {"base_url": judge_url}} if judge_url else {}
    config = load_config(None, {"scoring": {"profile": profile}, "roles": roles})
    runtime = Runtime(config, fake_factory(default_responder()))
    assert runtime.structured_judge("judge").reading == "sampled"
    assert runtime.profile_record()["score_reading"] == {"reading": "sampled", "version": None, "reasons": False}
    config = load_config(None, {"scoring": {"profile": profile, "score_reading": "probabilities"}, "roles": roles})
    runtime = Runtime(config, fake_factory(default_responder()))
    assert runtime.turn_judges().judge.reads_probabilities
    assert runtime.profile_record()["score_reading"]["reading"] == "probabilities"
