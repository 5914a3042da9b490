"""NoisyToolBench on the real embedded model: one case of each category through the text
protocol, the offline API environment and the embedding-matched user. Slow."""
import json

from harness.cli import main
from store import StoreReader


def test_one_case_per_category_on_the_embedded_model(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    rc = main(["ntb", "run", "--store", str(store), "--per-category", "1", "--max-steps", "4", "--quiet",
               "--out", str(tmp_path / "out")])
    assert rc == 0, capsys.readouterr()
    reader = StoreReader(store)
    run = reader.runs()[0]
    assert run["kind"] == "noisytoolbench" and run["n_completed"] == 4
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
    assert (tmp_path / "out" / "cases.csv").exists()
    assert "overall" in capsys.readouterr().out
