"""Simulated-user personas (harness/simuser/personas.py): each persona's notes, its schedule decided
in code, the checks that relax exactly the act's own sentences and still catch false success,
leaks and agent-like drafts, the cooperative user unchanged, and the persona sanity cases
(fake chat models)."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from graphs.protocols import Message, Problem
from harness.simuser import personas, prompts
from harness.simuser.checks import rule_violations, strip_copied_instructions
from harness.simuser.personas import (ASKS_FOR_HUMAN, CLAIMS_DONE, PERSONA_NAMES, TANGENT, TANGENT_MARKS, Plan,
                                      persona, tangent_topic)
from harness.simuser.users import NOT_FIXED_FALLBACK, SimulatedUser
from tests.test_solved_check_and_user import SCENARIO, Similarity, client

QUESTION = Message("user", SCENARIO.question)
STEP = "Restart the network manager with sudo systemctl restart NetworkManager."
STEP2 = "Turn the wifi off and on again in the top-right menu."
STEP3 = "Update the system with the Software Updater."
ASK = "Which wireless card does your laptop have?"
ASK2 = "Could you please tell me which wireless card it is? I need its name."
STILL = "I did that but there are still no networks."
PERSONA_NOTES = ["gives little detail", "has asked again", "run out of patience", "You are impatient",
                 "already did exactly", "something unrelated", "do not remember any details", "last draft"]


def as_persona(name: str, problem: Problem = SCENARIO) -> Problem:
    return replace(problem, persona=name)


def conversation(*pairs: tuple[str, str | None]) -> list[Message]:
    """The question, then (agent message, user reply) pairs; a last reply of None leaves the
    conversation ending with the agent's message."""
    history = [QUESTION]
    for agent, user in pairs:
        history.append(Message("agent", agent))
        if user is not None:
            history.append(Message("user", user))
    return history


def plan(name: str, history: list[Message], fixed: bool = False, problem: Problem = SCENARIO) -> Plan | None:
    return persona(name).plan(as_persona(name, problem), history, fixed)


def act(name: str, history: list[Message], fixed: bool = False) -> str | None:
    p = plan(name, history, fixed)
    return p.act.name if p and p.act else None


def kinds(text: str, history: list[Message], fixed: bool | None = False, p: Plan | None = None) -> list[str]:
    return [v.kind for v in rule_violations(text, SCENARIO, history, fixed, p)]


# -- the personas and their notes -------------------------------------------------------------------
def test_the_required_personas_exist_and_an_unknown_name_is_refused():
    assert PERSONA_NAMES == ("cooperative", "vague", "impatient", "mistaken", "tangential")
    assert persona(None).name == persona("").name == "cooperative"
    assert all(persona(n).description for n in PERSONA_NAMES)
    with pytest.raises(ValueError, match="unknown simulated-user persona 'grumpy'.*cooperative, vague"):
        persona("grumpy")


def test_the_behaviours_are_the_names_a_task_and_run_persona_may_give():
    from harness.tasks.personas import PERSONAS  # validated there without importing the simulated user
    assert PERSONA_NAMES == PERSONAS


def test_the_cooperative_user_plans_nothing():
    for fixed in (True, False):
        for history in (conversation((STEP, None)), conversation((STEP, STILL), (STEP2, STILL), (STEP3, None)),
                        conversation((ASK, None))):
            assert plan("cooperative", history, fixed) is None


@pytest.mark.parametrize("name,history,fixed,note", [
    ("vague", conversation((ASK, None)), False, prompts.USER_VAGUE_WITHHOLDS),
    ("vague", conversation((ASK, "Not sure."), (ASK2, None)), False, prompts.USER_VAGUE_TELLS),
    ("vague", conversation((STEP, None)), False, prompts.USER_VAGUE_LITTLE_DETAIL),
    ("vague", conversation((STEP, None)), True, prompts.USER_FIXED),
    ("impatient", conversation((STEP, None)), False, prompts.USER_NOT_FIXED + "\n" + prompts.USER_IMPATIENT_STYLE),
    ("impatient", conversation((STEP, None)), True, prompts.USER_FIXED),
    ("impatient", conversation((STEP, STILL), (STEP2, None)), False, prompts.USER_IMPATIENT_HUMAN),
    ("mistaken", conversation((STEP, None)), True, prompts.USER_MISTAKEN_DONE),
    ("mistaken", conversation((STEP, STILL), (STEP2, None)), False, prompts.USER_NOT_FIXED),
    ("tangential", conversation((STEP, STILL), (STEP2, None)), False, prompts.USER_NOT_FIXED),
])
def test_each_turn_is_written_under_its_personas_note(name, history, fixed, note):
    assert plan(name, history, fixed).note == note


