"""NoisyToolBench cases: loading, ToolBench naming, tool schemas, argument normalisation."""
import hashlib
import json
import re
import shutil
from collections import Counter

import pytest

from harness.ntb.arguments import ArgumentsError, canonical_arguments, normalise_arguments, parse_arguments
from harness.ntb.cases import (CATEGORIES, CATEGORY_NAMES, DATA_DIR, CaseError, api_specs, case_key, data_sha256, load_case, load_cases,
                               openai_tools, resolve_api_name)
from harness.ntb.toolbench import api_callable_name, parameter_name, standardize


@pytest.fixture(scope="module")
def cases():
    return load_cases()


def test_all_200_cases_load_with_exact_category_counts(cases):
    assert len(cases) == 200
    assert Counter(c.category for c in cases) == {"IMKI": 50, "IMR": 50, "IwE": 50, "IBTC": 50}
    assert len({case_key(c) for c in cases}) == 200
    assert [c.category for c in cases[:1]] == ["IMKI"] and cases[-1].key == "IBTC/50"
    assert all(not c.expected_calls for c in cases if c.category == "IBTC")
    assert all(c.expected_calls for c in cases if c.category != "IBTC")
    assert sum(len(c.expected_calls) for c in cases) == 200
    assert sum(not c.relevant_apis for c in cases) == 5  # "relevant APIs" absent in 5 source cases


def test_case_fields_are_parsed(cases):
    case = load_case("IMKI/1")
    assert case.key == "IMKI/1" and case.query_id == 1
    assert case.query.startswith("As a frequent player of the Fantasy 5 game")
    assert case.question_to_ask == "Could you specify the year for your date range?"
    assert case.clarification == "Year 2023"
    call = case.expected_calls[0]
    assert call["name"] == "drawings_between_dates_for_fantasy_5"
    assert call["arguments"] == {"date1": "2023-12-01", "date2": "2023-12-31"}
    assert call["raw_arguments"].startswith("{") and call["parse_error"] is None
    assert call["resolved_name"] == "drawings_between_dates_for_fantasy_5"
    assert case.relevant_apis == [["Fantasy 5", "Drawings Between Dates"]]
    assert case.api_list[0]["tool_name"] == "Fantasy 5"


def test_expected_arguments_all_parse(cases):
    calls = [e for c in cases for e in c.expected_calls]
    assert all(isinstance(e["arguments"], dict) for e in calls)
    assert [e["parse_error"] for e in calls if e["parse_error"]] == []


def test_load_cases_selects_by_category_and_id():
    assert [c.key for c in load_cases(["imr", "IMKI"], [3])] == ["IMKI/3", "IMR/3"]
    assert [c.key for c in load_cases(ids=["IwE/7", "IBTC/50"])] == ["IwE/7", "IBTC/50"]
    assert [c.key for c in load_cases(["IBTC"], ["2"])] == ["IBTC/2"]


@pytest.mark.parametrize("kwargs, words", [
    ({"categories": ["IMX"]}, ["IMX", "IMKI, IMR, IwE, IBTC"]),
    ({"categories": ["IMKI"], "ids": [51]}, ["51", "1-50"]),
    ({"categories": ["IMKI"], "ids": ["IMR/3"]}, ["IMR/3"]),
    ({"ids": ["IMKI/x"]}, ["IMKI/x"]),
    ({"ids": ["abc"]}, ["abc"]),
])
def test_load_cases_rejects_unknown_categories_and_ids(kwargs, words):
    with pytest.raises(CaseError) as err:
        load_cases(**kwargs)
    assert all(w in str(err.value) for w in words)


def test_load_case_rejects_a_bad_key():
    with pytest.raises(CaseError, match="CATEGORY/N"):
        load_case("IMKI-1")


def test_toolbench_names():
    assert api_callable_name("Fantasy 5", "Drawings Between Dates") == "drawings_between_dates_for_fantasy_5"
    assert standardize("9GAG API (Detailed)") == "get_9gag_api_detailed"
    assert standardize("  OHLCV&VWAP  Spot__") == "ohlcv_vwap_spot"
    assert api_callable_name("Working days", "1.3 Get info day") == "get_1_3_get_info_day_for_working_days"
    long = api_callable_name("Mathematical Symbolic Expression Manipulator", "IsValidExpression")
    assert long == "validexpression_for_mathematical_symbolic_expression_manipulator" and len(long) == 64
    assert api_callable_name("X", "From") == "is_from_for_x"
    assert parameter_name("id") == "is_id" and parameter_name("countryCode") == "countrycode"
    assert parameter_name("is_id") == "is_id"


