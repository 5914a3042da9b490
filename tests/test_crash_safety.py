"""Crash safety, proven by killing: a SelfScore batch SIGKILLed at random points many times and
resumed each time ends with every interaction complete exactly once, no turn lost or
duplicated, a sound store, and the scores of a clean run (deterministic fake models)."""
import json

import pytest

from harness.compose import run_selfscore
from harness.config import load_config
from harness.tasks.datasets import load_dataset
from store import StoreReader
from tests.crash_harness import ROLES, batch_argv, crash_and_resume, die_at, integrity, run_id_in
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_resume_and_failures import figures, snapshot

QUESTIONS = ["My laptop wifi drops every few minutes on Ubuntu 22.04.",
             "My disk is full but du shows only half used.",
             "Websites do not load but ping 8.8.8.8 works.",
             "The printer prints blank pages after a driver update.",
             "Bluetooth headphones connect but play no sound.",
             "Ssh asks for a password although my key is installed."]


@pytest.fixture
def six_tasks(tmp_path):
    path = tmp_path / "six.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "question": q}) + "\n" for i, q in enumerate(QUESTIONS)))
    return path


@pytest.fixture
def server():
    with FakeOpenAIServer(default_responder(solve_at=None)) as s:
        yield s


def clean_run(tmp_path, tasks, url, limit, max_turns):
    cfg = load_config(overrides={
        "store": str(tmp_path / "clean.sqlite"),
        "roles": {r: {"base_url": url, "model": f"{r}-fake"} for r in ROLES},
        "run": {"limit": limit, "max_turns": max_turns, "concurrency": 2}})
    run_id, progress = run_selfscore(cfg, load_dataset(str(tasks)))
    assert progress.failed == 0
    return StoreReader(cfg.store), run_id


def assert_exactly_once_and_equal_to_clean(store, run_id, clean, n_interactions):
    assert integrity(store) == "ok"
    reader = StoreReader(store)
    assert reader.run(run_id)["status"] == "completed"
    interactions = reader.interactions(run_id)
    assert len(interactions) == n_interactions and {i["status"] for i in interactions} == {"completed"}
    scores = reader.scores(run_id)
    assert sorted(s["interaction_id"] for s in scores) == sorted(i["id"] for i in interactions)
    for i in interactions:
        turns = reader.turns(i["id"])
        assert [t["turn_index"] for t in turns] == list(range(1, len(turns) + 1)) and i["n_turns"] == len(turns)
        per_turn = [j["turn_index"] for j in reader.judgments_for_run(run_id)
                    if j["interaction_id"] == i["id"] and j["turn_index"] is not None]
        assert sorted(per_turn) == sorted([t["turn_index"] for t in turns] * 3)  # 3 judgments a turn
        assert [j for j in reader.judgments_for_run(run_id)
                if j["interaction_id"] == i["id"] and j["kind"] == "complexity"].__len__() == 1
    assert snapshot(reader, run_id) == snapshot(*clean)
    assert figures(reader, run_id) == figures(*clean)


def test_fifteen_random_sigkills_and_resumes_equal_a_clean_run(tmp_path, six_tasks, server):
    clean = clean_run(tmp_path, six_tasks, server.base_url, limit=6, max_turns=5)
    store = tmp_path / "killed.sqlite"
    report = crash_and_resume(store, six_tasks, server, kills=15, seed=11, mode="fork",
                              limit=6, max_turns=5, concurrency=2, max_requests_before_kill=12)
    assert report.kills == 15 and report.final_rc == 0, report
    assert report.integrity == ["ok"] * 15
    assert_exactly_once_and_equal_to_clean(store, report.run_id, clean, 6)


def test_the_real_cli_process_killed_and_resumed(tmp_path, six_tasks, server):
    clean = clean_run(tmp_path, six_tasks, server.base_url, limit=2, max_turns=3)
    store = tmp_path / "killed.sqlite"
    report = crash_and_resume(store, six_tasks, server, kills=1, seed=5, mode="subprocess",
                              limit=2, max_turns=3, concurrency=2, max_requests_before_kill=15)
    assert report.kills == 1 and report.final_rc == 0 and report.integrity == ["ok"], report
    assert_exactly_once_and_equal_to_clean(store, report.run_id, clean, 2)


# -- killed at the very end: after the last conversation, while status, report and exports are written
END_OF_RUN = ["before_run_status", "before_report", "before_exports", "before_html", "before_exit"]
SELFSCORE_FILES = ("report.md", "interactions.jsonl", "interactions.csv", "turns.jsonl", "report.html")