def test_the_tangent_note_names_one_unrelated_matter_and_every_note_keeps_the_grounding_rules():
    p = plan("tangential", conversation((STEP, None)))
    assert p.act is TANGENT and p.topic in prompts.TANGENT_TOPICS
    assert p.note == prompts.USER_TANGENT.format(topic=prompts.TANGENT_TOPICS[p.topic])
    assert p.record == {"name": "tangential", "act": "tangent", "topic": p.topic}
    for note in (prompts.USER_VAGUE_WITHHOLDS, prompts.USER_VAGUE_TELLS, prompts.USER_VAGUE_LITTLE_DETAIL,
                 prompts.USER_IMPATIENT_HUMAN, prompts.USER_MISTAKEN_DONE, p.note):
        assert "Never say that it works." in note and note.startswith("(Note for your reply")
    # each unrelated matter is found by its own marks, and is about nothing the scenarios are
    assert set(prompts.TANGENT_TOPICS) == set(TANGENT_MARKS)
    for topic, text in prompts.TANGENT_TOPICS.items():
        assert TANGENT_MARKS[topic].search(text), topic
        assert not re.search(r"\d", text), topic  # a version would be an invented detail


def test_the_tangent_topic_is_fixed_per_interaction_and_never_what_the_task_is_about():
    topics = {tangent_topic(replace(SCENARIO, interaction_id=f"t{i}")) for i in range(40)}
    assert len(topics) >= 3  # spread over the interactions
    assert tangent_topic(replace(SCENARIO, interaction_id="t7")) == tangent_topic(replace(SCENARIO, interaction_id="t7"))
    for i in range(40):
        printer = Problem(f"p{i}", "My printer prints only on one side, how do I print on both sides?", None, None)
        assert tangent_topic(printer) != "double_sided"


# -- the schedules, decided in code ---------------------------------------------------------------
def test_vague_withholds_the_first_time_it_is_asked_and_tells_the_second_time():
    first = plan("vague", conversation((ASK, None)))
    assert first.act.name == "withholds" and first.hide_facts and first.fixed is False
    assert act("vague", conversation((ASK, "Not sure."), (ASK2, None))) == "tells"
    assert not plan("vague", conversation((ASK, "Not sure."), (ASK2, None))).hide_facts
    assert act("vague", conversation((ASK, "Not sure."), (ASK2, "A Broadcom."), (ASK, None))) is None
    # a step is reported with little detail; a fix is reported as usual
    assert act("vague", conversation((STEP, None))) == "little_detail"
    assert act("vague", conversation((ASK, None)), fixed=True) is None
    # a step asked first does not use up the vague answer: the first question still gets it
    assert act("vague", conversation((STEP, STILL), (ASK, None))) == "withholds"


def test_impatient_asks_for_a_human_on_the_second_failed_step_and_ends_on_the_third():
    assert act("impatient", conversation((STEP, None))) is None
    assert plan("impatient", conversation((STEP, None))).record == {"name": "impatient", "act": None,
                                                                    "failed_steps": 1}
    second = plan("impatient", conversation((STEP, STILL), (STEP2, None)))
    assert second.act is ASKS_FOR_HUMAN and second.record["failed_steps"] == 2
    third = plan("impatient", conversation((STEP, STILL), (STEP2, "Still broken. Can I talk to a human?"),
                                           (STEP3, None)))
    assert third.ends and third.record == {"name": "impatient", "act": "ends", "failed_steps": 3}


def test_impatient_counts_only_failed_steps():
    # a question is no step, a fixed step is no failure, a step the user said worked is none either
    assert act("impatient", conversation((STEP, STILL), (ASK, None))) is None
    assert act("impatient", conversation((STEP, STILL), (STEP2, None)), fixed=True) is None
    assert act("impatient", conversation((STEP, "It works now, thanks!"), (STEP2, None))) is None
    assert act("impatient", conversation((STEP, STILL), (ASK, "Broadcom."), (STEP2, None))) == "asks_for_human"
    # after the request, a question is answered; the next failed step ends it
    asked = conversation((STEP, STILL), (STEP2, "Can I talk to a human?"), (ASK, None))
    assert act("impatient", asked) is None
    assert act("impatient", [*asked, Message("user", "Broadcom."), Message("agent", STEP3)]) == "ends"


