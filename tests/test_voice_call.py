"""A simulated voice call through the real batch runner and turn loop: fake LLMs (tests/fakes.py),
real piper and Whisper. Every message is spoken and transcribed; audio files, transcripts and
voice measures land in the store and the report."""
import json
from pathlib import Path

import pytest

from harness.batch import run_selfscore
from harness.cli import main
from harness.config import load_config
from harness.datasets import load_dataset
from harness.report import report_markdown
from harness.voice.audio import load_audio
from harness.voice.report import voice_summary
from harness.voice.wer import wer
from store import StoreReader
from tests.fakes import default_responder, fake_factory


@pytest.fixture(scope="module")
def voice_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("voicecall")
    tasks = tmp / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "wifi/1", "question": "My laptop wifi drops every few minutes. 😞"}) + "\n")
    cfg = load_config(overrides={"store": str(tmp / "s.sqlite"),
                                 "run": {"limit": 1, "max_turns": 2, "concurrency": 1},
                                 "voice": {"enabled": True, "telephone": True, "snr_db": 40}})
    run_id, progress = run_selfscore(cfg, load_dataset(str(tasks)),
                                     chat_models=fake_factory(default_responder(solve_at=None)))
    return cfg, run_id, progress


def test_call_stores_heard_transcripts_audio_and_measures(voice_run):
    cfg, run_id, progress = voice_run
    assert progress.failed == 0 and progress.done == 1
    reader = StoreReader(cfg.store)
    turns = reader.turns(f"{run_id}:wifi/1")
    assert [t["turn_index"] for t in turns] == [1, 2]
    for t in turns:
        extra = json.loads(t["extra_json"])
        for side, stored in (("user", t["user_message"]), ("agent", t["agent_message"])):
            v = extra[side]["voice"]
            assert stored == v["heard_text"], "the stored message is what the listener heard"
            assert v["audio"] == f"audio/{run_id}/wifi_1/{t['turn_index']}-{side}.wav"
            heard = load_audio(Path(cfg.store).parent / v["audio"])
            assert len(heard) / 16000 == pytest.approx(v["audio_s"], rel=0.05)
            assert 0.0 <= v["stt_wer"] <= 0.5 and 0.0 <= v["tts_wer"] <= 0.5
            assert v["tts_ms"] > 0 and v["stt_ms"] > 0 and "tts_check_stt_ms" in v
            assert {k: v["channel"][k] for k in ("telephone", "snr_db")} == {"telephone": True, "snr_db": 40.0}
            assert v["channel"]["line"]  # the line preset it was (here: telephone and noise)
        assert extra["agent"]["voice"]["spoken_text"].startswith("Step ")
        assert extra["agent"]["voice"]["time_to_first_audio_ms"] > extra["agent"]["voice"]["tts_first_audio_ms"]
    first = json.loads(turns[0]["extra_json"])["user"]["voice"]
    assert first["spoken_text"].endswith("😞") and "😞" not in first["cleaned_text"]
    # what the agent heard came through the phone line: its words are scored against the text
    assert "laptop" in turns[0]["user_message"].lower()
    assert first["stt_wer"] == pytest.approx(wer(first["cleaned_text"], turns[0]["user_message"]), abs=1e-4)


def test_call_is_scored_and_reported_with_voice_figures(voice_run, capsys):
    cfg, run_id, _ = voice_run
    reader = StoreReader(cfg.store)
    assert reader.scores(run_id)[0]["figures"]["turns"] == 2
    summary = voice_summary(reader, run_id)
    assert summary["agent.time_to_first_audio_ms"]["n"] == 2
    assert summary["user.stt_wer"]["n"] == 2 and summary["user.stt_wer"]["p95"] <= 0.5
    assert "## Voice" in report_markdown(reader, run_id)
    assert main(["call", "report", run_id, "--store", cfg.store]) == 0
    assert "time_to_first_audio_ms" in capsys.readouterr().out


def test_call_report_of_a_text_run_says_so(tmp_path, tasks_file, capsys):
    cfg = load_config(overrides={"store": str(tmp_path / "t.sqlite"), "run": {"limit": 1, "max_turns": 1}})
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder()))
    assert main(["call", "report", run_id, "--store", cfg.store]) == 1
    assert "no voice measures" in capsys.readouterr().out
    assert "## Voice" not in report_markdown(StoreReader(cfg.store), run_id)
    assert not (tmp_path / "audio").exists()
