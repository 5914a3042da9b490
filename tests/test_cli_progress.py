"""Progress bars of the long commands (import, rejudge, score when it judges, sanity,
robustness, models --prepare): each accepts --quiet, its bar is driven to the total on a fake
endpoint, and it draws nothing with --quiet or when stdout is not a terminal."""
import hashlib
import json
import sys
from pathlib import Path

import pytest

import harness.cli.progress as cli_progress
from harness.cli.main import main
from store import StoreReader
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_cli import role_flags

SE_DUMP = Path(__file__).parent / "fixtures" / "stackexchange_conlang_meta"


@pytest.fixture
def bars(monkeypatch):
    """Every bar a command makes, in order (the real rich bars, recorded)."""
    import harness.cli.robustness
    import harness.cli.selfscore
    made = []
    original = cli_progress.progress_bar

    def recording(quiet, console=None, unit="items"):
        made.append(original(quiet, console, unit))
        return made[-1]
    for module in (cli_progress, harness.cli.robustness, harness.cli.selfscore):
        monkeypatch.setattr(module, "progress_bar", recording)
    return made


def as_terminal(monkeypatch):
    """From now on stdout (pytest's capture, which it replaces between a test's fixtures and
    its body) is a terminal."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)


@pytest.fixture
def endpoint():
    with FakeOpenAIServer(default_responder(solve_at=None)) as server:
        yield server


def counts(bar):
    """(completed, total) of the bar's one task."""
    (task,) = bar.tasks
    return task.completed, task.total


def test_bars_are_off_with_quiet_and_when_stdout_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert not cli_progress.show_progress(False) and cli_progress.progress_bar(False).disable
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert cli_progress.show_progress(False) and not cli_progress.progress_bar(False).disable
    assert not cli_progress.show_progress(True) and cli_progress.progress_bar(True).disable


def test_import_ubuntu_irc_counts_every_thread(tmp_path, bars, capsys, monkeypatch):
    as_terminal(monkeypatch)
    from harness.tasks.jsonl import read_jsonl
    from harness.tasks.ubuntu_irc import DEFAULT_PATH
    threads = len(read_jsonl(Path(DEFAULT_PATH))[0])
    assert main(["import", "ubuntu-irc", "--out", str(tmp_path / "irc.jsonl")]) == 0
    assert counts(bars[-1]) == (threads, threads) and not bars[-1].disable
    assert f"{threads}/{threads}" in capsys.readouterr().err  # drawn on stderr
    assert main(["import", "ubuntu-irc", "--out", str(tmp_path / "irc.jsonl"), "--quiet"]) == 0
    assert bars[-1].disable and counts(bars[-1]) == (threads, threads)
    assert f"{threads}/{threads}" not in capsys.readouterr().err


def test_import_stackexchange_counts_the_bytes_of_its_three_passes(tmp_path, bars, capsys):
    size = 2 * (SE_DUMP / "Posts.xml").stat().st_size + (SE_DUMP / "Comments.xml").stat().st_size
    assert main(["import", "stackexchange", str(SE_DUMP), "--min-score", "1", "--out",
                 str(tmp_path / "se.jsonl")]) == 0
    assert counts(bars[-1]) == (size, size)
    assert bars[-1].disable  # stdout is not a terminal here


def test_import_stackexchange_reports_progress_while_reading(tmp_path):
    from harness.tasks.stackexchange import import_dump
    seen = []
    result = import_dump(SE_DUMP, min_answer_score=1, on_progress=lambda done, total: seen.append((done, total)))
    total = 2 * (SE_DUMP / "Posts.xml").stat().st_size + (SE_DUMP / "Comments.xml").stat().st_size
    assert result.kept == 11 and seen[-1] == (total, total) and {t for _, t in seen} == {total}
    done = [d for d, _ in seen]
    assert done == sorted(done) and len(set(done)) >= 3  # every pass moved it on


def test_rejudge_counts_the_conversations(tmp_path, tasks_file, endpoint, bars, capsys, monkeypatch):
    as_terminal(monkeypatch)
    store = tmp_path / "s.sqlite"
    assert main(["run", "--store", str(store), "--dataset", str(tasks_file), "--limit", "2",
                 "--max-turns", "2", "--quiet", *role_flags(endpoint.base_url)]) == 0
    source = StoreReader(store).runs()[0]["id"]
    assert main(["rejudge", "--store", str(store), source, "--repeats", "2"]) == 0
    assert [counts(b) for b in bars[-2:]] == [(2, 2), (2, 2)] and not bars[-1].disable
    assert "2/2" in capsys.readouterr().err
    assert main(["rejudge", "--store", str(store), source, "--quiet"]) == 0
    assert bars[-1].disable and counts(bars[-1]) == (2, 2)


def test_score_selfscore_counts_the_judged_interactions(tmp_path, endpoint, bars):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"t{i}", "question": "Wifi drops on Ubuntu.", "turns": [
        {"user": "Wifi drops on Ubuntu.", "agent": "Reload the driver."}]}) + "\n" for i in range(3)))
    flags = ["--transcripts", str(src), "--out", str(tmp_path / "out.jsonl"), *role_flags(endpoint.base_url)]
    assert main(["score", "selfscore", *flags]) == 0
    assert counts(bars[-1]) == (3, 3)
    assert main(["score", "selfscore", *flags, "--quiet"]) == 0
    assert bars[-1].disable and counts(bars[-1]) == (3, 3)