def test_mistaken_claims_the_first_step_done_and_that_reply_is_never_fixed():
    p = plan("mistaken", conversation((STEP, None)), fixed=True)
    assert p.act is CLAIMS_DONE and p.fixed is False
    assert p.record == {"name": "mistaken", "act": "claims_done", "reply_outcome": "not_fixed"}
    assert plan("mistaken", conversation((STEP, None)), fixed=False).record == {"name": "mistaken",
                                                                               "act": "claims_done"}
    assert act("mistaken", conversation((ASK, "Broadcom."), (STEP, None))) == "claims_done"  # the first step
    assert act("mistaken", conversation((ASK, None))) is None
    later = plan("mistaken", conversation((STEP, "I already did that."), (STEP2, None)), fixed=True)
    assert later.act is None and later.fixed is True  # once only: the next fix is reported


def test_tangential_brings_up_its_matter_once_on_the_first_reply_that_is_not_fixed():
    assert act("tangential", conversation((STEP, None))) == "tangent"
    assert act("tangential", conversation((STEP, None)), fixed=True) is None
    assert act("tangential", conversation((STEP, "It works now!"), (STEP2, None))) == "tangent"
    assert act("tangential", conversation((STEP, STILL + " How do I make the mouse pointer bigger?"),
                                          (STEP2, None))) is None


# -- the checks: exactly the act's sentences are relaxed --------------------------------------------
def human_plan() -> Plan:
    return plan("impatient", conversation((STEP, STILL), (STEP2, None)))


def test_a_request_for_a_human_is_not_a_false_success_on_its_turn_only():
    history = conversation((STEP, STILL), (STEP2, None))
    text = "Still no networks. Please connect me to a human agent."  # "connect" reads as a result
    assert kinds(text, history) == ["false_success"]  # the cooperative checks
    assert kinds(text, history, p=human_plan()) == []
    # the persona's plain turn relaxes nothing
    assert kinds(text, history, p=plan("impatient", conversation((STEP, None)))) == ["false_success"]


@pytest.mark.parametrize("text,kind", [
    ("It works now! Can I talk to a human anyway?", "false_success"),  # outside the act's sentence
    ("You should get me a human, this is useless.", "acts_as_agent"),
    ("I installed bcmwl-kernel-source. Can I talk to a human?", "leaks_solution"),
    ("Still nothing on Ubuntu 20.04. Can I talk to a human?", "contradicts_facts"),
    ("Still nothing, it is all the same.", "misses_persona"),  # no request for a human
])
def test_a_request_for_a_human_still_fails_every_grounding_rule(text, kind):
    assert kind in kinds(text, conversation((STEP, STILL), (STEP2, None)), p=human_plan())


def tangent_plan(topic: str = "double_sided") -> Plan:
    return Plan("tangential", TANGENT, False, "", TANGENT_MARKS[topic], topic)


def test_an_unrelated_question_may_read_as_a_result_or_name_a_version_on_its_turn():
    history = conversation((STEP, None))
    text = "I did that but still no networks. Also, how do I print on both sides again from Outlook 2016?"
    assert sorted(kinds(text, history)) == ["false_success", "invents_detail"]
    assert kinds(text, history, p=tangent_plan()) == []
    # the same versions or results outside the tangent are still caught
    assert "false_success" in kinds("It works now. How do I print on both sides?", history, p=tangent_plan())
    assert "invents_detail" in kinds("Still nothing on kernel 5.15. How do I print on both sides?", history,
                                     p=tangent_plan())
    assert "acts_as_agent" in kinds("Still nothing. You should print on both sides.", history, p=tangent_plan())
    assert kinds("Still nothing.", history, p=tangent_plan()) == ["misses_persona"]


def test_a_mistaken_claim_is_checked_as_not_fixed_whatever_the_decision():
    history = conversation((STEP, None))
    p = plan("mistaken", history, fixed=True)
    assert kinds("I already did that before I asked, and it is still there.", history, p.fixed, p) == []
    assert "false_success" in kinds("I already did that and it works now.", history, p.fixed, p)
    assert kinds("I did that and there are still no networks.", history, p.fixed, p) == ["misses_persona"]
    assert "missed_success" not in kinds("I already did that, still nothing.", history, p.fixed, p)


