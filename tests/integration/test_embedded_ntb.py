"""NoisyToolBench as the README runs it: `deskbench ntb run` on the real embedded model (one case
of each category through the text protocol, the offline API environment and the embedding-matched
user), and `deskbench score noisytoolbench --no-judge` on step logs made elsewhere. Subprocesses of
the installed script. Slow."""
import csv
import json
import subprocess
import sys
from pathlib import Path

from store import StoreReader
from tests.test_ntb_scoring import case, ideal_steps, limitation_steps

DESKBENCH = str(Path(sys.executable).with_name("deskbench"))


def test_ntb_run_one_case_per_category_on_the_embedded_model(tmp_path):
    store = tmp_path / "s.sqlite"
    proc = subprocess.run([DESKBENCH, "ntb", "run", "--store", str(store), "--per-category", "1",
                           "--max-steps", "4", "--quiet", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "overall" in proc.stdout
    reader = StoreReader(store)
    run = reader.runs()[0]
    assert run["kind"] == "noisytoolbench" and run["n_completed"] == 4 and run["status"] == "completed"
    for i in reader.interactions(run["id"]):
        steps = [json.loads(t["extra_json"]) for t in reader.turns(i["id"])]
        assert 1 <= len(steps) <= 4 and i["stop_reason"] in ("answered", "max_steps", "max_model_calls")
        for s in steps:
            assert s["type"] in ("ask", "call", "answer")
            if s["type"] == "call":
                assert s["source"] in ("recorded", "response_example", "template", "llm_simulated", "error")
            if s["type"] == "ask":
                # cosine similarity: an unrelated question can score below zero
                assert isinstance(s["matched"], bool) and -1.0001 <= s["similarity"] <= 1.0001
                assert not s["matched"] or s["similarity"] >= s["threshold"]
    rows = [s["figures"] for s in reader.scores(run["id"], "noisytoolbench")]
    assert len(rows) == 4 and {r["category"] for r in rows} == {"IMKI", "IMR", "IwE", "IBTC"}
    for r in rows:
        assert r["A1"] in (0, 1) and r["A2"] in (0, 1, None) and r["redundant_asking"] >= 0
    with open(tmp_path / "out" / "cases.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 4


def test_score_noisytoolbench_transcripts_without_a_judge(tmp_path):
    imki, imr = case("IMKI", 1), case("IMR", 2)
    never_asks = [s for s in ideal_steps(imr) if s["type"] != "ask"]
    lines = [{"category": "IMKI", "query_id": 1, "steps": ideal_steps(imki)},
             {"category": "IMR", "query_id": 2, "steps": never_asks},
             {"category": "IBTC", "query_id": 1, "steps": limitation_steps()}]
    src = tmp_path / "other.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "scored.csv"
    proc = subprocess.run([DESKBENCH, "score", "noisytoolbench", "--transcripts", str(src), "--out", str(out),
                           "--no-judge"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    # the one that asked the anticipated question gets A1; the one that never asked does not
    assert [(r["category"], r["A1"], r["A3"]) for r in rows] == [("IMKI", "1", ""), ("IMR", "0", ""), ("IBTC", "0", "")]
