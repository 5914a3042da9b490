"""The simulated user made more human where simcheck's tune part showed it was not (issue 42,
part 4): the helpers' messages of a thread without a labelled fix are not taken for the fix,
the asker's later questions and chatter are not told to it as facts, and the checks catch the
drafts the tune part showed slipping through (a short echo, an instruction to the reader, the
helper's phrase, success in other words, a refusal). Each rule has a case where it must stay
quiet, and the new rules are run over real askers' replies, which they must not flag.
"""
from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage

from graphs.protocols import Message, Problem
from harness.config import ModelSpec
from harness.models.llm import RoleClient
from harness.simcheck.points import real_points
from harness.simcheck.run import problem_of
from harness.simuser.checks import rule_violations
from harness.simuser.users import FIX_THRESHOLD, SimulatedUser, known_fix, outcome_messages, situation_facts
from harness.tasks.datasets import load_dataset
from tests.fakes import ScriptedChatModel, default_responder

HELPERS = "try a different mirror\nhave you run sudo apt-get update recently?\nedit your sources.list"
NO_LABELLED_FIX = Problem("i", "apt-get update fails with 404 on every mirror.", None,
                          "The release is end of life and its mirrors moved.", None, solution=HELPERS,
                          fix_known=False)
LABELLED = Problem("i", NO_LABELLED_FIX.question, None, NO_LABELLED_FIX.problem_statement, HELPERS,
                   solution=HELPERS)


class Cosine:
    """A stand-in for the MiniLM embedder: cosine 0.6, and the texts it was given."""

    def __init__(self):
        self.texts: list[str] = []

    def embed_array(self, texts):
        import numpy as np
        self.texts = list(texts)
        return np.array([[1.0, 0.0], [0.6, 0.8]])


def _user(answer: str = "Yes") -> tuple[SimulatedUser, Cosine]:
    model = ScriptedChatModel(responder=lambda messages, kwargs: answer, prompts=[])
    embedder = Cosine()
    return SimulatedUser(RoleClient("user", ModelSpec(model="fake"), model), embedder=embedder), embedder


def test_the_helpers_messages_are_no_fix_to_the_outcome_question():
    assert known_fix(LABELLED) == HELPERS and known_fix(NO_LABELLED_FIX) is None
    asked = outcome_messages(NO_LABELLED_FIX, "Edit your sources.list.")[-1].content
    assert "<solution>" not in asked and NO_LABELLED_FIX.problem_statement in asked
    assert "<solution>" in outcome_messages(LABELLED, "Edit your sources.list.")[-1].content


async def test_without_a_labelled_fix_the_outcome_needs_the_no_solution_threshold():
    user, embedder = _user()
    fixed, decision, _ = await user.outcome(NO_LABELLED_FIX, "edit your sources.list")
    # no fix terms (there is no fix to share them with), the likeness is to the problem statement
    assert decision["fix_terms"] is None and decision["threshold"] == FIX_THRESHOLD
    assert embedder.texts[1] == NO_LABELLED_FIX.problem_statement
    assert decision["p_fix"] == 0.8 and fixed  # P(yes) 1.0, cosine 0.6
    user, _ = _user("No")
    fixed, decision, _ = await user.outcome(NO_LABELLED_FIX, "edit your sources.list")
    assert decision["p_fix"] == 0.3 and not fixed
    # the same step against the labelled fix names its term and passes the lower threshold
    user, embedder = _user("No")
    _, decision, _ = await user.outcome(LABELLED, "edit your sources.list")
    assert decision["fix_terms"] == ["sources.list"] and embedder.texts[1] == HELPERS


def test_a_batch_decides_without_a_fix_where_the_thread_has_no_labelled_one(tmp_path):
    """A batch's simulated user: the thread with a reference answer is decided against its fix
    (fix terms read), the one whose solution is only its helpers' messages by the no-solution
    rule (no fix terms, threshold 0.62)."""
    from tests.test_simulator_faults import _run
    tasks = [{"id": "labelled", "question": "apt-get update fails with 404.", "reference_answer": HELPERS},
             {"id": "helpers", "question": "apt-get update fails with 404.", "agent_replies": HELPERS.split("\n"),
              "followups": ["to me ?", "still 404"]}]
    run_id, reader = _run(tmp_path, "embedded", default_responder(solve_at=None), tasks=tasks)
    decisions = {}
    for interaction_id, turns in reader.turns_for_run(run_id).items():
        for t in turns:
            sim = (json.loads(t["extra_json"] or "{}").get("user") or {}).get("simulator") or {}
            if "threshold" in sim:
                decisions.setdefault(interaction_id.split(":")[-1].split("#")[0], sim)
    assert decisions["helpers"]["fix_terms"] is None and decisions["helpers"]["threshold"] == FIX_THRESHOLD
    assert isinstance(decisions["labelled"]["fix_terms"], list)


