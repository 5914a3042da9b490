"""The offline NoisyToolBench API environment: validation, recorded responses, fallbacks."""
import json
from collections import Counter

import pytest

from harness.config import ModelSpec
from harness.models.llm import RoleClient
from harness.ntb.apienv import ApiEnvironment, recorded_index, response_example
from harness.ntb.cases import DATA_DIR, load_case, load_cases
from tests.fakes import ScriptedChatModel

FANTASY = "drawings_between_dates_for_fantasy_5"


def simulator(reply="{\"status\": \"success\", \"data\": []}"):
    seen = []

    def respond(messages, kwargs):
        seen.append(kwargs)
        return reply
    model = ScriptedChatModel(responder=respond, prompts=[])
    return RoleClient("api_simulator", ModelSpec(model="fake-sim"), model), model, seen


def recorded(category, query_id, api):
    rows = json.loads((DATA_DIR / "recorded_observations.json").read_text())
    return [r for r in rows if (r["category"], r["query_id"], r["api"]) == (category, query_id, api)]


async def test_expected_call_gets_its_recorded_observation():
    case = load_case("IMKI/2")
    call = case.expected_calls[0]
    assert call["name"] == "hot_100_for_billboard"
    [row] = [r for r in recorded("IMKI", 2, "hot_100_for_billboard") if json.loads(r["arguments"]) == {"date": "2022-07-20"}]
    env = ApiEnvironment(case)
    result = await env.call(call["name"], call["raw_arguments"])
    assert (result.source, result.error, result.valid, result.api) == ("recorded", None, True, "hot_100_for_billboard")
    assert result.observation == row["observation"] and result.calls == []
    again = await env.call("Hot_100_for_Billboard", {"date": " 2022-07-20 ", "unused": ""})
    assert again.source == "recorded" and again.observation == row["observation"]


async def test_recorded_keys_use_toolbench_parameter_names():
    case = load_case("IMKI/43")  # recorded with locale "es_AR"
    result = await ApiEnvironment(case).call("hotel_details_for_hotels_com_provider",
                                             {"hotel_id": 1105156, "domain": "AR", "locale": "es_AR"})
    assert result.source == "recorded"


async def test_missing_required_parameter_is_named():
    env = ApiEnvironment(load_case("IMKI/1"), simulator()[0])
    result = await env.call(FANTASY, {"date1": "12-01-2023"})
    assert (result.source, result.valid) == ("error", False)
    assert "'date2'" in result.error and FANTASY in result.error
    assert json.loads(result.observation) == {"error": result.error, "response": ""}
    blank = await env.call(FANTASY, {"date1": "12-01-2023", "date2": " "})
    assert "'date2'" in blank.error


async def test_wrong_type_for_a_number_parameter():
    env = ApiEnvironment(load_case("IMKI/26"))
    bad = await env.call("getpetbyid_for_pet_store", {"petId": "five"})
    assert not bad.valid and "'petid'" in bad.error and "number" in bad.error
    ok = await env.call("getpetbyid_for_pet_store", {"petId": "5"})
    assert ok.valid
    listed = await env.call("getpetbyid_for_pet_store", {"petid": [5]})
    assert not listed.valid


async def test_unknown_api_lists_the_available_names():
    case = load_case("IMKI/1")
    result = await ApiEnvironment(case).call("lottery_results", {})
    assert (result.source, result.valid, result.api) == ("error", False, None)
    assert "No such function name: lottery_results" in result.error
    assert FANTASY in result.error and "latest_drawing_for_fantasy_5" in result.error


@pytest.mark.parametrize("arguments", ["[1, 2]", "not json", '"date"', 42])
async def test_arguments_that_are_not_a_json_object(arguments):
    result = await ApiEnvironment(load_case("IMKI/1")).call(FANTASY, arguments)
    assert not result.valid and result.error.startswith("Tool input parse error")


async def test_blank_arguments_are_an_empty_object():
    result = await ApiEnvironment(load_case("IMKI/4")).call("success_quote_for_olato_quotes", "")
    assert result.source == "recorded"


async def test_response_example_fallback():
    case = load_case("IMKI/46")
    api = "search_location_by_name_or_zip_code_for_weather_forecast_14_days"
    result = await ApiEnvironment(case).call(api, {"city": "London"})
    assert result.source == "response_example" and result.error is None
    body = json.loads(json.loads(result.observation)["response"])
    assert body == response_example(case.api_list[[s["api_name"] for s in case.api_list].index(
        "Search location by Name or zip code")]) == {"location": [{"wmo": "str", "city": "str",
                                                                     "country": "str", "country_name": "str"}]}


