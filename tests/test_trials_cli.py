"""``--trials`` through the CLI against a real local OpenAI-compatible endpoint: the seeds each
trial sends, the report's and rescore's figures over trials, ``compare``'s noise floor, and
NoisyToolBench's pass^k of A1, A2, A3."""
import csv
import json

import pytest

from harness.cli.main import main
from harness.models.seeds import derive_seed
from store import StoreReader
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_cli import role_flags
from tests.test_ntb_loop import agent_judge_flags, ideal_responders


def test_run_with_trials_sends_each_trials_seeds_and_reports_over_trials(tmp_path, tasks_file, capsys):
    store = tmp_path / "s.sqlite"
    with FakeOpenAIServer(default_responder(solve_at=2)) as server:
        assert main(["run", "--store", str(store), "--dataset", str(tasks_file), "--limit", "2",
                     "--max-turns", "2", "--trials", "3", "--seed", "11", "--quiet", "--name", "a",
                     *role_flags(server.base_url)]) == 0
        requests = list(server.requests)
    printed = capsys.readouterr().out
    assert "## Trials" in printed and "| 3 | 1.000 | 1.000 |" in printed
    reader = StoreReader(store)
    run = reader.runs()[0]
    assert run["n_interactions"] == 6
    # trial 1 sends the roles' own seed (0); trial k > 1 the derived one, for every sampled role
    agent_seeds = {r["seed"] for r in requests if r["model"] == "agent-fake"}
    expected = {derive_seed(11, "agent", 0, task, k) for task in ("wifi", "disk") for k in (2, 3)}
    assert agent_seeds == {0} | expected
    assert {r["seed"] for r in requests if r["model"] == "judge-fake"} == {0}  # greedy: untouched
    folder = tmp_path / run["id"]
    assert (folder / "pass_k.png").stat().st_size > 1000 and (folder / "tasks.jsonl").exists()
    assert main(["rescore", "--store", str(store), "a"]) == 0
    assert "pass^3 1.000" in capsys.readouterr().out
    assert main(["runs", "--store", str(store)]) == 0
    assert "6/6 interactions (3 trials per task)" in capsys.readouterr().out


def test_compare_of_runs_with_trials_gives_the_noise_floor(tmp_path, tasks_file, capsys):
    store = tmp_path / "s.sqlite"
    with FakeOpenAIServer(default_responder(solve_at=2)) as server:
        for name, solve_at in (("a", 2), ("b", 2)):
            assert main(["run", "--store", str(store), "--dataset", str(tasks_file), "--limit", "2",
                         "--max-turns", "2", "--trials", "2", "--quiet", "--name", name,
                         *role_flags(server.base_url)]) == 0
        assert main(["run", "--store", str(store), "--dataset", str(tasks_file), "--limit", "2",
                     "--max-turns", "2", "--quiet", "--name", "single", *role_flags(server.base_url)]) == 0
    capsys.readouterr()
    assert main(["compare", "--store", str(store), "a", "b", "--out", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    assert "Noise floor (paired by task, trials: a 2, b 2)" in printed
    assert "a - b on 2 paired task(s):" in printed and "solved (pass^1): +0.000" in printed
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert "Trials and the noise floor" in html and "pass_k.png" in html
    assert main(["compare", "--store", str(store), "a", "single", "--out", str(tmp_path / "cmp2")]) == 0
    assert "No noise floor can be computed for single" in capsys.readouterr().out


def test_trials_and_persona_options_refuse_bad_values(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["run", "--persona", "grumpy"])
    assert "invalid choice: 'grumpy'" in capsys.readouterr().err
    assert main(["run", "--store", str(tmp_path / "s.sqlite"), "--trials", "0", "--quiet"]) == 2
    assert "run.trials" in capsys.readouterr().err


def test_ntb_run_with_trials_reports_pass_k_and_compare_pairs_trial_one(tmp_path, capsys):
    with FakeOpenAIServer(ideal_responders) as server:
        flags = agent_judge_flags(server.base_url)
        store, out = tmp_path / "s.sqlite", tmp_path / "out"
        assert main(["ntb", "run", "--store", str(store), "--case", "IMKI/2", "--case", "IMR/2",
                     "--protocol", "text", "--no-api-simulator", "--trials", "2", "--quiet",
                     "--out", str(out), *flags]) == 0
        agent_seeds = {r["seed"] for r in server.requests if r["model"] == "agent-fake"}
    printed = capsys.readouterr().out
    assert "pass^k A1" in printed and "flip share: A1 0.00 (0/2 cases)" in printed
    assert len(agent_seeds) == 3  # trial 1's own seed and one per case in trial 2
    with open(out / "cases.csv") as f:
        assert sorted((r["query_id"], r["trial"]) for r in csv.DictReader(f)) == [
            ("2", "1"), ("2", "1"), ("2", "2"), ("2", "2")]
    run_id = StoreReader(store).runs()[0]["id"]
    assert main(["ntb", "compare", "--store", str(store), run_id, run_id]) == 0
    printed = capsys.readouterr().out
    assert "McNemar on trial 1 of each case" in printed and "on 2 paired cases" in printed
    assert "A1 (pass^1): +0.000 (noise)" in printed


def test_call_simulate_and_ray_run_take_trials_and_persona():
    from harness.cli.main import build_parser
    parser = build_parser()
    args = parser.parse_args(["call", "simulate", "--trials", "3", "--persona", "vague"])
    assert (args.trials, args.persona) == (3, "vague")
    args = parser.parse_args(["ray", "run", "--trials", "2", "--persona", "impatient"])
    assert (args.trials, args.persona) == (2, "impatient")
    args = parser.parse_args(["ntb", "run", "--trials", "4", "--seed", "3"])
    assert (args.trials, args.seed) == (4, 3)
