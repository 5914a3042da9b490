"""The API simulator is its own role (``roles.api_simulator``): it writes the responses that
nothing offline has, in the method's order (recorded, then example / template, then the
simulator) unless ``ntb.api_fallback`` says otherwise; every call step keeps its source."""
import json

from harness.compose import Runtime
from harness.config import NTB_ONLY_ROLES, ROLES, load_config
from harness.ntb.batch import NtbBatch
from store import StoreReader, StoreWriter
from tests.test_ntb_loop import agent_script, judge_approves, run_with_fakes

FANTASY = "drawings_between_dates_for_fantasy_5"           # IMKI/1: no example, no template
WEATHER = "search_location_by_name_or_zip_code_for_weather_forecast_14_days"  # IMKI/46: an example
SIMULATED = '{"draws": [[1, 2, 3, 4, 5]]}'


def one_call(name, arguments):
    def plan(query, step):
        if step == 1:
            return {"action": "call_api", "api_name": name, "arguments": arguments}
        return {"action": "final_answer", "text": "Done."}
    return plan


def run(tmp_path, plan, case, **ntb):
    reader, run_id, models = run_with_fakes(
        tmp_path, {"agent": agent_script(plan), "judge": judge_approves, "api_simulator": lambda m, k: SIMULATED},
        {"roles": {"api_simulator": {"model": "qwen2.5-coder-0.5b"}}, "ntb": {"ids": [case], **ntb}})
    [i] = reader.interactions(run_id)
    return reader, i, [json.loads(t["extra_json"]) for t in reader.turns(i["id"])], models


def test_the_api_simulator_role_writes_missing_responses_not_the_judge(tmp_path):
    reader, i, steps, models = run(tmp_path, one_call(FANTASY, {"date1": "2023-12-01", "date2": "2023-12-31"}), "IMKI/1")
    call = steps[0]
    assert (call["type"], call["source"], call["simulator_model"]) == ("call", "llm_simulated", "qwen2.5-coder-0.5b")
    assert json.loads(call["observation"])["response"] == SIMULATED
    assert models["api_simulator"].calls == 1
    judge_prompts = [str(m[-1].content) for m in models["judge"].prompts]
    assert not any("Call arguments:" in p for p in judge_prompts)  # the judge only judged
    roles = {(c["role"], c["purpose"]) for c in reader.llm_calls(i["id"])}
    assert ("api_simulator", "api_simulation") in roles


def test_examples_come_before_the_simulator_by_default(tmp_path):
    reader, _, steps, models = run(tmp_path, one_call(WEATHER, {"city": "London"}), "IMKI/46")
    assert steps[0]["source"] == "response_example" and "simulator_model" not in steps[0]
    assert models["api_simulator"].calls == 0


def test_simulator_first_is_a_setting(tmp_path):
    _, _, steps, models = run(tmp_path, one_call(WEATHER, {"city": "London"}), "IMKI/46",
                              api_fallback="simulator-first")
    assert steps[0]["source"] == "llm_simulated" and models["api_simulator"].calls == 1
    assert "Response shape" in str(models["api_simulator"].prompts[0][-1].content)  # the example as the shape


def test_recorded_responses_come_first_whatever_the_order(tmp_path):
    _, _, steps, models = run(tmp_path, one_call("hot_100_for_billboard", {"date": "2022-07-20"}), "IMKI/2",
                              api_fallback="simulator-first")
    assert steps[0]["source"] == "recorded" and models["api_simulator"].calls == 0


def test_no_api_simulator_gives_an_error_source(tmp_path):
    _, _, steps, models = run(tmp_path, one_call(FANTASY, {"date1": "2023-12-01", "date2": "2023-12-31"}),
                              "IMKI/1", api_simulator=False)
    assert steps[0]["source"] == "error" and "No offline response" in steps[0]["error"]
    assert "api_simulator" not in models


def test_the_role_is_configured_like_the_others():
    assert "api_simulator" in ROLES and NTB_ONLY_ROLES == ("api_simulator",)
    cfg = load_config()
    spec = cfg.role("api_simulator")
    assert spec.embedded and spec.model == "qwen2.5-coder-1.5b" and spec.temperature == 0.0
    remote = load_config(overrides={"roles": {"api_simulator": {"base_url": "http://localhost:9/v1", "model": "sim"}}})
    assert remote.role("api_simulator").base_url == "http://localhost:9/v1" and remote.role("judge").embedded


def test_model_checks_cover_the_roles_a_run_uses(tmp_path, monkeypatch):
    import harness.models.model_files as model_files
    checked = []
    monkeypatch.setattr(model_files, "ensure_model", lambda key, *a, **k: checked.append(key))
    remote = {r: {"base_url": "http://localhost:9/v1", "model": f"{r}-fake"} for r in ROLES if r != "api_simulator"}
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"),
                                 "roles": {**remote, "api_simulator": {"model": "qwen2.5-coder-0.5b"}}})
    with Runtime(cfg) as runtime:  # no engine starts: checks only look at model files
        runtime.check_models()
        assert checked == []  # a SelfScore run does not need the NoisyToolBench-only role
        batch = NtbBatch(runtime, StoreWriter(cfg.store), StoreReader(cfg.store, must_exist=False))
        assert batch.roles_used() == ["agent", "judge", "api_simulator"]
        runtime.check_models(batch.roles_used())
        assert checked == ["qwen2.5-coder-0.5b"]
