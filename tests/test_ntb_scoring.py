"""NoisyToolBench scoring on real shipped cases: A1/Re (real and fake embedders), A2 (exact set
and judge), A3 (rules and judge), IBTC conventions, failed judgments, tables and the CSV."""
from __future__ import annotations

import asyncio
import csv
import json
import math

import pytest

from harness.config import ModelSpec
from harness.models import embeddings
from harness.models.llm import RoleClient
from harness.ntb import scoring
from harness.ntb.ask_matching import PAPER_THRESHOLD
from harness.ntb.call_matching import call_key
from harness.ntb.cases import case_key, load_cases
from harness.selfscore.judges import StructuredJudge
from tests.fakes import ScriptedChatModel

UNRELATED = "What is your favourite colour?"


# --- helpers shared with test_ntb_transcripts ---------------------------------------------------

def case(category: str, query_id: int):
    [c] = load_cases(categories=[category], ids=[query_id])
    return c


def ideal_steps(c, answer: str = "Here are the results from the API.") -> list[dict]:
    """Thinks, asks the anticipated question verbatim, makes exactly the expected calls, answers."""
    steps = [{"type": "think", "text": "The request is missing information; ask first."},
             {"type": "ask", "text": c.question_to_ask, "reply": c.clarification}]
    steps += [{"type": "call", "name": call["name"], "arguments": call["arguments"],
               "observation": '{"result": "ok"}', "source": "recorded"} for call in c.expected_calls]
    return steps + [{"type": "answer", "text": answer}]


def limitation_steps() -> list[dict]:
    return [{"type": "answer", "text": "Due to the limitation of my toolset, I cannot do this request."}]


def verdicts(approve: bool = True):
    """A judge responder: every NoisyToolBench verdict ``approve`` (valid JSON)."""
    def respond(messages, kwargs):
        last = str(messages[-1].content)
        for key in ("all_expected_calls_made", "fulfilled", "limitation_stated"):
            if f'"{key}"' in last:
                return json.dumps({"reason": "checked", key: approve})
        raise AssertionError(f"unexpected judge prompt: {last[:200]}")
    return respond


def make_judge(responder, retries: int = 1) -> tuple[StructuredJudge, ScriptedChatModel]:
    model = ScriptedChatModel(responder=responder, prompts=[])
    return StructuredJudge(RoleClient("judge", ModelSpec(model="fake-judge"), model), retries), model


def fake_embedder(matching: set[str] = frozenset(), similarity: float = 1.0):
    """The first text is the target [1, 0]; texts in ``matching`` (or equal to the target) get
    cosine ``similarity`` with it, every other text 0."""
    other = math.sqrt(max(0.0, 1 - similarity ** 2))

    def embed(texts):
        target = texts[0]
        return [[1.0, 0.0]] + [[similarity, other] if t == target or t in matching else [0.0, 1.0]
                               for t in texts[1:]]
    embed.model_id = "fake-embedder"
    return embed


def score(c, steps, **kw):
    kw.setdefault("embedder", fake_embedder())
    return asyncio.run(scoring.score_case(c, steps, **kw))


# --- A1 and Re --------------------------------------------------------------------------------

def test_real_embedder_matches_the_anticipated_question_and_not_an_unrelated_one():
    c = case("IMKI", 1)
    verbatim, unrelated = scoring.ask_matches([c.question_to_ask, UNRELATED], c.question_to_ask,
                                              embeddings.embed, threshold=0.4)
    assert verbatim["matched"] and verbatim["similarity"] == pytest.approx(1.0, abs=1e-4)
    assert not verbatim["redundant"]
    assert not unrelated["matched"] and unrelated["similarity"] < 0.4 and unrelated["redundant"]


