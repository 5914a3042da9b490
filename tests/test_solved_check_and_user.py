"""The solved-check's decomposition, the grounded simulated user and its checks (fake models)."""
from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage

from graphs.protocols import Message, Problem
from harness.config import ModelSpec
from harness.models.llm import RoleClient, yes_probability
from harness.aids.cues import claims_success
from harness.aids.text import copied_fraction
from harness.selfscore.judges import ConfirmationSolvedCheck, SelfScoreJudges, StructuredJudge
from harness.selfscore.sanity import balanced, outcome_cases, solved_cases
from harness.simuser.checks import (leaked_terms, repeated_message, invented_versions, rule_violations,
                                    version_conflicts)
from harness.simuser.users import SimulatedUser
from tests.fakes import ScriptedChatModel


def client(responder, role="judge") -> tuple[RoleClient, ScriptedChatModel]:
    model = ScriptedChatModel(responder=responder, prompts=[])
    return RoleClient(role, ModelSpec(model=f"fake-{role}"), model), model


# -- yes/no from log-probabilities -----------------------------------------------------------------
def test_yes_probability_from_top_logprobs_sums_case_and_space_variants():
    msg = AIMessage("Yes", response_metadata={"logprobs": {"content": [{"token": "Yes", "logprob": -0.2,
        "top_logprobs": [{"token": "Yes", "logprob": -0.5}, {"token": " yes", "logprob": -2.0},
                         {"token": "No", "logprob": -1.0}, {"token": "Maybe", "logprob": -3.0}]}]}})
    p, token = yes_probability(msg)
    import math
    y, n = math.exp(-0.5) + math.exp(-2.0), math.exp(-1.0)
    assert p == pytest.approx(y / (y + n)) and token == "Yes"


def test_yes_probability_falls_back_to_the_word_and_rejects_other_text():
    assert yes_probability(AIMessage("No."))[0] == 0.0
    assert yes_probability(AIMessage("yes"))[0] == 1.0
    with pytest.raises(ValueError, match="Yes or No"):
        yes_probability(AIMessage("Perhaps"))


# -- the solved-check ----------------------------------------------------------------------------
CONVERSATION = [Message("user", "My printer is offline."), Message("agent", "Restart the spooler."),
                Message("user", "Done, it prints again."), Message("agent", "Great!")]
PROBLEM = Problem("i", "My printer is offline.", None, "The print spooler stopped.")


def answers(first: str, second: str):
    def respond(messages, kwargs):
        last = str(messages[-1].content)
        assert kwargs.get("max_tokens") == 1 and kwargs.get("logprobs") is True
        return first if "this problem is now fixed" in last else second
    return respond


@pytest.mark.parametrize("first,second,solved", [("Yes", "Yes", True), ("Yes", "No", True),
                                                  ("No", "Yes", True), ("No", "No", False)])
async def test_solved_when_the_mean_confirmation_reaches_the_threshold(first, second, solved):
    judge_client, model = client(answers(first, second))
    j = await ConfirmationSolvedCheck(judge_client).judge(PROBLEM, CONVERSATION)
    assert j.ok and j.value is solved and j.kind == "solved" and len(j.calls) == 2
    assert j.parsed["method"] == "confirmation" and j.parsed["solved"] is solved
    assert set(j.parsed) >= {"p_confirmed", "p_q1", "p_q2", "threshold", "persisting_cues"}
    # the questions see the conversation up to the user's latest message, not the agent's reply
    prompt = str(model.prompts[0][-1].content)
    assert "Done, it prints again." in prompt and "Great!" not in prompt
    assert "The print spooler stopped." in prompt


@pytest.mark.parametrize("message", ["It prints now, but the queue is still stuck.",
                                     "Thanks, I'll try that tomorrow.", "Same error as before.",
                                     "That would work if I had admin rights."])
async def test_a_persisting_problem_vetoes_a_confident_confirmation(message):
    judge_client, _ = client(answers("Yes", "Yes"))
    history = [*CONVERSATION[:2], Message("user", message), Message("agent", "OK.")]
    j = await ConfirmationSolvedCheck(judge_client).judge(PROBLEM, history)
    assert j.ok and j.value is False and j.parsed["persisting_cues"]


@pytest.mark.parametrize("message,solved", [
    ("I have changed the permissions of the .ssh directory to 700 and ensured the files are mine.", False),
    ("I restarted the spooler service.", False),
    ("I restarted the spooler service and the test page came out again.", True),
    ("Outlook stopped asking for the password.", True),
])
async def test_a_message_that_reports_no_result_is_not_solved_and_asks_nothing(message, solved):
    judge_client, model = client(answers("Yes", "Yes"))
    history = [*CONVERSATION[:2], Message("user", message), Message("agent", "OK.")]
    j = await ConfirmationSolvedCheck(judge_client).judge(PROBLEM, history)
    assert j.ok and j.value is solved
    assert (j.parsed["decided_by"], model.calls) == (("questions", 2) if solved else ("rules", 0))


