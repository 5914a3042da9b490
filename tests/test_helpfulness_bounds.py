"""The rubric bounds on helpfulness scores (harness.aids.helpfulness_bounds) and how the judges apply them."""
from __future__ import annotations

import json

import pytest

from graphs.protocols import Message, Problem
from harness.config import ModelSpec
from harness.models.llm import RoleClient
from harness.aids.helpfulness_bounds import (RULES_VERSION, Bounds, agent_reply_bounds, first_question_bounds,
                                             user_reply_bounds)
from harness.selfscore.judges import SelfScoreJudges, StructuredJudge
from tests.fakes import ScriptedChatModel

QUESTION = "My SSH login to the server fails with 'Permission denied (publickey)'."
STEP = "Run `ssh -v user@host` and tell me which key the client offers."
AFTER_STEP = [Message("user", QUESTION), Message("agent", STEP)]


def user_bounds(text: str) -> Bounds:
    return user_reply_bounds(text, [*AFTER_STEP, Message("user", text)])


# -- a later user message -----------------------------------------------------------------------
@pytest.mark.parametrize("text,floor,cap", [
    ("I tried logging in again and the issue is still there.", 5, 10),   # b18: the 1.5B gave it 1
    ("Same error as before.", 5, 10),
    ("No,that didnt show as anything", 5, 10),
    ("That worked, thanks", 5, 10),
    ("guest__ for that i get this http://ubuntu.pastebin.com/4JHwYRHT", 5, 10),
    ("It says: 03:00.0 Network controller: Broadcom Corporation BCM4312 802.11b/g (rev 01)", 5, 10),
    ("ok", 1, 2), ("ok, thanks", 1, 2), ("Thank you", 1, 2),
    ("Thanks, I will try that some time next week.", 1, 3),              # p9 gave it 8
    ("I don't want to change any files. Just tell me why it doesn't work.", 1, 3),
    ("I'm sorry to hear you are having trouble. I will do my best to help you.", 1, 2),
    (QUESTION + " Can you help me?", 1, 2),                              # the question again
])
def test_later_user_messages_are_pinned_to_their_band(text, floor, cap):
    b = user_bounds(text)
    assert (b.floor, b.cap) == (floor, cap) and b.rules


@pytest.mark.parametrize("text", [
    "yes", "yes i do",                                  # an answer to a yes/no question is no "ok"
    "where can i find it? any deb package is ok?",      # a follow-up question: the judge's call
    "I see. Thank you.",
    "you can create shared folders there, but there are no usernames",  # a user describing a dialog
    "Dr_Willis: hmm, I'm not sure what you mean",
])
def test_messages_the_rules_cannot_place_are_left_to_the_judge(text):
    assert user_bounds(text) == Bounds()


def test_a_nick_before_the_message_is_not_an_output():
    assert user_bounds("Dr_Willis: can I do a clean install without formatting?") == Bounds()


def test_postponing_after_reporting_the_outcome_still_reports_it():
    assert user_bounds("It still fails, I will try the other cable later.").floor == 5


# -- a first question ---------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["my sound does not work recently..i need help",
                                  "I am completely FEDUP with the stupid wireless cards. Any care to help",
                                  "apt is broken again, what do I do"])
def test_a_first_question_without_any_detail_is_at_most_4(text):
    assert first_question_bounds(text).cap == 4


@pytest.mark.parametrize("text", [
    "anyone familiar w/ a prob getting the sound running on a K7S41Gx mainboard?",   # a model name
    "apt-get update fails with '404 Not Found' for all the gutsy repositories.",
    "Since the kernel update my wifi drops every few minutes.",
    "How do I search for a specific file name?",                                     # a how-to
    "hi i was hoping someone could tell me where syslog is?",
])
def test_a_first_question_with_a_detail_or_a_how_to_is_left_to_the_judge(text):
    assert first_question_bounds(text) == Bounds()