def test_a_vague_answer_names_no_detail_on_its_withholding_turn():
    history = conversation((ASK, None))
    p = plan("vague", history)
    assert kinds("I'm not sure, it just doesn't work.", history, p.fixed, p) == []
    assert kinds("It is a Broadcom BCM4313.", history, p.fixed, p) == ["misses_persona"]
    assert kinds("I think it is an Intel card.", history, p.fixed, p) == ["misses_persona"]  # made up
    # asked again, the fact is what the reply should hold
    again = conversation((ASK, "Not sure."), (ASK2, None))
    assert kinds("It is a Broadcom BCM4313.", again, False, plan("vague", again)) == []


def test_the_persona_notes_are_cut_when_copied_but_their_example_replies_are_kept():
    p = human_plan()
    copied = "Still no networks. " + prompts.USER_IMPATIENT_HUMAN.split(": ", 1)[1].split(" Write")[0]
    kept, cut = strip_copied_instructions(copied, p.texts())
    assert kept == "Still no networks." and cut
    assert strip_copied_instructions(copied)[1] == []  # the cooperative user has no such note
    example = "Still broken. Can I talk to a human?"
    assert strip_copied_instructions(example, p.texts()) == (example, [])
    mistaken = plan("mistaken", conversation((STEP, None)))
    example = "I already did that before I asked, and it is still there."
    assert strip_copied_instructions(example, mistaken.texts()) == (example, [])


# -- the simulated user under each persona (fake models) --------------------------------------------
def scripted(outcome: str, replies: list[str]):
    """A user model: ``outcome`` to the Yes/No question, then the replies in order."""
    queue = list(replies)

    def respond(messages, kwargs):
        return outcome if kwargs.get("logprobs") else queue.pop(0)
    return respond


def user(outcome: str, replies: list[str], cosine: float = 0.1):
    user_client, model = client(scripted(outcome, replies), role="user")
    return SimulatedUser(user_client, None, max_regenerations=2, embedder=Similarity(cosine)), model


async def test_the_cooperative_user_sends_the_same_prompts_and_calls_as_before():
    history = conversation((STEP, None))
    sim, model = user("No", ["I did that but still no networks."])
    reply = await sim.respond(as_persona("cooperative"), history, 2)
    system, *_, last = model.prompts[1]
    facts = "\n".join(f"- {f}" for f in SCENARIO.facts)
    assert system.content == prompts.GROUNDED_USER_SYSTEM.format(question=SCENARIO.question, facts=facts)
    assert last.content == f"{STEP}\n\n{prompts.USER_NOT_FIXED}"
    assert [c.purpose for c in reply.calls] == ["user:outcome", "user:reply"]
    assert "persona" not in reply.extra["simulator"]
    sent = " ".join(str(m.content) for p in model.prompts for m in p)
    assert not any(note in sent for note in PERSONA_NOTES[:-1])
    # the default persona is the cooperative one: the same record, key for key
    sim2, _ = user("No", ["I did that but still no networks."])
    default = await sim2.respond(SCENARIO, history, 2)
    assert default.extra == reply.extra and default.text == reply.text


async def test_an_impatient_user_asks_for_a_human_then_ends_the_conversation():
    asked = conversation((STEP, STILL), (STEP2, None))
    sim, model = user("No", ["Still no networks. Please connect me to a human agent."])
    reply = await sim.respond(as_persona("impatient"), asked, 3)
    sim_record = reply.extra["simulator"]
    assert reply.text == "Still no networks. Please connect me to a human agent."
    assert sim_record["regenerations"] == 0 and sim_record["violations"] == []  # not a false success
    assert sim_record["persona"] == {"name": "impatient", "act": "asks_for_human", "failed_steps": 2}
    assert model.prompts[1][-1].content.endswith(prompts.USER_IMPATIENT_HUMAN)
    # the next failed step: no reply, the conversation ends (user_ended); only the outcome call
    ended = [*asked, Message("user", reply.text), Message("agent", STEP3)]
    sim, model = user("No", [])
    last = await sim.respond(as_persona("impatient"), ended, 4)
    assert last.text is None and [c.purpose for c in last.calls] == ["user:outcome"]
    assert last.extra["simulator"]["persona"] == {"name": "impatient", "act": "ends", "failed_steps": 3}


