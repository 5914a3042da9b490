"""Human baseline replay and re-judging stored conversations, through the CLI and a real
local OpenAI-compatible endpoint."""
import json

import pytest

from harness.cli.main import main
from store import StoreReader
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_cli import role_flags


@pytest.fixture
def endpoint():
    with FakeOpenAIServer(default_responder(solve_at=2)) as server:
        yield server


@pytest.fixture
def human_tasks(tmp_path):
    path = tmp_path / "human.jsonl"
    rows = [{"id": "se-1", "question": "Printer prints blank pages.",
             "agent_replies": ["Clean the print heads.", "Reseat the cartridges.", "Replace the cartridge."],
             "followups": ["Still blank after cleaning.", "Now it prints, thanks."]},
            {"id": "se-2", "question": "Wifi drops.", "agent_replies": ["Disable power saving."]}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_human_baseline_replays_human_replies_through_the_same_judges(tmp_path, human_tasks, endpoint, monkeypatch):
    monkeypatch.setenv("DESKBENCH_RUN__SOLVED_CHECK", "confirmation")  # the veto below is the confirmation check's
    store = tmp_path / "s.sqlite"
    assert main(["run", "--agent", "human", "--store", str(store), "--dataset", str(human_tasks),
                 "--limit", "2", "--quiet", *role_flags(endpoint.base_url)]) == 0
    reader = StoreReader(store)
    run = reader.runs()[0]
    assert run["kind"] == "human_baseline" and run["name"].startswith("human_complexity-fake_")
    by_task = {i["task_id"]: i for i in reader.interactions(run["id"])}
    se1 = reader.turns(by_task["se-1"]["id"])
    # the judge says "fixed" from turn 2 on, but at turn 2 the asker says it is still blank (the
    # solved-check's rule veto); solved at turn 3, when the asker says it prints, exactly as an
    # agent run would stop
    assert [t["agent_message"] for t in se1] == ["Clean the print heads.", "Reseat the cartridges.",
                                                 "Replace the cartridge."]
    assert [t["user_message"] for t in se1] == ["Printer prints blank pages.", "Still blank after cleaning.",
                                                "Now it prints, thanks."]
    assert by_task["se-1"]["stop_reason"] == "solved"
    assert by_task["se-2"]["stop_reason"] == "user_ended" and len(reader.turns(by_task["se-2"]["id"])) == 1
    assert all(t["agent_helpfulness"] == 8 for t in se1)
    assert not [r for r in endpoint.requests if r["model"] in ("agent-fake", "user-fake")]
    assert len(reader.scores(run["id"])) == 2


def test_human_baseline_needs_agent_replies(tmp_path, tasks_file, endpoint, capsys):
    assert main(["run", "--agent", "human", "--store", str(tmp_path / "s.sqlite"), "--dataset",
                 str(tasks_file), "--quiet", *role_flags(endpoint.base_url)]) == 2
    assert "agent_replies" in capsys.readouterr().err


def stored_run(tmp_path, tasks_file, endpoint, limit: int, max_turns: int):
    """A SelfScore run made through the CLI on the fake endpoint: (store path, reader, its run row)."""
    store = tmp_path / "s.sqlite"
    assert main(["run", "--store", str(store), "--dataset", str(tasks_file), "--limit", str(limit),
                 "--max-turns", str(max_turns), "--quiet", *role_flags(endpoint.base_url)]) == 0
    reader = StoreReader(store)
    return store, reader, reader.runs()[0]


def test_rejudge_judges_every_stored_turn_again_without_rerunning(tmp_path, tasks_file, endpoint):
    store, reader, source = stored_run(tmp_path, tasks_file, endpoint, limit=2, max_turns=3)
    n_requests = len(endpoint.requests)
    assert main(["rejudge", "--store", str(store), source["id"], "--repeats", "2",
                 "--role", "judge.model=judge2-fake"]) == 0
    new = [r for r in reader.runs() if r["kind"] == "rejudge"]
    assert len(new) == 2 and all(r["source_run"] == source["id"] for r in new)
    assert all(r["name"] == "agent-fake_complexity-fake_judge2-fake" for r in new)
    assert {r["seed"] for r in new} == {0}
    seeds = {json.loads(r["config_json"])["roles"]["judge"]["seed"] for r in new}
    assert seeds == {0, 1}
    later = endpoint.requests[n_requests:]
    assert {r["model"] for r in later} <= {"judge2-fake", "complexity-fake"}
    for run in new:
        for i_src, i_new in zip(reader.interactions(source["id"]), reader.interactions(run["id"])):
            old, again = reader.turns(i_src["id"]), reader.turns(i_new["id"])
            keep = ("user_message", "agent_message", "input_tokens", "output_tokens", "cost")
            assert [{k: t[k] for k in keep} for t in again] == [{k: t[k] for k in keep} for t in old]
        judges = {j["model"] for j in reader.judgments_for_run(run["id"]) if j["turn_index"]}
        assert judges == {"judge2-fake"}
        assert len(reader.scores(run["id"])) == 2


def test_compare_runs_judges_and_reliability_from_the_store(tmp_path, tasks_file, endpoint, capsys):
    store = tmp_path / "s.sqlite"
    common = ["--store", str(store), "--dataset", str(tasks_file), "--limit", "3", "--max-turns", "3",
              "--quiet", *role_flags(endpoint.base_url)]
    assert main(["run", "--name", "plain-a", *common]) == 0
    assert main(["run", "--name", "plain-b", "--role", "agent.model=agent2-fake", *common]) == 0
    reader = StoreReader(store)
    source = reader.runs()[0]["id"]
    assert main(["rejudge", "--store", str(store), source, "--repeats", "2",
                 "--role", "judge.model=judge2-fake"]) == 0
    rejudged = [r["id"] for r in reader.runs() if r["kind"] == "rejudge"]
    capsys.readouterr()
    assert main(["compare", "--store", str(store), "plain-a", "plain-b", *rejudged,
                 "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "HTML report:" in out and "p-adj" in out
    html = (tmp_path / "cmp" / "report.html").read_text()
    for needle in ("ANOVA", "Tukey", "Mann-Whitney", "Krippendorff", "reliab"):
        assert needle.lower() in html.lower(), needle


def test_import_stackexchange_split_and_replay_as_human_baseline(tmp_path, endpoint, capsys):
    from pathlib import Path
    fixture = Path(__file__).parent / "fixtures" / "stackexchange_conlang_meta"
    out = tmp_path / "conlang.jsonl"
    assert main(["import", "stackexchange", str(fixture), "--min-score", "1", "--out", str(out),
                 "--split", "7"]) == 0
    assert "11 tasks kept" in capsys.readouterr().out
    kb, test = tmp_path / "conlang.kb.jsonl", tmp_path / "conlang.test.jsonl"
    assert len(kb.read_text().splitlines()) == 5 and len(test.read_text().splitlines()) == 6
    split = json.loads((tmp_path / "conlang.split.json").read_text())
    assert split["seed"] == 7 and not set(split["kb"]) & set(split["test"])
    store = tmp_path / "s.sqlite"
    assert main(["run", "--agent", "human", "--store", str(store), "--dataset", str(test),
                 "--limit", "6", "--max-turns", "50", "--quiet", *role_flags(endpoint.base_url)]) == 0
    run = StoreReader(store).runs()[0]
    assert run["kind"] == "human_baseline" and run["n_completed"] == 6


def test_rag_agent_retrieves_from_the_kb_half_and_logs_passages(tmp_path, endpoint):
    import gzip
    rows = [json.loads(l) for l in gzip.open(
        __import__("harness.tasks.datasets", fromlist=["BUILTIN"]).BUILTIN["lfrqa_technology"], "rt")][:30]
    kb, test = tmp_path / "kb.jsonl", tmp_path / "test.jsonl"
    kb.write_text("\n".join(json.dumps(r) for r in rows[:20]) + "\n")
    test.write_text("\n".join(json.dumps({**r, "question": rows[i]["question"] + " (asked again)"})
                              for i, r in enumerate(rows[:2])) + "\n")
    store = tmp_path / "s.sqlite"
    assert main(["run", "--agent", "rag", "--kb", str(kb), "--store", str(store), "--dataset", str(test),
                 "--limit", "2", "--max-turns", "1", "--quiet", *role_flags(endpoint.base_url)]) == 0
    reader = StoreReader(store)
    run = reader.runs()[0]
    assert run["name"].startswith("agent-fake+rag_")
    for i in reader.interactions(run["id"]):
        extra = json.loads(reader.turns(i["id"])[0]["extra_json"])["agent"]
        assert len(extra["retrieved"]) == 3 and extra["embedding_model"].startswith("all-MiniLM")
        distances = [r["distance"] for r in extra["retrieved"]]
        assert distances == sorted(distances)
        assert extra["retrieved"][0]["task_id"] == i["task_id"]  # the KB copy of this question ranks first
    agent_prompts = [r for r in endpoint.requests if r["model"] == "agent-fake"]
    assert all("knowledge_base_excerpts" in r["messages"][0]["content"] for r in agent_prompts)
    assert (tmp_path / "kb").is_dir()


def test_rag_without_kb_is_a_clear_error(tmp_path, tasks_file, endpoint, capsys):
    assert main(["run", "--agent", "rag", "--store", str(tmp_path / "s.sqlite"), "--dataset",
                 str(tasks_file), "--quiet", *role_flags(endpoint.base_url)]) == 2
    assert "--kb" in capsys.readouterr().err


def test_rejudge_reads_scores_as_asked_and_keeps_the_source_runs_reading_otherwise(tmp_path, tasks_file, endpoint):
    store, reader, source = stored_run(tmp_path, tasks_file, endpoint, limit=1, max_turns=2)
    assert main(["rejudge", "--store", str(store), source["id"], "--quiet",
                 "--score-reading", "probabilities", "--no-reasons"]) == 0
    assert main(["rejudge", "--store", str(store), source["id"], "--quiet"]) == 0
    asked, kept = [r for r in reader.runs() if r["kind"] == "rejudge"]
    readings = {r["id"]: (json.loads(r["config_json"])["scoring"]["score_reading"],
                          reader.run(r["id"])["profile"]["score_reading"]) for r in (source, asked, kept)}
    assert readings[source["id"]][0] == "sampled" and readings[kept["id"]][0] == "sampled"
    assert readings[asked["id"]][0] == "probabilities"
    assert readings[asked["id"]][1]["reading"] == "probabilities" and readings[asked["id"]][1]["reasons"] is False
    # the fake endpoint returns no log-probabilities: the written score is kept, and each judgment says so
    helpfulness = [j for j in reader.judgments_for_run(asked["id"]) if j["kind"] == "agent_helpfulness"]
    assert helpfulness and all(json.loads(j["parsed_json"])["score_reading"] == "sampled (no log-probabilities)"
                               for j in helpfulness)