def test_score_without_judging_shows_no_bar(tmp_path, bars, monkeypatch):
    as_terminal(monkeypatch)
    from tests.test_transcripts import COMPLETE
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(COMPLETE) + "\n")
    assert main(["score", "selfscore", "--no-judge", "--transcripts", str(src), "--out",
                 str(tmp_path / "out.jsonl")]) == 0
    assert bars[-1].disable


def test_score_noisytoolbench_counts_the_judged_cases(tmp_path, bars):
    from harness.ntb.cases import load_case
    from tests.test_ntb_loop import agent_script, ideal, judge_approves
    keys = ["IMKI/1", "IMR/2"]
    plans = {load_case(k).query: ideal(k) for k in keys}
    agent = agent_script(lambda query, step: plans[query](query, step))
    with FakeOpenAIServer(lambda role: agent if role == "agent" else judge_approves) as server:
        roles = [f for r in ("agent", "judge") for f in
                 ("--role", f"{r}.base_url={server.base_url}", "--role", f"{r}.model={r}-fake")]
        assert main(["ntb", "run", "--store", str(tmp_path / "s.sqlite"), "--case", keys[0], "--case", keys[1],
                     "--protocol", "text", "--no-api-simulator", "--quiet", "--out", str(tmp_path / "ntb"),
                     *roles]) == 0
        assert main(["score", "noisytoolbench", "--transcripts", str(tmp_path / "ntb" / "transcripts.jsonl"),
                     "--out", str(tmp_path / "scored.csv"), "--a2-method", "llm-judge", *roles]) == 0
    assert counts(bars[-1]) == (2, 2)


def test_sanity_counts_every_judgment(tmp_path, endpoint, bars, capsys, monkeypatch):
    as_terminal(monkeypatch)
    flags = ["--pairs", "2", "--solved", "2", "--outcome", "2", "--turns", "2", "--stability", "1",
             *role_flags(endpoint.base_url)]
    assert main(["sanity", *flags]) == 0
    # helpful and useless replies, easy and hard problems, 2 + 2 cases, both versions of 2 turn
    # pairs, one message judged 5 times, one scenario per persona
    from harness.tasks.personas import PERSONAS
    total = 2 * 2 + 2 * 1 + 2 + 2 + 2 * 2 + 5 + len(PERSONAS)
    assert counts(bars[-1]) == (total, total) and not bars[-1].disable
    assert f"{total}/{total}" in capsys.readouterr().err
    assert main(["sanity", *flags, "--quiet"]) == 0
    assert bars[-1].disable and counts(bars[-1]) == (total, total)
    assert f"{total}/{total}" not in capsys.readouterr().err


def test_robustness_counts_the_pairs_and_quiet_drops_the_pair_lines(tmp_path, endpoint, bars, capsys, monkeypatch):
    as_terminal(monkeypatch)
    flags = ["--pairs", "3", "--role", f"judge.base_url={endpoint.base_url}", "--role", "judge.model=judge-fake"]
    assert main(["robustness", *flags]) == 0
    assert counts(bars[-1]) == (3, 3) and not bars[-1].disable
    err = capsys.readouterr().err
    assert "3/3" in err and "helpfulness" in err
    assert main(["robustness", *flags, "--quiet"]) == 0
    assert bars[-1].disable and counts(bars[-1]) == (3, 3)
    assert "helpfulness" not in capsys.readouterr().err


@pytest.fixture
def tiny_model(tmp_path, monkeypatch):
    """An embedded model of three 1000-byte parts, installed as packages on sys.path."""
    from harness.models import model_files
    blobs = [bytes([n]) * 1000 for n in range(3)]
    for n, blob in enumerate(blobs, 1):
        data = tmp_path / "site" / f"deskbench_test_part{n}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"part{n}.bin").write_bytes(blob)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    model = model_files.EmbeddedModel("tiny", "a test model", "deskbench_test_part{n}", 3, 3000,
                                      hashlib.sha256(b"".join(blobs)).hexdigest(), "model")
    monkeypatch.setattr(model_files, "EMBEDDED_MODELS", {"tiny": model})
    monkeypatch.setenv("DESKBENCH_CACHE", str(tmp_path / "cache"))
    return model


def test_models_prepare_counts_the_assembled_bytes(tmp_path, tiny_model, bars, capsys, monkeypatch):
    as_terminal(monkeypatch)
    seen = []
    from harness.models.model_files import ensure_model
    path = ensure_model("tiny", lambda done, total: seen.append((done, total)))
    assert seen == [(1000, 3000), (2000, 3000), (3000, 3000)] and path.stat().st_size == 3000
    path.unlink()
    assert main(["models", "--prepare"]) == 0
    assert counts(bars[-1]) == (3000, 3000) and not bars[-1].disable
    assert "tiny: ready" in capsys.readouterr().out
    assert main(["models", "--prepare", "--quiet"]) == 0  # assembled already: done at once
    assert bars[-1].disable and counts(bars[-1]) == (3000, 3000)
