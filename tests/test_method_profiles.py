"""Method profiles: the paper's method on a strong judge, the aids on the embedded one, and every
judgment and score row saying which (harness.aids.profiles)."""
import json

import pytest

from harness.aids.profiles import AIDS, resolve_profile
from harness.cli.main import main
from harness.compose import run_selfscore
from harness.config import ConfigError, load_config
from harness.tasks.datasets import load_dataset
from store import StoreReader
from tests.fakes import default_responder, fake_factory

EXTERNAL_JUDGE = {"base_url": "http://judge.example/v1", "model": "gpt-4o"}
SAME_REPLY = "Open the network settings and toggle the adapter off and on."


def config(tmp_path, roles=None, scoring=None, **run):
    return load_config(overrides={"store": str(tmp_path / "s.sqlite"), "roles": roles or {},
                                  "scoring": scoring or {}, "run": {"limit": 1, "max_turns": 3, **run}})


def test_auto_follows_each_aids_role(tmp_path):
    embedded = resolve_profile(config(tmp_path))
    assert embedded.name == "embedded" and all(embedded.on(a.name) for a in AIDS)
    strong = resolve_profile(config(tmp_path, roles={"judge": EXTERNAL_JUDGE}))
    judge_aids = [a.name for a in AIDS if a.role == "judge"]
    assert not any(strong.on(n) for n in judge_aids)  # the judges' aids follow the judge role
    assert strong.on("reply_cap") and strong.on("user_regenerations")  # the agent and user stay embedded
    assert strong.name == "mixed"
    assert strong.value("solved_rules") == "verdict" and strong.value("translation") == "as-is"
    everything = {r: EXTERNAL_JUDGE for r in ("agent", "user", "judge", "extractor")}
    assert resolve_profile(config(tmp_path, roles=everything)).name == "paper"


def test_a_setting_overrides_the_profile_aid_by_aid(tmp_path):
    cfg = config(tmp_path, scoring={"profile": "paper", "helpfulness_bounds": True})
    profile = resolve_profile(cfg)
    assert profile.aids_on() == ["helpfulness_bounds"]
    assert profile.settings["helpfulness_bounds"].source == "scoring.helpfulness_bounds"
    assert resolve_profile(config(tmp_path, scoring={"profile": "embedded"}, roles={"judge": EXTERNAL_JUDGE})).name == "embedded"
    with pytest.raises(ValueError, match="unknown aid"):
        resolve_profile(cfg, overrides={"bounds": False})


def test_the_paper_profile_is_the_papers_agent_prompt(tmp_path):
    from harness.compose import Runtime
    from tests.test_paper_profile import PAPER_AGENT  # the paper's words, not the module's constant
    with Runtime(config(tmp_path, scoring={"profile": "paper"}), fake_factory(default_responder())) as rt:
        assert rt.llm_agent("plain").system_prompt == PAPER_AGENT
        user = rt.simulated_user()
        assert (user.max_regenerations, user.outcome_method, user.fallback) == (0, "model", False)
    with Runtime(config(tmp_path), fake_factory(default_responder())) as rt:
        assert rt.llm_agent("plain").system_prompt == PAPER_AGENT + (
            " Answer in at most 3 short sentences. Give only the one most likely next step, never a numbered list.")


def _scores_everything_8(role):
    inner = default_responder(solve_at=None)(role)

    def respond(messages, kwargs):
        last = str(messages[-1].content)
        if role == "agent":
            return SAME_REPLY  # the same reply every turn: an exact repeat from turn 2
        if role == "judge" and ('"score"' in json.dumps(kwargs.get("response_format") or {})
                                or "rate the latest" in last or "is the initial question" in last
                                or "the latest AGENT message is for solving" in last):
            return json.dumps({"reason": "fine", "score": 8})
        return inner(messages, kwargs)
    return respond


def _run(tmp_path, tasks, profile=None, roles=None, responder=_scores_everything_8, **run):
    cfg = config(tmp_path, roles=roles, scoring={"profile": profile} if profile else {}, user="scripted", **run)
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks)), chat_models=fake_factory(responder))
    return cfg, run_id, StoreReader(cfg.store)


@pytest.fixture
def ok_tasks(tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps({"id": "wifi", "question": "My laptop wifi drops every few minutes on Ubuntu 22.04.",
                                "followups": ["ok"]}) + "\n")
    return path