def test_name_normaliser_matches_the_names_in_the_data(cases):
    calls = [(c, e) for c in cases for e in c.expected_calls]
    strict = sum(e["name"] in api_specs(c) for c, e in calls)
    unresolved = [(c.key, e["name"]) for c, e in calls if e["resolved_name"] is None]
    assert strict == 186  # the other 14 are written differently in the source
    assert unresolved == [("IMKI/40", "club_profile_for_transfermarket"),  # source errors
                          ("IMR/26", "ohclv_vwap_spot_for_cryptocurrency_financial_data")]
    by_key = {c.key: c for c in cases}
    rows = json.loads((DATA_DIR / "recorded_observations.json").read_text())
    known = sum(r["api"] in api_specs(by_key[f"{r['category']}/{r['query_id']}"]) for r in rows)
    assert (known, len(rows)) == (1225, 1227)  # the 2 others are calls of a tool name in the logs


def test_resolve_api_name_variants():
    case = load_case("IwE/48")
    assert resolve_api_name(case, "get_1_3_get_info_day_for_working_days") == "get_1_3_get_info_day_for_working_days"
    assert resolve_api_name(case, "get_info_day_for_working_days") == "get_1_3_get_info_day_for_working_days"
    assert resolve_api_name(case, "GET_1_3_Get_Info_Day_for_Working_Days") == "get_1_3_get_info_day_for_working_days"
    assert resolve_api_name(case, "for_working_days") is None  # ambiguous suffix
    assert resolve_api_name(case, "nothing_for_working_days") is None
    scuba = load_case("IMKI/37")
    full = "query_divesites_by_a_country_or_a_region_for_world_scuba_diving_sites_api"
    assert resolve_api_name(scuba, full) == full[-64:]


def test_tool_schemas_are_valid_for_every_case(cases):
    for case in cases:
        tools = openai_tools(case)
        names = [t["function"]["name"] for t in tools]
        assert len(names) == len(set(names)) == len(api_specs(case)), case.key
        for tool in tools:
            fn = tool["function"]
            assert tool["type"] == "function" and re.fullmatch(r"[a-z0-9_]{1,64}", fn["name"])
            assert len(fn["description"]) <= 400
            params = fn["parameters"]
            assert params["type"] == "object"
            assert set(params["required"]) <= set(params["properties"])
            for prop in params["properties"].values():
                assert prop["type"] in {"string", "number", "integer", "boolean", "array", "object"}
                assert isinstance(prop["description"], str)
        json.dumps(tools)


def test_tool_schema_types_defaults_and_duplicates():
    tools = {t["function"]["name"]: t["function"] for t in openai_tools(load_case("IMKI/1"))}
    params = tools["drawings_between_dates_for_fantasy_5"]["parameters"]
    assert params["required"] == ["date1", "date2"]
    assert params["properties"]["date1"]["type"] == "string"
    assert 'Example: "01-01-2023"' in params["properties"]["date1"]["description"]
    assert tools["drawings_between_dates_for_fantasy_5"]["description"].startswith(
        'This is the subfunction for tool "fantasy_5"')
    types = Counter(p["type"] for c in load_cases() for t in openai_tools(c)
                    for p in t["function"]["parameters"]["properties"].values())
    assert {"string", "number", "boolean"} <= set(types)
    pet = {t["function"]["name"]: t["function"] for t in openai_tools(load_case("IMKI/26"))}
    assert pet["getpetbyid_for_pet_store"]["parameters"]["properties"]["petid"]["type"] == "number"
    assert len(openai_tools(load_case("IwE/10"))) == len(load_case("IwE/10").api_list) - 1  # listed twice


def test_normalise_arguments_ignores_order_whitespace_and_key_spelling():
    a = normalise_arguments('{\n  "date2": "2023-12-31",\n  "date1": " 2023-12-01 "\n }')
    b = normalise_arguments({"date1": "2023-12-01", "date2": "2023-12-31"})
    assert a == b == '{"date1":"2023-12-01","date2":"2023-12-31"}'
    assert normalise_arguments({"countryCode": "US", "id": 7}) == normalise_arguments('{"countrycode":"US","is_id":"7"}')


