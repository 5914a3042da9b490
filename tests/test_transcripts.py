"""Scoring transcripts made elsewhere: validation, judging only what is missing, output rows."""
import json
import threading
import time

import pytest

from harness.compose import Runtime
from harness.config import load_config
from harness.selfscore import prompts
from harness.selfscore.scoring import EXPORT_FIELDS, SCORER_VERSION
from harness.selfscore.transcripts import TranscriptError, score_transcripts
from tests.fakes import default_responder, fake_factory

COMPLETE = {
    "id": "printer", "question": "My printer shows offline.", "problem": "The printer is offline.",
    "complexity": {"critical_thinking": 6, "error_handling": 4, "topic_knowledge": 5},
    "turns": [
        {"user": "My printer shows offline.", "agent": "Power-cycle it.", "user_helpfulness": 6,
         "agent_helpfulness": 8, "solved": False, "input_tokens": 10, "output_tokens": 5},
        {"user": "Still offline.", "agent": "Re-add it in settings.", "user_helpfulness": 4,
         "agent_helpfulness": 6, "solved": True, "input_tokens": 20, "output_tokens": 7},
    ],
}


def write(tmp_path, rows, name="in.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def turn(user="Hi", agent="Try this.", **scores):
    return {"user": user, "agent": agent, **scores}


def full_turn(**over):
    return turn(**{"user_helpfulness": 5, "agent_helpfulness": 5, "solved": False, **over})


def row(id="a", **over):
    base = {"id": id, "question": "Q?", "complexity": COMPLETE["complexity"], "turns": [full_turn()]}
    return {**base, **over}


@pytest.fixture
def runtime_for(tmp_path):
    made = []

    def make(responder=None):
        factory = fake_factory(responder or default_responder())
        # the fake judges' fixed scores, as given (the rubric bounds: tests/test_helpfulness_bounds.py)
        cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "scoring": {"helpfulness_bounds": False},
                                     "run": {"solved_check": "confirmation"}})  # the fakes answer its questions
        made.append(Runtime(cfg, chat_models=factory))
        return made[-1], factory.models
    yield make
    for r in made:
        r.close()


def calls(models, role):
    return models[role].calls if role in models else 0


def test_complete_file_without_judging_matches_hand_computed_figures(tmp_path):
    out = tmp_path / "out.jsonl"
    summary = score_transcripts(write(tmp_path, [COMPLETE]), out, runtime=None, no_judge=True)
    [r] = read(out)
    wc = 0.5 * 6 + 0.4 * 4 + 0.1 * 5           # 5.1
    quality = ((8 + 6) / 2) / ((6 + 4) / 2)    # 7 / 5 = 1.4
    assert r["weighted_complexity"] == pytest.approx(wc)
    assert r["avg_user_helpfulness"] == 5 and r["avg_agent_helpfulness"] == 7
    assert r["quality"] == pytest.approx(quality)
    assert r["final_score"] == pytest.approx((wc + quality) / 2 * 10)   # 32.5
    assert (r["critical_thinking"], r["error_handling"], r["topic_knowledge"]) == (6, 4, 5)
    assert r["turns"] == 2 and r["solved"] is True and r["stop_reason"] == "solved"
    # the file gives tokens but no cost: the cost is not reported (None), never 0
    assert (r["input_tokens"], r["output_tokens"], r["cost"]) == (30, 12, None)
    assert r["id"] == r["interaction_id"] == "printer"
    assert set(EXPORT_FIELDS) <= set(r) and isinstance(r["scored_turns"], list)
    assert r["formula"] == "paper" and r["weights"] == [0.5, 0.4, 0.1]
    assert r["prompt_version"] == prompts.PROMPT_VERSION and r["scorer_version"] == SCORER_VERSION
    assert r["judge_model"] is None and r["complexity_model"] is None
    assert r["judged"] == {} and all(t["judged"] == {} for t in r["scored_turns"])
    assert r["failed_judgments"] == 0 and r["judge_errors"] == {}
    assert summary == {"count": 1, "scored": 1, "out": str(out), "failed_judgments": 0,
                       "judged": dict.fromkeys(summary["judged"], 0),
                       "failed": dict.fromkeys(summary["failed"], 0)}