def test_an_external_judge_keeps_its_own_scores_and_the_embedded_profile_bounds_them(tmp_path, ok_tasks):
    _, run_id, reader = _run(tmp_path / "paper", ok_tasks, roles={"judge": EXTERNAL_JUDGE})
    turns = reader.turns(reader.interactions(run_id)[0]["id"])
    assert [t["user_message"] for t in turns][1] == "ok" and turns[1]["agent_message"] == turns[0]["agent_message"]
    assert [(t["user_helpfulness"], t["agent_helpfulness"]) for t in turns] == [(8, 8), (8, 8)]
    judgments = [j for j in reader.judgments_for_run(run_id) if j["kind"].endswith("helpfulness")]
    assert {j["profile"] for j in judgments} == {"mixed"}  # judge on the paper's method, agent capped
    assert all(j["judge_score"] == 8 and json.loads(j["aids_json"]) == {} for j in judgments)
    assert reader.scores(run_id)[0]["profile"] == "mixed"
    assert reader.run(run_id)["profile"]["aids"]["helpfulness_bounds"]["on"] is False

    _, run_id, reader = _run(tmp_path / "embedded", ok_tasks, profile="embedded", roles={"judge": EXTERNAL_JUDGE})
    turns = reader.turns(reader.interactions(run_id)[0]["id"])
    assert turns[1]["user_helpfulness"] <= 2 and turns[1]["agent_helpfulness"] <= 2  # "ok"; a repeat
    later = [j for j in reader.judgments_for_run(run_id) if j["turn_index"] == 2 and j["kind"].endswith("helpfulness")]
    assert all(j["judge_score"] == 8 and j["score"] <= 2 and j["profile"] == "embedded" for j in later)
    assert all(json.loads(j["aids_json"])["helpfulness_bounds"]["moved"] for j in later)
    assert reader.scores(run_id)[0]["profile"] == "embedded"


def test_a_right_first_answer_is_solved_on_the_paper_profile(tmp_path):
    tasks = tmp_path / "one.jsonl"
    tasks.write_text(json.dumps({"id": "caps", "question": "My password is always wrong."}) + "\n")
    solves = default_responder(solve_at=1)
    _, run_id, reader = _run(tmp_path / "paper", tasks, profile="paper", responder=solves)
    interaction = reader.interactions(run_id)[0]
    assert interaction["stop_reason"] == "solved"
    assert [t["solved"] for t in reader.turns(interaction["id"])] == [1]
    solved = next(j for j in reader.judgments_for_run(run_id) if j["kind"] == "solved")
    assert solved["judge_score"] == 1 and solved["profile"] == "paper"
    # the embedded profile's evidence check asks whether the answer is the fix: solved at turn 1 too
    _, run_id, reader = _run(tmp_path / "embedded", tasks, profile="embedded", responder=solves)
    assert [t["solved"] for t in reader.turns(reader.interactions(run_id)[0]["id"])] == [1]
    solved = next(j for j in reader.judgments_for_run(run_id) if j["kind"] == "solved")
    assert json.loads(solved["parsed_json"])["method"] == "evidence"
    # the confirmation check never solves turn 1: the user has not answered an agent message yet
    _, run_id, reader = _run(tmp_path / "confirmation", tasks, profile="embedded", responder=solves,
                             solved_check="confirmation")
    assert [t["solved"] for t in reader.turns(reader.interactions(run_id)[0]["id"])] == [0]


def test_rescore_raw_restores_the_judges_own_scores_on_an_embedded_run(tmp_path, ok_tasks, capsys):
    cfg, run_id, reader = _run(tmp_path, ok_tasks, profile="embedded", max_turns=2)
    stored = reader.scores(run_id)[0]["figures"]
    assert stored["avg_user_helpfulness"] < 8
    assert main(["rescore", run_id, "--store", cfg.store, "--raw"]) == 0
    assert "(profile judge-only)" in capsys.readouterr().out
    row = reader.scores(run_id)[0]
    assert row["profile"] == "judge-only"
    assert row["figures"]["avg_user_helpfulness"] == 8 and row["figures"]["avg_agent_helpfulness"] == 8
    assert json.loads(row["aids_json"])["helpfulness_bounds"]["on"] is False
    # the bounds applied again to the judge's own scores give the stored figures back
    assert main(["rescore", run_id, "--store", cfg.store, "--profile", "embedded"]) == 0
    assert reader.scores(run_id)[0]["figures"] == stored
    assert main(["rescore", run_id, "--store", cfg.store]) == 0
    assert reader.scores(run_id)[0]["profile"] == "embedded"


def test_runs_and_the_report_show_the_profile(tmp_path, ok_tasks, capsys):
    from harness.study.report import report_markdown
    cfg, run_id, reader = _run(tmp_path, ok_tasks, profile="embedded", max_turns=2)
    assert main(["runs", "--store", cfg.store]) == 0
    assert "profile=embedded" in capsys.readouterr().out
    text = report_markdown(reader, run_id)
    assert "## Method profile" in text and "| helpfulness_bounds | judge | yes |" in text
    assert "| mean_avg_user_helpfulness |" in text and "judge-only" in text
    assert "Rules that fired" in text
    assert "Scores read: **sampled**" in text  # the paper's reading, reasons written first


def test_the_report_says_how_scores_were_read_and_whether_reasons_were_written():
    from harness.study.profile_report import score_reading_line
    assert score_reading_line(None).startswith("Scores read: **sampled**")  # a run stored before the setting
    line = score_reading_line({"reading": "probabilities", "version": "p13+sr1", "reasons": False})
    assert "**probabilities**" in line and "version p13+sr1" in line and "written reasons off" in line
    assert "written reasons on" in score_reading_line({"reading": "probabilities", "reasons": True})


def test_aid_flag_switches_one_aid(tmp_path):
    from harness.cli.common import aid_overrides
    assert aid_overrides(["helpfulness_bounds=off", "reply_cap=on"]) == {
        "scoring": {"helpfulness_bounds": False}, "run": {"agent_reply_sentences": 3}}
    with pytest.raises(ConfigError, match="NAME=on"):
        aid_overrides(["bounds=off"])