async def test_a_draft_that_misses_the_act_is_written_again_with_the_persona_reason():
    sim, model = user("No", ["Still no networks.", "Still broken. Can I talk to a human?"])
    reply = await sim.respond(as_persona("impatient"), conversation((STEP, STILL), (STEP2, None)), 3)
    assert reply.text == "Still broken. Can I talk to a human?"
    assert reply.extra["simulator"]["attempts"][0]["violations"][0]["kind"] == "misses_persona"
    assert prompts.USER_PERSONA_REJECTED["asks_for_human"] in model.prompts[2][-1].content


async def test_a_vague_user_answers_without_its_facts_in_view():
    sim, model = user("No", ["It is a Broadcom BCM4313.", "I'm not sure, it just doesn't work."])
    reply = await sim.respond(as_persona("vague"), conversation((ASK, None)), 2)
    assert reply.text == "I'm not sure, it just doesn't work."
    system = model.prompts[1][0].content
    assert prompts.USER_FACTS_WITHHELD in system and "BCM4313" not in system
    assert reply.extra["simulator"]["persona"] == {"name": "vague", "act": "withholds", "asked_before": 0}
    assert "it named a detail" in model.prompts[2][-1].content


async def test_a_mistaken_user_facing_the_real_fix_never_reports_it_fixed():
    fix = "Install bcmwl-kernel-source and reboot."
    drafts = ["I did it and it works now!", "It works perfectly now.", "Great, it works."]
    sim, _ = user("Yes", drafts, cosine=0.9)
    reply = await sim.respond(as_persona("mistaken"), conversation((fix, None)), 2)
    record = reply.extra["simulator"]
    assert record["outcome"] == "fixed"  # the decision: the agent gave the fix ...
    assert record["persona"] == {"name": "mistaken", "act": "claims_done", "reply_outcome": "not_fixed"}
    # ... but the user never did it: every success draft fails, and the honest line is sent
    assert reply.text == NOT_FIXED_FALLBACK and record["fallback"] == "scripted"
    sim, model = user("Yes", ["I already did that before I asked, and it is still there."], cosine=0.9)
    reply = await sim.respond(as_persona("mistaken"), conversation((fix, None)), 2)
    assert reply.text.startswith("I already did that") and reply.extra["simulator"]["violations"] == []
    assert model.prompts[1][-1].content.endswith(prompts.USER_MISTAKEN_DONE)


async def test_a_tangential_user_brings_up_its_matter_beside_the_reply():
    problem = as_persona("tangential")
    topic = tangent_topic(problem)
    text = f"I did that but still no networks. Also, {prompts.TANGENT_TOPICS[topic]}?"
    sim, model = user("No", [text])
    reply = await sim.respond(problem, conversation((STEP, None)), 2)
    assert reply.text == text and reply.extra["simulator"]["violations"] == []
    assert reply.extra["simulator"]["persona"] == {"name": "tangential", "act": "tangent", "topic": topic}
    assert prompts.TANGENT_TOPICS[topic] in model.prompts[1][-1].content


async def test_an_unknown_persona_fails_before_any_call():
    sim, model = user("No", [])
    with pytest.raises(ValueError, match="unknown simulated-user persona"):
        await sim.respond(as_persona("grumpy"), conversation((STEP, None)), 2)
    assert model.calls == 0


# -- the persona sanity cases ---------------------------------------------------------------------
def test_the_persona_sanity_set_has_one_scenario_per_persona():
    from harness.selfscore.sanity_sets import persona_cases
    cases = persona_cases()
    assert sorted(c["persona"] for c in cases) == sorted(PERSONA_NAMES)
    for c in cases:
        assert len(c["agent"]) == len(c["expect"]) >= 1 and c["facts"] and c["solution"], c["id"]
    cooperative = next(c for c in cases if c["persona"] == "cooperative")
    # the contrast case meets every trigger the others have: a question, then two failed steps
    assert cooperative["expect"][0] == "gives_fact" and cooperative["expect"][1:] == [None, None]
    acts = {e for c in cases for e in c["expect"]}
    assert {"withholds", "tells", "asks_for_human", "ends", "claims_done", "tangent"} <= acts


def behaving(messages, kwargs):
    """A user model that follows its notes: the act each one asks for, the facts when asked."""
    if kwargs.get("logprobs"):
        return "No"
    system, last = str(messages[0].content), str(messages[-1].content)
    facts = " ".join(re.findall(r"^- (.+)$", system.split("<facts>")[1].split("</facts>")[0], re.M))
    if prompts.USER_IMPATIENT_HUMAN in last:
        return "Still broken. Can I talk to a human?"
    if prompts.USER_MISTAKEN_DONE in last:
        return "I already did that before I asked, and it is still there."
    if prompts.USER_VAGUE_WITHHOLDS in last:
        return "I'm not sure, it just doesn't work."
    topic = re.search(r"something unrelated: (.+?)\. Never", last)
    if topic:
        return f"I did that and it is still not working. Also, {topic.group(1)}?"
    return f"I did that and the problem is still there. {facts}"


