"""Scoring NoisyToolBench step logs from JSONL: validation, --no-judge, judging, the CSV."""
from __future__ import annotations

import csv
import json

import pytest

from harness.compose import Runtime
from harness.config import load_config
from harness.models.embeddings import model_id
from harness.ntb import scoring
from harness.ntb.transcripts import score_ntb_transcripts
from harness.selfscore.transcripts import TranscriptError
from tests.fakes import fake_factory
from tests.test_ntb_scoring import UNRELATED, case, ideal_steps, limitation_steps, verdicts


def line(category, query_id, steps):
    return {"category": category, "query_id": query_id, "steps": steps}


def write(tmp_path, rows, name="in.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def read_csv(path):
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def runtime_for(tmp_path):
    made = []

    def make(judge_responder=None):
        def responders(role):
            if role != "judge":
                raise AssertionError(f"only the judge role may be used, not {role}")
            return judge_responder or verdicts(True)
        factory = fake_factory(responders)
        made.append(Runtime(load_config(overrides={"store": str(tmp_path / "s.sqlite")}),
                            chat_models=factory))
        return made[-1], factory.models
    yield make
    for r in made:
        r.close()


def sample(tmp_path):
    imki, imr = case("IMKI", 1), case("IMR", 2)
    never_asks = [s for s in ideal_steps(imr) if s["type"] != "ask"]
    return write(tmp_path, [line("IMKI", 1, ideal_steps(imki)), line("IMR", 2, never_asks),
                            line("IBTC", 1, limitation_steps())])


def test_no_judge_scores_without_any_model_call(tmp_path, runtime_for):
    runtime, models = runtime_for()
    out = tmp_path / "out" / "scores.csv"
    summary = score_ntb_transcripts(sample(tmp_path), out, runtime, no_judge=True)
    assert models == {} and summary["judge_calls"] == 0      # no judge client was even made
    rows = read_csv(out)
    assert [(r["category"], r["query_id"]) for r in rows] == [("IMKI", "1"), ("IMR", "2"), ("IBTC", "1")]
    assert [(r["A1"], r["A2"], r["A3"]) for r in rows] == [("1", "1", ""), ("0", "1", ""), ("0", "1", "")]
    assert [r["steps"] for r in rows] == ["4", "3", "1"] and [r["redundant_asking"] for r in rows] == ["0"] * 3
    assert list(rows[0]) == list(scoring.CSV_FIELDS)
    assert summary["count"] == 3 and summary["out"] == str(out) and summary["failed_judgments"] == 0
    assert summary["judged"] == {"A2": 0, "A3": 0, "limitation": 0} and summary["judge_model"] is None
    assert summary["embedding_model"] == model_id() and summary["threshold"] == 0.4
    assert summary["a2_method"] == "exact-set" and summary["convention"] == "ibtc-excluded"
    overall = summary["tables"]["overall"]
    assert overall["ibtc-excluded"]["A2"] == 1.0 and overall["ibtc-excluded"]["n_A2"] == 2
    assert overall["official"]["n_A2"] == 3
    assert overall["ibtc-excluded"]["A3"] is None and overall["official"]["n_A3"] == 0
    # no runtime at all is fine too
    summary = score_ntb_transcripts(sample(tmp_path), out, None, no_judge=True)
    assert summary["count"] == 3


def test_judging_fills_a3_and_the_ibtc_limitation(tmp_path, runtime_for):
    runtime, models = runtime_for(verdicts(True))
    out = tmp_path / "scores.csv"
    summary = score_ntb_transcripts(sample(tmp_path), out, runtime, threshold=0.8)
    rows = read_csv(out)
    assert [r["A3"] for r in rows] == ["1", "1", "0"]
    assert models["judge"].calls == 3 == summary["judge_calls"]    # A3 twice, the limitation once
    assert summary["judged"] == {"A2": 0, "A3": 2, "limitation": 1}
    assert summary["tables"]["ibtc"]["limitation_stated"] == 1.0 and summary["threshold"] == 0.8
    assert summary["judge_model"] == runtime.config.role("judge").model


def test_llm_judge_a2_through_the_runtime(tmp_path, runtime_for):
    runtime, models = runtime_for(verdicts(True))
    c = case("IMKI", 1)
    path = write(tmp_path, [line("IMKI", 1, ideal_steps(c))])
    summary = score_ntb_transcripts(path, tmp_path / "o.csv", runtime, a2_method="llm-judge")
    assert models["judge"].calls == 2 and summary["judged"]["A2"] == 1 and summary["a2_method"] == "llm-judge"


def test_failed_judge_leaves_a3_empty_and_counts_it(tmp_path, runtime_for):
    runtime, models = runtime_for(lambda messages, kwargs: "no JSON here")
    out = tmp_path / "scores.csv"
    summary = score_ntb_transcripts(sample(tmp_path), out, runtime)
    rows = read_csv(out)
    assert [r["A3"] for r in rows] == ["", "", "0"]       # IBTC's A3 is set by rule, not judged
    assert summary["failed"] == {"A2": 0, "A3": 2, "limitation": 1} and summary["failed_judgments"] == 3
    retries = runtime.config.run.judge_retries
    assert models["judge"].calls == 3 * (retries + 1)
    assert summary["tables"]["per_category"]["IMKI"]["failed_A3"] == 1
    assert "judgment failed" in rows[0]["reason"]


def test_bad_lines_give_clear_errors_and_write_nothing(tmp_path):
    c = case("IMKI", 1)
    rows = [
        "not json",
        [1, 2],
        {"query_id": 1, "steps": ideal_steps(c)},
        line("IMKX", 1, ideal_steps(c)),
        line("IMKI", "1", ideal_steps(c)),
        line("IMKI", 99, ideal_steps(c)),
        line("IMKI", 1, [{"type": "call", "name": "x"}]),
        line("IMKI", 2, []),
        {"category": "IMR", "query_id": 3},
        line("IMKI", 1, ideal_steps(c)),
        line("IMKI", 1, ideal_steps(c)),
        line("IBTC", 0, limitation_steps()),
    ]
    out = tmp_path / "out.csv"
    with pytest.raises(TranscriptError) as err:
        score_ntb_transcripts(write(tmp_path, rows), out, None, no_judge=True)
    text = str(err.value)
    for expected in [
        "11 problem(s); nothing was written",
        "line 1: not valid JSON",
        "line 2: expected a JSON object, got list",
        "line 3: category is missing",
        "line 4: category is 'IMKX', must be one of IMKI, IMR, IwE, IBTC",
        "line 5: query_id must be an integer, got '1'",
        "line 6: unknown case IMKI/99: query_id 99 is not in IMKI (its query_ids: 1-50)",
        "line 7: steps[0].arguments is missing",
        "line 8: steps is empty",
        "line 9: steps is missing",
        "line 11: case IMKI/1 duplicates line 10",
    ]:
        assert expected in text, expected
    assert text.index("line 5:") < text.index("line 6:") < text.index("line 7:")   # in line order
    assert "IBTC/0" not in text and text.endswith("... and 1 more")                 # ten listed
    assert not out.exists()


def test_duplicate_and_empty_files(tmp_path):
    c = case("IwE", 1)
    dup = write(tmp_path, [line("IwE", 1, ideal_steps(c)), line("IwE", 1, ideal_steps(c))])
    with pytest.raises(TranscriptError, match="line 2: case IwE/1 duplicates line 1"):
        score_ntb_transcripts(dup, tmp_path / "o.csv", None, no_judge=True)
    empty = write(tmp_path, [], name="empty.jsonl")
    with pytest.raises(TranscriptError, match="no cases"):
        score_ntb_transcripts(empty, tmp_path / "o.csv", None, no_judge=True)
    with pytest.raises(TranscriptError, match="cannot be read"):
        score_ntb_transcripts(tmp_path / "missing.jsonl", tmp_path / "o.csv", None, no_judge=True)


def test_settings_are_checked(tmp_path):
    path = sample(tmp_path)
    with pytest.raises(ValueError, match="exact-set"):
        score_ntb_transcripts(path, tmp_path / "o.csv", None, no_judge=True, a2_method="llm-judge")
    with pytest.raises(ValueError, match="needs a runtime"):
        score_ntb_transcripts(path, tmp_path / "o.csv", None)
    with pytest.raises(ValueError, match="threshold"):
        score_ntb_transcripts(path, tmp_path / "o.csv", None, no_judge=True, threshold=-0.1)
    with pytest.raises(ValueError, match="unknown A2 method"):
        score_ntb_transcripts(path, tmp_path / "o.csv", None, no_judge=True, a2_method="set")


def test_unrelated_asks_and_extra_fields_in_transcripts(tmp_path):
    c = case("IMKI", 2)
    steps = [{"type": "ask", "text": UNRELATED, "reply": "I could not provide relevant information.", "t": 1},
             {"type": "ask", "text": "Should I include album artwork links?"}, *ideal_steps(c)[2:]]
    row = {**line("IMKI", 2, steps), "agent": "other-harness"}
    out = tmp_path / "o.csv"
    score_ntb_transcripts(write(tmp_path, [row]), out, None, no_judge=True)
    [r] = read_csv(out)
    assert (r["A1"], r["redundant_asking"], r["A2"], r["steps"]) == ("0", "2", "1", "4")