async def test_turn_one_is_never_solved_and_costs_no_call():
    judge_client, model = client(answers("Yes", "No"))
    j = await ConfirmationSolvedCheck(judge_client).judge(PROBLEM, CONVERSATION[:2])
    assert j.ok and j.value is False and model.calls == 0 and j.parsed["skipped"] == "first turn"


async def test_an_answer_that_is_not_yes_or_no_fails_the_judgment_never_defaults():
    judge_client, _ = client(lambda m, k: "Possibly")
    j = await ConfirmationSolvedCheck(judge_client).judge(PROBLEM, CONVERSATION)
    assert j.status == "failed" and j.value is None and "Yes or No" in j.error


async def test_verdict_method_keeps_the_json_verdict_and_records_its_method():
    judge_client, _ = client(lambda m, k: json.dumps({"reason": "ok", "solved": True}))
    judges = SelfScoreJudges(StructuredJudge(judge_client, 0), "verdict")
    j = await judges.solved(PROBLEM, CONVERSATION)
    assert j.ok and j.value is True and j.parsed["method"] == "verdict"
    with pytest.raises(ValueError, match="unknown solved-check method"):
        SelfScoreJudges(StructuredJudge(judge_client, 0), "always")


def test_sanity_sets_are_balanced_and_alternate():
    s, o = solved_cases(), outcome_cases()
    assert len(s) >= 24 and sum(c["solved"] for c in s) * 2 == len(s)
    assert len(o) >= 16 and sum(c["fixed"] for c in o) * 2 == len(o)
    assert all(c["conversation"][-1]["role"] == "agent" for c in s)
    assert [c["solved"] for c in balanced(s, 4, "solved")] == [True, False, True, False]


def test_turn_helpfulness_pairs_cover_each_rubric_and_follow_the_turn_order():
    from harness.selfscore.sanity import turn_case_group, turn_helpfulness_cases
    cases = turn_helpfulness_cases()
    groups = [turn_case_group(c) for c in cases]
    assert groups.count("agent") >= 6 and groups.count("user") >= 6 and groups.count("first") >= 3
    assert len({c["id"] for c in cases}) == len(cases)
    for c in cases:
        assert c["helpful"].strip() and c["useless"].strip() and c["helpful"] != c["useless"], c["id"]
        assert c["first"] == (not c["conversation"]), c["id"]
        roles = [m["role"] for m in c["conversation"]] + [c["role"]]
        assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:])), c["id"]
    # the biases seen in b18/b19 are in the set: a word-for-word repeat of the agent's last message,
    # and a bare "still there" report
    repeats = [c for c in cases if c["role"] == "agent" and c["useless"] == c["conversation"][-2]["content"]]
    assert len(repeats) >= 3
    assert any("still there" in c["helpful"] for c in cases if c["role"] == "user")


def test_turn_helpfulness_builder_writes_the_shipped_file():
    import importlib.util
    from harness.selfscore.sanity_sets import SANITY_DIR
    spec = importlib.util.spec_from_file_location("build_turn_helpfulness", SANITY_DIR / "build_turn_helpfulness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shipped = (SANITY_DIR / "turn_helpfulness.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in shipped] == module.build()


async def test_a_judge_that_scores_every_message_alike_fails_every_turn_pair_and_a_discerning_one_passes():
    from harness.selfscore.sanity import run_sanity, turn_helpfulness_cases
    cases = turn_helpfulness_cases()
    helpful = {c["helpful"] for c in cases}

    def latest(messages) -> str:  # the judged text between the <latest> tags of the prompt
        text = messages[-1].content
        return text.split("<latest>\n", 1)[1].split("\n</latest>", 1)[0]

    constant = lambda m, k: json.dumps({"reason": "fine", "score": 7})
    discerning = lambda m, k: json.dumps({"reason": "r", "score": 8 if latest(m) in helpful else 2})
    for responder, bounds, expected in ((constant, False, 0), (discerning, False, len(cases)),
                                        # the rubric bounds alone separate most pairs; the judge's
                                        # own scores are reported beside them
                                        (constant, True, 13)):
        judge_client, model = client(responder)
        judges = SelfScoreJudges(StructuredJudge(judge_client, 0), helpfulness_bounds=bounds)
        report = await run_sanity(StructuredJudge(judge_client, 0), StructuredJudge(judge_client, 0),
                                  helpful_pairs=0, complexity_pairs=0, turns=None, judges=judges)
        assert len(report.turn_pairs) == len(cases) and sum(t.right for t in report.turn_pairs) == expected
        assert sum(t.judge_right for t in report.turn_pairs) == (len(cases) if responder is discerning else 0)
        line = next(x for x in report.lines() if x.startswith("Helpfulness in conversations"))
        assert "agent replies later in a conversation" in line and "first questions" in line
        assert "the judge's own scores, before the rubric bounds: " in line
        # the first questions are judged with the first-turn rubric, the later user replies with the other
        sent = [m[-1].content for m in model.prompts]
        assert sum("is the initial question" in t for t in sent) == 2 * sum(c["first"] for c in cases)