def test_ideal_log_scores_full_marks_with_real_embedder_and_approving_judge():
    c = case("IMKI", 1)
    judge, model = make_judge(verdicts(True))
    row = score(c, ideal_steps(c), embedder=embeddings.embed, judge=judge)
    assert (row["A1"], row["A2"], row["A3"], row["redundant_asking"]) == (1, 1, 1, 0)
    assert row["steps"] == 4 and row["step_counts"] == {"ask": 1, "call": 1, "answer": 1, "think": 1,
                                                        "total": 4}
    assert row["case"] == "IMKI/1" and row["category"] == "IMKI" and row["query_id"] == 1
    assert row["query"] == c.query and row["failed_judgments"] == 0
    assert row["judged"] == {"A2": "rule", "A3": "ok"} and model.calls == 1 == row["judge_calls"]
    assert row["threshold"] == 0.4 and row["embedding_model"] == embeddings.model_id()
    assert row["a2_method"] == "exact-set" and row["judge_model"] == "fake-judge"
    assert row["prompt_version"] == scoring.PROMPT_VERSION
    assert row["scorer_version"] == scoring.SCORER_VERSION
    assert "checked" in row["reason"]
    json.dumps(row)  # rows are stored as JSON


def test_every_shipped_case_ideal_log_gets_a1_and_exact_a2():
    cases = [c for c in load_cases() if c.category != "IBTC"]
    assert len(cases) == 150
    for c in cases:
        row = score(c, ideal_steps(c), embedder=embeddings.embed)
        assert (row["A1"], row["A2"], row["redundant_asking"]) == (1, 1, 0), case_key(c)
        assert row["A3"] is None and row["judged"]["A3"] == "not_judged" and row["judge_calls"] == 0


def test_never_asking_gives_a1_zero():
    c = case("IMR", 2)
    steps = [s for s in ideal_steps(c) if s["type"] != "ask"]
    row = score(c, steps)
    assert row["A1"] == 0 and row["redundant_asking"] == 0 and row["asks"] == []
    assert row["A2"] == 1  # the calls themselves are right


def test_two_unrelated_questions_count_two_redundant():
    c = case("IMKI", 2)
    steps = [{"type": "ask", "text": UNRELATED, "reply": "I could not provide relevant information."},
             {"type": "ask", "text": "Do you want the results in a table?"},
             *ideal_steps(c)[2:]]
    row = score(c, steps)
    assert row["A1"] == 0 and row["redundant_asking"] == 2
    assert [a["redundant"] for a in row["asks"]] == [True, True]


def test_a_repeated_matching_question_counts_one_redundant():
    c = case("IwE", 1)
    ask = {"type": "ask", "text": c.question_to_ask, "reply": c.clarification}
    row = score(c, [ask, dict(ask), *ideal_steps(c)[2:]])
    assert row["A1"] == 1 and row["redundant_asking"] == 1
    assert [(a["matched"], a["redundant"]) for a in row["asks"]] == [(True, False), (True, True)]


def test_threshold_is_a_setting():
    c = case("IMKI", 3)
    asks = ["Which date do you mean?"]
    half = fake_embedder({"Which date do you mean?"}, similarity=0.5)
    assert scoring.ask_matches(asks, c.question_to_ask, half, threshold=0.4)[0]["matched"]
    assert not scoring.ask_matches(asks, c.question_to_ask, half, threshold=PAPER_THRESHOLD)[0]["matched"]
    row = score(c, [{"type": "ask", "text": asks[0]}, *ideal_steps(c)[2:]], embedder=half, threshold=0.8)
    assert row["A1"] == 0 and row["redundant_asking"] == 1 and row["threshold"] == 0.8
    assert row["embedding_model"] == "fake-embedder"
    with pytest.raises(ValueError, match="threshold"):
        scoring.ask_matches(asks, c.question_to_ask, half, threshold=1.5)


# --- A2 and A3 --------------------------------------------------------------------------------

