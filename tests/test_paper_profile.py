"""The ``paper`` profile runs the paper and nothing else (issue 43, part 1).

The paper's prompts are written out below as the paper words them (the paper that defines
SelfScore, restated in the project's method notes), not imported from the harness: a test that
compares a module's constant with itself passes whatever the constant says. A whole batch runs
on the paper profile with recording fake models, and what each model was sent is compared with
the paper's words; every mechanism that is not the paper's (the judges' reminder, the
preprocessing guard, the simulated user's outcome decision and fallback, the regenerations)
must be absent from the wire and off in the record, while the context limits are recorded.
"""
from __future__ import annotations

import json

import pytest

from harness.compose import Runtime, run_selfscore
from harness.config import ConfigError, load_config
from harness.tasks.datasets import load_dataset
from store import StoreReader
from tests.fakes import default_responder, fake_factory

# --- the paper's words (not the harness's constants) ------------------------------------------
PAPER_SUMMARY = "Dumb this question down and summarize it in one or two sentence(s): "
PAPER_PROBLEM = ('Extract a problem statement from this post. For example, "The computer is not plugged in", '
                 'or "The DNS servers are down". Respond with only the problem: ')
PAPER_AGENT = ("A user is having a problem. Respond with simple and helpful instructions most likely to guide "
               "the user to a solution. Only provide one solution at a time. Never give instructions to "
               "contact external or professional services. Never suggest contacting external or "
               "professional services.")

QUESTION = "My laptop wifi drops every few minutes on Ubuntu 22.04."
SOLUTION = "Turn off power saving of the iwlwifi driver in /etc/NetworkManager/conf.d."
#: phrases of the harness's own mechanisms, none of which the paper profile may send
NOT_THE_PAPER = {
    "judge reminder": "earns nothing",
    "outcome note": "Note for your reply",
    "outcome question": "fixes this real problem",
    "preprocessing system message": "You rewrite help-desk questions",
    "guarded problem prompt": "Extract the underlying problem that the solution fixes",
    "regeneration": "Your last draft was not used",
}


def _config(tmp_path, profile: str, **run):
    return load_config(overrides={"store": str(tmp_path / "s.sqlite"), "scoring": {"profile": profile},
                                  "run": {"limit": 1, "max_turns": 3, "concurrency": 1, **run}})


def _batch(tmp_path, profile: str):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "wifi", "question": QUESTION, "reference_answer": SOLUTION,
                                 "facts": ["The card is an Intel AX200."]}) + "\n")
    factory = fake_factory(default_responder(solve_at=None))
    run_id, progress = run_selfscore(_config(tmp_path, profile), load_dataset(str(tasks)), chat_models=factory)
    assert progress.failed == 0 and progress.turns == 3
    sent = {role: [[(m.type, str(m.content)) for m in prompt] for prompt in model.prompts]
            for role, model in factory.models.items()}
    return run_id, StoreReader(str(tmp_path / "s.sqlite")), sent


def test_the_paper_profile_sends_the_papers_prompts_and_nothing_of_the_harness(tmp_path):
    run_id, reader, sent = _batch(tmp_path, "paper")
    # preprocessing: the paper's two prompts verbatim, one call each, no system message, no tags;
    # the problem is extracted from the thread's solution, as the paper says
    assert sent["extractor"] == [[("human", PAPER_SUMMARY + QUESTION)], [("human", PAPER_PROBLEM + SOLUTION)]]
    # the agent: the paper's plain-agent prompt, word for word, on every turn
    assert [p[0] for p in sent["agent"]] == [("system", PAPER_AGENT)] * 3
    everything = "\n".join(text for prompts in sent.values() for prompt in prompts for _, text in prompt)
    assert {name: phrase for name, phrase in NOT_THE_PAPER.items() if phrase in everything} == {}
    # the simulated user: one call per later turn, its own reply, nothing decided for it
    assert len(sent["user"]) == 2
    for turn in reader.turns(f"{run_id}:wifi"):
        if turn["turn_index"] > 1:
            simulator = json.loads(turn["extra_json"])["user"]["simulator"]
            assert simulator["outcome"] is None and simulator["decided_by"] == "model"
            assert simulator["regenerations"] == 0 and "fallback" not in simulator
    profile = reader.run(run_id)["profile"]
    assert profile["profile"] == "paper" and not any(a["on"] for a in profile["aids"].values())
    assert profile["limits"]["judge_latest_message_chars"] == 3000
    assert profile["limits"]["max_tokens"]["agent"] == 320


