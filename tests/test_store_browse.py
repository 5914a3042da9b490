"""``deskbench browse``: the store in Datasette. The descriptions cover every table and column of
the schema (and nothing the schema lacks); every canned query runs on an empty store; then the
command itself as a user starts it, a subprocess on a store a real batch (fake models) wrote:
Chromium sees the canned queries on the index page and a stored turn in the conversation query,
rows written while it serves appear (WAL), nothing can be written through it, and a missing store
is an error that names the fix and creates nothing."""
from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from harness.cli.browse import datasette_metadata
from harness.compose import run_selfscore
from harness.config import load_config
from harness.tasks.datasets import load_dataset
from store import CANNED_QUERIES, TABLES, StoreWriter, open_db, table_columns
from tests.fakes import default_responder, fake_factory

DESKBENCH = str(Path(sys.executable).with_name("deskbench"))


def test_every_table_and_column_is_described_and_nothing_else():
    schema = table_columns()
    assert set(TABLES) == set(schema)
    for name, columns in schema.items():
        spec = TABLES[name]
        assert spec["title"] and len(spec["description"]) > 20, name
        assert list(spec["columns"]) == columns, f"{name}: describe exactly the schema's columns, in order"
        assert all(len(text) > 5 for text in spec["columns"].values()), name
        assert set(spec.get("facets", [])) <= set(columns), name


def test_every_canned_query_runs_on_an_empty_store(tmp_path):
    db = open_db(tmp_path / "empty.sqlite")
    for name, query in CANNED_QUERIES.items():
        params = {p: "" for p in re.findall(r":(\w+)", query["sql"])}
        assert db.execute(query["sql"], params).fetchall() == [], name
        assert query["title"] and query["description"], name


def test_metadata_names_the_database_and_every_query(tmp_path):
    meta = datasette_metadata("runs", tmp_path / "runs.sqlite")
    db = meta["databases"]["runs"]
    assert set(db["queries"]) == set(CANNED_QUERIES) and set(db["tables"]) == set(TABLES)
    assert {"run_id", "stop_reason"} <= set(db["tables"]["interactions"]["facets"])


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browse")
    tasks = tmp / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(r) for r in [
        {"id": "wifi", "question": "My laptop wifi drops every few minutes on Ubuntu 22.04."},
        {"id": "disk", "question": "My disk is full but du shows only half used."}]) + "\n")
    cfg = load_config(overrides={"store": str(tmp / "s.sqlite"), "run": {"limit": 2, "max_turns": 2}})
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks)), chat_models=fake_factory(default_responder()))
    return Path(cfg.store), run_id


def start_browse(store: Path, cwd: Path) -> tuple[subprocess.Popen, str, list[str]]:
    """``deskbench browse --store S --port 0`` as a user starts it; its process, URL and output."""
    proc = subprocess.Popen([DESKBENCH, "browse", "--store", str(store), "--port", "0"], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("deskbench browse: "):
            lines.append(proc.stdout.readline())
            return proc, line.split(": ", 1)[1].strip(), lines
    proc.kill()
    raise AssertionError("deskbench browse printed no address:\n" + "".join(lines))


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_browse_serves_the_store_read_only_in_chromium(store, tmp_path):
    from playwright.sync_api import sync_playwright

    from tests.integration.test_live_app_browser import CHROMIUM, CHROMIUM_ARGS
    path, run_id = store
    proc, url, lines = start_browse(path, tmp_path)
    try:
        assert "read-only" in lines[-1] and "ready in" in lines[-1]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(url)
            body = page.inner_text("body")
            for query in CANNED_QUERIES.values():
                assert query["title"] in body
            assert "interactions" in body and "turns" in body
            page.goto(f"{url}/conversation?run={run_id}")
            rows = page.locator("table.rows-and-columns tbody tr")
            assert rows.count() >= 2
            first_user_message = sqlite3.connect(path).execute(
                "select user_message from turns t join interactions i on i.id = t.interaction_id "
                "where i.run_id = ? order by i.position, t.turn_index", (run_id,)).fetchone()[0]
            assert first_user_message[:40] in page.inner_text("table.rows-and-columns")
            page.goto(f"{url}/interactions")
            body = page.inner_text("body")
            assert TABLES["interactions"]["title"] in body and TABLES["interactions"]["description"][:40] in body
            assert "stop_reason" in page.inner_text(".facet-results")
            page.screenshot(path=str(tmp_path / "interactions.png"), full_page=True)
            browser.close()

        # a row written while the browser serves (a batch writing the store) appears at once
        writer = StoreWriter(path)
        new_run = "written-while-browsing"
        writer.create_run({"id": new_run, "kind": "selfscore", "name": new_run})
        status, text = fetch(f"{url}/runs.json?_shape=array&id={new_run}")
        assert status == 200 and json.loads(text)[0]["name"] == "written-while-browsing"

        # nothing can be written through it
        before = sqlite3.connect(path).execute("select count(*) from runs").fetchone()[0]
        sql = urllib.parse.quote("delete from runs")
        status, text = fetch(f"{url}.json?sql={sql}")
        assert status == 400 and "SELECT" in text
        assert sqlite3.connect(path).execute("select count(*) from runs").fetchone()[0] == before
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_browse_a_missing_store_names_the_fix_and_creates_nothing(tmp_path):
    missing = tmp_path / "runs" / "nothing.sqlite"
    done = subprocess.run([DESKBENCH, "browse", "--store", str(missing), "--port", "0"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "no store at" in done.stderr and "--store" in done.stderr
    assert not missing.parent.exists()


def test_browse_a_file_that_is_not_a_store(tmp_path):
    other = tmp_path / "notes.sqlite"
    other.write_text("just text")
    done = subprocess.run([DESKBENCH, "browse", "--store", str(other)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "not a deskbench store" in done.stderr
    assert other.read_text() == "just text"


def test_browse_on_a_port_in_use_says_so(store, tmp_path):
    import socket
    path, _ = store
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = subprocess.run([DESKBENCH, "browse", "--store", str(path), "--port", str(port)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