def test_simcheck_says_whether_the_solution_is_a_labelled_fix():
    tasks = load_dataset("ubuntu_irc_troubleshooting").tasks
    points = real_points(tasks, "all", "all")
    by_task = {p.task_id: p for p in points}
    labelled = {t.id for t in tasks if (t.reference_answer or "").strip()}
    assert {t for t, p in by_task.items() if p.fix_known} == labelled & set(by_task)
    assert any(not p.fix_known for p in by_task.values())  # 8 of the 30 threads have no labelled fix
    point = next(p for p in points if not p.fix_known)
    assert problem_of(point, "cooperative", None).fix_known is False


@pytest.mark.parametrize("fact,kept", [
    ("Ubuntu 22.04", True),
    ("the address is 169.254.12.7", True),
    ("is an intermittent behaviour", True),  # opens with a question word, but states
    ("Now it works, thanks!", True),
    ("how do i disable automatic login from ctrl+alt+f7?", False),
    ("safe or save?", False),
    ("so how should it be? could u correct it so i can copy paste?", False),
    ("I see thanks. Let me check again", False),
    ("okay ill give it a shot", False),
    ("ok :)", False),
])
def test_the_user_is_told_the_facts_of_its_situation_not_its_later_questions_or_chatter(fact, kept):
    assert (situation_facts([fact]) == [fact]) is kept


async def test_the_facts_block_the_user_model_reads_leaves_the_questions_out():
    seen: list = []

    def respond(messages, kwargs):
        if kwargs.get("logprobs"):
            return "No"
        seen.append(messages)
        return "I ran it, still the same 404."
    model = ScriptedChatModel(responder=respond, prompts=[])
    user = SimulatedUser(RoleClient("user", ModelSpec(model="fake"), model), embedder=Cosine())
    problem = Problem("i", NO_LABELLED_FIX.question, None, NO_LABELLED_FIX.problem_statement,
                      facts=("Ubuntu 10.10", "how do i change the mirror?"))
    await user.respond(problem, [Message("user", problem.question), Message("agent", "Run sudo apt-get update.")], 2)
    system = seen[0][0].content
    assert "- Ubuntu 10.10" in system and "how do i change the mirror" not in system


HISTORY = [Message("user", "My usb drive does not mount."), Message("agent", "Dream, ctrl+alt+del?")]


@pytest.mark.parametrize("text,fixed,kind", [
    ("Dream, ctrl+alt+del?", None, "echoes_agent"),            # sent back whole
    ("Dream: no response to ctrl+alt+del", None, None),         # its words, but not the agent's message
    ("del?", None, None),                                       # one word is no echo
    ("Lemonsparrow: try a clean install. it will install mysql properly.", None, "acts_as_agent"),
    ("I don't understand. Please provide more details or run the command.", None, "acts_as_agent"),
    ("try diff account?", None, None),                          # a line that asks is a user's
    ("I tried it again, still nothing.", None, None),
    ("Here is the package you are looking for: xmms-wma", None, "acts_as_agent"),
    ("I am now able to login to the graphical interface.", False, "false_success"),
    ("I am now able to login to the graphical interface.", True, None),
    ("I am not able to login, same screen.", False, None),
])
def test_the_checks_catch_what_the_tune_part_let_through(text, fixed, kind):
    kinds = [v.kind for v in rule_violations(text, Problem("i", HISTORY[0].content, None, None), HISTORY, fixed)]
    assert kinds == ([kind] if kind else [])


def test_the_new_rules_leave_real_askers_replies_alone():
    """The rules added in part 4, run over every real asker's reply of the shipped troubleshooting
    threads' tune part: none of those replies is flagged by them (the rules were written reading
    the tune part's simulated replies; the real ones are what a person writes)."""
    tasks = load_dataset("ubuntu_irc_troubleshooting").tasks
    flagged = []
    for p in real_points(tasks, "all", "tune"):
        for v in rule_violations(p.real, problem_of(p, "cooperative", None), list(p.history), None):
            if any(r.startswith(("helper.", "claim.")) for r in v.rules) or v.kind == "echoes_agent":
                flagged.append((p.id, v.kind, p.real[:80]))
    assert flagged == []


async def test_a_refused_draft_is_written_again_with_its_own_note():
    drafts = iter(["I apologize, but I cannot help with that.", "I ran it and it still fails."])
    seen: list = []

    def respond(messages, kwargs):
        if kwargs.get("logprobs"):
            return "No"
        seen.append(messages)
        return next(drafts)
    model = ScriptedChatModel(responder=respond, prompts=[])
    user = SimulatedUser(RoleClient("user", ModelSpec(model="fake"), model), embedder=Cosine(), max_regenerations=2)
    reply = await user.respond(LABELLED, [Message("user", LABELLED.question), Message("agent", "Run apt-get update.")], 2)
    record = reply.extra["simulator"]
    assert reply.text == "I ran it and it still fails." and record["violations"] == ["breaks_role"]
    last = seen[-1][-1]
    assert isinstance(last, HumanMessage) and "it refused or spoke as an AI assistant" in last.content
    assert not record["faults"]["flagged"]
    assert json.dumps(record)  # the record stays JSON
