"""Simulator faults named, not charged to the agent (issue 42, part 2).

The fault rules on hand-written cases (``harness/data/sanity/user_faults.jsonl``, as many "no" as
"yes" per kind), the record stored with each simulated user turn on a batch with fake models
(embedded: a faulty draft regenerated first, what remains flagged; paper: every fault flagged,
nothing regenerated), the report's figures with and without the touched conversations, and
``compare``'s warning and its absence.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from graphs.protocols import Message, Problem
from harness.aids import SIMULATOR_FAULTS, USER_CHECK_RULES
from harness.compose import run_selfscore
from harness.config import load_config
from harness.simuser.faults import FAULT_OF, FAULTS, FLAG_ONLY, faults_version, message_faults
from harness.study.compare import compare
from harness.study.fault_report import fault_figures, fault_warnings, figure_difference
from harness.study.report import report_markdown
from harness.tasks.datasets import load_dataset
from store import StoreReader
from tests.fakes import default_responder, fake_factory

CASES = [json.loads(line) for line in (Path(__file__).resolve().parent.parent / "harness" / "data" / "sanity"
                                       / "user_faults.jsonl").read_text().splitlines() if line.strip()]
APOLOGY = "I apologize, but I cannot help with that."


def _kinds(case: dict) -> set[str]:
    problem = Problem("s", case["question"], None, None, facts=case["facts"])
    history = [Message(role, text) for role, text in case["history"]]
    return {f["kind"] for f in message_faults(case["message"], problem, history, case["fixed"])}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_fault_rule_on_its_hand_written_case(case):
    assert (case["kind"] in _kinds(case)) == case["expect"], case["why"]


def test_the_cases_say_no_as_often_as_yes_for_every_flag_only_kind():
    counts = Counter((c["kind"], c["expect"]) for c in CASES)
    for kind in FLAG_ONLY:
        assert counts[(kind, True)] >= 3 and counts[(kind, False)] >= counts[(kind, True)], kind


def test_every_kind_is_one_named_fault_and_the_demo_messages_are_caught():
    assert len(FAULT_OF) == sum(len(k) for k in FAULTS.values())
    assert {"role_break", "impossible_action", "repeat_loop", "unfounded_success", "missed_persona_act",
            "leaks_fix", "answers_as_agent"} <= set(FAULTS)
    problem = Problem("s", "Boots to a black screen.", None, None)
    history = [Message("user", "Boots to a black screen."), Message("agent", "Run sudo dpkg-reconfigure -a.")]
    [fault] = message_faults(APOLOGY, problem, history, None)
    assert fault["fault"] == "role_break" and fault["rules"] == ["role.refuses"]
    assert fault["version"] == SIMULATOR_FAULTS.version
    found = message_faults("I ran `sudo dpkg-reconfigure -a` and it didn't work. I then tried reinstalling the "
                           "entire system.", problem, history, False)
    assert [(f["fault"], f["rules"]) for f in found] == [("impossible_action", ["action.reinstall_system"])]
    # an existing kind keeps its rules' set: the regeneration checks' family
    [claim] = message_faults("It works now, thanks!", problem, history, False)
    assert claim["fault"] == "unfounded_success" and claim["kind"] == "false_success"
    assert claim["rules"] and claim["version"] == USER_CHECK_RULES.version


# --- the stored record, on a batch with fake models ---------------------------------------------
def _responder(apologize_on: str, agent_like_once: bool = False, user_score=None):
    """default_responder, with a user that says APOLOGY on its first reply in the task whose question
    holds ``apologize_on``, and (``agent_like_once``) drafts like the agent once before that."""
    base = default_responder(solve_at=None)
    state = {"apologized": False, "agent_like": agent_like_once}

    def for_role(role):
        inner = base(role)

        def respond(messages, kwargs):
            last, first = str(messages[-1].content), str(messages[0].content)
            if role == "user" and "Answer Yes or No" not in last and apologize_on in first:
                if state["agent_like"]:
                    state["agent_like"] = False
                    return "Sure! Here's how to fix it: open the settings."
                if not state["apologized"]:
                    state["apologized"] = True
                    return APOLOGY
            if role == "user" and "Answer Yes or No" not in last:
                return "I tried that, but the problem is still there."  # no check fails on it
            if role == "judge" and user_score and "rate the latest USER message" in last:
                return json.dumps({"reason": "ok", "score": user_score(last)})
            return inner(messages, kwargs)
        return respond
    return for_role


TASKS = [{"id": "wifi", "question": "My laptop wifi drops every few minutes on Ubuntu 22.04.",
          "reference_answer": "Turn off wifi power saving."},
         {"id": "disk", "question": "My disk is full but du shows only half used.",
          "reference_answer": "Restart the process that holds the deleted log file open."}]


def _run(tmp_path, profile: str, responder, name: str = "r", tasks=TASKS):
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    config = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "scoring": {"profile": profile},
                                    "run": {"max_turns": 3, "concurrency": 1, "name": name}})
    run_id, progress = run_selfscore(config, load_dataset(str(path)), chat_models=fake_factory(responder))
    assert progress.failed == 0
    return run_id, StoreReader(str(tmp_path / "s.sqlite"))


def _simulator_records(reader, run_id):
    out = {}
    for interaction_id, turns in reader.turns_for_run(run_id).items():
        for t in turns:
            sim = (json.loads(t["extra_json"] or "{}").get("user") or {}).get("simulator")
            if sim:
                out[(interaction_id.split(":")[-1].split("#")[0], t["turn_index"])] = (t["user_message"], sim)
    return out


def test_paper_sends_a_refusal_stored_with_its_fault_and_flagged(tmp_path):
    run_id, reader = _run(tmp_path, "paper", _responder("wifi drops"))
    records = _simulator_records(reader, run_id)
    faulty = [(k, text, sim) for k, (text, sim) in records.items() if sim["faults"]["flagged"]]
    [(_, text, sim)] = [f for f in faulty if f[1] == APOLOGY]
    assert text == APOLOGY and sim["regenerations"] == 0  # paper regenerates nothing
    assert [f["fault"] for f in sim["faults"]["found"]] == ["role_break"]
    assert sim["faults"]["found"][0]["rules"] == ["role.refuses"]
    assert sim["faults"]["version"] == faults_version()
    # every other simulated message has a record too, and the conversation went on after it
    assert all("faults" in sim for _, sim in records.values())
    assert max(k[1] for k in records) == 3


def test_the_embedded_profile_writes_a_refusal_again(tmp_path):
    """Issue 42, part 4: a refusal is one of the kinds the regenerations look for (it was only
    flagged before); the next draft is sent and nothing is flagged."""
    run_id, reader = _run(tmp_path, "embedded", _responder("wifi drops"))
    records = _simulator_records(reader, run_id)
    [sim] = [sim for text, sim in records.values() if sim.get("attempts") and sim["attempts"][0]["text"] == APOLOGY]
    assert [v["kind"] for v in sim["attempts"][0]["violations"]] == ["breaks_role"]
    assert sim["regenerations"] == 1 and not sim["faults"]["flagged"]
    assert APOLOGY not in [text for text, _ in records.values()]


def test_paper_flags_a_draft_the_embedded_profile_regenerates(tmp_path):
    embedded = tmp_path / "e"
    paper = tmp_path / "p"
    embedded.mkdir(), paper.mkdir()
    e_id, e_reader = _run(embedded, "embedded", _responder("wifi drops", agent_like_once=True))
    p_id, p_reader = _run(paper, "paper", _responder("wifi drops", agent_like_once=True))
    [(e_text, e_sim)] = [v for v in _simulator_records(e_reader, e_id).values() if v[1].get("attempts")
                         and v[1]["attempts"][0]["text"].startswith("Sure!")]
    # the agent's draft, then the refusal, each written again; the third draft is sent, unflagged
    assert [[v["kind"] for v in a["violations"]] for a in e_sim["attempts"]] == [["acts_as_agent"], ["breaks_role"], []]
    assert e_sim["regenerations"] == 2 and e_text == "I tried that, but the problem is still there."
    assert not e_sim["faults"]["flagged"]
    [(p_text, p_sim)] = [v for v in _simulator_records(p_reader, p_id).values() if v[0].startswith("Sure!")]
    assert p_sim["regenerations"] == 0 and p_sim["faults"]["flagged"]
    assert [f["fault"] for f in p_sim["faults"]["found"]] == ["answers_as_agent"]
    assert p_sim["faults"]["found"][0]["rules"] == ["agent.sure"]


# --- the report and compare -------------------------------------------------------------------
def test_the_report_gives_every_figure_with_and_without_the_touched_conversations(tmp_path):
    run_id, reader = _run(tmp_path, "paper", _responder("wifi drops", user_score=lambda last: 1
                                                         if APOLOGY in last else 7))
    f = fault_figures(reader, run_id)
    assert (f["conversations"], f["touched"], f["by_fault"]["role_break"]) == (2, 1, 1)
    assert f["without"]["mean_avg_user_helpfulness"] > f["all"]["mean_avg_user_helpfulness"] \
        > f["touched_only"]["mean_avg_user_helpfulness"]
    text = report_markdown(reader, run_id)
    assert "## Simulator faults" in text
    assert "Simulator faults: 1 of 2 conversations touched (50%; kinds: role_break 1" in text
    row = next(line for line in text.splitlines() if line.startswith("| mean_avg_user_helpfulness |")
               and line.count("|") == 5)  # the side-by-side table, not the summary's
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[2]) > float(cells[1]) > float(cells[3])
    assert "| figure | all (2) | without the touched (1) | touched only (1) |" in text


def test_compare_warns_when_the_runs_differ_more_in_faults_than_in_the_figure(tmp_path):
    _run(tmp_path, "paper", _responder("wifi drops"), name="faulty")  # paper sends the refusal
    _run(tmp_path, "paper", _responder("no task says this"), name="clean")
    reader = StoreReader(str(tmp_path / "s.sqlite"))
    _, summary = compare(reader, ["faulty", "clean"], tmp_path / "cmp")
    assert "Warning: faulty and clean differ more in simulator faults (50% vs 0% of conversations) than in " \
           "the solved rate (0% vs 0%): the difference may be the simulator's." in summary
    assert "simulator faults" in (tmp_path / "cmp" / "report.html").read_text()
    _run(tmp_path, "paper", _responder("no task says this"), name="clean2")
    _, summary = compare(reader, ["clean", "clean2"], tmp_path / "cmp2")
    assert "simulator faults" not in summary


def test_the_warning_rule_compares_shares_in_points_and_means_relatively():
    assert figure_difference("solved_rate", 0.48, 0.52) == pytest.approx(0.04)
    assert figure_difference("mean_final_score", 6.0, 7.5) == pytest.approx(0.2)
    assert figure_difference("mean_final_score", 0.0, 0.0) == 0.0
    summaries = {"A": {"solved_rate": 0.48, "mean_final_score": 6.0},
                 "B": {"solved_rate": 0.52, "mean_final_score": 7.5}}
    warned = fault_warnings({"A": 0.12, "B": 0.40}, summaries)
    assert warned == ["Warning: A and B differ more in simulator faults (12% vs 40% of conversations) than in "
                      "the solved rate (48% vs 52%): the difference may be the simulator's.",
                      "Warning: A and B differ more in simulator faults (12% vs 40% of conversations) than in "
                      "the mean final score (6.00 vs 7.50): the difference may be the simulator's."]
    assert fault_warnings({"A": 0.12, "B": 0.20}, summaries) == \
        [w.replace("40%", "20%") for w in warned[:1]]  # 8 points: more than 4, less than 20% relative
    assert fault_warnings({"A": 0.10, "B": 0.12}, summaries) == []
    assert fault_warnings({"A": None, "B": 0.4}, summaries)[0].startswith("Note: A has no simulator fault records")


def test_deskbench_sanity_reads_the_fault_cases_through_the_simulated_user():
    from harness.selfscore.sanity import fault_verdicts
    from harness.selfscore.sanity_report import SanityReport
    from harness.simuser import SimulatedUser
    verdicts = fault_verdicts(SimulatedUser(client=None))
    assert len(verdicts) == len(CASES) and all(v.right for v in verdicts)
    lines = SanityReport([], [], "m", fault_rules=verdicts).lines()
    assert lines[1] == ("Simulator-fault rules (hand-written cases, no model): right on 16/16 faulty and 16/16 "
                        "clean messages (breaks_role 8/8, impossible_action 12/12, repeats_loop 6/6, "
                        "unprompted_success 6/6).")
    verdicts[0].got = False
    assert "  fault rule breaks_role-1: expected yes, got no  <-- wrong" in \
        SanityReport([], [], "m", fault_rules=verdicts).lines()