def test_wrong_arguments_fail_exact_a2_and_a3_without_a_judge_call():
    c = case("IMKI", 1)
    steps = ideal_steps(c)
    steps[2] = {**steps[2], "arguments": {"date1": "2022-12-01", "date2": "2022-12-31"}}
    judge, model = make_judge(verdicts(True))
    row = score(c, steps, judge=judge)
    assert row["A2"] == 0 and row["A3"] == 0 and model.calls == 0 and row["judge_model"] is None
    assert row["judged"] == {"A2": "rule", "A3": "rule"}
    assert "missing" in row["reason"] and "unexpected" in row["reason"] and "2022-12-01" in row["reason"]


def test_exact_set_ignores_order_repeats_formatting_and_name_case():
    c = case("IwE", 1)
    assert len(c.expected_calls) == 2
    second, first = c.expected_calls[1], c.expected_calls[0]
    made = [{"name": second["name"].upper(), "arguments": json.dumps(second["arguments"], indent=3)},
            {"name": first["name"], "arguments": dict(reversed(list(first["arguments"].items())))},
            {"name": first["name"], "arguments": first["arguments"]}]
    assert scoring.a2_exact_set(c.expected_calls, made)[0] == 1
    assert scoring.a2_exact_set(c.expected_calls, made[:1])[0] == 0                  # one missing
    extra = [*made, {"name": "carriers_list_for_trackingmore_v2", "arguments": {}}]
    assert scoring.a2_exact_set(c.expected_calls, extra)[0] == 0                     # an extra call
    assert call_key(" Some_API ", None) == call_key("some_api", "") == ("some_api", "{}")
    bad = [{"name": first["name"], "arguments": "{not json"}, made[0]]
    assert scoring.a2_exact_set(c.expected_calls, bad)[0] == 0                       # unparsable


def test_exact_set_resolves_names_to_the_case_apis():
    c = case("IwE", 49)  # expected "analyse_for_working_days"; the API is offered as get_1_3_...
    [expected] = c.expected_calls
    made = [{"name": "get_1_3_analyse_for_working_days", "arguments": expected["arguments"]}]
    assert scoring.a2_exact_set(c.expected_calls, made, c)[0] == 1
    assert scoring.a2_exact_set(c.expected_calls, made)[0] == 0           # without the case: names differ
    steps = [*ideal_steps(c)[:2], {"type": "call", **made[0]}, {"type": "answer", "text": "Done."}]
    assert score(c, steps)["A2"] == 1


def test_llm_judge_a2_is_recorded_and_gates_a3():
    c = case("IMR", 1)
    judge, model = make_judge(verdicts(True))
    row = score(c, ideal_steps(c), a2_method="llm-judge", judge=judge)
    assert (row["A2"], row["A3"]) == (1, 1) and row["a2_method"] == "llm-judge" and model.calls == 2
    assert row["judged"] == {"A2": "ok", "A3": "ok"}
    judge, model = make_judge(verdicts(False))
    row = score(c, ideal_steps(c), a2_method="llm-judge", judge=judge)
    assert (row["A2"], row["A3"]) == (0, 0) and model.calls == 1  # A3 = 0 by the official rule
    with pytest.raises(ValueError, match="needs a judge"):
        score(c, ideal_steps(c), a2_method="llm-judge")
    with pytest.raises(ValueError, match="unknown A2 method"):
        score(c, ideal_steps(c), a2_method="fuzzy")


def test_a2_judge_prompt_holds_expected_and_made_calls():
    c = case("IwE", 1)
    judge, model = make_judge(verdicts(True))
    score(c, ideal_steps(c), a2_method="llm-judge", judge=judge)
    a2_prompt = str(model.prompts[0][-1].content)
    assert c.query in a2_prompt and c.clarification in a2_prompt
    assert a2_prompt.count(c.expected_calls[0]["name"]) == 2  # expected and made
    a3_prompt = str(model.prompts[1][-1].content)
    assert '{"result": "ok"}' in a3_prompt and "Here are the results from the API." in a3_prompt


def test_no_final_answer_fails_a3_without_a_judge_call():
    c = case("IMKI", 4)
    judge, model = make_judge(verdicts(True))
    row = score(c, ideal_steps(c)[:-1], judge=judge)
    assert row["A2"] == 1 and row["A3"] == 0 and model.calls == 0 and not row["answered"]


