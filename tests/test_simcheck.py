"""simcheck (issue 42, docs/simcheck.md): the real reply points and their split, the act
classifier against the hand labels, each measure on cases whose answer is known, and the
command on fake models."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from harness.simcheck.acts import ACTS, act_of, classifier_agreement, load_act_labels
from harness.simcheck.measures import Pair, over_cooperation, reply_facts, fact_measures, act_measures
from harness.simcheck.points import real_points, split_digest, split_of, task_points
from harness.simcheck.style import auc, features, grouped_auc
from harness.tasks import Task, load_dataset

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "simcheck.md").read_text(encoding="utf-8")


def thread(**kw) -> Task:
    base = dict(id="t1", question="My wifi drops every few minutes on Ubuntu 22.04.",
                agent_replies=["What card is it? Run lspci.", "Try sudo modprobe -r iwlwifi.", "Anything else?"],
                followups=["It is an Intel AX200.", "Still drops, same as before."],
                facts=["It is an Intel AX200.", "Still drops, same as before."], reference_answer="modprobe -r iwlwifi")
    return Task(**{**base, **kw})


# -- points ---------------------------------------------------------------------------------------
def test_followup_i_answers_agent_reply_i_and_the_history_is_what_the_asker_had_seen():
    points = task_points(thread())
    assert [p.id for p in points] == ["t1#0", "t1#1"]  # the last helper message has no real answer
    second = points[1]
    assert second.helper == "Try sudo modprobe -r iwlwifi." and second.real == "Still drops, same as before."
    assert [(m.role, m.content) for m in second.history] == [
        ("user", "My wifi drops every few minutes on Ubuntu 22.04."), ("agent", "What card is it? Run lspci."),
        ("user", "It is an Intel AX200."), ("agent", "Try sudo modprobe -r iwlwifi.")]


def test_the_fair_default_withholds_the_reply_being_predicted_and_all_gives_every_fact():
    first, second = task_points(thread())
    assert first.facts == () and first.withheld == ("It is an Intel AX200.", "Still drops, same as before.")
    assert second.facts == ("It is an Intel AX200.",)  # said before point 1, already in its history
    assert all(p.facts == p.all_facts for p in task_points(thread(), facts="all"))
    hand = task_points(thread(facts=["The laptop is a ThinkPad."]))  # traced to no followup: always given
    assert all(p.facts == ("The laptop is a ThinkPad.",) for p in hand)


def test_the_shipped_threads_align_and_the_heldout_hash_is_the_one_recorded_before_any_figure():
    dataset = load_dataset("ubuntu_irc_troubleshooting")
    assert all(len(t.followups) == len(t.agent_replies) - 1 for t in dataset.tasks)
    points = real_points(dataset.tasks)
    heldout = [p for p in points if p.split == "heldout"]
    assert (len(points), len(heldout), len({p.task_id for p in heldout})) == (175, 76, 12)
    assert split_digest(heldout) in DOC
    assert all(split_of(p.task_id) == p.split for p in points)  # by thread: a thread is never split


def test_a_task_file_without_real_threads_says_what_it_needs(tmp_path):
    from harness.cli.main import main
    with pytest.raises(ValueError, match=r"agent_replies.*followups.*--dataset ubuntu_irc"):
        real_points([Task(id="x", question="How do I print?")])
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"id": "x", "question": "How do I print from the terminal?"}) + "\n")
    assert main(["simcheck", "--dataset", str(bare), "--store", str(tmp_path / "s.sqlite")]) == 2


# -- the act classifier -----------------------------------------------------------------------------
def test_the_hand_labels_are_the_maintainers_and_come_from_tune_threads_only():
    rows = load_act_labels()
    assert len(rows) >= 60 and {r["labelled_by"] for r in rows} == {"maintainers"}
    assert {split_of(r["task_id"]) for r in rows} == {"tune"}
    points = {p.id: p for p in real_points(load_dataset("ubuntu_irc_troubleshooting").tasks)}
    assert all(points[r["id"]].real == r["reply"] and points[r["id"]].helper == r["helper"] for r in rows)


def test_the_classifiers_agreement_with_the_labels_is_the_one_the_docs_report():
    rows = load_act_labels()
    figures = classifier_agreement(rows)
    assert f"accuracy {figures['accuracy']:.2f}, kappa {figures['kappa']:.2f}" in DOC
    tuned, untouched = classifier_agreement(rows[:50]), classifier_agreement(rows[50:])
    assert f"{tuned['accuracy']:.2f}" in DOC and f"{untouched['accuracy']:.2f}" in DOC
    assert f"rules version {figures['version']}" in DOC


@pytest.mark.parametrize("reply,helper,act", [
    ("that fixed it, thanks!", "try sudo apt-get update", "fixed"),
    ("I did that but it still drops.", "try sudo modprobe -r iwlwifi", "broken"),
    ("It is an Intel AX200.", "what card is it?", "gives_requested"),
    ("how do I run that?", "run lspci", "asks"),
    ("I also have a second disk with windows on it.", "that is odd", "gives_unrequested"),
    ("ok thanks", "try that", "closes"),
    (None, "try that", "leaves"),
    ("", "try that", "leaves"),
])
def test_each_act_on_a_plain_case(reply, helper, act):
    assert act_of(reply, helper) == act


# -- measures ----------------------------------------------------------------------------------------
def pair(task: str, real_act: str, sim_act: str) -> Pair:
    """A pair with the given acts at the first point of a thread ``task`` (its own cluster)."""
    return Pair(task_points(thread(id=task))[0], "x", real_act, sim_act)


def test_over_cooperation_where_always_fixed_is_wrong_half_of_the_time():
    pairs = [pair("a", "broken", "fixed"), pair("b", "asks", "broken"), pair("c", "fixed", "fixed"),
             pair("d", "fixed", "asks"), pair("e", "gives_requested", "fixed")]
    oc = over_cooperation(pairs)
    assert oc["over"]["value"] == 0.5 and oc["over"]["n"] == 2       # a and b; e's real reply is neither
    assert oc["reverse"]["value"] == 0.5 and oc["reverse"]["n"] == 2  # c and d
    assert oc["sim_fixed"]["value"] == 0.6 and oc["real_fixed"]["value"] == 0.4
    acts = act_measures(pairs)
    assert acts["confusion"]["broken"]["fixed"] == 1 and acts["agreement"]["value"] == 0.2
    same = act_measures([pair(t, a, a) for t, a in zip("abcdef", ACTS)])
    assert same["kappa"]["value"] == 1.0


def test_facts_told_early_and_invented_on_a_known_case():
    first = task_points(thread())[0]  # the helper asks which card; the real asker says Intel AX200
    followups = {"t1": thread().followups}
    assert reply_facts(first.real, first, followups)["told"] == ["It is an Intel AX200."]
    made_up = reply_facts("It is a Broadcom BCM4313 card.", first, followups)
    assert made_up["told"] == [] and set(made_up["invented"]) == {"broadcom", "bcm4313"}
    measures = fact_measures([Pair(first, "It is a Broadcom BCM4313 card.", "gives_requested", "gives_requested")],
                             followups)
    assert measures["sim"]["requested_given"]["value"] == 1.0 and measures["sim"]["invented"]["value"] == 1.0
    assert measures["real"]["invented"]["value"] == 0.0 and measures["real_facts_matched"]["value"] == 0.0


def test_the_style_auc_is_a_half_on_one_distribution_and_one_on_separable_ones():
    rng = np.random.default_rng(0)
    same = [(f"g{i % 20}", i % 2, list(rng.normal(size=4))) for i in range(400)]
    assert abs(grouped_auc(same)["auc"] - 0.5) < 0.1
    apart = [(f"g{i % 20}", i % 2, list(rng.normal(size=4) + 3 * (i % 2))) for i in range(400)]
    assert grouped_auc(apart)["auc"] > 0.95
    assert auc([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == 1.0 and auc([0, 1], [0.5, 0.5]) == 0.5
    from harness.simcheck.style import FEATURES
    assert len(features("Hi: it is an Intel AX200 :)")) == len(FEATURES)


# -- the command on fake models ------------------------------------------------------------------------
def test_simcheck_on_fake_models_prints_each_part_writes_the_json_and_a_rerun_is_cached(tmp_path, monkeypatch, capsys):
    from harness.cli import simcheck as cli
    from harness.cli.main import main
    from harness.compose import Runtime
    from tests.fakes import default_responder, fake_factory
    made: list = []

    def runtime(config):
        factory = fake_factory(default_responder(solve_at=None))
        made.append(factory)
        return Runtime(config, factory)
    monkeypatch.setattr(cli, "_runtime", runtime)
    argv = ["simcheck", "--store", str(tmp_path / "s.sqlite"), "--limit", "12", "--json", str(tmp_path / "s.json"),
            "--quiet", "--persona", "cooperative", "--persona", "vague"]
    assert main(argv) == 0
    shown = capsys.readouterr().out
    assert "persona cooperative" in shown and "persona vague" in shown and "tune: 12 points" in shown
    assert "heldout: no point in this selection" in shown  # the first 12 points are of tune threads
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["points"] == 12 and summary["parts"] == {"tune": 12, "heldout": 0}
    assert re.fullmatch(r"[0-9a-f]{64}", summary["heldout_sha256"]) and summary["heldout_sha256"] in DOC
    group = summary["groups"][0]
    assert {"acts", "over_cooperation", "facts", "length", "style"} <= set(group["parts"]["tune"])
    assert group["parts"]["tune"]["style"]["features"][0]["name"]
    assert made[-1].models["user"].calls > 0 and made[-1].models["extractor"].calls > 0
    assert main(argv) == 0  # every reply and statement from the cache: no model is even built
    assert made[-1].models == {}


def test_a_changed_simulator_rule_plays_the_points_again(tmp_path, monkeypatch):
    """The cache key holds the simulator aids' versions (issue 42, part 4: the checks were changed
    while the tune part was played again; an old reply must not stand for the new simulator)."""
    from harness.cli import simcheck as cli
    from harness.cli.main import main
    from harness.compose import Runtime
    from tests.fakes import default_responder, fake_factory
    made: list = []

    def runtime(config):
        made.append(fake_factory(default_responder(solve_at=None)))
        return Runtime(config, made[-1])
    monkeypatch.setattr(cli, "_runtime", runtime)
    argv = ["simcheck", "--store", str(tmp_path / "s.sqlite"), "--limit", "3", "--quiet"]
    assert main(argv) == 0 and made[-1].models["user"].calls > 0
    assert main(argv) == 0 and made[-1].models == {}  # cached
    from harness.compose import aid_versions
    versions = {**aid_versions(), "user_regenerations": "user-regenerations-changed"}
    monkeypatch.setattr(Runtime, "aid_versions", property(lambda self: versions))
    assert main(argv) == 0 and made[-1].models["user"].calls > 0  # played again