async def test_the_stability_set_reports_a_flipping_judge_and_passes_a_steady_one():
    from harness.selfscore.sanity import STABILITY_CASES, STABILITY_REPEATS, run_sanity
    calls = {"n": 0}

    def flipping(m, k):  # p11's failure: the same prompt scored 8 or 1
        calls["n"] += 1
        return json.dumps({"reason": "r", "score": 8 if calls["n"] % 3 else 1})

    steady = lambda m, k: json.dumps({"reason": "r", "score": 6})
    for responder, largest in ((flipping, 7), (steady, 0)):
        judge_client, _ = client(responder)
        judges = SelfScoreJudges(StructuredJudge(judge_client, 0), helpfulness_bounds=True)
        report = await run_sanity(StructuredJudge(judge_client, 0), StructuredJudge(judge_client, 0),
                                  helpful_pairs=0, complexity_pairs=0, stability=None, judges=judges)
        assert [c.id for c in report.stability] == [case_id for case_id, _ in STABILITY_CASES]
        assert all(len(c.scores) == STABILITY_REPEATS for c in report.stability)
        # the judge's own scores: the bounds (the user's "still there" is at least 5) do not hide a flip
        assert report.largest_spread == largest
        line = next(x for x in report.lines() if x.startswith("Judge stability"))
        assert f"largest {largest}." in line and "user-still-there" in line


def test_the_stability_spread_of_read_scores_is_written_to_two_decimals():
    from harness.selfscore.sanity_report import SanityReport, StabilityCase
    case = StabilityCase("agent-close-tabs", [5.1, 5.06, 5.08, None, 5.07])
    assert case.spread == 0.04  # not 0.040000000000000036
    report = SanityReport(helpful_pairs=[], complexity_pairs=[], judge_model="m", stability=[case])
    assert "largest 0.04." in next(x for x in report.lines() if x.startswith("Judge stability"))


# -- rule checks of a simulated user message -------------------------------------------------------
SCENARIO = Problem("i", "My laptop shows no wireless networks.", None,
                   "The proprietary Broadcom wireless driver is not installed.",
                   solution="sudo apt install bcmwl-kernel-source, then reboot",
                   facts=("Ubuntu 22.04", "a Broadcom BCM4313 card"))
BEFORE = [Message("user", SCENARIO.question), Message("agent", "Which Ubuntu version is it?")]


@pytest.mark.parametrize("text,kind", [
    ("Sure! To fix this, you should install the driver.", "acts_as_agent"),
    ("1. Open a terminal\n2. Run the update", "acts_as_agent"),
    ("I think I need bcmwl-kernel-source installed.", "leaks_solution"),
    ("It is Ubuntu 20.04.", "contradicts_facts"),
    ("I run Firefox 3.5 on it.", "invents_detail"),
])
def test_rules_flag_each_violation(text, kind):
    assert kind in [v.kind for v in rule_violations(text, SCENARIO, BEFORE, None)]


@pytest.mark.parametrize("text", ["It is Ubuntu 22.04.", "I don't know, I just see no networks.",
                                  "The card is a Broadcom BCM4313, if that helps."])
def test_rules_pass_plain_user_answers(text):
    assert rule_violations(text, SCENARIO, BEFORE, None) == []


def test_a_term_the_agent_said_first_is_not_a_leak():
    told = [*BEFORE, Message("user", "22.04"), Message("agent", "Install bcmwl-kernel-source and reboot.")]
    assert leaked_terms("I installed bcmwl-kernel-source and rebooted.", SCENARIO, told) == []


@pytest.mark.parametrize("text,success", [
    ("That did it, it works now.", True), ("The networks show up now, thanks!", True),
    ("I rebooted but it still doesn't work.", False), ("It works right now, but it dropped again.", True),
    ("It is not working again.", False), ("Same error as before.", False),
    # "now I get / am getting X" (a demo's simulated user claimed success this way, unflagged)
    ("I also tried reinstalling the entire system. Now I am getting graphical interface.", True),
    ("okay... I updated and now I can see the package... thank you..", True),
    ("Now I see the login screen again.", True),
    ("Now I get a different error: permission denied.", False), ("now i'm getting the same error", False),
    ("Now I am getting a black screen.", False), ("I rebooted and now I see nothing at all.", False),
])
def test_claims_success(text, success):
    assert claims_success(text) is success