def test_formula_and_weights_are_applied(tmp_path):
    unsolved = {**COMPLETE, "turns": [COMPLETE["turns"][0]]}
    out = tmp_path / "out.jsonl"
    score_transcripts(write(tmp_path, [unsolved]), out, None, no_judge=True,
                      formula="agent_only", weights=(1.0, 0.0, 0.0))
    [r] = read(out)
    assert r["weighted_complexity"] == 6 and r["quality"] == 8
    assert r["final_score"] == pytest.approx((6 + 8) / 2 * 10)
    assert r["stop_reason"] == "transcript_end" and r["solved"] is False
    assert r["formula"] == "agent_only" and r["weights"] == [1.0, 0.0, 0.0]


def test_only_missing_values_are_judged(tmp_path, runtime_for):
    partial = {**COMPLETE, "turns": [
        COMPLETE["turns"][0],
        turn("It shows online now.", "Re-add it in settings.", user_helpfulness=4)]}
    bare = {"id": "wifi", "question": "Wifi drops on Ubuntu.", "turns": [
        turn("Wifi drops on Ubuntu.", "Update the driver.", agent_helpfulness=7),
        turn("Updated, still drops.", "Disable power saving.", agent_helpfulness=9, solved=True)]}
    runtime, models = runtime_for(default_responder(solve_at=2, user_first=9, user_later=3,
                                                    agent_score=8, complexity=(6, 4, 5)))
    out = tmp_path / "out.jsonl"
    summary = score_transcripts(write(tmp_path, [partial, bare]), out, runtime, concurrency=3)
    a, b = read(out)

    # partial: only turns[1].agent_helpfulness and turns[1].solved were missing
    assert a["scored_turns"][1]["agent_helpfulness"] == 8 and a["scored_turns"][1]["solved"] is True
    assert a["scored_turns"][1]["judged"] == {"agent_helpfulness": "ok", "solved": "ok"}
    assert a["scored_turns"][0]["judged"] == {} and a["judged"] == {}
    assert a["stop_reason"] == "solved" and a["judge_model"] == "qwen2.5-coder-1.5b"
    assert a["complexity_model"] is None
    # bare: complexity, problem, both user scores, turns[0].solved
    assert b["complexity"] == {"critical_thinking": 6, "error_handling": 4, "topic_knowledge": 5}
    assert b["problem"] == "The wifi driver crashes."
    assert b["judged"] == {"complexity": "ok", "problem": "ok"}
    assert [t["user_helpfulness"] for t in b["scored_turns"]] == [9, 3]   # first-turn rubric, then later
    assert [t["solved"] for t in b["scored_turns"]] == [False, True]
    assert b["scored_turns"][1]["judged"] == {"user_helpfulness": "ok"}
    wc = 0.5 * 6 + 0.4 * 4 + 0.1 * 5
    assert b["final_score"] == pytest.approx((wc + 8 / 6) / 2 * 10)
    assert b["complexity_model"] == "qwen2.5-coder-1.5b"

    assert calls(models, "judge") == 2 + 3
    assert calls(models, "extractor") == 2          # summary and problem of "wifi" only
    assert calls(models, "complexity") == 1
    assert summary["judged"] == {"complexity": 1, "problem": 1, "user_helpfulness": 2,
                                 "agent_helpfulness": 1, "solved": 2}
    assert summary["failed_judgments"] == 0 and summary["count"] == 2 and summary["scored"] == 2

    prompts_sent = [str(p[-1].content) for p in models["judge"].prompts]
    solved_checks = [p for p in prompts_sent if "is now fixed" in p]  # the confirmation questions
    assert any("<problem>The printer is offline.</problem>" in p for p in solved_checks)
    # b's missing solved is on turn 1: never solved there, and no call is made for it
    assert not any("<problem>The wifi driver crashes.</problem>" in p for p in solved_checks)
    later_user = next(p for p in prompts_sent if "rate the latest USER message" in p)
    assert "Updated, still drops." in later_user and "Disable power saving." not in later_user


def test_no_judge_with_missing_values_names_line_and_field_and_writes_nothing(tmp_path):
    bad = {**COMPLETE, "id": "p3", "turns": [COMPLETE["turns"][0],
                                             turn(user_helpfulness=4, solved=True)]}
    path = write(tmp_path, [{**COMPLETE, "id": "p1", "complexity": None},
                            {**COMPLETE, "id": "p2"}, bad])
    out = tmp_path / "out.jsonl"
    with pytest.raises(TranscriptError) as err:
        score_transcripts(path, out, runtime=None, no_judge=True)
    msg = str(err.value)
    assert "line 3: turns[1].agent_helpfulness is missing (required with --no-judge)" in msg
    assert "line 1: complexity is missing (required with --no-judge)" in msg
    assert "line 2" not in msg and "2 problem(s)" in msg
    assert list(tmp_path.iterdir()) == [path]     # no output, no temporary file


