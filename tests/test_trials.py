"""Repeated trials: pass^k against hand-computed values, per-trial seeds that survive a resume,
the report's and exports' figures over trials, and a comparison that will not call a difference
inside the noise real."""
import json
import math

import pytest

from harness.compose import run_selfscore
from harness.models.seeds import derive_seed, seed_for, seeds_of_trial, trial_seeds
from harness.study.export import export_run
from harness.study.noise import compare_trials, noise_lines, paired_difference, verdict
from harness.study.report import report_markdown
from harness.study.trials import pass_at_k, pass_hat_k, pass_k_figures, spread_figures
from harness.tasks.datasets import DatasetError, load_dataset
from store import StoreReader
from tests.fakes import default_responder, fake_factory
from tests.test_resume_and_failures import Crash, crash_on_call
from tests.test_selfscore_graph import make_config


# --- pass^k and pass@k, by hand ---------------------------------------------------------------

def test_pass_hat_k_matches_hand_computed_values():
    # 4 trials, 2 solved: pass^1 = 2/4, pass^2 = C(2,2)/C(4,2) = 1/6, pass^3 = pass^4 = 0
    assert [pass_hat_k(4, 2, k) for k in (1, 2, 3, 4)] == pytest.approx([0.5, 1 / 6, 0.0, 0.0])
    # pass@2 = 1 - C(2,2)/C(4,2) = 5/6; pass@3 = 1 (any 3 of 4 include a solved one)
    assert [pass_at_k(4, 2, k) for k in (1, 2, 3)] == pytest.approx([0.5, 5 / 6, 1.0])
    assert [pass_hat_k(4, 4, k) for k in (1, 4)] == [1.0, 1.0]      # all solved
    assert [pass_hat_k(4, 0, k) for k in (1, 4)] == [0.0, 0.0]      # none solved
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)              # C(3,2)/C(5,2)
    with pytest.raises(ValueError):
        pass_hat_k(3, 1, 4)


def _figures(outcomes: dict[str, list], key="solved", **more):
    return [{"task_id": t, "trial": i + 1, key: v, **{k: m[t][i] for k, m in more.items()}}
            for t, vs in outcomes.items() for i, v in enumerate(vs)]


def test_pass_k_figures_average_tasks_and_count_flips():
    figs = _figures({"all": [True] * 4, "none": [False] * 4, "some": [True, False, True, False]})
    p = pass_k_figures(figs)
    assert p["k"] == [1, 2, 3, 4] and p["tasks"] == 3 and p["trials"] == (4, 4)
    assert p["pass_hat"] == pytest.approx([(1 + 0 + 0.5) / 3, (1 + 0 + 1 / 6) / 3, 1 / 3, 1 / 3])
    assert p["pass_at"][1] == pytest.approx((1 + 0 + 5 / 6) / 3)
    assert p["flipped"] == ["some"] and p["flip_share"] == pytest.approx(1 / 3)
    # k runs to the fewest trials a task has; a missing verdict (failed) is left out
    figs.append({"task_id": "short", "trial": 1, "solved": True})
    figs.append({"task_id": "short", "trial": 2, "solved": None})
    assert pass_k_figures(figs)["k"] == [1]


def test_spread_and_noise_floor_by_hand():
    finals = {"a": [10.0, 20.0], "b": [30.0, 30.0]}
    figs = _figures({"a": [0, 0], "b": [0, 0]}, final_score=finals)
    s = spread_figures(figs, "final_score")
    assert s["tasks"]["a"] == {"n": 2, "mean": 15.0, "sd": pytest.approx(math.sqrt(50)), "min": 10.0, "max": 20.0}
    assert s["mean"] == 22.5 and s["within_sd"] == pytest.approx(5.0)  # sqrt(mean(50, 0))
    # noise SE of the mean of task means: sqrt(50/2 + 0/2) / 2 = 2.5; floor = 1.96 * sqrt(2) * 2.5
    assert s["noise_floor"] == pytest.approx(1.959964 * math.sqrt(2) * 2.5, rel=1e-5)
    assert s["noise_floor_one_trial"] == pytest.approx(1.959964 * math.sqrt(2) * 5.0 / math.sqrt(2), rel=1e-5)
    assert s["low"] <= s["mean"] <= s["high"]
    one = spread_figures(_figures({"a": [0]}, final_score={"a": [3.0]}), "final_score")
    assert one["noise_floor"] is None and one["tasks"]["a"]["sd"] is None


# --- comparing runs with trials --------------------------------------------------------------

def _run(rates: dict[str, float], trials=6, jitter=0.0):
    """Per task: solved on the first round(rate * trials) trials; final 40 + 20*solved + jitter."""
    out = []
    for t, rate in rates.items():
        for i in range(trials):
            solved = i < round(rate * trials)
            out.append({"task_id": t, "trial": i + 1, "solved": solved,
                        "final_score": 40.0 + 20 * solved + (jitter if i % 2 else -jitter)})
    return out