def test_failed_judge_leaves_a3_none_and_is_counted():
    c = case("IMKI", 1)
    judge, model = make_judge(lambda m, k: "this is not JSON", retries=2)
    row = score(c, ideal_steps(c), judge=judge)
    assert row["A2"] == 1 and row["A3"] is None and model.calls == 3
    assert row["judged"]["A3"] == "failed" and row["failed_judgments"] == 1
    assert "A3" in row["judge_errors"] and "judgment failed" in row["reason"]
    assert row["judge_model"] == "fake-judge"
    # a failed A2 judgment leaves A2 None and A3 unjudged (it depends on A2)
    judge, model = make_judge(lambda m, k: "{}", retries=0)
    row2 = score(c, ideal_steps(c), a2_method="llm-judge", judge=judge)
    assert row2["A2"] is None and row2["A3"] is None and model.calls == 1
    assert row2["judged"] == {"A2": "failed", "A3": "skipped"} and row2["failed_judgments"] == 1
    t = scoring.tables([row, row2])
    stats = t["per_category"]["IMKI"]
    assert stats["n"] == 2 and stats["failed_A3"] == 1 and stats["failed_A2"] == 1
    assert stats["A2"] == 1.0 and stats["n_A2"] == 1 and stats["A3"] is None and stats["n_A3"] == 0
    assert stats["failed_judgments"] == 2


def test_without_a_judge_a3_is_not_judged_and_not_failed():
    c = case("IMKI", 1)
    row = score(c, ideal_steps(c))
    assert row["A3"] is None and row["judged"]["A3"] == "not_judged" and row["failed_judgments"] == 0
    assert row["judge_model"] is None
    wrong = ideal_steps(c)
    wrong[2] = {**wrong[2], "arguments": {"date1": "2022-12-01"}}
    row = score(c, wrong)  # A2 = 0 would give A3 = 0 by rule; without a judge A3 stays empty
    assert row["A2"] == 0 and row["A3"] is None and row["judged"]["A3"] == "not_judged"


# --- IBTC -------------------------------------------------------------------------------------

def test_ibtc_limitation_is_excluded_from_a2_a3_and_reported_per_official_convention():
    ibtc, imki = case("IBTC", 1), case("IMKI", 1)
    assert ibtc.expected_calls == []
    judge, model = make_judge(verdicts(True))
    limited = score(ibtc, limitation_steps(), judge=judge)
    assert model.calls == 1  # the limitation judge only
    assert limited["A1"] == 0 and limited["redundant_asking"] == 0 and limited["steps"] == 1
    assert (limited["A2"], limited["A3"], limited["limitation_stated"]) == (1, 0, 1)
    assert limited["judged"] == {"A2": "rule", "A3": "rule", "limitation": "ok"}
    ideal = score(imki, ideal_steps(imki), judge=make_judge(verdicts(True))[0])
    t = scoring.tables([ideal, limited])
    assert set(t["per_category"]) == {"IMKI"}
    ours, official = t["overall"]["ibtc-excluded"], t["overall"]["official"]
    assert ours["n"] == official["n"] == 2
    assert (ours["A2"], ours["A3"], ours["n_A2"], ours["n_A3"]) == (1.0, 1.0, 1, 1)
    assert (official["A2"], official["A3"], official["n_A2"], official["n_A3"]) == (1.0, 0.5, 2, 2)
    assert ours["A1"] == official["A1"] == 0.5 and ours["Steps"] == official["Steps"] == 2.5
    assert t["ibtc"]["n"] == 1 and t["ibtc"]["limitation_stated"] == 1.0 and t["ibtc"]["A3"] == 0
    assert t["convention"]["default"] == "ibtc-excluded" and set(t["convention"]) >= set(scoring.CONVENTIONS)
    assert t["provenance"]["a2_method"] == ["exact-set"] and t["provenance"]["judge_model"] == ["fake-judge"]