def test_success_must_match_the_decided_outcome():
    kinds = lambda text, fixed: [v.kind for v in rule_violations(text, SCENARIO, BEFORE, fixed)]
    assert kinds("It works now, thanks!", False) == ["false_success"]
    assert kinds("I did it but I still see no networks.", True) == ["missed_success"]
    assert kinds("I did it and it works now.", True) == []


def test_a_quoted_error_does_not_negate_a_success_and_a_gone_error_is_one():
    assert claims_success('I switched to a DSA key and the "Roaming not allowed by server" error is resolved.')
    assert claims_success("The error is no longer appearing.")
    assert claims_success("The warning does not show up anymore.")
    assert not claims_success('I still get "Roaming not allowed by server".')
    assert not claims_success("The networks no longer show up.")


def test_saying_it_still_fails_again_is_not_a_repeat():
    told = [Message("user", "My wifi drops every few minutes on my laptop."), Message("agent", "Update the driver."),
            Message("user", "I've already tried the above steps and the problem persists."),
            Message("agent", "Reinstall the driver.")]
    assert repeated_message("I've already tried the above steps and the problem persists.", told) is None


def test_a_long_earlier_message_written_out_again_whole_is_a_repeat():
    earlier = ("I did check the system logs and there are no errors related to the wireless card. I also "
               "tried disabling any other network software, but the issue persists. I will replace the card.")
    told = [Message("user", "My wifi card says NOT READY."), Message("agent", "Check the logs."),
            Message("user", earlier), Message("agent", "Great, replacing the card fixed it.")]
    assert repeated_message("I apologize for the inconvenience. " + earlier, told) == earlier
    # the same report in other words is not
    assert repeated_message("No, it did not fix it: the logs show no error for the card and the issue "
                            "persists after I disabled the other network software, so I will swap the card.",
                            told) is None


def test_a_reply_that_copies_the_agents_message_is_an_echo_but_a_report_of_doing_it_is_not():
    from harness.simuser.checks import echoed_agent, rule_violations
    agent = ("Try reinstalling the xserver-xorg package. You can do this by running the following command "
             "in the terminal:\nsudo apt-get install --reinstall xserver-xorg\nIf the problem persists, check "
             "your logs:\nsudo journalctl -xe")
    told = [Message("user", "After an update I only get a text login."), Message("agent", agent)]
    # seen in a p8 batch: the commands sent back as the whole reply, and the whole paragraph
    assert echoed_agent("sudo apt-get install --reinstall xserver-xorg\n\nsudo journalctl -xe", told) == agent
    assert echoed_agent(agent, told) == agent
    kinds = [v.kind for v in rule_violations("sudo apt-get install --reinstall xserver-xorg\n\nsudo journalctl -xe",
                                             SCENARIO, told, False)]
    assert "echoes_agent" in kinds
    # saying what one did, in the agent's words for the command, is how people report back
    report = "I ran sudo apt-get install --reinstall xserver-xorg and rebooted, but I still only get the text login."
    assert echoed_agent(report, told) is None
    assert "echoes_agent" not in [v.kind for v in rule_violations(report, SCENARIO, told, False)]
    # an assistant's sympathy line is the agent's voice, and so is asking for "your problem"
    for agentlike in ("I'm sorry to hear that you're having trouble playing music.",
                      "Sorry for the inconvenience, but I am not sure what you are asking. Please provide more "
                      "context or details about your problem, and I will do my best to help you."):
        assert "acts_as_agent" in [v.kind for v in rule_violations(agentlike, SCENARIO, told, False)]
    assert "acts_as_agent" not in [v.kind for v in rule_violations(
        "Sorry, I do not know which details you mean. It is an Intel card.", SCENARIO, told, False)]


def test_a_repasted_question_is_a_repeat_but_a_quoted_error_is_not():
    question = ("W: Failed to fetch http://security.ubuntu.com/ubuntu/pool/main/m/mysql-5.1/"
                "mysql-client-5.1_5.1.61_i386.deb 404 Not Found, getting this error while trying to install mysql")
    told = [Message("user", question), Message("agent", "Which Ubuntu release is this?")]
    kinds = lambda text: [v.kind for v in rule_violations(text, Problem("q", question, None, None), told, None)]
    assert kinds(question + "\n\nI am getting this error while trying to install mysql") == ["repeats_earlier"]
    assert kinds("It is Ubuntu 10.10, and apt still says 404 Not Found for the mysql package.") == ["invents_detail"]
    told_release = [*told, Message("user", "It is 10.10."), Message("agent", "Ubuntu 10.10 has reached its end of life.")]
    assert kinds("Ubuntu 10.10 here, and apt still says 404 Not Found.") == ["invents_detail"]
    assert [v.kind for v in rule_violations("On Ubuntu 10.10 apt still says 404 Not Found.",
                                            Problem("q", question, None, None), told_release, None)] == []
    assert copied_fraction("yes", question) == 0.0


