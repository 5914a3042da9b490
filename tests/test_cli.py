"""The ``deskbench`` CLI end to end against a real local OpenAI-compatible HTTP endpoint."""
import csv
import json

import pytest

from harness.cli.main import main
from harness.selfscore.scoring import EXPORT_FIELDS
from store import StoreReader
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder

ROLES = ("agent", "user", "judge", "complexity", "extractor")


@pytest.fixture
def endpoint():
    with FakeOpenAIServer(default_responder(solve_at=2)) as server:
        yield server


def role_flags(url):
    """Every role at the fake endpoint ``url``, on the embedded profile: these tests drive the aided
    method (the confirmation solved-check, the bounds) that an endpoint would otherwise turn off
    (the profiles themselves: tests/test_method_profiles.py)."""
    flags = ["--profile", "embedded"]
    for r in ROLES:
        flags += ["--role", f"{r}.base_url={url}", "--role", f"{r}.model={r}-fake"]
    return flags


def test_run_export_rescore_runs(tmp_path, tasks_file, endpoint, capsys):
    store = tmp_path / "s.sqlite"
    rc = main(["run", "--store", str(store), "--dataset", str(tasks_file), "--limit", "2",
               "--max-turns", "3", "--quiet", "--name", "cli-test", *role_flags(endpoint.base_url)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "Store:" in printed and "Report:" in printed and "mean_final_score" in printed
    reader = StoreReader(store)
    run = reader.runs()[0]
    assert run["name"] == "cli-test" and run["n_completed"] == 2
    folder = tmp_path / run["id"]
    rows = [json.loads(l) for l in (folder / "interactions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and set(EXPORT_FIELDS) <= set(rows[0])
    with open(folder / "interactions.csv") as f:
        assert list(csv.DictReader(f))[0]["interaction_id"] == rows[0]["interaction_id"]
    turns = [json.loads(l) for l in (folder / "turns.jsonl").read_text().splitlines()]
    assert len(turns) == 4 and turns[0]["agent_helpfulness_reason"] == "good"
    # every request was bounded and went to the role's own model name
    assert {r["model"] for r in endpoint.requests} == {f"{r}-fake" for r in ROLES}
    assert all((r.get("max_completion_tokens") or r.get("max_tokens")) for r in endpoint.requests)
    judge_requests = [r for r in endpoint.requests if r["model"] == "judge-fake"]
    # judge calls: a JSON-schema verdict, or a one-token Yes/No question with log-probabilities
    yes_no = [r for r in judge_requests if r.get("logprobs")]
    assert yes_no and all(r["top_logprobs"] == 10 and r["temperature"] == 0.0 and
                          (r.get("max_completion_tokens") or r.get("max_tokens")) == 1 for r in yes_no)
    assert all(r["response_format"]["type"] == "json_schema" for r in judge_requests if r not in yes_no)
    # the prompt tokens the server reused from its cache are stored per call and reported
    calls = [c for i in reader.interactions(run["id"]) for c in reader.llm_calls(i["id"])]
    assert all(0 <= c["cached_tokens"] < c["input_tokens"] for c in calls)
    assert any(c["cached_tokens"] > 0 for c in calls)
    report = (folder / "report.md").read_text()
    assert "## Model calls per turn" in report and "| evaluated | cached |" in report

    assert main(["rescore", "--store", str(store), "cli-test"]) == 0
    assert "0 changed" in capsys.readouterr().out
    assert main(["runs", "--store", str(store)]) == 0
    assert run["id"] in capsys.readouterr().out
    assert main(["export", "--store", str(store), run["id"], "--out", str(tmp_path / "x"),
                 "--format", "csv"]) == 0
    assert (tmp_path / "x" / "interactions.csv").exists()


def test_default_run_name_is_agent_complexity_judge(tmp_path, tasks_file, endpoint):
    store = tmp_path / "s.sqlite"
    assert main(["run", "--store", str(store), "--dataset", str(tasks_file), "--limit", "1",
                 "--max-turns", "1", "--quiet", *role_flags(endpoint.base_url)]) == 0
    assert StoreReader(store).runs()[0]["name"] == "agent-fake_complexity-fake_judge-fake"


def test_api_key_comes_from_the_named_variable(tmp_path, tasks_file, endpoint, monkeypatch):
    monkeypatch.setenv("MY_AGENT_KEY", "sk-test-123")
    store = tmp_path / "s.sqlite"
    assert main(["run", "--store", str(store), "--dataset", str(tasks_file), "--limit", "1",
                 "--max-turns", "1", "--quiet", *role_flags(endpoint.base_url),
                 "--role", "agent.api_key_env=MY_AGENT_KEY"]) == 0
    agent = [r for r in endpoint.requests if r["model"] == "agent-fake"]
    assert agent and all(r["authorization"] == "Bearer sk-test-123" for r in agent)


@pytest.mark.parametrize("argv,needle", [
    (["--role", "judge.temperature=hot"], "roles.judge.temperature"),
    (["--role", "critic.model=x"], "unknown role"),
    (["--role", "judge.colour=blue"], "unknown key"),
    (["--role", "judgemodel"], "ROLE.KEY=VALUE"),
    (["--dataset", "/nonexistent.jsonl"], "neither a built-in set"),
    (["--role", "agent.api_key_env=DESKBENCH_TEST_UNSET_VAR"], "DESKBENCH_TEST_UNSET_VAR"),
])
def test_bad_input_gives_a_clear_error(tmp_path, tasks_file, endpoint, capsys, argv, needle):
    argv = [a if a != "/nonexistent.jsonl" else str(tmp_path / "nope.jsonl") for a in argv]
    args = ["run", "--store", str(tmp_path / "s.sqlite"), "--quiet", "--dataset", str(tasks_file),
            *role_flags(endpoint.base_url), *argv]
    assert main(args) == 2
    assert needle in capsys.readouterr().err


def test_resume_unknown_run_names_the_runs_that_exist(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    from store import StoreWriter
    StoreWriter(store).close()
    assert main(["run", "--store", str(store), "--resume", "nope"]) == 2
    assert "No run 'nope'" in capsys.readouterr().err


def test_config_file_and_environment(tmp_path, tasks_file, endpoint, monkeypatch):
    cfg = tmp_path / "deskbench.toml"
    roles = "\n".join(f'[roles.{r}]\nbase_url = "{endpoint.base_url}"\nmodel = "{r}-fake"\n' for r in ROLES)
    cfg.write_text(f'store = "{tmp_path / "from-file.sqlite"}"\n[run]\nmax_turns = 2\nlimit = 1\n' + roles)
    monkeypatch.setenv("DESKBENCH_RUN__NAME", "from-env")
    assert main(["run", "--config", str(cfg), "--dataset", str(tasks_file), "--quiet"]) == 0
    run = StoreReader(tmp_path / "from-file.sqlite").runs()[0]
    assert run["name"] == "from-env" and run["n_interactions"] == 1


def test_fast_mode_moves_only_agent_and_user_to_the_small_model():
    from harness.cli.common import build_config
    from harness.cli.main import build_parser
    args = build_parser().parse_args(["run", "--fast"])
    cfg = build_config(args)
    assert cfg.role("agent").model == cfg.role("user").model == "qwen2.5-coder-0.5b"
    assert {cfg.role(r).model for r in ("judge", "complexity", "extractor")} == {"qwen2.5-coder-1.5b"}
    assert cfg.role("agent").temperature == 0.3  # the role's other defaults are kept


def test_ctrl_c_outside_a_batch_exits_130_with_a_hint_not_a_traceback(monkeypatch, capsys, tmp_path):
    import harness.cli.selfscore as cli

    def interrupted(args):
        raise KeyboardInterrupt  # e.g. while the command was still importing or starting up

    monkeypatch.setattr(cli, "cmd_runs", interrupted)
    assert main(["runs", "--store", str(tmp_path / "s.sqlite")]) == 130
    out = capsys.readouterr()
    assert "Interrupted" in out.out + out.err and "--resume" in out.out + out.err
    assert "Traceback" not in out.out + out.err


def test_ctrl_c_in_simcheck_says_the_cache_keeps_what_was_played(monkeypatch, capsys, tmp_path):
    import harness.cli.simcheck as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_simcheck", interrupted)
    assert main(["simcheck", "--store", str(tmp_path / "s.sqlite")]) == 130
    out = capsys.readouterr()
    text = out.out + out.err
    assert "in the cache" in text and "--resume" not in text