def test_killed_at_every_end_of_run_point_a_resume_finishes_the_run(tmp_path, six_tasks, server):
    """Two random kills, then one at each moment after the last conversation completed: each
    resume has nothing left to play (after the first) and must still finish the run."""
    clean = clean_run(tmp_path, six_tasks, server.base_url, limit=3, max_turns=3)
    store = tmp_path / "killed.sqlite"
    report = crash_and_resume(store, six_tasks, server, kills=2, seed=4, mode="fork", limit=3,
                              max_turns=3, concurrency=2, max_requests_before_kill=10,
                              end_kills=END_OF_RUN)
    assert report.kills == 2 and report.end_kills == END_OF_RUN and report.final_rc == 0, report
    assert report.integrity == ["ok"] * 7
    assert_exactly_once_and_equal_to_clean(store, report.run_id, clean, 3)
    assert StoreReader(store).run(report.run_id)["finished_at"]
    assert all((tmp_path / "out" / f).stat().st_size > 0 for f in SELFSCORE_FILES)


def test_a_resume_with_nothing_left_makes_no_model_call_and_exits_0(tmp_path, six_tasks, server, capsys):
    """The kill landed before the run's status was stored: the resume plays nothing, marks the
    run completed, writes the report and exports and exits 0 (it used to fail on asyncio.wait
    of an empty set, leaving the run interrupted, on every resume)."""
    from harness.cli.main import main
    store = tmp_path / "s.sqlite"
    report = crash_and_resume(store, six_tasks, server, kills=0, limit=2, max_turns=2,
                              end_kills=["before_run_status"])
    assert report.end_kills == ["before_run_status"] and report.final_rc == 0, report
    reader = StoreReader(store)
    assert reader.run(report.run_id)["status"] == "completed"
    before = len(server.requests)
    for _ in range(2):  # and again: a completed run resumed is reported again, nothing replayed
        assert main(["run", "--store", str(store), "--resume", report.run_id, "--quiet",
                     "--out", str(tmp_path / "again")]) == 0
        assert "Report:" in capsys.readouterr().out
    assert len(server.requests) == before
    assert reader.run(report.run_id)["status"] == "completed"
    assert (tmp_path / "again" / "report.md").exists()


def test_the_real_cli_process_killed_before_its_report_is_finished_by_a_resume(tmp_path, six_tasks, server):
    clean = clean_run(tmp_path, six_tasks, server.base_url, limit=2, max_turns=2)
    store = tmp_path / "killed.sqlite"
    report = crash_and_resume(store, six_tasks, server, kills=0, mode="subprocess", limit=2,
                              max_turns=2, end_kills=["before_report"])
    assert report.end_kills == ["before_report"] and report.final_rc == 0, report
    assert_exactly_once_and_equal_to_clean(store, report.run_id, clean, 2)
    assert (tmp_path / "out" / "report.md").exists()


# NoisyToolBench: the same end-of-run points (its exports are cases.csv, transcripts, summary)
NTB_CASES = ["IMKI/1", "IMR/2"]
NTB_END_OF_RUN = ["before_run_status", "before_exports", "before_exit"]


@pytest.fixture
def ntb_server():
    from harness.ntb.cases import load_case
    from tests.test_ntb_loop import agent_script, ideal, judge_approves

    plans = {load_case(k).query: ideal(k) for k in NTB_CASES}
    agent = agent_script(lambda query, step: plans[query](query, step))
    with FakeOpenAIServer(lambda role: agent if role == "agent" else judge_approves) as s:
        yield s


def ntb_argv(store, url):
    roles = [f for r in ("agent", "judge") for f in ("--role", f"{r}.base_url={url}", "--role", f"{r}.model={r}-fake")]
    out = ["--quiet", "--out", str(store.parent / "out")]

    def argv(run_id):
        if run_id:
            return ["ntb", "run", "--store", str(store), "--resume", run_id, *out]
        return ["ntb", "run", "--store", str(store), *(a for k in NTB_CASES for a in ("--case", k)),
                "--protocol", "text", "--no-api-simulator", "--concurrency", "2", *out, *roles]
    return argv


def ntb_results(reader, run_id):
    return {i["task_id"]: ([t["extra_json"] for t in reader.turns(i["id"])], i["status"], i["n_turns"])
            for i in reader.interactions(run_id)}, \
        {s["interaction_id"].split(":", 1)[1]: {k: v for k, v in s["figures"].items() if k != "interaction_id"}
         for s in reader.scores(run_id, "noisytoolbench")}