def test_missing_values_without_a_runtime_are_an_error(tmp_path):
    with pytest.raises(TranscriptError, match="line 1: turns.0..solved is missing .no runtime"):
        score_transcripts(write(tmp_path, [row(turns=[turn(user_helpfulness=5, agent_helpfulness=5)])]),
                          tmp_path / "out.jsonl", runtime=None)


@pytest.mark.parametrize("line, expected", [
    ("{not json", "line 2: not valid JSON"),
    ('["a list"]', "line 2: expected a JSON object, got a list"),
    (row(id=None), "line 2: id is missing"),
    (row(id=""), "line 2: id is empty"),
    (row(id=7), "line 2: id must be a string, got a number (7)"),
    ({"id": "b", "turns": [full_turn()]}, "line 2: question is missing"),
    ({"id": "b", "question": "Q?"}, "line 2: turns is missing"),
    (row(id="b", turns=[]), "line 2: turns is empty"),
    (row(id="b", turns="hello"), "line 2: turns must be a list"),
    (row(id="b", turns=["hello"]), "line 2: turns[0] must be an object"),
    (row(id="b", turns=[{"user": "Hi"}]), "line 2: turns[0].agent is missing"),
    (row(id="b", turns=[full_turn(user_helpfulness=11)]),
     "line 2: turns[0].user_helpfulness is 11, must be from 1 to 10"),
    (row(id="b", turns=[full_turn(agent_helpfulness="7")]),
     "line 2: turns[0].agent_helpfulness must be an integer, got a string"),
    (row(id="b", turns=[full_turn(agent_helpfulness=7.5)]),
     "line 2: turns[0].agent_helpfulness must be an integer"),
    (row(id="b", turns=[full_turn(solved="yes")]), "line 2: turns[0].solved must be true or false"),
    (row(id="b", turns=[full_turn(input_tokens=-1)]), "line 2: turns[0].input_tokens is -1"),
    (row(id="b", complexity={"critical_thinking": 0, "error_handling": 4, "topic_knowledge": 5}),
     "line 2: complexity.critical_thinking is 0, must be from 1 to 10"),
    (row(id="b", complexity={"critical_thinking": 3}), "line 2: complexity.error_handling is missing"),
    (row(id="b", problem=5), "line 2: problem must be a string"),
    (row(id="a"), "line 2: id 'a' duplicates line 1"),
])
def test_malformed_lines_are_named_before_any_judging(tmp_path, runtime_for, line, expected):
    runtime, models = runtime_for()
    path = write(tmp_path, [row(id="a", complexity=None), line])
    with pytest.raises(TranscriptError) as err:
        score_transcripts(path, tmp_path / "out.jsonl", runtime)
    assert expected in str(err.value)
    assert models == {}                      # nothing was judged
    assert not (tmp_path / "out.jsonl").exists()


def test_many_problems_are_listed_up_to_ten(tmp_path):
    path = write(tmp_path, ["{"] * 15)
    with pytest.raises(TranscriptError) as err:
        score_transcripts(path, tmp_path / "out.jsonl", None, no_judge=True)
    msg = str(err.value)
    assert "15 problem(s)" in msg and "line 10:" in msg and "line 11:" not in msg
    assert "... and 5 more" in msg


def test_blank_lines_are_skipped_but_counted(tmp_path):
    path = write(tmp_path, [row(id="a"), "", "{"])
    with pytest.raises(TranscriptError, match="line 3: not valid JSON"):
        score_transcripts(path, tmp_path / "out.jsonl", None, no_judge=True)