def test_a_version_is_invented_only_when_nothing_before_gave_it():
    assert invented_versions("I have kernel 2.6.17.", SCENARIO, BEFORE) == ["kernel 2.6.17"]
    asked = [*BEFORE, Message("agent", "Is it Firefox 3.5 or 3.6?")]
    assert invented_versions("Firefox 3.5, I think.", SCENARIO, asked) == []
    assert invented_versions("It is Ubuntu 22.04.", SCENARIO, BEFORE) == []  # a fact
    # a conflict with a fact is contradicts_facts, reported once
    assert [v.kind for v in rule_violations("It is Ubuntu 20.04.", SCENARIO, BEFORE, None)] == ["contradicts_facts"]


def test_version_conflicts_name_the_fact():
    assert version_conflicts("on Windows 11", ["Windows 10"], "") == ["Windows 11 (facts: 10)"]
    assert version_conflicts("Ubuntu 22.04.3", ["Ubuntu 22.04"], "") == []


# -- the grounded simulated user -------------------------------------------------------------------
class Similarity:
    """A stand-in for the MiniLM embedder with a fixed cosine similarity."""

    def __init__(self, cosine: float):
        self.cosine = cosine

    def embed_array(self, texts):
        import numpy as np
        return np.array([[1.0, 0.0], [self.cosine, (1 - self.cosine ** 2) ** 0.5]])


def user_model(outcome: str, replies: list[str]):
    queue = list(replies)

    def respond(messages, kwargs):
        if kwargs.get("logprobs"):
            return outcome
        return queue.pop(0)
    return respond


async def test_the_user_reports_success_only_under_a_fix_outcome_and_regenerates_a_false_one():
    user_client, model = client(user_model("No", ["Great, it works now!", "I did that but still no networks."]),
                                role="user")
    history = [*BEFORE[:1], Message("agent", "Restart your router.")]
    reply = await SimulatedUser(user_client, None, max_regenerations=2, embedder=Similarity(0.9)).respond(SCENARIO, history, 2)
    sim = reply.extra["simulator"]
    assert reply.text == "I did that but still no networks."
    assert sim["outcome"] == "not_fixed" and sim["regenerations"] == 1 and not sim["unresolved"]
    assert sim["attempts"][0]["violations"][0]["kind"] == "false_success"
    assert sim["violations"] == ["false_success"]
    # the hidden scenario is in the user's prompt; the outcome note is on the agent's message
    system, *_, last = model.prompts[1]
    assert "a Broadcom BCM4313 card" in system.content and "NOT solved" in last.content
    assert len(reply.calls) == 3  # the outcome question and two replies


async def test_a_regeneration_samples_with_another_seed_and_more_temperature():
    seen = []

    def respond(messages, kwargs):
        if kwargs.get("logprobs"):
            return "No"
        seen.append((kwargs.get("seed"), kwargs.get("temperature")))
        return "Great, it works now!" if len(seen) < 3 else "I did that but still no networks."
    user_client, _ = client(respond, role="user")
    user_client.spec.temperature, user_client.spec.seed = 0.7, 0
    history = [*BEFORE[:1], Message("agent", "Restart your router.")]
    reply = await SimulatedUser(user_client, None, max_regenerations=2, embedder=Similarity(0.9)).respond(SCENARIO, history, 2)
    assert reply.text == "I did that but still no networks."
    assert seen[0] == (None, None)  # the first draft: the role's own settings
    assert seen[1:] == [(1, 0.85), (2, 1.0)]
    assert [c.purpose for c in reply.calls] == ["user:outcome", "user:reply", "user:reply:retry1", "user:reply:retry2"]


async def test_a_message_failing_every_attempt_is_kept_and_marked_unresolved():
    user_client, _ = client(user_model("Yes", ["Still nothing.", "Nope, nothing.", "No change."]), role="user")
    history = [*BEFORE[:1], Message("agent", "Restart your router.")]  # a question would be no fix
    reply = await SimulatedUser(user_client, None, max_regenerations=2, embedder=Similarity(0.9)).respond(SCENARIO, history, 2)
    sim = reply.extra["simulator"]
    assert sim["outcome"] == "fixed" and sim["regenerations"] == 2 and sim["unresolved"]
    assert reply.text == "No change."


