"""The evidence solved-check (harness.selfscore.solved_evidence, harness.aids.evidence) on fake judges."""
from __future__ import annotations

import numpy as np
import pytest

from graphs.protocols import Message, Problem
from harness.aids.evidence import not_a_fix, reaction
from harness.config import ModelSpec
from harness.models.llm import RoleClient
from harness.selfscore.judge_input import JudgeInput
from harness.selfscore.solved_evidence import ANSWER_QUESTION, EvidenceSolvedCheck
from tests.fakes import ScriptedChatModel

PROBLEM = Problem("i", "My dates show as ####.", None, "The column is too narrow to display the dates.")
FIX = "The column is too narrow. Double-click the right edge of the column header to widen it."


def check(says_fix=lambda text: "Double-click" in text, solution=None, embedder=None):
    """A check whose fake judge answers Yes when ``says_fix(latest agent message)``."""
    def respond(messages, kwargs):
        prompt = str(messages[-1].content)
        assert ("tell the user how to fix exactly this problem" in prompt or "is this problem gone" in prompt) \
            and kwargs.get("max_tokens") == 1
        latest = prompt.split("<latest>")[-1].split("</latest>")[0]
        return "Yes" if says_fix(latest) else "No"
    model = ScriptedChatModel(responder=respond, prompts=[])
    client = RoleClient("judge", ModelSpec(model="fake-judge"), model)
    return EvidenceSolvedCheck(client, JudgeInput(False, "as-is"), embedder=embedder), model


def conversation(*texts):
    return [Message("user" if i % 2 == 0 else "agent", t) for i, t in enumerate(texts)]


@pytest.mark.parametrize("message,kind", [
    ("OK. Thank you", "accepts"), ("ok thanks, I will try that tonight", "accepts"),
    ("It works now, thanks!", "confirms"), ("Still ####, nothing changed.", "persists"),
    ("Which version of Excel do you mean?", "other"), ("The formula bar has 01/02/2023.", "other")])
def test_the_users_reaction_to_the_previous_answer(message, kind):
    assert reaction(message)[0] == kind


@pytest.mark.parametrize("message,kind,rules", [
    ("Does this work recursively too?", "other", ["evidence.question_clause"]),
    ("Is it fixed in the next release?!", "other", ["evidence.question_clause"]),
    ("Wow, that worked. What happened to pulseaudio, though?", "confirms", ["success.word", "evidence.confirms"]),
    ("Perfect, that did it. Why didn't it save it automatically?", "confirms", None),
    ("Which file do I edit?", "other", [])])
def test_a_success_word_asked_about_is_no_confirmation(message, kind, rules):
    got, fired = reaction(message)
    assert got == kind
    if rules is not None:
        assert fired == rules


@pytest.mark.parametrize("text,rule", [
    ("What does the cell show when you click it?", "asks.question"),
    ("Please contact your IT administrator about this.", "elsewhere.contact"),
    ("Widen the column. Does that help?", None), (FIX, None)])
def test_what_is_no_fix_whatever_the_judge_says(text, rule):
    assert not_a_fix(text, []) == rule


async def test_a_one_turn_right_fix_is_solved():
    c, model = check()
    j = await c.judge(PROBLEM, conversation("My dates show as ####.", FIX))
    assert j.ok and j.value is True and j.parsed["answers"][0]["p_llm"] == 1.0 and model.calls == 2
    assert j.parsed["judge_value"] is True and j.parsed["reaction"] == "first"


@pytest.mark.parametrize("reply", ["What version of Excel is this?", "Contact your administrator.",
                                   "Try restarting the computer."])
async def test_a_question_a_deflection_and_a_wrong_fix_are_not(reply):
    c, model = check()
    j = await c.judge(PROBLEM, conversation("My dates show as ####.", reply))
    assert j.ok and j.value is False
    asked = "Try restarting" in reply  # the rules decide the first two without a question
    assert model.calls == (2 if asked else 0) and (j.parsed["decided_by"] == "questions") is asked


async def test_a_thank_you_counts_only_when_the_accepted_answer_was_the_fix():
    c, _ = check()
    accepted = await c.judge(PROBLEM, conversation("My dates show as ####.", FIX, "OK. Thank you", "You're welcome!"))
    assert accepted.value is True and "accepted" in accepted.reason
    c, _ = check()
    pointer = await c.judge(PROBLEM, conversation("My dates show as ####.", "Ask on the Excel forum.",
                                                  "OK thanks", "You're welcome!"))
    assert pointer.value is False


async def test_a_confirmation_is_solved_without_a_question_and_a_persisting_symptom_is_not():
    c, model = check(says_fix=lambda text: False)
    j = await c.judge(PROBLEM, conversation("My dates show as ####.", FIX, "That worked, the dates show now.", "Great."))
    assert j.value is True and model.calls == 0 and j.parsed["reaction"] == "confirms"
    j = await c.judge(PROBLEM, conversation("My dates show as ####.", FIX, "Still ####.", "Then reinstall Office."))
    assert j.value is False and j.parsed["reaction"] == "persists"


class _Embedder:
    def __init__(self, similarity):
        self.similarity = similarity

    def embed_array(self, texts):
        a = np.array([1.0, 0.0])
        return np.array([a, [self.similarity, np.sqrt(1 - self.similarity ** 2)]])


async def test_the_reference_solution_is_averaged_in():
    problem = Problem("i", PROBLEM.question, None, PROBLEM.problem_statement, solution="Widen the column.")
    c, model = check(says_fix=lambda text: True, embedder=_Embedder(0.0))  # the judge says yes, nothing shared
    j = await c.judge(problem, conversation("My dates show as ####.", "Change the date format to text."))
    assert j.parsed["answers"][0]["p_fix"] == pytest.approx(0.5) and "fix that solved it" in str(model.prompts[-1][-1].content)
    c, _ = check(says_fix=lambda text: False, embedder=_Embedder(0.2))
    j = await c.judge(problem, conversation("My dates show as ####.", "Change the date format to text."))
    assert j.value is False and j.parsed["answers"][0]["p_fix"] == pytest.approx(0.1)


def test_the_question_names_the_problem_and_forbids_the_easy_yes():
    assert "{problem}" in ANSWER_QUESTION and "A question back to the user" in ANSWER_QUESTION
