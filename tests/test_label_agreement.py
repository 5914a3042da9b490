"""Judge-human agreement: the statistics (harness.study.label_agreement, harness.study.bootstrap), the
label sources (harness.study.label_sources), the report (harness.study.label_report) and `deskbench agreement`."""
import json

import numpy as np
import pytest
from scipy import stats

from harness.cli.main import main
from harness.study.bootstrap import cluster_bootstrap
from harness.study.label_agreement import (_kendall, _spearman, agreement_summary, bin_score, binary_agreement,
                                           cohen_kappa, rank_agreement, wilson_interval)
from harness.study.label_report import agreement_line, agreement_markdown
from harness.study.label_sources import check_label_sources, rows_labelled_by
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
    assert perfect["spearman_ci"] == pytest.approx([1.0, 1.0]) and perfect["bins"] == 3
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
    assert held["solved"]["classes"]["yes"] == {"n": 1, "right": 1, "accuracy": 1.0, "ci": list(wilson_interval(1, 1))}
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


def test_rank_correlations_match_scipy_with_ties():
    rng = np.random.default_rng(1)
    xs, ys = rng.integers(0, 3, 40).astype(float), rng.integers(1, 11, 40).astype(float)
    assert _spearman(xs, ys) == pytest.approx(stats.spearmanr(xs, ys)[0])
    assert _kendall(xs, ys) == pytest.approx(stats.kendalltau(xs, ys)[0])


def _conversations(n_conversations, turns_each, seed=2):
    """Scored rows whose turns within a conversation are alike: one (label, judge score) drawn per
    conversation, repeated on each of its turns (the correlation a cluster bootstrap must respect)."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(n_conversations):
        label = int(rng.integers(0, 3))
        score = int(np.clip(2 + 3 * label + rng.integers(-4, 5), 1, 10))
        rows.append({"id": f"c{c}", "split": "heldout", "labels": {"solved": bool(c % 2), "labelled_by": "maintainers"},
                     "scored_turns": [{"user": "u", "agent": "a", "solved": False, "agent_helpfulness": score,
                                       "labels": {"agent_helpfulness": label, "labelled_by": "maintainers"}}
                                      for _ in range(turns_each)]})
    return rows


def _width(ci):
    return ci[1] - ci[0]


def test_conversations_are_resampled_as_clusters_so_alike_turns_widen_the_interval():
    """12 conversations of 6 identical turns: the turns carry the information of 12 pairs, not 72.
    Resampling turns one by one gives a far narrower interval than resampling conversations."""
    rows = _conversations(12, 6)
    summary = agreement_summary(rows, "heldout")["agent_helpfulness"]["aided"]
    pairs = [(t["labels"]["agent_helpfulness"], t["agent_helpfulness"]) for r in rows for t in r["scored_turns"]]
    by_turn = rank_agreement(pairs)  # every pair its own cluster
    assert summary["bootstrap"]["unit"] == "conversation" and summary["bootstrap"]["clusters"] == 12
    assert by_turn["bootstrap"]["clusters"] == 72
    assert summary["spearman_rho"] == pytest.approx(by_turn["spearman_rho"])  # the point estimate is the same
    assert _width(summary["spearman_ci"]) > 1.5 * _width(by_turn["spearman_ci"])
    assert _width(summary["kendall_ci"]) > 1.5 * _width(by_turn["kendall_ci"])


def _independent_turns(n_conversations, turns_each, seed=3):
    """Scored rows whose turns are drawn one by one: nothing ties a conversation's turns together."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(n_conversations):
        turns = []
        for _ in range(turns_each):
            label = int(rng.integers(0, 3))
            turns.append({"user": "u", "agent": "a", "solved": False,
                          "agent_helpfulness": int(np.clip(2 + 3 * label + rng.integers(-4, 5), 1, 10)),
                          "labels": {"agent_helpfulness": label, "labelled_by": "maintainers"}})
        rows.append({"id": f"c{c}", "split": "heldout", "labels": {}, "scored_turns": turns})
    return rows