@pytest.mark.parametrize("responder,behaved", [
    (behaving, 5),
    # a user that never deviates behaves as the cooperative one only
    (lambda m, k: "No" if k.get("logprobs") else "I did that and the problem is still there.", 0),
    # one that asks for a human in every reply fails the cooperative case too
    (lambda m, k: "No" if k.get("logprobs") else "Still broken. Can I talk to a human?", 0),
])
async def test_the_persona_sanity_cases_need_the_act_where_it_is_due_and_nowhere_else(responder, behaved):
    from harness.selfscore.judges import StructuredJudge
    from harness.selfscore.sanity import run_sanity
    user_client, _ = client(responder, role="user")
    sim = SimulatedUser(user_client, None, max_regenerations=1, embedder=Similarity(0.1))
    judge_client, _ = client(lambda m, k: "{}")
    report = await run_sanity(StructuredJudge(judge_client, 0), StructuredJudge(judge_client, 0),
                              helpful_pairs=0, complexity_pairs=0, user=sim, personas=None)
    assert len(report.personas) == 5 and sum(bool(c.behaved) for c in report.personas) == behaved
    line = next(x for x in report.lines() if x.startswith("Personas ("))
    assert f": {behaved}/5 behaved" in line
    if responder is behaving:
        assert "5/5 kept the grounding rules (0/" in line
        assert not any("<-- wrong" in x for x in report.lines())
        impatient = next(c for c in report.personas if c.persona == "impatient")
        assert [t.act for t in impatient.turns] == [None, "asks_for_human", "ends"]
        assert impatient.turns[-1].text is None


async def test_the_persona_cases_run_with_the_whole_outcome_set_only():
    from harness.selfscore.judges import StructuredJudge
    from harness.selfscore.sanity import run_sanity
    user_client, _ = client(behaving, role="user")
    sim = SimulatedUser(user_client, None, max_regenerations=0, embedder=Similarity(0.1))
    judge_client, _ = client(lambda m, k: "{}")
    judge = StructuredJudge(judge_client, 0)
    # the demo's short check (a few outcome scenarios) plays none; the sanity command (all) plays them
    few = await run_sanity(judge, judge, helpful_pairs=0, complexity_pairs=0, user=sim, outcome=2)
    assert few.personas == [] and not any(x.startswith("Personas") for x in few.lines())
    assert len((await run_sanity(judge, judge, helpful_pairs=0, complexity_pairs=0, user=sim,
                                 personas=2)).personas) == 2


# -- in a batch -----------------------------------------------------------------------------------
def test_an_impatient_user_ends_a_batch_conversation_and_each_turn_stores_what_it_did(tmp_path, tasks_file):
    import json as _json

    from harness.compose import run_selfscore
    from harness.tasks.datasets import load_dataset
    from store import StoreReader
    from tests.fakes import default_responder, fake_factory
    from tests.test_selfscore_graph import make_config

    roles = default_responder(solve_at=None)  # never solved; the agent gives a step every turn

    def responders(role):
        if role != "user":
            return roles(role)

        def respond(messages, kwargs):
            if kwargs.get("logprobs"):
                return "No"
            if prompts.USER_IMPATIENT_HUMAN in str(messages[-1].content):
                return "Still broken. Can I talk to a human?"
            return "Did that, still broken."
        return respond

    cfg = make_config(tmp_path, limit=1, max_turns=6, persona="impatient")
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(responders))
    reader = StoreReader(cfg.store)
    (interaction,) = reader.interactions(run_id)
    assert interaction["persona"] == "impatient" and interaction["stop_reason"] == "user_ended"
    turns = reader.turns_for_run(run_id)[interaction["id"]]
    acts = [(_json.loads(t["extra_json"] or "{}").get("user") or {}).get("simulator", {}).get("persona", {}).get("act")
            for t in turns]
    # turn 1 is the question; the step of turn 1 fails at turn 2, the next one at turn 3 (a human
    # asked for); the third fails at turn 4, where the user leaves: that turn is not stored
    assert len(turns) == 3 and acts == [None, None, "asks_for_human"]
