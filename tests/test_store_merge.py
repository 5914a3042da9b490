"""Merging shard stores (store.merge) and planning shards (harness.scale.shards), in one process with
fake models on real SQLite files: a sharded run merged back equals a single-process run."""
import json
import shutil
import sqlite3

import pytest

from harness.compose import run_selfscore
from harness.scale.shards import create_run, plan_shards, progress_from_store, run_shard, split_evenly
from harness.selfscore.figures import rescore_run
from harness.tasks.datasets import load_dataset
from store import StoreReader, StoreWriter
from store.merge import MergeError, checkpoint, copy_interactions, merge_stores
from tests.fakes import default_responder, fake_factory
from tests.test_resume_and_failures import figures, snapshot
from tests.test_selfscore_graph import make_config

TABLES = ("runs", "problems", "preprocessing", "interactions", "turns", "judgments", "llm_calls", "scores")


def counts(path):
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()


@pytest.fixture
def sharded(tmp_path, tasks_file):
    """A 3-task run planned into 2 shard stores and each shard run in-process with fake models."""
    cfg = make_config(tmp_path / "driver", max_turns=3, concurrency=2)
    run_id = create_run(cfg, "selfscore", load_dataset(str(tasks_file)))
    specs = plan_shards(cfg.store, run_id, 2, tmp_path / "shards", "selfscore")
    for spec in specs:
        run_shard(spec, spec.path, chat_models=fake_factory(default_responder(solve_at=None)))
    return cfg, run_id, specs


def test_split_evenly_keeps_order_and_balance():
    assert split_evenly(list("abcdefg"), 3) == [list("abc"), list("de"), list("fg")]
    assert split_evenly(list("ab"), 5) == [["a"], ["b"]]
    with pytest.raises(ValueError, match="--shards must be at least 1"):
        split_evenly(["a"], 0)


def test_sharded_run_merged_equals_a_single_run(tmp_path, tasks_file, sharded):
    cfg, run_id, specs = sharded
    assert [len(s.interaction_ids) for s in specs] == [2, 1]
    assert {s.run_id for s in specs} == {run_id}
    single_cfg = make_config(tmp_path / "single", max_turns=3, concurrency=2)
    single_id, _ = run_selfscore(single_cfg, load_dataset(str(tasks_file)),
                                 chat_models=fake_factory(default_responder(solve_at=None)))

    reports = merge_stores([s.path for s in specs], cfg.store)
    assert [r.copied + r.replaced for r in reports] == [2, 1]
    merged, single = StoreReader(cfg.store), StoreReader(single_cfg.store)
    assert merged.run(run_id)["status"] == "completed"
    assert snapshot(merged, run_id) == snapshot(single, single_id)
    assert figures(merged, run_id) == figures(single, single_id)
    # rescoring the merged store from its rows changes nothing
    before = figures(merged, run_id)
    rescore_run(merged, StoreWriter(cfg.store), run_id)
    assert figures(StoreReader(cfg.store), run_id) == before
    assert progress_from_store(cfg.store, run_id).done == 3


def test_merging_twice_duplicates_nothing_and_ids_are_renumbered(sharded):
    cfg, run_id, specs = sharded
    merge_stores([s.path for s in specs], cfg.store)
    first = counts(cfg.store)
    again = merge_stores([s.path for s in specs], cfg.store)
    assert counts(cfg.store) == first
    assert [(r.copied, r.replaced, r.unchanged) for r in again] == [(0, 0, 2), (0, 0, 1)]
    assert first["turns"] == sum(counts(s.path)["turns"] for s in specs)
    conn = sqlite3.connect(cfg.store)
    ids = [r[0] for r in conn.execute("SELECT id FROM judgments ORDER BY id")]
    assert len(ids) == len(set(ids)) == first["judgments"]
    # both shards numbered their judgments from 1; the merge kept each interaction's order
    shard = sqlite3.connect(specs[1].path)
    iid = specs[1].interaction_ids[0]
    order = "SELECT kind, turn_index FROM judgments WHERE interaction_id=? ORDER BY id"
    assert shard.execute("SELECT MIN(id) FROM judgments").fetchone()[0] == 1
    assert conn.execute(order, (iid,)).fetchall() == shard.execute(order, (iid,)).fetchall()