def test_clustering_widens_the_interval_only_where_turns_are_alike():
    """The widening above comes from turns that repeat each other, not from resampling in
    clusters as such: with turns drawn independently, the conversation interval is about as wide
    as the turn one (a bootstrap that widened every interval would fail here)."""
    rows = _independent_turns(12, 6)
    summary = agreement_summary(rows, "heldout")["agent_helpfulness"]["aided"]
    by_turn = rank_agreement([(t["labels"]["agent_helpfulness"], t["agent_helpfulness"])
                              for r in rows for t in r["scored_turns"]])
    assert summary["bootstrap"]["clusters"] == 12 and by_turn["bootstrap"]["clusters"] == 72
    assert 0.5 < _width(summary["spearman_ci"]) / _width(by_turn["spearman_ci"]) < 1.3  # alike turns: > 1.5


def test_an_interval_holds_its_estimate_and_narrows_with_more_conversations():
    few, many = (agreement_summary(_conversations(n, 3), "heldout")["agent_helpfulness"]["aided"] for n in (12, 96))
    for r in (few, many):
        assert r["spearman_ci"][0] <= r["spearman_rho"] <= r["spearman_ci"][1]
        assert r["kendall_ci"][0] <= r["kendall_tau"] <= r["kendall_ci"][1]
    # 8 times the conversations: about sqrt(8) = 2.8 times narrower
    assert _width(many["spearman_ci"]) < 0.6 * _width(few["spearman_ci"])


def test_solved_accuracy_and_kappa_by_hand():
    """8 conversations: 3 solved right, 1 missed, 3 unsolved right, 1 called solved. Accuracy
    6/8; both raters say yes half the time, so chance agreement is 0.5 and kappa (0.75 - 0.5) /
    (1 - 0.5) = 0.5."""
    pairs = [(True, True)] * 3 + [(True, False)] + [(False, False)] * 3 + [(False, True)]
    a = binary_agreement(pairs)
    assert a["accuracy"] == pytest.approx(0.75) and a["cohen_kappa"] == pytest.approx(0.5)
    assert (a["classes"]["yes"]["right"], a["classes"]["no"]["right"]) == (3, 3)
    assert a["confusion"] == {"human yes / judge yes": 3, "human yes / judge no": 1,
                              "human no / judge yes": 1, "human no / judge no": 3}


def test_the_shared_bootstrap_is_the_trials_one():
    """trials.cluster_bootstrap (run means over tasks) goes through the same function."""
    from harness.study.trials import cluster_bootstrap as trials_bootstrap
    values = {"a": [1.0, 1.0], "b": [0.0], "c": [0.5, 1.0, 0.0], "d": [1.0]}
    shared = cluster_bootstrap([[float(np.mean(v))] for v in values.values()], lambda pool: float(np.mean(pool)))
    assert trials_bootstrap(values) == (shared.low, shared.high)


def test_weighted_kappa_bins_on_the_label_scale_not_on_the_labels_seen():
    """Labels 0 and 1 only (no 2 in this subset), judge scores 1, 5, 5, 9. On the 0-2 scale the
    scores bin to 0, 1, 1, 2: observed weighted disagreement 0.25, expected 0.375, kappa 1/3 (by
    hand). Binned on the two levels seen (1-5 -> 0, 6-10 -> 1) it would be 0.5."""
    r = rank_agreement([(0, 1), (0, 5), (1, 5), (1, 9)], scale=(0, 1, 2))
    assert r["bins"] == 3 and r["scale"] == [0, 1, 2] and r["scale_from"] == "declared"
    assert r["weighted_kappa"] == pytest.approx(1 / 3)
    rows = [{"id": "a", "split": "x", "labels": {},
             "scored_turns": [{"user": "u", "agent": "a", "agent_helpfulness": j, "labels": {"agent_helpfulness": h}}
                              for h, j in [(0, 1), (0, 5), (1, 5), (1, 9)]]}]
    assert agreement_summary(rows)["agent_helpfulness"]["aided"]["weighted_kappa"] == pytest.approx(1 / 3)
    # labels off the declared scale fall back to the integer range seen, and say so
    off = rank_agreement([(3, 1), (5, 9), (4, 5)], scale=(0, 1, 2))
    assert off["scale"] == [3, 4, 5] and off["scale_from"] == "labels seen"