def test_an_error_leaves_an_existing_output_untouched(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n")
    with pytest.raises(TranscriptError):
        score_transcripts(write(tmp_path, ["{"]), out, None, no_judge=True)
    assert out.read_text() == "previous\n"


def test_extra_fields_are_kept_and_computed_fields_win(tmp_path):
    extra = {**COMPLETE, "source": "stackexchange", "meta": {"votes": 3}, "final_score": 99,
             "turns": [{**t, "timestamp": f"t{i}"} for i, t in enumerate(COMPLETE["turns"])]}
    out = tmp_path / "out.jsonl"
    score_transcripts(write(tmp_path, [extra]), out, None, no_judge=True)
    [r] = read(out)
    assert r["source"] == "stackexchange" and r["meta"] == {"votes": 3}
    assert [t["timestamp"] for t in r["scored_turns"]] == ["t0", "t1"]
    assert r["turns"] == 2                              # the export's count of turns
    assert r["final_score"] == pytest.approx(32.5)      # computed fields replace input ones


def test_a_judge_that_never_returns_json_fails_and_the_score_stays_none(tmp_path, runtime_for):
    base = default_responder()

    def responders(role):
        return (lambda m, k: "I think it deserves a 7.") if role == "judge" else base(role)
    runtime, models = runtime_for(responders)
    path = write(tmp_path, [{**COMPLETE, "turns": [turn(user_helpfulness=5, solved=True)]}])
    out = tmp_path / "out.jsonl"
    summary = score_transcripts(path, out, runtime)
    [r] = read(out)
    assert r["scored_turns"][0]["agent_helpfulness"] is None
    assert r["scored_turns"][0]["judged"] == {"agent_helpfulness": "failed"}
    assert "turns[0].agent_helpfulness" in r["judge_errors"]
    assert r["failed_judgments"] == 1 and r["avg_agent_helpfulness"] is None
    assert r["quality"] is None and r["final_score"] is None
    assert summary["failed"]["agent_helpfulness"] == 1 and summary["failed_judgments"] == 1
    assert summary["scored"] == 0
    assert calls(models, "judge") == runtime.config.run.judge_retries + 1


def test_a_failed_extraction_fails_what_depends_on_it(tmp_path, runtime_for):
    base = default_responder()

    def responders(role):
        return (lambda m, k: RuntimeError("endpoint down")) if role == "extractor" else base(role)
    runtime, models = runtime_for(responders)
    path = write(tmp_path, [{"id": "x", "question": "Q?", "turns": [full_turn(solved=None)]}])
    out = tmp_path / "out.jsonl"
    summary = score_transcripts(path, out, runtime)
    [r] = read(out)
    assert r["complexity"] is None and r["problem"] is None and r["scored_turns"][0]["solved"] is None
    assert r["judged"] == {"complexity": "failed", "problem": "failed"}
    assert r["scored_turns"][0]["judged"] == {"solved": "failed"}
    assert "endpoint down" in r["judge_errors"]["complexity"]
    assert r["final_score"] is None and r["failed_judgments"] == 3
    assert summary["failed"] == {"complexity": 1, "problem": 1, "user_helpfulness": 0,
                                 "agent_helpfulness": 0, "solved": 1}
    assert calls(models, "complexity") == 0 and calls(models, "judge") == 0


def test_concurrency_bounds_the_calls_in_flight(tmp_path, runtime_for):
    lock, state = threading.Lock(), {"now": 0, "max": 0}
    base = default_responder()

    def responders(role):
        inner = base(role)

        def respond(messages, kwargs):
            with lock:
                state["now"] += 1
                state["max"] = max(state["max"], state["now"])
            time.sleep(0.03)
            with lock:
                state["now"] -= 1
            return inner(messages, kwargs)
        return respond
    runtime, models = runtime_for(responders)
    rows = [{"id": f"r{i}", "question": "Q?", "turns": [turn(), turn()]} for i in range(4)]
    summary = score_transcripts(write(tmp_path, rows), tmp_path / "out.jsonl", runtime, concurrency=2)
    assert summary["failed_judgments"] == 0 and summary["judged"]["solved"] == 8
    assert state["max"] == 2


def test_unreadable_transcript_files_are_clear_errors(tmp_path):
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"id": "a", "question": "caf\u00e9"}\n'.encode("latin-1"))
    with pytest.raises(TranscriptError, match="not UTF-8"):
        score_transcripts(latin, tmp_path / "o.jsonl", None, no_judge=True)
    with pytest.raises(TranscriptError, match="cannot be read"):
        score_transcripts(tmp_path / "missing.jsonl", tmp_path / "o.jsonl", None, no_judge=True)
    assert not (tmp_path / "o.jsonl").exists()


def test_the_problem_is_extracted_from_the_solution_where_one_is_given(tmp_path, runtime_for):
    runtime, models = runtime_for()
    rows = [row("fix", turns=[full_turn(solved=None)], solution="Install ntfs-3g and mount the partition."),
            row("bare", turns=[full_turn(solved=None)])]
    out = tmp_path / "out.jsonl"
    score_transcripts(write(tmp_path, rows), out, runtime=runtime)
    fix, bare = read(out)
    assert fix["problem"] == bare["problem"] == "The wifi driver crashes."
    assert (fix["problem_source"], bare["problem_source"]) == ("solution", "question")
    prompts_seen = [m[-1].content for m in models["extractor"].prompts]
    assert sum("ntfs-3g" in p and "the solution below fixed it" in p for p in prompts_seen) == 1