async def test_template_response_fallback():
    result = await ApiEnvironment(load_case("IMKI/12")).call("search_image_for_google_search_json", {"q": "Hawaii"})
    assert result.source == "template"
    assert json.loads(result.observation)["response"].startswith('{"status": "str"')


async def test_no_simulator_means_an_error_source():
    env = ApiEnvironment(load_case("IMKI/1"))
    result = await env.call(FANTASY, {"date1": "2023-12-01", "date2": "2023-12-31"})
    assert (result.source, result.valid, result.calls) == ("error", True, [])
    assert "No offline response" in result.error
    assert json.loads(result.observation)["error"] == result.error


async def test_llm_simulator_fallback_records_its_call():
    client, model, seen = simulator()
    env = ApiEnvironment(load_case("IMKI/1"), client)
    result = await env.call(FANTASY, '{"date1": "2023-12-01", "date2": "2023-12-31"}')
    assert (result.source, result.error, result.valid) == ("llm_simulated", None, True)
    assert json.loads(result.observation) == {"error": "", "response": '{"status": "success", "data": []}'}
    [call] = result.calls
    assert (call.role, call.purpose, call.model, call.error) == ("api_simulator", "api_simulation", "fake-sim", None)
    prompt = model.prompts[0][-1].content
    assert FANTASY in prompt and "2023-12-31" in prompt
    assert seen[0].get("response_format") == {"type": "json_object"}
    again = await env.call(FANTASY, {"date2": "2023-12-31", "date1": "2023-12-01"})
    assert again.source == "llm_simulated" and again.calls == [] and model.calls == 1  # served from the cache


async def test_simulator_failure_is_recorded():
    client, _, _ = simulator(reply=RuntimeError("server down"))
    result = await ApiEnvironment(load_case("IMKI/1"), client).call(FANTASY, {"date1": "a", "date2": "b"})
    assert result.source == "error" and result.valid and "server down" in result.error
    assert result.calls and result.calls[0].error


async def test_simulator_strips_code_fences():
    client, _, _ = simulator(reply='```json\n{"ok": true}\n```')
    result = await ApiEnvironment(load_case("IMKI/1"), client).call(FANTASY, {"date1": "a", "date2": "b"})
    assert json.loads(result.observation)["response"] == '{"ok": true}'


async def test_prefer_simulator_puts_the_simulator_before_examples():
    client, model, _ = simulator()
    case = load_case("IMKI/46")
    api = "search_location_by_name_or_zip_code_for_weather_forecast_14_days"
    result = await ApiEnvironment(case, client, prefer_simulator=True).call(api, {"city": "London"})
    assert result.source == "llm_simulated"
    assert "Response shape" in model.prompts[0][-1].content
    recorded_first = await ApiEnvironment(load_case("IMKI/2"), client, prefer_simulator=True).call(
        "hot_100_for_billboard", {"date": "2022-07-20"})
    assert recorded_first.source == "recorded" and model.calls == 1


async def test_recorded_responses_can_be_shared_across_cases():
    case = load_case("IMKI/7")
    call = case.expected_calls[0]
    shared = await ApiEnvironment(case).call(call["name"], call["raw_arguments"])
    own = await ApiEnvironment(case, share_recorded=False).call(call["name"], call["raw_arguments"])
    assert (shared.source, own.source) == ("recorded", "response_example")


async def test_offline_coverage_of_expected_calls():
    """Every expected call is valid except three source errors; coverage figures are pinned."""
    own, shared, invalid = Counter(), Counter(), []
    for case in load_cases():
        for call in case.expected_calls:
            a = await ApiEnvironment(case, share_recorded=False).call(call["name"], call["raw_arguments"])
            b = await ApiEnvironment(case).call(call["name"], call["raw_arguments"])
            own[a.source] += 1
            shared[b.source] += 1
            if not a.valid:
                invalid.append(case.key)
    assert invalid == ["IMKI/40", "IMR/26", "IMR/33"]  # 2 unknown names, 1 missing required parameter
    assert own["recorded"] == 141 and shared["recorded"] == 147
    by_case, _ = recorded_index()
    assert len(by_case) == 1226  # 1,227 entries; two normalise to the same key