async def test_a_not_fixed_reply_that_claims_success_in_every_draft_is_never_sent():
    """b15: "I have resolved the issue" in every regeneration under a not-fixed outcome ended
    the conversation as solved. The reply sent says the problem is still there."""
    from harness.simuser.users import NOT_FIXED_FALLBACK
    drafts = ["Great, it works now!", "It works perfectly now, thanks!", "I have resolved the issue, it works."]
    user_client, _ = client(user_model("No", drafts), role="user")
    history = [*BEFORE[:1], Message("agent", "Restart your router.")]
    reply = await SimulatedUser(user_client, None, max_regenerations=2, embedder=Similarity(0.9)).respond(SCENARIO, history, 2)
    sim = reply.extra["simulator"]
    assert sim["outcome"] == "not_fixed" and sim["unresolved"] and sim["fallback"] == "scripted"
    assert reply.text == NOT_FIXED_FALLBACK and [a["text"] for a in sim["attempts"]] == drafts
    # a draft that only broke a harmless check is preferred over the scripted line
    harmless = "I use kernel 5.15.0-91 and still see no networks."  # an invented version number
    user_client, _ = client(user_model("No", ["Great, it works now!", harmless, "It works now!"]), role="user")
    reply = await SimulatedUser(user_client, None, max_regenerations=2, embedder=Similarity(0.9)).respond(SCENARIO, history, 2)
    assert reply.extra["simulator"]["attempts"][1]["violations"][0]["kind"] == "invents_detail"
    assert reply.text == harmless and reply.extra["simulator"]["fallback"] == "an earlier draft"


async def test_the_judge_checks_contradictions_when_the_task_has_facts():
    user_client, _ = client(user_model("No", ["It is Ubuntu, I think.", "It is Ubuntu 22.04."]), role="user")
    verdicts = iter(["Yes", "No"])
    judge_client, judge = client(lambda m, k: next(verdicts))
    reply = await SimulatedUser(user_client, judge_client, max_regenerations=1, embedder=Similarity(0.1)).respond(SCENARIO, BEFORE, 2)
    sim = reply.extra["simulator"]
    assert reply.text == "It is Ubuntu 22.04." and judge.calls == 2
    assert sim["attempts"][0]["violations"][0]["kind"] == "contradicts_facts"
    assert sim["attempts"][1]["checks"]["p_contradicts"] == 0.0


async def test_turn_one_is_the_question_without_any_call():
    user_client, model = client(user_model("Yes", []), role="user")
    reply = await SimulatedUser(user_client).respond(SCENARIO, [], 1)
    assert reply.text == SCENARIO.question and model.calls == 0 and reply.extra is None


@pytest.mark.parametrize("text,success", [
    ("I ran the chmod on the server. Now, SSH with my key works.", True),
    ("I plugged my speakers in. Now I have sound.", True),
    ("I restarted and checked whether the partition appears.", False),
    ("I will check if it prints.", False),
    ("Nothing works.", False),
    ("I installed it. I can now find the package in my application menu.", True),  # seen in a batch
    # seen in a batch, both missed: the first let a false success through to the solved-check
    ("I installed xmms-wma. The installation was successful.", True),
    ("I rebuilt the library. Now, I can play MP3 and FLAC files without any issues.", True),
    ("The command ran successfully, but I still get no sound.", False),
    ("The update was not successful.", False),
])
def test_claims_success_in_other_words(text, success):
    assert claims_success(text) is success


async def test_the_outcome_mixes_the_users_yes_no_with_the_similarity_to_the_hidden_fix():
    class Embedder:
        def embed_array(self, texts):
            import numpy as np
            return np.array([[1.0, 0.0], [0.6, 0.8]])  # cosine 0.6

    user_client, _ = client(user_model("Yes", []), role="user")
    user = SimulatedUser(user_client, embedder=Embedder())
    fixed, decision, _ = await user.outcome(SCENARIO, "Install the driver.")
    assert decision == {"p_fix": 0.8, "p_llm": 1.0, "similarity": 0.6, "fix_terms": [],
                        "threshold": 0.66} and fixed  # no term of the fix named: 0.66 needed
    user_client, _ = client(user_model("No", []), role="user")
    fixed, decision, _ = await SimulatedUser(user_client, embedder=Embedder()).outcome(SCENARIO, "Reboot.")
    assert decision["p_fix"] == 0.3 and not fixed


