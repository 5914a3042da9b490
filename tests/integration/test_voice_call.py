"""`deskbench call simulate` as the README runs it, a subprocess of the installed script on the
real embedded model: the LLM caller and the agent talk through piper and Whisper for two turns;
audio files, transcripts, measures and scores are stored. (A few minutes on 2 cores.)"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.study.voice_report import voice_summary
from harness.voice.audio import load_audio
from harness.voice.wer import word_errors
from store import StoreReader


def test_two_turn_voice_call_on_the_embedded_model(tmp_path):
    tasks = tmp_path / "calls.jsonl"
    tasks.write_text(json.dumps({"id": "printer", "question": "My office printer says paper jam, "
                                 "but there is no paper stuck inside. What should I do?"}) + "\n")
    config = tmp_path / "call.toml"
    config.write_text("[run]\nstop_on_solved = false\n")  # two turns whatever the solved-check says
    store = tmp_path / "s.sqlite"
    proc = subprocess.run([str(Path(sys.executable).with_name("deskbench")), "call", "simulate",
                           "--config", str(config), "--store", str(store), "--dataset", str(tasks),
                           "--limit", "1", "--max-turns", "2", "--concurrency", "1",
                           "--role", "agent.max_tokens=90", "--role", "user.max_tokens=50", "--quiet",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reader = StoreReader(store)
    [run] = reader.runs()
    run_id = run["id"]
    assert run["status"] == "completed" and run["n_completed"] == 1, run
    turns = reader.turns(f"{run_id}:printer")
    assert len(turns) == 2
    errors = words = 0
    for t in turns:
        extra = json.loads(t["extra_json"])
        for side in ("user", "agent"):
            v = extra[side]["voice"]
            assert v["heard_text"] == t[f"{side}_message"] and v["heard_text"].strip()
            assert len(load_audio(store.parent / v["audio"])) > 16000 * 0.5
            assert v["stt_wer"] == v["tts_wer"]
            # one short utterance can lose tenses ("I removed ... tried" heard as "I remove ...
            # try it": 3 of 7 words); garbled speech or a wrong transcript gets far more
            assert v["stt_wer"] <= 0.6, (v["cleaned_text"], v["heard_text"])
            e = word_errors(v["cleaned_text"], v["heard_text"])
            errors, words = errors + e.errors, words + e.reference_words
        agent = extra["agent"]["voice"]
        # streamed (the default): the caller waits for the end-pointer, the STT tail, the LLM's
        # first sentence and its TTS, not for the whole reply
        assert agent["pipeline"] == "streaming"
        assert agent["llm_first_sentence_ms"] <= agent["respond_ms"]
        assert agent["time_to_first_audio_ms"] == pytest.approx(
            agent["endpoint_ms"] + agent["stt_tail_ms"] + agent["llm_first_sentence_ms"]
            + agent["tts_first_chunk_ms"], abs=1.0)
    # the call's word error rate: errors over all its words (the corpus measure)
    assert words > 20 and errors / words <= 0.3, (errors, words)
    assert "paper" in turns[0]["user_message"].lower()
    assert reader.scores(run_id)[0]["figures"]["turns"] == 2
    assert voice_summary(reader, run_id)["agent.respond_ms"]["n"] == 2
    # one call alone, judges yielding (voice.judging = yield): the agent had the server to itself
    # while every judgment was still made and stored
    assert all(json.loads(t["extra_json"])["agent"]["voice"]["agent_contended_share"] <= 0.05 for t in turns)
    kinds = [j["kind"] for j in reader.judgments_for_run(run_id)]
    assert kinds.count("user_helpfulness") == 2 and kinds.count("agent_helpfulness") == 2
    report = (tmp_path / "out" / "report.md").read_text()
    assert "2/2 replies uncontended" in report and "they yielded it to the agent" in report