def test_compare_refuses_to_call_a_difference_inside_the_noise_real():
    tasks = {f"t{i}": 0.5 for i in range(8)}
    a, b = _run(tasks), _run({**tasks, "t0": 4 / 6})  # one task solved once more in six
    result = compare_trials({"A": a, "B": b})
    solved = result["pairs"][0]["figures"]["solved"]
    assert solved["difference"] == pytest.approx(-1 / 6 / 8)
    assert solved["verdict"] == "noise" and "inside the noise" in solved["sentence"]
    assert result["note"] is None


def test_compare_calls_a_large_consistent_difference_real():
    a = _run({f"t{i}": 1.0 for i in range(8)}, jitter=1.0)
    b = _run({f"t{i}": 1 / 6 for i in range(8)}, jitter=1.0)
    f = compare_trials({"A": a, "B": b})["pairs"][0]["figures"]
    assert f["solved"]["verdict"] == "real" and f["solved"]["difference"] == pytest.approx(5 / 6)
    assert f["final_score"]["verdict"] == "real" and f["final_score"]["low"] > 0
    assert "larger than the noise" in f["final_score"]["sentence"]


def test_single_trial_runs_get_no_noise_floor_and_the_trials_to_use():
    a, b = _run({"t1": 1.0, "t2": 0.0}, trials=1), _run({"t1": 0.0, "t2": 0.0}, trials=1)
    result = compare_trials({"A": a, "B": b})
    assert result["single_trial"] == ["A", "B"] and "--trials 4" in result["note"]
    assert result["pairs"][0]["figures"]["solved"]["verdict"] == "unknown"
    assert any("No noise floor can be computed" in line for line in noise_lines(result))


def test_paired_difference_uses_only_shared_tasks_and_verdict_needs_both_conditions():
    d = paired_difference({"x": [1.0, 1.0], "y": [0.0, 1.0]}, {"x": [0.0, 0.0], "z": [1.0]})
    assert d["tasks"] == 1 and d["difference"] == 1.0 and d["low"] is None
    # an interval that leaves out 0 but a gap under the floor is still noise
    kind, _ = verdict({"difference": 0.5, "low": 0.1, "high": 0.9}, 0.6, None)
    assert kind == "noise"
    kind, _ = verdict({"difference": 0.5, "low": 0.1, "high": 0.9}, 0.3, 0.2)
    assert kind == "real"


# --- seeds -----------------------------------------------------------------------------------

def test_trial_seeds_are_the_roles_own_in_trial_one_and_stable_and_distinct_after():
    assert derive_seed(0, "user", 7, "wifi", 1) == 7
    s2, s3 = derive_seed(0, "user", 7, "wifi", 2), derive_seed(0, "user", 7, "wifi", 3)
    assert s2 != s3 and s2 == derive_seed(0, "user", 7, "wifi", 2) and 0 <= s2 < 2 ** 31
    assert derive_seed(1, "user", 7, "wifi", 2) != s2  # the run's seed moves them
    seeds = seeds_of_trial(0, {"user": (0.7, 0), "agent": (0.3, 0), "judge": (0.0, 0)}, "wifi", 2)
    assert set(seeds) == {"agent", "user"}  # a greedy role needs no seed
    with trial_seeds({"user": 100}):
        assert seed_for("user", 0, None) == 100 and seed_for("user", 0, 2) == 102  # a retry's offset kept
        assert seed_for("judge", 0, None) is None
    assert seed_for("user", 0, None) is None


def _seed_echo(base):
    """The default fakes, with the agent's reply naming the seed it was sampled with."""
    def for_role(role):
        inner = base(role)

        def respond(messages, kwargs):
            text = inner(messages, kwargs)
            return f"{text} (seed {kwargs.get('seed', 'role')})" if role == "agent" else text
        return respond
    return for_role


def test_a_run_of_three_trials_stores_trials_with_their_seeds(tmp_path, tasks_file):
    cfg = make_config(tmp_path, limit=2, max_turns=2, trials=3, seed=5)
    run_id, progress = run_selfscore(cfg, load_dataset(str(tasks_file)),
                                     chat_models=fake_factory(_seed_echo(default_responder(solve_at=None))))
    reader = StoreReader(cfg.store)
    rows = reader.interactions(run_id)
    assert progress.done == 6 and [(r["task_id"], r["trial"]) for r in rows] == [
        ("wifi", 1), ("wifi", 2), ("wifi", 3), ("disk", 1), ("disk", 2), ("disk", 3)]
    assert rows[1]["id"] == f"{run_id}:wifi:trial2" and rows[0]["persona"] == "cooperative"
    for r in rows:
        seeds = json.loads(r["script_json"])["seeds"]
        assert set(seeds) == {"agent", "user"}  # the sampled roles of the default config
        reply = reader.turns(r["id"])[0]["agent_message"]
        expected = "role" if r["trial"] == 1 else seeds["agent"]
        assert reply.endswith(f"(seed {expected})"), (r["trial"], reply)
    assert len({json.loads(r["script_json"])["seeds"]["agent"] for r in rows}) == 3 * 1 + 2  # trial 1 shares 0
    scores = reader.scores(run_id)
    assert sorted(s["figures"]["trial"] for s in scores) == [1, 1, 2, 2, 3, 3]