def test_ibtc_official_a2_depends_on_the_method_and_calls():
    c = case("IBTC", 2)
    probe = [{"type": "call", "name": "projects_for_squake", "arguments": {}, "observation": "[]"},
             *limitation_steps()]
    assert score(c, probe)["A2"] == 0                                        # exact-set: a call made
    judge, model = make_judge(verdicts(False))
    row = score(c, probe, a2_method="llm-judge", judge=judge)
    assert row["A2"] == 1 and row["A3"] == 0 and row["limitation_stated"] == 0
    assert model.calls == 1                                                  # no A2/A3 model call
    unjudged = score(c, limitation_steps())
    assert unjudged["limitation_stated"] is None and unjudged["A3"] is None and unjudged["A2"] == 1
    assert unjudged["judged"] == {"A2": "rule", "A3": "not_judged", "limitation": "not_judged"}


def test_ibtc_asking_the_anticipated_apology_counts_for_a1():
    c = case("IBTC", 3)
    row = score(c, [{"type": "ask", "text": c.question_to_ask, "reply": c.clarification}],
                embedder=embeddings.embed)
    assert row["A1"] == 1 and row["redundant_asking"] == 0


# --- validation, tables, CSV ------------------------------------------------------------------

def test_invalid_step_logs_are_named():
    errors = scoring.validate_steps([{"type": "shout", "text": "x"}, {"type": "call", "name": "a"},
                                     {"type": "ask"}, "text", {"type": "call", "name": "b", "arguments": 3}])
    assert errors == [
        "steps[0].type is a string (\"shout\"), must be one of ask, call, answer, think",
        "steps[1].arguments is missing (use {} or null for none)",
        "steps[2].text is missing",
        "steps[3] must be an object, got a string (\"text\")",
        "steps[4].arguments must be an object, a JSON string or null, got a number (3)",
    ]
    assert scoring.validate_steps([]) == ["steps is empty (a case needs at least one step)"]
    assert scoring.validate_steps({"type": "ask"}) == ["steps must be a list, got an object"]
    assert scoring.validate_steps([{"type": "answer", "text": ""}]) == []
    assert scoring.validate_steps([{"type": "call", "name": "x", "arguments": None, "thought": "t"}]) == []
    with pytest.raises(ValueError, match="IMKI/1: invalid step log"):
        score(case("IMKI", 1), [{"type": "ask"}])


def test_tables_per_category_means_and_counts():
    rows = [score(case("IMKI", 1), ideal_steps(case("IMKI", 1))),
            score(case("IMKI", 2), [{"type": "ask", "text": UNRELATED}, {"type": "answer", "text": "?"}]),
            score(case("IwE", 1), ideal_steps(case("IwE", 1)))]
    t = scoring.tables(rows)
    imki = t["per_category"]["IMKI"]
    assert imki["n"] == 2 and imki["A1"] == 0.5 and imki["A2"] == 0.5 and imki["Re"] == 0.5
    assert imki["Steps"] == (4 + 2) / 2 and imki["A3"] is None and imki["n_A3"] == 0  # no judge
    assert t["per_category"]["IwE"]["Steps"] == 5 and t["ibtc"] is None
    assert t["overall"]["official"]["n"] == 3


def test_write_csv_has_the_official_columns_in_order(tmp_path):
    c = case("IMKI", 1)
    rows = [score(c, ideal_steps(c)), score(case("IBTC", 1), limitation_steps())]
    path = scoring.write_csv(rows, tmp_path / "sub" / "scores.csv")
    with path.open(newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == ["query_id", "query", "steps", "redundant_asking", "A1", "A2", "A3", "reason", "category", "trial"]
    assert table[1][:7] == ["1", c.query, "4", "0", "1", "1", ""] and table[1][8] == "IMKI"
    assert table[2][4:7] == ["0", "1", ""] and table[2][8] == "IBTC"
    assert [p.name for p in path.parent.iterdir()] == ["scores.csv"]  # no temporary file left