# -- an agent message ---------------------------------------------------------------------------
def test_an_agent_message_repeated_word_for_word_is_at_most_2():
    told = [Message("user", "My GUI stopped working."), Message("agent", "Install gdm with `sudo apt-get install gdm`."),
            Message("user", "gdm is already installed, still the text login.")]
    again = [*told, Message("agent", "Install gdm with `sudo apt-get install gdm`.")]
    assert agent_reply_bounds(again[-1].content, again).cap == 2
    other = [*told, Message("agent", "Reinstall the desktop with `sudo apt-get install ubuntu-desktop`.")]
    assert agent_reply_bounds(other[-1].content, other) == Bounds()


@pytest.mark.parametrize("text,cap", [
    ("You can try contacting the system administrator or the manufacturer for assistance.", 3),
    ("I'm sorry to hear that. Please try again later.", 3),
    ("If that fails, contact your administrator; first run `sudo dhclient -r` and `sudo dhclient`.", 10),
])
def test_an_agent_message_that_only_sends_the_user_elsewhere_is_at_most_3(text, cap):
    assert agent_reply_bounds(text, [Message("user", "No network."), Message("agent", text)]).cap == cap


# -- the judges apply them ----------------------------------------------------------------------
def judges(score: int, bounds: bool = True, other_languages: str = "as-is") -> SelfScoreJudges:
    model = ScriptedChatModel(responder=lambda m, k: json.dumps({"reason": "r", "score": score}), prompts=[])
    client = RoleClient("judge", ModelSpec(model="fake-judge"), model)
    return SelfScoreJudges(StructuredJudge(client, 0), manipulation_defence=False,
                           other_languages=other_languages, helpfulness_bounds=bounds)


PROBLEM = Problem("p", QUESTION, None, None)


async def test_a_bounded_score_keeps_the_judges_own_score_and_the_rule():
    history = [*AFTER_STEP, Message("user", "I tried that and the issue is still there.")]
    j = await judges(1).user_helpfulness(PROBLEM, history, first_turn=False)
    assert j.ok and j.value == 5 and j.parsed["score"] == 5
    assert j.parsed["bounds"]["judge_score"] == 1 and j.parsed["bounds"]["floor"] == 5
    assert j.parsed["bounds"]["rules_version"] == RULES_VERSION and "still" in j.parsed["bounds"]["rules"][0]
    # inside the band the judge's score stands (the rule is still recorded); where no rule applies, nothing is
    j = await judges(7).user_helpfulness(PROBLEM, history, first_turn=False)
    assert j.value == 7 and j.parsed["bounds"]["judge_score"] == 7
    j = await judges(7).user_helpfulness(PROBLEM, [Message("user", "How do I find a file?")], first_turn=True)
    assert j.value == 7 and "bounds" not in j.parsed


async def test_each_judge_uses_its_own_rules():
    first = [Message("user", "my sound does not work recently..i need help")]
    assert (await judges(9).user_helpfulness(PROBLEM, first, first_turn=True)).value == 4
    repeat = [*AFTER_STEP, Message("user", "It offers id_rsa, still denied."), Message("agent", STEP)]
    assert (await judges(8).agent_helpfulness(PROBLEM, repeat)).value == 2


async def test_bounds_off_keeps_the_judges_score():
    history = [*AFTER_STEP, Message("user", "ok")]
    j = await judges(8, bounds=False).user_helpfulness(PROBLEM, history, first_turn=False)
    assert j.value == 8 and "bounds" not in j.parsed


async def test_a_message_the_english_rules_cannot_read_is_left_to_the_judge():
    history = [*AFTER_STEP, Message("user", "Ich habe es versucht, aber das Problem besteht weiterhin, leider.")]
    j = await judges(1, other_languages="tell").user_helpfulness(PROBLEM, history, first_turn=False)
    assert j.value == 1 and "bounds" not in j.parsed


def test_the_config_switch_reaches_the_judges(tmp_path):
    from harness.compose import Runtime
    from harness.config import load_config
    from tests.fakes import default_responder, fake_factory
    for on in (True, False):
        cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "scoring": {"helpfulness_bounds": on}})
        with Runtime(cfg, fake_factory(default_responder())) as runtime:
            assert runtime.turn_judges().helpfulness_bounds is on
