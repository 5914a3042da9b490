"""What the solved-check can be trusted with (harness.study.solved_check_trust): the stored
figures agree with docs/selfscore.md and with the shipped sets they were measured on, and the run
report and `deskbench runs` say them next to the solved rate: for the embedded judge, with "weak
evidence"; for a judge the project never measured, "not measured"."""
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from harness.cli.main import build_parser, main
from harness.compose import run_selfscore
from harness.config import load_config
from harness.study.report import report_markdown
from harness.study.solved_check_trust import (FIGURES_FILE, measured_agreement, measurements_for, run_judge,
                                              run_solved_method, trust_line, trust_short)
from harness.tasks.datasets import load_dataset
from store import StoreReader
from tests.fakes import default_responder, fake_factory

ROOT = Path(__file__).resolve().parent.parent
EMBEDDED = {"kind": "embedded", "model": "qwen2.5-coder-1.5b"}
ENDPOINT_JUDGE = {"base_url": "http://judge.example/v1", "model": "gpt-4o"}


def _measurement(id_):
    return next(m for m in measured_agreement()["measurements"] if m["id"] == id_)


# --- the stored figures against the docs and the shipped sets ---------------------------------

def test_every_stored_figure_is_quoted_from_the_docs_in_order():
    docs = (ROOT / "docs" / "selfscore.md").read_text(encoding="utf-8")
    for m in measured_agreement()["measurements"]:
        quote = m["docs_quote"]
        assert quote in docs, f"{m['id']}: docs/selfscore.md no longer says {quote!r}"
        solved, unsolved = (f"{m[c]['right']}/{m[c]['n']}" for c in ("solved", "unsolved"))
        assert solved in quote and unsolved in quote[quote.index(solved) + len(solved):], m["id"]
    # the external figure: the "4 of 30 solved ones (29 of 30 unsolved right)", in the docs
    other = _measurement("embedded-evidence-other-helpdesk")
    assert (other["solved"], other["unsolved"]) == ({"right": 4, "n": 30}, {"right": 29, "n": 30})
    assert "19 raters each" in other["set"]["name"] and other["set"]["file"] is None


def test_a_changed_figure_would_not_match_its_quote():
    """The check above fails on drift: the held-out figure moved by one is not in its quote."""
    m = _measurement("embedded-evidence-heldout")
    moved = f"{m['solved']['right'] + 1}/{m['solved']['n']}"
    assert moved not in m["docs_quote"] and f"{m['solved']['right']}/{m['solved']['n']}" in m["docs_quote"]


def test_each_shipped_set_has_the_classes_sources_and_hash_the_figures_were_measured_on():
    for m in measured_agreement()["measurements"]:
        if m["set"]["file"] is None:
            continue
        path = ROOT / m["set"]["file"]
        if m["set"]["sha256"]:
            assert hashlib.sha256(path.read_bytes()).hexdigest() == m["set"]["sha256"], m["id"]
        labels = [json.loads(line)["labels"] for line in path.read_text(encoding="utf-8").splitlines()
                  if line.strip() and json.loads(line).get("split") == m["set"]["split"]]
        labels = [lab for lab in labels if "solved" in lab]
        assert sum(lab["solved"] for lab in labels) == m["solved"]["n"], m["id"]
        assert sum(not lab["solved"] for lab in labels) == m["unsolved"]["n"], m["id"]
        sources = Counter(lab["labelled_by"] for lab in labels)
        assert sources == m["labelled_by_counts"] and sources.most_common(1)[0][0] == m["labelled_by"], m["id"]


def test_the_command_it_names_is_a_real_one():
    command = measured_agreement()["measure_with"].split()
    assert command[0] == "deskbench"
    args = build_parser().parse_args(command[1:])
    assert args.command == "agreement" and args.split == "heldout" and args.kinds == "solved"


# --- choosing the line by judge and method ---------------------------------------------------

def _row(judge=None, method="evidence", profile=True):
    roles = {"judge": judge or {"base_url": None, "model": "qwen2.5-coder-1.5b"}}
    row = {"config": {"roles": roles, "run": {"solved_check": None}}}
    if profile:
        row["profile"] = {"aids": {"solved_rules": {"value": method}}}
    return row


def test_the_judge_and_method_are_read_from_the_run():
    assert run_judge(_row()) == {**EMBEDDED, "base_url": None}
    assert run_judge(_row(ENDPOINT_JUDGE))["kind"] == "endpoint"
    assert run_solved_method(_row(method="verdict")) == "verdict"
    # a run row as `deskbench runs` reads it (JSON text), and one stored before profiles
    raw = {"config_json": json.dumps(_row()["config"]), "profile_json": None}
    assert run_judge(raw)["kind"] == "embedded" and run_solved_method(raw) is None
    assert [m["id"] for m in measurements_for(EMBEDDED, "evidence")] == [
        "embedded-evidence-heldout", "embedded-evidence-checked", "embedded-evidence-other-helpdesk"]
    assert measurements_for({**EMBEDDED, "model": "qwen2.5-coder-0.5b"}, "evidence") == []