def test_the_embedded_profile_sends_its_aids_and_records_their_versions(tmp_path):
    """The same batch on ``embedded``: each of the mechanisms above is on the wire, and the run
    records every aid with a version (so the paper test above is not passing by accident)."""
    run_id, reader, sent = _batch(tmp_path, "embedded")
    everything = "\n".join(text for prompts in sent.values() for prompt in prompts for _, text in prompt)
    on_the_wire = {name for name, phrase in NOT_THE_PAPER.items() if phrase in everything}
    assert on_the_wire >= {"judge reminder", "outcome note", "outcome question", "preprocessing system message",
                           "guarded problem prompt"}
    assert sent["extractor"][0][0][0] == "system"
    profile = reader.run(run_id)["profile"]
    assert profile["profile"] == "embedded"
    assert all(a["on"] and a["version"] for a in profile["aids"].values())
    judgments = reader.judgments_for_run(run_id)
    helpful = [json.loads(j["aids_json"]) for j in judgments if j["kind"] == "agent_helpfulness"]
    assert helpful and all(a["judge_reminder"]["version"] == profile["aids"]["judge_reminder"]["version"]
                           for a in helpful)


def test_a_changed_prompt_text_changes_its_recorded_version(monkeypatch):
    from harness.compose import aid_versions
    from harness.selfscore import prompts
    from harness.simuser import prompts as user_prompts
    before = aid_versions()
    monkeypatch.setattr(prompts, "LATEST_MESSAGE", prompts.LATEST_MESSAGE + " ")
    monkeypatch.setattr(prompts, "SUMMARY_SYSTEM", prompts.SUMMARY_SYSTEM + " ")
    monkeypatch.setattr(user_prompts, "USER_NOT_FIXED", user_prompts.USER_NOT_FIXED + " ")
    after = aid_versions()
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"judge_reminder", "preprocessing_guard", "user_outcome"}


def test_a_persona_needs_a_decided_outcome_and_the_error_says_how(tmp_path):
    with Runtime(_config(tmp_path, "paper", persona="impatient"), fake_factory(default_responder())) as runtime:
        with pytest.raises(ConfigError, match="user_outcome=on"):
            runtime.check_models()
    assert not (tmp_path / "s.sqlite").exists() or not StoreReader(str(tmp_path / "s.sqlite")).runs()


async def test_a_judgment_records_what_its_prompt_clipped_with_the_limit():
    """The judge's prompt cuts the latest message beyond 3,000 characters and leaves out earlier
    messages beyond 6,000: the judgment says so, measured on the text as the prompt holds it
    (a delimiter tag escaped as ``&lt;`` is 3 characters longer)."""
    from graphs.protocols import Message, Problem
    from harness.config import ModelSpec
    from harness.models.llm import RoleClient
    from harness.selfscore.judges import SelfScoreJudges, StructuredJudge
    from tests.fakes import ScriptedChatModel

    model = ScriptedChatModel(responder=lambda m, k: json.dumps({"reason": "ok", "score": 5}), prompts=[])
    judges = SelfScoreJudges(StructuredJudge(RoleClient("judge", ModelSpec(model="fake"), model), 0), "verdict",
                             manipulation_defence=False)  # a fake tag is data here, not a span to remove
    problem = Problem("i", "My printer is offline.", None, "The spooler stopped.")
    short = [Message("user", "My printer is offline."), Message("agent", "Restart the spooler.")]
    assert "clipped" not in (await judges.agent_helpfulness(problem, short)).parsed
    long = [Message("user", "My printer is offline."), Message("agent", "x" * 5000)]
    clipped = (await judges.agent_helpfulness(problem, long)).parsed["clipped"]
    assert clipped == {"latest": {"chars": 5000, "limit": 3000}}
    at_the_edge = [Message("user", "My printer is offline."), Message("agent", "<latest>" + "y" * 2992)]
    assert (await judges.agent_helpfulness(problem, at_the_edge)).parsed["clipped"]["latest"]["chars"] == 3003
    chat = [Message("user", "My printer is offline.")] + [
        Message("agent" if i % 2 == 0 else "user", f"message {i} " + "z" * 1900) for i in range(6)]
    omitted = (await judges.user_helpfulness(problem, chat, first_turn=False)).parsed["clipped"]
    assert omitted["earlier_omitted"]["messages"] >= 1 and omitted["earlier_omitted"]["limit"] == 6000
