"""Judge-human agreement: the statistics (harness.study.label_agreement) and `deskbench agreement`."""
import json

import pytest

from harness.cli.main import main
from harness.study.label_agreement import (agreement_markdown, agreement_line, agreement_summary, bin_score, binary_agreement,
                                           cohen_kappa, rank_agreement, wilson_interval)
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_cli import role_flags


def test_wilson_interval_matches_the_textbook_value():
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.490, abs=1e-3) and high == pytest.approx(0.943, abs=1e-3)
    assert wilson_interval(0, 0) == (None, None)
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0


def test_kappa_is_one_when_raters_agree_and_near_zero_by_chance():
    assert cohen_kappa([(1, 1), (0, 0), (1, 1), (0, 0)]) == pytest.approx(1.0)
    assert cohen_kappa([(1, 1), (1, 0), (0, 1), (0, 0)]) == pytest.approx(0.0)
    assert cohen_kappa([(1, 1), (1, 1)]) is None  # one level: agreement by chance is total
    # linear weights: a one-level miss on a 3-level scale costs half of a two-level miss
    near = cohen_kappa([(0, 0), (1, 1), (2, 2), (0, 1)], "linear", [0, 1, 2])
    far = cohen_kappa([(0, 0), (1, 1), (2, 2), (0, 2)], "linear", [0, 1, 2])
    assert near > far


def test_a_judge_score_is_binned_onto_the_labels_levels():
    assert [bin_score(s, 3) for s in range(1, 11)] == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [bin_score(s, 2) for s in (1, 5, 6, 10)] == [0, 0, 1, 1]


def test_binary_agreement_reports_each_class_and_counts_failures():
    pairs = [(True, True), (True, False), (True, True), (False, False), (False, True), (False, None)]
    a = binary_agreement(pairs)
    assert a["classes"]["yes"] == {"n": 3, "right": 2, "accuracy": 2 / 3, "ci": list(wilson_interval(2, 3))}
    assert a["classes"]["no"]["n"] == 2 and a["classes"]["no"]["right"] == 1
    assert a["failed"] == 1 and a["confusion"]["human no / judge yes"] == 1


def test_rank_agreement_of_a_perfect_and_a_contrary_judge():
    labels = [0, 0, 1, 1, 2, 2, 0, 1, 2, 2]
    perfect = rank_agreement([(h, 2 + 3 * h) for h in labels])  # 2, 5, 8
    assert perfect["spearman_rho"] == pytest.approx(1.0) and perfect["weighted_kappa"] == pytest.approx(1.0)
    assert perfect["spearman_ci"][0] == pytest.approx(1.0) and perfect["bins"] == 3
    contrary = rank_agreement([(h, 9 - 3 * h) for h in labels])
    assert contrary["spearman_rho"] == pytest.approx(-1.0) and contrary["weighted_kappa"] < 0
    constant = rank_agreement([(h, 8) for h in labels])  # "8 to everything" has no rank agreement
    assert constant["spearman_rho"] is None and constant["weighted_kappa"] == pytest.approx(0.0)


def _labelled_file(tmp_path):
    rows = []
    for n, (split, solved) in enumerate([("heldout", True), ("heldout", False), ("tune", True), ("tune", False)]):
        rows.append({"id": f"c{n}", "split": split, "kind": "test", "question": f"My printer {n} is offline.",
                     "problem": "The printer is offline.", "labels": {"solved": solved, "note": "read"},
                     "turns": [{"user": f"My printer {n} is offline.", "agent": "Turn it off and on.",
                                "labels": {"agent_helpfulness": n % 3, "note": "read"}}]})
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_deskbench_agreement_judges_each_split_and_writes_the_summary(tmp_path, capsys):
    path = _labelled_file(tmp_path)
    with FakeOpenAIServer(default_responder(solve_at=1)) as server:  # the fake judge: solved at turn 1
        flags = [f for f in role_flags(server.base_url) if f not in ("--profile", "embedded")]
        assert main(["agreement", "--transcripts", str(path), "--store", str(tmp_path / "s.sqlite"),
                     "--profiles", "paper", "--json", str(tmp_path / "a.json"), "--quiet", *flags]) == 0
    printed = capsys.readouterr().out
    assert "split heldout, profile paper" in printed and "split tune, profile paper" in printed
    summary = json.loads((tmp_path / "a.json").read_text())
    held = summary["profiles"]["paper"]["splits"]["heldout"]
    assert held["conversations"] == 2
    assert held["solved"]["classes"]["yes"] == {"n": 1, "right": 1, "accuracy": 1.0, "ci": held["solved"]["classes"]["yes"]["ci"]}
    assert held["solved"]["classes"]["no"]["right"] == 0  # the fake says solved to everything
    assert held["agent_helpfulness"]["aided"]["n"] == 2
    assert "agreement with human labels (2 held-out" in agreement_line(held)


def test_a_file_without_labels_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "plain.jsonl"
    path.write_text(json.dumps({"id": "x", "question": "q", "turns": [{"user": "q", "agent": "a"}]}) + "\n")
    assert main(["agreement", "--transcripts", str(path), "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "has no labelled conversation" in capsys.readouterr().err


def test_the_summary_keeps_the_judges_own_score_beside_the_aided_one():
    rows = [{"id": "a", "split": "heldout", "labels": {"solved": False},
             "scored_turns": [{"user": "ok", "agent": "x", "solved": False, "agent_helpfulness": 2,
                               "judge_own": {"agent_helpfulness": 8}, "labels": {"agent_helpfulness": 0}},
                              {"user": "it fails", "agent": "y", "solved": False, "agent_helpfulness": 9,
                               "judge_own": {"agent_helpfulness": 9}, "labels": {"agent_helpfulness": 2}},
                              {"user": "hm", "agent": "z", "solved": False, "agent_helpfulness": 5,
                               "judge_own": {"agent_helpfulness": 5}, "labels": {"agent_helpfulness": 1}}]}]
    s = agreement_summary(rows, "heldout")
    assert s["agent_helpfulness"]["moved"] == 1
    assert s["agent_helpfulness"]["aided"]["spearman_rho"] == pytest.approx(1.0)
    assert s["agent_helpfulness"]["judge_only"]["spearman_rho"] < 1.0


def test_the_report_leaves_out_the_kinds_that_were_not_judged():
    rows = [{"id": "a", "split": "heldout", "labels": {"solved": True},
             "scored_turns": [{"user": "q", "agent": "fix", "solved": True, "labels": {}}]}]
    text = "\n".join(agreement_markdown(agreement_summary(rows, "heldout"), "t"))
    assert "### Solved" in text and "### Agent helpfulness" not in text and "Per conversation" not in text
    assert "Not judged here (not in --kinds, or no such labels): agent_helpfulness, user_helpfulness." in text
