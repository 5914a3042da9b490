"""Configuration layering and validation; task files and their errors."""
import gzip
import json

import pytest

from graphs.protocols import Message
from harness.config import ConfigError, load_config
from harness.selfscore.transcript import render_conversation
from harness.tasks.datasets import DatasetError, load_dataset


def test_defaults_every_role_on_the_embedded_1_5b_model_with_bounded_output():
    cfg = load_config(environ={})
    for role in ("agent", "user", "judge", "complexity", "extractor"):
        spec = cfg.role(role)
        assert spec.embedded and spec.model == "qwen2.5-coder-1.5b" and 0 < spec.max_tokens <= 8192
    assert cfg.run.max_turns == 50 and cfg.role("judge").temperature == 0.0


def test_layering_file_then_env_then_flags(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[roles.judge]\nmodel = "from-file"\nbase_url = "http://a/v1"\n[run]\nlimit = 7\n')
    env = {"DESKBENCH_ROLES__JUDGE__MODEL": "from-env", "DESKBENCH_RUN__LIMIT": "9"}
    cfg = load_config(f, {"run": {"limit": 11}}, environ=env)
    assert cfg.role("judge").model == "from-env" and cfg.role("judge").base_url == "http://a/v1"
    assert cfg.role("judge").temperature == 0.0  # role defaults survive a partial override
    assert cfg.run.limit == 11


@pytest.mark.parametrize("text,needle", [
    ("[run]\nlimt = 3\n", "run.limt"),
    ("[run]\nmax_turns = 'many'\n", "run.max_turns"),
    ("[roles.judge]\nmax_tokens = 0\n", "roles.judge.max_tokens"),
    ("[scoring]\nweights = [0.5, 0.5, 0.5]\n", "sum to 1"),
    ("this is = = not toml", "not valid TOML"),
])
def test_bad_config_names_the_key(tmp_path, text, needle):
    f = tmp_path / "c.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.") if "." in needle else needle):
        load_config(f, environ={})


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml", environ={})


def test_builtin_dataset_is_shipped():
    ds = load_dataset("lfrqa_technology")
    assert len(ds.tasks) == 2064 and ds.tasks[0].question and ds.tasks[0].reference_answer


def test_gzip_and_optional_fields(tmp_path):
    p = tmp_path / "t.jsonl.gz"
    with gzip.open(p, "wt") as f:
        f.write(json.dumps({"id": 5, "question": " q ", "problem": "p", "followups": ["a"]}) + "\n\n")
    ds = load_dataset(str(p))
    assert ds.name == "t" and ds.tasks[0].id == "5" and ds.tasks[0].question == "q"
    assert ds.tasks[0].problem == "p" and ds.tasks[0].followups == ["a"]


@pytest.mark.parametrize("content,needle", [
    (b"", "no tasks"),
    (b'{"id": "a"}\n', "line 1: field 'question'"),
    (b'{"id": "a", "question": "q"}\n{"id": "a", "question": "q"}\n', "line 2: duplicate id"),
    (b'{"id": "a", "question": "q"}\nnot json\n', "line 2: not valid JSON"),
    (b'["a"]\n', "JSON object"),
    (b'{"id": "a", "question": "q", "followups": "x"}\n', "followups"),
    ("{\"id\": \"a\", \"question\": \"caf\u00e9\"}\n".encode("latin-1"), "not UTF-8"),
    (b"\x1f\x8b\x08garbage", "corrupt gzip"),
])
def test_bad_task_files_name_line_and_field(tmp_path, content, needle):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(content)
    with pytest.raises(DatasetError, match=needle):
        load_dataset(str(p))


def test_conversation_window_keeps_question_and_latest_turns():
    history = [Message("user", "QUESTION")] + [Message("agent" if i % 2 == 0 else "user", f"m{i} " + "x" * 500)
                                              for i in range(40)]
    text = render_conversation(history, max_chars=3000)
    assert text.startswith("<conversation>\nUSER: QUESTION") and "m39" in text
    assert "earlier messages omitted" in text and "m0 " not in text and len(text) < 3600


def test_atomic_write_never_leaves_a_half_written_file(tmp_path):
    from harness.tasks.jsonl import atomic_write, write_jsonl
    target = tmp_path / "sub" / "out.jsonl"
    assert write_jsonl(target, [{"a": 1}, {"b": "é"}]) == 2
    assert target.read_text(encoding="utf-8") == '{"a": 1}\n{"b": "é"}\n'
    with pytest.raises(RuntimeError):
        with atomic_write(target) as f:
            f.write("partial")
            raise RuntimeError("interrupted")
    assert target.read_text(encoding="utf-8").startswith('{"a": 1}')
    assert [p.name for p in target.parent.iterdir()] == ["out.jsonl"]


def test_ubuntu_irc_builtin_sets_load_by_name():
    everything = load_dataset("ubuntu_irc")
    assert everything.name == "ubuntu_irc" and len(everything.tasks) == 227
    assert sum(bool(t.facts) for t in everything.tasks) == 162
    subset = load_dataset("ubuntu_irc_troubleshooting")
    assert subset.name == "ubuntu_irc_troubleshooting" and len(subset.tasks) == 30
    assert {t.id for t in subset.tasks} <= {t.id for t in everything.tasks}
    assert all(t.facts and t.agent_replies for t in subset.tasks)
    assert subset.tasks[0].id == "ubuntu-irc-2014-06-18_13#1236"


def test_agent_reply_bound_is_a_setting_and_zero_keeps_the_papers_prompt(tmp_path):
    from harness.compose import Runtime
    from tests.fakes import default_responder, fake_factory
    from tests.test_paper_profile import PAPER_AGENT  # the paper's words, not the module's constant
    bounded = Runtime(load_config(overrides={"store": str(tmp_path / "s.sqlite")}),
                      fake_factory(default_responder()))
    verbatim = Runtime(load_config(overrides={"store": str(tmp_path / "s.sqlite"),
                                              "run": {"agent_reply_sentences": 0}}),
                       fake_factory(default_responder()))
    try:
        assert bounded.llm_agent("plain").system_prompt == PAPER_AGENT + (
            " Answer in at most 3 short sentences. Give only the one most likely next step, never a numbered list.")
        assert verbatim.llm_agent("plain").system_prompt == PAPER_AGENT
    finally:
        bounded.close()
        verbatim.close()