def test_ntb_run_killed_at_every_end_of_run_point_is_finished_by_resumes(tmp_path, ntb_server):
    from harness.cli.main import main
    store = tmp_path / "killed.sqlite"
    # fork mode: the embedding model is loaded only in the children (the clean run comes after)
    report = crash_and_resume(store, None, ntb_server, kills=0, end_kills=NTB_END_OF_RUN,
                              argv=ntb_argv(store, ntb_server.base_url))
    assert report.end_kills == NTB_END_OF_RUN and report.final_rc == 0, report
    assert report.integrity == ["ok"] * 3
    reader = StoreReader(store)
    assert reader.run(report.run_id)["status"] == "completed"
    assert all((tmp_path / "out" / f).exists() for f in ("cases.csv", "transcripts.jsonl", "summary.json"))
    clean_store = tmp_path / "clean.sqlite"
    assert main(ntb_argv(clean_store, ntb_server.base_url)(None)) == 0
    clean = StoreReader(clean_store)
    steps, scores = ntb_results(reader, report.run_id)
    assert {k: v[1:] for k, v in steps.items()} == {k: ("completed", len(v[0])) for k, v in steps.items()}
    assert (steps, scores) == ntb_results(clean, clean.runs()[0]["id"])
    assert len(scores) == len(NTB_CASES)


# Voice calls (`deskbench call simulate`), resumed like any run with `deskbench run --resume`.
# Speech is faked by a text-preserving speaker and transcriber (the real ones: test_voice_call.py)
class TextSpeaker:
    """'Speaks' a text as its code points, so :class:`TextTranscriber` hears it exactly."""

    engine = "text"  # as harness.voice.tts.Speaker: the streamed pipeline records it

    async def aspeak(self, text, out_path=None):
        import numpy as np
        from harness.voice.tts import SpeechResult
        return SpeechResult(None, 2.0, 1.0, text, "text", 16000, np.array([ord(c) for c in text], dtype=float))


class TextTranscriber:
    async def atranscribe(self, audio, sample_rate=16000):
        from harness.voice.stt import Transcript
        return Transcript("".join(chr(int(x)) for x in audio), len(audio) / sample_rate, 3.0)


@pytest.fixture
def text_speech(monkeypatch):
    import harness.voice.call as call

    def build_link(voice_config, store_path):
        return call.SpeechLink(TextSpeaker(), TextTranscriber(), call.Channel(), None, store_path)
    monkeypatch.setattr(call, "build_link", build_link)  # the forked batches inherit it


def test_voice_call_run_killed_at_every_end_of_run_point_is_finished_by_resumes(
        tmp_path, six_tasks, server, text_speech):
    store = tmp_path / "killed.sqlite"
    roles = [f for r in ROLES for f in ("--role", f"{r}.base_url={server.base_url}", "--role", f"{r}.model={r}-fake")]

    def argv(run_id):
        out = ["--quiet", "--out", str(tmp_path / "out")]
        if run_id:
            return ["run", "--store", str(store), "--resume", run_id, *out]
        return ["call", "simulate", "--store", str(store), "--dataset", str(six_tasks), "--limit", "2",
                "--max-turns", "2", "--concurrency", "2", *out, *roles]
    report = crash_and_resume(store, six_tasks, server, kills=0, end_kills=END_OF_RUN, argv=argv)
    assert report.end_kills == END_OF_RUN and report.final_rc == 0, report
    reader = StoreReader(store)
    run = reader.run(report.run_id)
    assert run["status"] == "completed" and run["config"]["voice"]["enabled"]
    for i in reader.interactions(report.run_id):
        turns = reader.turns(i["id"])
        assert i["status"] == "completed" and [t["turn_index"] for t in turns] == [1, 2]
        assert all(json.loads(t["extra_json"])["agent"]["voice"]["heard_text"] == t["agent_message"] for t in turns)
    assert len(reader.scores(report.run_id)) == 2
    assert "## Voice" in (tmp_path / "out" / "report.md").read_text()
    assert all((tmp_path / "out" / f).exists() for f in SELFSCORE_FILES)


def test_a_resume_with_nothing_left_builds_no_model_client(tmp_path, six_tasks, server):
    """On the embedded model a client starts the engine (minutes): a resume with nothing left
    must not build one."""
    from harness.compose import run_selfscore
    store = tmp_path / "s.sqlite"
    die_at("before_run_status", batch_argv(store, six_tasks, server.base_url, 2, 2, 2))
    run_id = run_id_in(store)
    assert StoreReader(store).run(run_id)["status"] == "running"  # killed before its status

    def no_client(role, spec):
        raise AssertionError(f"a {role} client was built for a resume with nothing to play")
    cfg = load_config(overrides=StoreReader(store).run(run_id)["config"])
    seen = []
    run_id, progress = run_selfscore(cfg, resume=run_id, chat_models=no_client,
                                     on_progress=lambda p: seen.append((p.done, p.total, p.turns)))
    assert (progress.done, progress.failed, progress.total) == (2, 0, 2) and seen == [(2, 2, 4)]
    assert StoreReader(store).run(run_id)["status"] == "completed"