@pytest.mark.parametrize("left, right", [
    ({"n": 5}, {"n": "5"}),
    ({"n": 5.0}, {"n": " 5 "}),
    ({"n": "1.50"}, {"n": 1.5}),
    ({"b": True}, {"b": "TRUE"}),
    ({"q": "x", "opt": ""}, {"q": "x", "opt": None}),
    ({"q": "x", "opt": "  "}, {"q": "x"}),
    ({"q": "'Star Wars'"}, {"q": "Star Wars"}),
    ({"l": [1, " a "]}, {"l": ["1", "a"]}),
])
def test_normalise_arguments_equal(left, right):
    assert normalise_arguments(left) == normalise_arguments(right)


@pytest.mark.parametrize("left, right", [
    ({"zip": "02134"}, {"zip": 2134}),  # leading zeros are text
    ({"q": "Paris"}, {"q": "paris"}),  # letter case is kept
    ({"l": [1, 2]}, {"l": [2, 1]}),  # list order is kept
    ({"n": "1e3"}, {"n": 1000}),  # exponents are text
    ({"b": True}, {"b": 1}),
])
def test_normalise_arguments_different(left, right):
    assert normalise_arguments(left) != normalise_arguments(right)


def test_normalise_arguments_is_idempotent_and_documented_on_collisions():
    raw = {"ID": "x", "is_id": "y", "Nested": {" k ": 2.0}}
    once = normalise_arguments(raw)
    assert once == '{"is_id":"y","nested":{"k":"2"}}'  # the canonical key wins a collision
    assert normalise_arguments(json.loads(once)) == once
    assert canonical_arguments("") == canonical_arguments(None) == {}


def test_parse_arguments_repairs_and_rejects():
    assert parse_arguments('{"a": 1,}') == {"a": 1}
    assert parse_arguments("{'a': True}") == {"a": True}
    for bad in ("[1, 2]", "not json", '"text"', 5):
        with pytest.raises(ArgumentsError):
            parse_arguments(bad)
    with pytest.raises(ArgumentsError):
        normalise_arguments("[1]")


def test_the_categories_are_the_shipped_case_files_in_load_order(cases):
    """A case file added, removed or renamed without CATEGORIES (or the other way round) fails."""
    case_files = {p.stem for p in DATA_DIR.glob("*.json")} - {"recorded_observations"}
    assert case_files == set(CATEGORIES) and set(CATEGORY_NAMES) == set(CATEGORIES)
    assert list(dict.fromkeys(c.category for c in cases)) == list(CATEGORIES)


def _source_checksums() -> dict[str, str]:
    """The case files' sha256 as SOURCE.md records them ("<hex>  <file>" lines)."""
    text = (DATA_DIR / "SOURCE.md").read_text(encoding="utf-8")
    return {name: digest for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", text, re.M)}


def test_the_case_files_are_the_ones_source_md_records():
    """Each case file's bytes hashed here, against the checksum SOURCE.md records for it: a case
    file changed without its recorded hash changing fails."""
    recorded = _source_checksums()
    assert set(recorded) == {f"{c}.json" for c in CATEGORIES}
    for name, digest in recorded.items():
        assert hashlib.sha256((DATA_DIR / name).read_bytes()).hexdigest() == digest, name


def _recipe_sha256(folder) -> str:
    """data_sha256's documented recipe, written again here: each file's relative path, NUL, bytes,
    NUL, in sorted path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A copy of the shipped data that data_sha256 reads instead (its cache cleared around)."""
    import harness.ntb.cases as cases_module
    copy = tmp_path / "noisytoolbench"
    shutil.copytree(DATA_DIR, copy)
    data_sha256.cache_clear()
    monkeypatch.setattr(cases_module, "DATA_DIR", copy)
    yield copy
    data_sha256.cache_clear()


def test_the_run_records_the_hash_of_every_shipped_file():
    from harness.ntb.batch import scoring_data_sha
    assert data_sha256() == _recipe_sha256(DATA_DIR) == scoring_data_sha()


@pytest.mark.parametrize("change", ["one case byte", "one observation byte", "a file renamed", "a file added"])
def test_any_change_to_the_data_changes_its_hash(data_copy, change):
    shipped = _recipe_sha256(DATA_DIR)
    assert data_sha256() == shipped  # the copy, byte for byte
    data_sha256.cache_clear()
    if change in ("one case byte", "one observation byte"):
        path = data_copy / ("IMKI.json" if change == "one case byte" else "recorded_observations.json")
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))
    elif change == "a file renamed":
        (data_copy / "LICENSE").rename(data_copy / "LICENCE")
    else:
        (data_copy / "notes.txt").write_text("")
    assert data_sha256() != shipped and data_sha256() == _recipe_sha256(data_copy)
