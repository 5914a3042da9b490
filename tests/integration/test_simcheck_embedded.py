"""``deskbench simcheck`` on the embedded model, as a user runs it: the simulated user played at
the first 6 real reply points of the shipped troubleshooting threads (about a minute on two
cores). Skip with ``-m 'not integration'``."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("DESKBENCH_TEST_ARTIFACTS", "test-artifacts"))


def test_simcheck_on_six_points_of_the_embedded_model(tmp_path):
    summary_file = tmp_path / "simcheck.json"
    argv = [sys.executable, "-m", "harness.cli.main", "simcheck", "--store", str(tmp_path / "s.sqlite"),
            "--limit", "6", "--json", str(summary_file), "--quiet"]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "simcheck-output.txt").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "persona cooperative" in proc.stdout and "kappa" in proc.stdout and "style AUC" in proc.stdout
    summary = json.loads(summary_file.read_text())
    (group,) = summary["groups"]
    assert summary["points"] == 6 and group["failed"] == 0 and group["persona"] == "cooperative"
    tune = group["parts"]["tune"]
    assert tune["points"] == 6 and sum(map(sum, (r.values() for r in tune["acts"]["confusion"].values()))) == 6
    assert all(e["sim"] is None or e["sim"].strip() for e in tune["examples"])
    # a rerun plays nothing: every reply and statement comes from the cache next to the store
    again = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and json.loads(summary_file.read_text())["groups"][0]["parts"] == group["parts"]