def test_a_killed_run_of_trials_resumes_with_the_same_seeds(tmp_path, tasks_file, monkeypatch):
    responders = _seed_echo(default_responder(solve_at=None))
    clean = make_config(tmp_path / "clean", limit=2, max_turns=2, trials=2, concurrency=1)
    clean_id, _ = run_selfscore(clean, load_dataset(str(tasks_file)), chat_models=fake_factory(responders))
    cfg = make_config(tmp_path / "crash", limit=2, max_turns=2, trials=2, concurrency=1)
    original = crash_on_call(monkeypatch, "agent", 3)  # in trial 2 of the first task
    with pytest.raises(Crash):
        run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(responders))
    from harness.models.llm import RoleClient
    monkeypatch.setattr(RoleClient, "complete", original)
    reader = StoreReader(cfg.store)
    run = reader.runs()[0]
    run_selfscore(cfg, resume=run["id"], chat_models=fake_factory(responders))

    def replies(store, run_id):
        return {i.split(":", 1)[1]: [t["agent_message"] for t in ts]
                for i, ts in StoreReader(store).turns_for_run(run_id).items()}
    assert replies(cfg.store, run["id"]) == replies(clean.store, clean_id)
    assert any("(seed role)" not in m for ms in replies(cfg.store, run["id"]).values() for m in ms)


def test_report_and_exports_give_the_figures_over_trials(tmp_path, tasks_file):
    cfg = make_config(tmp_path, limit=2, max_turns=2, trials=2)
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder(solve_at=2)))
    reader = StoreReader(cfg.store)
    md = report_markdown(reader, run_id)
    assert "## Trials" in md and "| 2 | 1.000 | 1.000 |" in md and "flip share 0.00" in md
    assert "| wifi | 2 | 2/2 |" in md and "| wifi | 2 | cooperative |" in md
    files = export_run(reader, run_id, tmp_path / "out")
    tasks = [json.loads(line) for line in (tmp_path / "out" / "tasks.jsonl").read_text().splitlines()]
    assert {t["task_id"]: t["trials"] for t in tasks} == {"wifi": 2, "disk": 2}
    over = json.loads((tmp_path / "out" / "trials.json").read_text())
    assert over["solved"]["pass_hat"] == [1.0, 1.0] and over["spread"]["final_score"]["noise_floor"] is not None
    inter = [json.loads(line) for line in (tmp_path / "out" / "interactions.jsonl").read_text().splitlines()]
    assert {(r["task_id"], r["trial"]) for r in inter} == {("wifi", 1), ("wifi", 2), ("disk", 1), ("disk", 2)}
    assert tmp_path / "out" / "trials.json" in files


def test_one_trial_report_says_what_trials_would_add(tmp_path, tasks_file):
    cfg = make_config(tmp_path, limit=1, max_turns=1)
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder()))
    reader = StoreReader(cfg.store)
    assert reader.interactions(run_id)[0]["id"] == f"{run_id}:wifi"  # ids as before trials
    assert "One trial per task" in report_markdown(reader, run_id)


# --- personas in task files and the config ---------------------------------------------------

def test_a_task_persona_is_validated_and_wins_over_the_runs(tmp_path, tasks_file):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "question": "q?", "persona": "grumpy"}) + "\n")
    with pytest.raises(DatasetError, match="persona.*cooperative, vague, impatient, mistaken, tangential"):
        load_dataset(str(bad))
    rows = [json.loads(line) for line in tasks_file.read_text().splitlines()]
    rows[0]["persona"] = "vague"
    tasks_file.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = make_config(tmp_path, limit=2, max_turns=1, persona="tangential")
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder()))
    reader = StoreReader(cfg.store)
    assert {i["task_id"]: i["persona"] for i in reader.interactions(run_id)} == {"wifi": "vague", "disk": "tangential"}
    assert "## By persona" in report_markdown(reader, run_id)


def test_a_scripted_user_has_no_persona(tmp_path, tasks_file):
    cfg = make_config(tmp_path, limit=1, max_turns=1, user="scripted", persona="vague")
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder()))
    assert StoreReader(cfg.store).interactions(run_id)[0]["persona"] is None