async def test_a_message_without_the_fixs_terms_needs_a_confident_outcome():
    class Embedder:
        def __init__(self, cosine):
            self.cosine = cosine

        def embed_array(self, texts):
            import numpy as np
            return np.array([[1.0, 0.0], [self.cosine, (1 - self.cosine ** 2) ** 0.5]])

    async def decide(message, cosine):
        user_client, _ = client(user_model("Yes", []), role="user")  # P(yes) 1.0
        return await SimulatedUser(user_client, embedder=Embedder(cosine)).outcome(SCENARIO, message)

    # mean 0.65: above the 0.55 threshold of a message naming a term of the fix, below the 0.66 one
    fixed, decision, _ = await decide("Check your drivers and reboot.", 0.3)
    assert decision["fix_terms"] == [] and not fixed
    fixed, decision, _ = await decide("Install bcmwl-kernel-source and reboot.", 0.3)
    assert decision["fix_terms"] == ["bcmwl-kernel-source"] and fixed


async def test_a_user_message_that_reads_like_the_agent_is_not_a_confirmation():
    judge_client, _ = client(lambda messages, kwargs: "Yes")  # P(yes) 1.0 to every question
    check = ConfirmationSolvedCheck(judge_client)
    copied = ("I have added the universe repository. Here are the steps:\n1. Open the terminal.\n"
              "2. Run sudo apt-get update")
    history = [Message("user", "I cannot find xmms-wma."), Message("agent", "Add universe."),
               Message("user", copied), Message("agent", "Good.")]
    j = await check.judge(Problem("i", "q", None, "Universe is missing."), history)
    assert j.value is False and j.parsed["agent_cues"] and "reads like the agent" in j.reason
    history[2] = Message("user", "I added universe and now xmms-wma installs. Thanks!")
    assert (await check.judge(Problem("i", "q", None, "Universe is missing."), history)).value is True


def test_commands_that_only_look_at_the_system_are_not_terms_of_the_fix():
    from harness.simuser.fix_terms import shared_fix_terms
    solution = "install gdm\n\ndpkg -l |grep ubuntu-desktop\n\nreinstall gnome. it was removed for some reason"
    question = "After an update I lost gnome in my hardy machine. All I get is text based login."
    # a diagnostic step the helpers also used is no sign that the message gives their fix ...
    assert shared_fix_terms("Check the log: dmesg | grep xorg, then run lspci.", solution, question) == []
    # ... the fix's own package names are (terms of 4 characters or more: not ``gdm``)
    assert shared_fix_terms("Run sudo apt-get install gdm ubuntu-desktop.", solution, question) == \
        ["ubuntu-desktop"]


def test_the_nicks_a_thread_addresses_are_not_terms_of_the_fix():
    from harness.simuser.fix_terms import distinctive_terms, shared_fix_terms
    # a real #ubuntu solution (thread 1357): every helper line starts with the asker's nick
    solution = "keanu: are there any error messages?\nkeanu: try setting it to alsa\nthen restart it"
    assert "keanu" not in distinctive_terms(solution)
    assert shared_fix_terms("keanu: are there any error messages?", solution) == []
    assert shared_fix_terms("Set the output plugin to alsa.", solution) == ["alsa"]


def test_the_similarity_compares_the_fix_and_the_message_without_the_nicks_the_fix_addresses():
    from dataclasses import replace

    from harness.aids.text import without_addresses
    solution = "keanu: try setting it to alsa\nkeanu, then restart it\nthe engine is xine: restart"
    assert without_addresses(solution) == "try setting it to alsa\nthen restart it\nthe engine is xine: restart"
    assert without_addresses("keanu: try alsa", {"bob"}) == "keanu: try alsa"  # only known nicks

    class Recorder:
        texts: list[str] = []

        def embed_array(self, texts):
            import numpy as np
            Recorder.texts = list(texts)
            return np.array([[1.0, 0.0], [1.0, 0.0]])

    user_client, _ = client(user_model("Yes", []), role="user")
    user = SimulatedUser(user_client, embedder=Recorder())
    assert user.similarity(replace(SCENARIO, solution=solution), "keanu: set the plugin to alsa") == 1.0
    assert Recorder.texts == ["set the plugin to alsa", without_addresses(solution)]


@pytest.mark.parametrize("message,asks", [
    ("keanu: are there any error messages?", True),  # real helpers' questions (replayed)
    ("Oswy: is edgy still on the disk?", True),
    ("Could you tell me which operating system your laptop runs?", True),
    ("Which Ubuntu version is it? And which card?", True),
    ("Did you try to reinstall GRUB from the live CD?", False),  # a suggestion as a question
    ("How about setting the output plugin to alsa?", False),
    ("What does `uname -a` print?", False),  # code: left to the scores
    ("berkes: can you 'sudo iwconfig'?", False),
    ("Which Ubuntu version is it? Please also check the cable.", False),
    ("keanu: try setting it to alsa", False),
    ("", False),
])
def test_a_message_that_only_asks(message, asks):
    from harness.simuser.fix_terms import asks_only
    assert asks_only(message) is asks