def test_each_method_gets_its_own_figures_and_reason():
    verdict = trust_line(_row(method="verdict"))
    assert "`verdict`" in verdict and "14 of 14 solved and 0 of 14 unsolved" in verdict
    assert "weak evidence: it called every unsolved conversation on the shipped held-out set solved" in verdict
    confirmation = trust_line(_row(method="confirmation"))
    assert "2 of 15 solved and 17 of 18 unsolved" in confirmation
    assert "most solved conversations on the shipped checked part were not recognised" in confirmation
    unrecorded = trust_line(_row(profile=False))
    assert "`method unrecorded`" in unrecorded and "not measured" in unrecorded
    small = trust_line({**_row(), "config": {"roles": {"judge": {"model": "qwen2.5-coder-0.5b"}}}})
    assert "not measured for this judge" in small and "weak evidence" not in small


# --- the report and `deskbench runs` ----------------------------------------------------------

def _run(tmp_path, tasks_file, roles=None):
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "roles": roles or {},
                                 "run": {"limit": 2, "max_turns": 2}})
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)),
                              chat_models=fake_factory(default_responder(solve_at=1)))
    return cfg, run_id


@pytest.fixture
def two_runs(tmp_path, tasks_file):
    """An embedded-judge run (profile auto: the evidence check) and an endpoint-judge one (the
    paper's verdict), in one store."""
    cfg, embedded = _run(tmp_path, tasks_file)
    _, endpoint = _run(tmp_path, tasks_file, roles={"judge": ENDPOINT_JUDGE})
    return cfg, embedded, endpoint


def test_the_report_says_what_the_solved_check_recognises_next_to_the_solved_rate(two_runs):
    cfg, embedded, endpoint = two_runs
    reader = StoreReader(cfg.store)
    text = report_markdown(reader, embedded)
    held, other = _measurement("embedded-evidence-heldout"), _measurement("embedded-evidence-other-helpdesk")
    line = next(x for x in text.splitlines() if x.startswith("Solved-check ("))
    assert line.startswith("Solved-check (embedded judge qwen2.5-coder-1.5b, `evidence`): on the shipped held-out set "
                           "(heldout.jsonl, split heldout, sha256 910e5bbf1f0a; labels: people, the asker's own words) "
                           f"it recognised {held['solved']['right']} of {held['solved']['n']} solved and "
                           f"{held['unsolved']['right']} of {held['unsolved']['n']} unsolved conversations")
    assert (f"on other help-desk data (kept outside the project, 19 raters each) {other['solved']['right']} of "
            f"{other['solved']['n']} solved and {other['unsolved']['right']} of {other['unsolved']['n']} unsolved") in line
    assert ("On this judge a solved rate of transcripts is weak evidence: most solved conversations elsewhere "
            "were not recognised.") in line
    lines = text.splitlines()  # just under the summary table that holds the solved rate
    assert lines.index(line) > next(i for i, x in enumerate(lines) if x.startswith("| solved_rate |"))
    assert lines.index(line) < lines.index("## Conversations")

    other_text = report_markdown(reader, endpoint)
    other_line = next(x for x in other_text.splitlines() if x.startswith("Solved-check ("))
    assert other_line.startswith("Solved-check (judge gpt-4o at http://judge.example/v1, `verdict`): its agreement "
                                 "with human labels is not measured for this judge and method")
    assert "`deskbench agreement --split heldout --kinds solved`" in other_line
    assert "weak evidence" not in other_line and "11 of 14" not in other_line


def test_runs_prints_the_short_form_under_each_run(two_runs, capsys):
    cfg, embedded, endpoint = two_runs
    assert main(["runs", "--store", cfg.store]) == 0
    printed = capsys.readouterr().out.splitlines()
    under = {printed[i].split()[0]: printed[i + 1] for i, x in enumerate(printed) if x.split()[0] in (embedded, endpoint)}
    solved = sum(bool(s["figures"]["solved"]) for s in StoreReader(cfg.store).scores(embedded))
    assert under[embedded] == (f"    solved {solved}/2 ({solved / 2:.0%}); solved-check (embedded, evidence): "
                               "11/14 solved, 13/14 unsolved on shipped held-out (people); 4/30 solved, 29/30 "
                               "unsolved on other help-desk data (people); weak evidence on the embedded judge")
    assert under[endpoint].startswith("    solved ") and under[endpoint].endswith(
        "solved-check (endpoint gpt-4o, verdict): not measured; `deskbench agreement --split heldout --kinds solved`")
    assert trust_short(StoreReader(cfg.store).run(embedded)) in under[embedded]


def test_the_figures_file_ships_with_the_package():
    assert FIGURES_FILE.parent.name == "agreement" and FIGURES_FILE.parent.parent.name == "data"
    assert measured_agreement()["version"] == 1


def test_the_docs_show_the_line_the_report_prints():
    docs = (ROOT / "docs" / "selfscore.md").read_text(encoding="utf-8")
    example = docs.split("e.g. for an embedded run:", 1)[1].split("\n\n")[1]
    quoted = " ".join(line.removeprefix("> ") for line in example.splitlines())
    assert trust_line(_row()) == f"{quoted} (docs/selfscore.md#agreement-with-human-labels)"
    short = docs.split("prints the short form under each SelfScore run", 1)[1].split("```")[1].strip()
    assert short.endswith(trust_short(_row()))
