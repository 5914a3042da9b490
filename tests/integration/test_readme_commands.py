"""The README's `deskbench` commands run as a user runs them: each a subprocess of the installed
`deskbench` script, on the embedded model where it needs one, checked on what it prints and
writes (`browse` is read over HTTP here, in Chromium in tests/test_store_browse.py). (`run`/`--resume`, `demo`, `python app.py` and `deskbench app` have subprocess tests of their own in
test_embedded_batch.py, test_embedded_conversations.py and test_app_as_the_readme_runs_it.py.)
Slow (minutes); skip with -m 'not integration'."""
import csv
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DESKBENCH = str(Path(sys.executable).with_name("deskbench"))


def deskbench(*args: str, timeout: int = 900) -> str:
    """Run ``deskbench ARGS`` and return what it printed; fail with its stderr if it failed."""
    proc = subprocess.run([DESKBENCH, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)
    assert proc.returncode == 0, f"deskbench {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_the_readme_commands_on_one_small_run(tmp_path):
    store = str(tmp_path / "s.sqlite")
    out = deskbench("run", "--limit", "1", "--max-turns", "1", "--store", store, "--quiet",
                    "--out", str(tmp_path / "run"))
    assert "## Model calls per turn" in out and "mean_final_score" in out

    listed = deskbench("runs", "--store", store)
    run_id = json.loads(subprocess.run(
        [sys.executable, "-c", "import json,sys; from store import StoreReader; "
         "print(json.dumps([r['id'] for r in StoreReader(sys.argv[1]).runs()]))", store],
        capture_output=True, text=True, check=True, cwd=REPO).stdout)[0]
    assert run_id in listed and "profile=embedded" in listed  # every role on the embedded model

    assert "0 changed" in deskbench("rescore", "--store", store, run_id)

    # the store in Datasette: the canned conversation query returns the stored turn
    from tests.test_store_browse import fetch, start_browse
    proc, url, _ = start_browse(Path(store), tmp_path)
    try:
        status, text = fetch(f"{url}/conversation.json?run={run_id}&_shape=array")
        (turn,) = json.loads(text)
        assert status == 200 and turn["user_message"] and turn["agent_message"], text
        assert turn["agent_helpfulness"] is not None and turn["solved"] in ("solved", "not solved")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    # the judge's own scores (the bounds undone), then the stored scores again (no model call)
    assert "(profile judge-only)" in deskbench("rescore", "--store", store, run_id, "--raw")
    assert "(profile embedded)" in deskbench("rescore", "--store", store, run_id)

    deskbench("export", "--store", store, run_id, "--out", str(tmp_path / "x"), "--format", "csv")
    with open(tmp_path / "x" / "interactions.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and rows[0]["final_score"]

    # re-judging the stored conversation with the (same) judge: a second run, then compared
    rejudged = deskbench("rejudge", "--store", store, run_id, "--quiet")
    assert "mean_final_score" in rejudged  # the re-judged run's report
    runs = json.loads(subprocess.run(
        [sys.executable, "-c", "import json,sys; from store import StoreReader; "
         "print(json.dumps([r['id'] for r in StoreReader(sys.argv[1]).runs()]))", store],
        capture_output=True, text=True, check=True, cwd=REPO).stdout)
    assert len(runs) == 2
    compared = deskbench("compare", "--store", store, *runs, "--out", str(tmp_path / "cmp"))
    html = Path(compared.split("HTML report:")[-1].strip())
    assert html.is_file() and html.parent == (tmp_path / "cmp").resolve(), compared

    # transcripts made elsewhere, every score given: scored without a model call
    transcript = {"id": "t-1", "question": "My printer is offline.", "problem": "The printer is offline.",
                  "complexity": {"critical_thinking": 3, "error_handling": 4, "topic_knowledge": 2},
                  "turns": [{"user": "My printer is offline.", "agent": "Turn it off and on.",
                             "user_helpfulness": 4, "agent_helpfulness": 6, "solved": False},
                            {"user": "It prints now.", "agent": "Good.", "user_helpfulness": 7,
                             "agent_helpfulness": 5, "solved": True}]}
    (tmp_path / "t.jsonl").write_text(json.dumps(transcript) + "\n")
    deskbench("score", "selfscore", "--transcripts", str(tmp_path / "t.jsonl"),
              "--out", str(tmp_path / "scored.jsonl"), "--no-judge", "--quiet")
    scored = json.loads((tmp_path / "scored.jsonl").read_text())
    assert scored["turns"] == 2 and scored["solved"] is True and scored["final_score"] > 0


def test_import_a_stack_exchange_dump(tmp_path):
    out = tmp_path / "su.jsonl"
    printed = deskbench("import", "stackexchange", str(REPO / "tests/fixtures/stackexchange_conlang_meta"),
                        "--min-score", "0", "--out", str(out), "--quiet")
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    assert tasks and all(t["question"].strip() for t in tasks), printed


def test_voice_check():
    printed = deskbench("voice", "check", timeout=600)  # exits 1 above the WER bound
    assert "word errors in" in printed and "OK" in printed, printed


def test_import_the_shipped_ubuntu_irc_threads(tmp_path):
    out = tmp_path / "irc.jsonl"
    printed = deskbench("import", "ubuntu-irc", "--out", str(out), "--quiet")
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    assert "ubuntu-irc: 227 threads read" in printed and len(tasks) > 50, printed
    assert all(t["question"].strip() and t["agent_replies"] for t in tasks)


def test_ray_run_on_the_embedded_model(tmp_path):
    """One shard on a local Ray instance, the embedded engine started inside the Ray worker; the
    shard's store merged into the run's store."""
    store = tmp_path / "s.sqlite"
    out = deskbench("ray", "run", "--limit", "1", "--max-turns", "1", "--shards", "1", "--store", str(store),
                    "--quiet", "--out", str(tmp_path / "run"), timeout=1200)
    assert "mean_final_score" in out
    runs = json.loads(subprocess.run(
        [sys.executable, "-c", "import json,sys; from store import StoreReader; "
         "print(json.dumps(StoreReader(sys.argv[1]).runs()))", str(store)],
        capture_output=True, text=True, check=True, cwd=REPO).stdout)
    assert len(runs) == 1 and runs[0]["status"] == "completed" and runs[0]["n_completed"] == 1, runs
    assert list((tmp_path / "shards").rglob("shard-*.sqlite")), "no shard store next to the store"


def test_agreement_with_human_labels_on_the_embedded_model(tmp_path):
    """`deskbench agreement` on four conversations of the shipped labelled set (two solved, two not,
    of its checked part, which has agent helpfulness labels on one-turn rows): the embedded judges' solved-check and agent helpfulness against the labels, both
    profiles, the machine-readable summary."""
    rows = [json.loads(line) for line in (REPO / "harness/data/agreement/labelled.jsonl").read_text().splitlines()]
    held = [r for r in rows if r["split"] == "checked" and len(r["turns"]) == 1]
    picked = [r for r in held if r["labels"]["solved"]][:2] + [r for r in held if not r["labels"]["solved"]][:2]
    small = tmp_path / "four.jsonl"
    small.write_text("".join(json.dumps(r) + "\n" for r in picked))
    out = deskbench("agreement", "--transcripts", str(small), "--profiles", "paper,embedded", "--kinds",
                    "solved,agent_helpfulness", "--store", str(tmp_path / "s.sqlite"), "--json",
                    str(tmp_path / "a.json"), "--quiet", timeout=1800)
    assert "split checked, profile paper" in out and "split checked, profile embedded" in out, out
    assert "| solved | 2 |" in out and "| not solved | 2 |" in out, out
    summary = json.loads((tmp_path / "a.json").read_text())
    for profile in ("paper", "embedded"):
        held_out = summary["profiles"][profile]["splits"]["checked"]
        assert held_out["solved"]["n"] + held_out["solved"]["failed"] == 4
        assert held_out["agent_helpfulness"]["aided"]["n"] + held_out["agent_helpfulness"]["aided"]["failed"] == 4