def test_resamples_without_variation_are_counted_not_dropped_silently():
    """Three conversations, only one with two different labels: a resample that misses it (about
    (2/3)^3 = 30% of them) has no variation, so rho is undefined there; the count is reported."""
    rows = [{"id": "varied", "labels": {}, "scored_turns": [
                {"user": "u", "agent": "a", "agent_helpfulness": 1, "labels": {"agent_helpfulness": 0}},
                {"user": "u", "agent": "a", "agent_helpfulness": 8, "labels": {"agent_helpfulness": 2}},
                {"user": "u", "agent": "a", "agent_helpfulness": 5, "labels": {"agent_helpfulness": 1}}]},
            *({"id": f"flat{i}", "labels": {}, "scored_turns": [
                {"user": "u", "agent": "a", "agent_helpfulness": 3, "labels": {"agent_helpfulness": 0}}]} for i in range(2))]
    summary = agreement_summary(rows)
    made = summary["agent_helpfulness"]["aided"]["bootstrap"]
    assert made["resamples"] == 2000 and 450 < made["undefined"]["spearman"] < 750
    assert "undefined resamples: spearman" in "\n".join(agreement_markdown(summary, "t"))


def _sourced_rows():
    """Two people-labelled conversations (the judge gets both right), two maintainer-labelled ones
    (the judge gets both wrong), one without labelled_by (unknown)."""
    rows = []
    for n, (source, human, judge) in enumerate([("people", True, True), ("people", False, False),
                                                ("maintainers", True, False), ("maintainers", False, True),
                                                (None, True, True)]):
        labels = {"solved": human, **({"labelled_by": source} if source else {})}
        rows.append({"id": f"r{n}", "split": "heldout", "labels": labels,
                     "scored_turns": [{"user": "u", "agent": "a", "solved": judge, "agent_helpfulness": 8,
                                       "labels": {"agent_helpfulness": 2, "labelled_by": "maintainers"}}]})
    return rows


def test_the_report_gives_people_and_maintainers_labels_apart():
    summary = agreement_summary(_sourced_rows(), "heldout")
    assert summary["label_sources"] == {"maintainers": 7, "people": 2, "unknown": 1}
    people, maintainers = summary["by_source"]["people"], summary["by_source"]["maintainers"]
    assert (people["solved"]["classes"]["yes"]["right"], people["solved"]["classes"]["no"]["right"]) == (1, 1)
    assert people["solved"]["n"] == 2 and people["agent_helpfulness"]["aided"]["n"] == 0
    assert (maintainers["solved"]["classes"]["yes"]["right"], maintainers["solved"]["classes"]["no"]["right"]) == (0, 0)
    assert maintainers["agent_helpfulness"]["aided"]["n"] == 5  # every turn label is the maintainers'
    assert summary["solved"]["n"] == 5  # all: the unknown one too
    text = "\n".join(agreement_markdown(summary, "t"))
    assert "### By label source" in text and "people's verdicts" in text
    kept = rows_labelled_by(_sourced_rows(), "people")
    assert [r["id"] for r in kept] == ["r0", "r1"] and kept[0]["scored_turns"][0]["labels"] == {}


def test_a_bad_label_source_is_a_clear_error_and_a_missing_one_is_unknown(tmp_path, capsys):
    check_label_sources([{"id": "x", "labels": {"solved": True}}], "f.jsonl")  # missing: unknown, fine
    with pytest.raises(ValueError, match=r"row 'x' \(line 1\): turns\[0\]\.labels\.labelled_by is 'expert'.*'people'"):
        check_label_sources([{"id": "x", "labels": {}, "turns": [{"labels": {"labelled_by": "expert"}}]}], "f.jsonl")
    with pytest.raises(ValueError, match="labels.labelled_by is missing"):
        check_label_sources([{"id": "x", "labels": {"solved": True}}], "f.jsonl", required=True)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "b1", "question": "q", "labels": {"solved": True, "labelled_by": "me"},
                                "turns": [{"user": "q", "agent": "a"}]}) + "\n")
    assert main(["agreement", "--transcripts", str(path), "--store", str(tmp_path / "s.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "b1" in err and "labelled_by" in err


def test_the_solved_kappa_has_a_conversation_interval():
    pairs = [(True, True)] * 6 + [(False, False)] * 5 + [(True, False), (False, True)]
    a = binary_agreement(pairs)
    # by hand: observed 11/13, chance (7/13)^2 + (6/13)^2 = 85/169, kappa (143 - 85) / (169 - 85) = 58/84
    assert a["cohen_kappa"] == pytest.approx(58 / 84)
    assert a["kappa_ci"][0] < a["cohen_kappa"] < a["kappa_ci"][1] and a["kappa_bootstrap"]["clusters"] == 13