async def test_a_question_is_no_fix_whatever_the_scores():
    user_client, _ = client(user_model("Yes", []), role="user")  # P(yes) 1.0
    user = SimulatedUser(user_client, embedder=Similarity(0.9))
    fixed, decision, _ = await user.outcome(SCENARIO, "Which wireless card does the laptop have?")
    assert not fixed and decision["asks_only"] and decision["p_fix"] > decision["threshold"]
    # a question that names a term of the real fix is left to the scores
    fixed, decision, _ = await user.outcome(SCENARIO, "Have you installed bcmwl-kernel-source?")
    assert fixed and "asks_only" not in decision


def test_inflections_of_generic_fix_words_are_not_terms_of_the_fix():
    from harness.simuser.fix_terms import distinctive_terms, is_generic, shared_fix_terms
    # seen in a batch (task 1451): "reinstalling" in a generic reply matched the thread's fix
    assert {w for w in ("reinstalling", "reinstalled", "restarting", "rebooting", "rebooted",
                        "installation", "installs", "packages", "commands")
            if not is_generic(w)} == set()
    # the fix's own terms stay, whatever their ending (not a generic word underneath)
    assert [w for w in ("ndiswrapper", "dhclient", "grub-install", "reinstaller", "installer", "rebooter")
            if is_generic(w)] == []
    solution = "Reinstalling xserver-xorg-video-intel fixed it after restarting."
    assert distinctive_terms(solution) == {"xserver-xorg-video-intel"}
    assert shared_fix_terms("Try reinstalling the driver and restarting.", solution) == []
    assert shared_fix_terms("Reinstall xserver-xorg-video-intel.", solution) == ["xserver-xorg-video-intel"]


def test_the_simulators_own_instructions_are_cut_from_its_message():
    from harness.simuser.checks import strip_copied_instructions
    # seen in a batch: the outcome note written out after the reply
    text = ("I added my key to the agent and restarted the SSH service. The problem is not solved. "
            "If the agent asked you something, answer it from your facts. If the agent told you to do "
            "something, say that you did it and that the problem is still there.")
    kept, cut = strip_copied_instructions(text)
    assert kept == "I added my key to the agent and restarted the SSH service. The problem is not solved."
    assert len(cut) == 2
    assert strip_copied_instructions("(Note for your reply, not part of the agent's message: your")[0] == ""
    # seen in a p9 batch: the regeneration note copied after the reply
    text = ("I have updated Amarok to the latest version and restarted it. The problem still persists. "
            "(Your last draft was not used: it repeated an earlier message; answer the agent's last message "
            "in your own words; it said the problem is solved, but it is not.)")
    kept, cut = strip_copied_instructions(text)
    assert kept == "I have updated Amarok to the latest version and restarted it. The problem still persists."
    assert not claims_success(kept) and claims_success(text)  # the copied note said "solved"
    # a user's own words that happen to echo the note are kept
    for own in ("I did what the agent said and it works now.", "It is still there, the same error.",
                "I don't know which version I have."):
        assert strip_copied_instructions(own) == (own, [])


@pytest.mark.parametrize("text", [
    "You are correct, starting the SSH agent should resolve the issue. Once you have done this, "
    "try running your SSH command again.",
    "You're welcome! I'm glad I could help.\n\nIf you have any more questions or need further assistance, "
    "feel free to ask.",
])
def test_instructions_to_the_reader_read_like_the_agent(text):
    from harness.aids.cues import agent_cues
    assert agent_cues(text)


async def test_a_draft_that_is_only_the_copied_note_is_regenerated():
    drafts = iter(["(Note for your reply, not part of the agent's message: your problem is NOT solved.)",
                   "I rebooted and there are still no networks."])

    def respond(messages, kwargs):
        if "Answer Yes or No" in str(messages[-1].content):
            return "No"
        return next(drafts)
    user_client, _ = client(respond, role="user")
    reply = await SimulatedUser(user_client).respond(SCENARIO, [*BEFORE, Message("agent", "Reboot.")], 2)
    sim = reply.extra["simulator"]
    assert reply.text == "I rebooted and there are still no networks."
    assert sim["attempts"][0]["violations"][0]["kind"] == "copies_instructions"
    assert sim["attempts"][0]["checks"]["cut_instructions"] and sim["regenerations"] == 1


def test_a_short_copied_order_of_the_note_is_cut_but_a_plain_report_stays():
    from harness.simuser.checks import strip_copied_instructions
    assert strip_copied_instructions("I changed the boot order in my BIOS. Never say that it works.)") == \
        ("I changed the boot order in my BIOS.", ["Never say that it works.)"])
    assert strip_copied_instructions("I did it. The problem is still there.") == ("I did it. The problem is still there.", [])
