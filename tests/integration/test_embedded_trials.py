"""Trials and personas as the README runs them: `deskbench run --trials K --persona P` on the
embedded model, twice, then `deskbench compare` of the two runs; checked on what the report,
the store and the comparison say. Slow (minutes); skip with -m 'not integration'."""
import json
import sqlite3

from tests.integration.test_readme_commands import deskbench


def test_trials_personas_and_the_noise_floor_on_the_embedded_model(tmp_path):
    store = str(tmp_path / "s.sqlite")
    # two turns are enough for every check below (the persona is recorded from turn 2 on)
    common = ["--limit", "2", "--trials", "2", "--max-turns", "2", "--store", store, "--quiet"]
    impatient = deskbench("run", *common, "--persona", "impatient", "--name", "imp",
                          "--out", str(tmp_path / "imp"), timeout=1800)
    # the report: pass^1 and pass^2, the flip share, the spread with its noise floor, by persona
    assert "## Trials" in impatient and "| 2 |" in impatient and "flip share" in impatient
    assert "noise floor, these trials" in impatient and "## By persona" in impatient
    assert (tmp_path / "imp" / "pass_k.png").exists() and (tmp_path / "imp" / "trials.json").exists()
    cooperative = deskbench("run", *common, "--name", "coop", "--seed", "1",
                            "--out", str(tmp_path / "coop"), timeout=1800)
    assert "## Trials" in cooperative and "## By persona" not in cooperative

    db = sqlite3.connect(store)
    rows = db.execute("SELECT i.id, i.trial, i.persona, i.script_json, r.name FROM interactions i "
                      "JOIN runs r ON r.id = i.run_id ORDER BY r.name, i.position").fetchall()
    assert [(r[1], r[2], r[4]) for r in rows] == [
        (1, "cooperative", "coop"), (2, "cooperative", "coop"), (1, "cooperative", "coop"),
        (2, "cooperative", "coop"), (1, "impatient", "imp"), (2, "impatient", "imp"),
        (1, "impatient", "imp"), (2, "impatient", "imp")]
    seeds = [json.loads(r[3])["seeds"] for r in rows]
    assert all(set(s) == {"agent", "user"} for s in seeds)
    assert len({s["user"] for s in seeds if s["user"] != 0}) == 4  # trial 2 of each task and run
    # every impatient user's turn after the first records its persona
    acts = [json.loads(t)["user"]["simulator"]["persona"] for (t,) in db.execute(
        "SELECT t.extra_json FROM turns t JOIN interactions i ON i.id = t.interaction_id "
        "WHERE i.persona = 'impatient' AND t.turn_index > 1")]
    assert acts and all(a["name"] == "impatient" for a in acts)

    compared = deskbench("compare", "--store", store, "imp", "coop", "--out", str(tmp_path / "cmp"))
    assert "Noise floor (paired by task, trials: imp 2, coop 2)" in compared
    assert "imp - coop on 2 paired task(s):" in compared and "solved (pass^1):" in compared
    assert "Trials and the noise floor" in (tmp_path / "cmp" / "report.html").read_text()