# Ray (`deskbench ray run`): a shard retried after its worker died at the end, and the driver
ray_installed = pytest.mark.skipif(__import__("importlib").util.find_spec("ray") is None,
                                   reason="ray is not installed (pip install -e '.[scale]')")


def test_a_shard_retried_after_its_worker_died_at_the_end_finishes(tmp_path, six_tasks, server):
    """Ray re-runs a shard whose worker died; when it died after the shard's last conversation
    the retry has nothing left to play (it used to raise ValueError, failing the shard)."""
    import os

    from harness.scale.shards import create_run, plan_shards, run_shard
    from tests.crash_harness import arm
    cfg = load_config(overrides={"store": str(tmp_path / "driver.sqlite"),
                                 "roles": {r: {"base_url": server.base_url, "model": f"{r}-fake"} for r in ROLES},
                                 "run": {"limit": 2, "max_turns": 2, "concurrency": 2}})
    run_id = create_run(cfg, "selfscore", load_dataset(str(six_tasks)))
    spec = plan_shards(cfg.store, run_id, 1, tmp_path / "shards", "selfscore")[0]
    pid = os.fork()
    if pid == 0:  # the shard's worker, killed before it stores the shard run's final status
        try:
            arm("before_run_status")
            run_shard(spec, spec.path)
        finally:
            os._exit(70)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == -9
    shard = StoreReader(spec.path)
    assert {i["status"] for i in shard.interactions(run_id)} == {"completed"}
    before = len(server.requests)
    progress = run_shard(spec, spec.path)  # Ray's retry of the shard task
    assert (progress.done, progress.failed) == (2, 0) and len(server.requests) == before
    assert StoreReader(spec.path).run(run_id)["status"] == "completed"


@ray_installed
@pytest.mark.parametrize("point", ["before_run_status", "before_report"])
def test_ray_run_resume_of_a_run_killed_at_the_end_finishes_it_without_starting_ray(
        tmp_path, six_tasks, server, point):
    import subprocess
    import sys
    from pathlib import Path
    store = tmp_path / "s.sqlite"
    report = crash_and_resume(store, six_tasks, server, kills=0, limit=2, max_turns=2, end_kills=[point])
    assert report.end_kills == [point]
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "harness.cli", "ray", "run", "--store", str(store),
                           "--resume", report.run_id, "--quiet", "--out", str(tmp_path / "ray-out")],
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ray_init" not in done.stderr and "Report:" in done.stdout  # Ray was not started
    assert StoreReader(store).run(report.run_id)["status"] == "completed"
    assert all((tmp_path / "ray-out" / f).exists() for f in SELFSCORE_FILES)


@ray_installed
def test_ray_run_driver_killed_before_its_merges_and_report_is_finished_by_resumes(
        tmp_path, six_tasks, server):
    """The real ``deskbench ray run`` (a local Ray instance, 2 shards) dies once its shards
    finished but before it merged their stores, then, resumed, before its report: each
    ``ray run --resume`` merges what is there and finishes the run without starting Ray again."""
    store = tmp_path / "driver.sqlite"
    roles = [f for r in ROLES for f in ("--role", f"{r}.base_url={server.base_url}", "--role", f"{r}.model={r}-fake")]
    out = ["--quiet", "--out", str(tmp_path / "out")]

    def argv(run_id):
        if run_id:
            return ["ray", "run", "--store", str(store), "--resume", run_id, *out]
        return ["ray", "run", "--store", str(store), "--dataset", str(six_tasks), "--limit", "2",
                "--max-turns", "2", "--shards", "2", *out, *roles]
    report = crash_and_resume(store, six_tasks, server, kills=0, mode="subprocess", timeout_s=400,
                              end_kills=["before_merge", "before_report"], argv=argv)
    assert report.end_kills == ["before_merge", "before_report"] and report.final_rc == 0, report
    reader = StoreReader(store)
    assert reader.run(report.run_id)["status"] == "completed"
    interactions = reader.interactions(report.run_id)
    assert [i["status"] for i in interactions] == ["completed"] * 2 and len(reader.scores(report.run_id)) == 2
    assert all([t["turn_index"] for t in reader.turns(i["id"])] == [1, 2] for i in interactions)
    assert sorted(p.name for p in (tmp_path / "shards" / report.run_id).glob("shard-*")
                  if not p.name.endswith(("-wal", "-shm"))) == ["shard-0.sqlite.merged", "shard-1.sqlite.merged"]
    assert all((tmp_path / "out" / f).exists() for f in SELFSCORE_FILES)