def test_the_store_that_got_further_wins(tmp_path, sharded):
    cfg, run_id, specs = sharded
    iid = specs[1].interaction_ids[0]
    early = tmp_path / "early.sqlite"
    shutil.copy(specs[1].path, early)
    conn = sqlite3.connect(early)
    with conn:  # the shard as it was after its first turn
        last = conn.execute("SELECT MAX(turn_index) FROM turns").fetchone()[0]
        conn.execute("DELETE FROM turns WHERE turn_index>1")
        conn.execute("DELETE FROM judgments WHERE turn_index>1")
        conn.execute("DELETE FROM llm_calls WHERE turn_index>1")
        conn.execute("DELETE FROM scores")
        conn.execute("UPDATE interactions SET status='running', n_turns=1")
    conn.close()
    assert last > 1
    assert copy_interactions(early, cfg.store).replaced == 1
    assert len(StoreReader(cfg.store).turns(iid)) == 1
    assert StoreReader(cfg.store).run(run_id)["status"] == "incomplete"
    assert copy_interactions(specs[1].path, cfg.store).replaced == 1
    assert len(StoreReader(cfg.store).turns(iid)) == last
    kept = copy_interactions(early, cfg.store)
    assert kept.kept_newer == 1 and len(StoreReader(cfg.store).turns(iid)) == last


def test_refusals_name_the_problem_and_leave_the_target_untouched(tmp_path, sharded):
    cfg, run_id, specs = sharded
    merge_stores([specs[0].path], cfg.store)
    before = counts(cfg.store)

    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    with pytest.raises(MergeError, match="notes.txt is not a deskbench store"):
        copy_interactions(text, cfg.store)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(MergeError, match="no meta table"):
        copy_interactions(other, cfg.store)
    with pytest.raises(MergeError, match="No store at"):
        copy_interactions(tmp_path / "missing.sqlite", cfg.store)
    with pytest.raises(MergeError, match="is the target store itself"):
        copy_interactions(cfg.store, cfg.store)

    changed = tmp_path / "changed.sqlite"
    shutil.copy(specs[1].path, changed)
    conn = sqlite3.connect(changed)
    with conn:
        config = json.loads(conn.execute("SELECT config_json FROM runs").fetchone()[0])
        config["run"]["max_turns"] = 9
        conn.execute("UPDATE runs SET config_json=?", (json.dumps(config),))
    conn.close()
    with pytest.raises(MergeError, match="different config_json: they are not shards of the same run"):
        copy_interactions(changed, cfg.store)

    newer = tmp_path / "newer.sqlite"
    shutil.copy(specs[1].path, newer)
    with sqlite3.connect(newer) as conn:
        conn.execute("UPDATE meta SET value='7' WHERE key='schema_version'")
    with pytest.raises(MergeError, match="has store schema 7, the target uses schema 1"):
        copy_interactions(newer, cfg.store)

    diverged = tmp_path / "diverged.sqlite"
    shutil.copy(specs[0].path, diverged)
    with sqlite3.connect(diverged) as conn:
        conn.execute("UPDATE turns SET agent_message='something else' WHERE turn_index=2")
        conn.execute("INSERT INTO turns (interaction_id, turn_index, user_message, agent_message) "
                     "SELECT id, 99, 'u', 'a' FROM interactions LIMIT 1")
    with pytest.raises(MergeError, match="differs at turn 2 .* run twice independently"):
        copy_interactions(diverged, cfg.store)
    assert counts(cfg.store) == before


def test_seeding_a_shard_keeps_the_shard_when_it_got_further(tmp_path, sharded):
    cfg, run_id, specs = sharded
    before = counts(specs[0].path)
    report = copy_interactions(cfg.store, specs[0].path, run_id, specs[0].interaction_ids)
    assert report.kept_newer == 2 and counts(specs[0].path) == before
    with pytest.raises(ValueError, match="exists already: a shard store from another attempt"):
        plan_shards(cfg.store, run_id, 2, tmp_path / "shards", "selfscore")


def test_checkpoint_puts_every_row_in_the_main_file(tmp_path, sharded):
    cfg, run_id, specs = sharded
    writer = StoreWriter(tmp_path / "live.sqlite")  # an open writer: rows sit in the WAL
    writer.upsert_problems([{"id": "d:x", "dataset": "d", "task_id": "x", "question": "q"}])
    checkpoint(tmp_path / "live.sqlite")
    shutil.copy(tmp_path / "live.sqlite", tmp_path / "copy.sqlite")  # the main file alone
    writer.close()
    assert counts(tmp_path / "copy.sqlite")["problems"] == 1
