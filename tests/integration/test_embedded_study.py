"""The paper's study in miniature on the real embedded model: plain agent vs RAG agent vs the
human baseline on the same questions, then ``compare``: the README's ``run --agent rag --kb``,
``run --agent human`` and ``compare``, each a subprocess of the installed script. Slow; skip with
-m 'not integration'."""
import gzip
import json
import subprocess
import sys
from pathlib import Path

from harness.tasks.datasets import BUILTIN
from store import StoreReader

DESKBENCH = str(Path(sys.executable).with_name("deskbench"))


def deskbench(*args: str) -> str:
    proc = subprocess.run([DESKBENCH, *args], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"deskbench {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_plain_rag_and_human_baseline_then_compare(tmp_path):
    rows = [json.loads(line) for line in gzip.open(BUILTIN["lfrqa_technology"], "rt")]
    test_rows, kb_rows = rows[:2], rows[100:160]
    test = tmp_path / "test.jsonl"
    # the human baseline replays the human-written reference answer as the agent's reply
    test.write_text("\n".join(json.dumps({**r, "agent_replies": [r["reference_answer"]]})
                              for r in test_rows) + "\n")
    kb = tmp_path / "kb.jsonl"
    kb.write_text("\n".join(json.dumps(r) for r in kb_rows) + "\n")
    store = tmp_path / "s.sqlite"
    common = ["--store", str(store), "--dataset", str(test), "--limit", "2", "--max-turns", "1",
              "--concurrency", "2", "--quiet"]
    deskbench("run", *common)
    deskbench("run", "--agent", "rag", "--kb", str(kb), *common)
    deskbench("run", "--agent", "human", *common)
    reader = StoreReader(store)
    runs = reader.runs()
    assert [r["kind"] for r in runs] == ["selfscore", "selfscore", "human_baseline"]
    assert [r["n_completed"] for r in runs] == [2, 2, 2]
    rag_turn = reader.turns(reader.interactions(runs[1]["id"])[0]["id"])[0]
    assert len(json.loads(rag_turn["extra_json"])["agent"]["retrieved"]) == 3
    out = deskbench("compare", "--store", str(store), *[r["id"] for r in runs], "--out", str(tmp_path / "cmp"))
    assert "p-adj" in out
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert "Tukey" in html and "human_" in html and "+rag" in html
