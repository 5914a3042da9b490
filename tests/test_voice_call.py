"""A simulated voice call through the real batch runner and turn loop: fake LLMs (tests/fakes.py),
real piper and Whisper. Every message is spoken and transcribed; audio files, transcripts and
voice measures land in the store and the report. Then the four voice wrappers on tone speech
(fast): their measures, a hang-up, a silent reply, the caller's recasing."""
import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from graphs.protocols import Message, Problem, Reply
from harness.cli.main import main
from harness.compose import run_selfscore
from harness.config import load_config
from harness.study.report import report_markdown
from harness.study.voice_report import voice_summary
from harness.tasks.datasets import load_dataset
from harness.voice.audio import load_audio
from harness.voice.call import Channel, StreamingVoiceAgent, StreamingVoiceUser, VoiceAgent, VoiceUser
from harness.voice.wer import wer
from store import StoreReader
from tests.fakes import default_responder, fake_factory
from tests.test_voice_stream_fakes import tone_link


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
    errors = {"stt": 0.0, "tts": 0.0}
    words = 0
    for t in turns:
        extra = json.loads(t["extra_json"])
        for side, stored in (("user", t["user_message"]), ("agent", t["agent_message"])):
            v = extra[side]["voice"]
            assert stored == v["heard_text"], "the stored message is what the listener heard"
            assert v["audio"] == f"audio/{run_id}/wifi_1/{t['turn_index']}-{side}.wav"
            heard = load_audio(Path(cfg.store).parent / v["audio"])
            assert len(heard) / 16000 == pytest.approx(v["audio_s"], rel=0.05)
            assert 0.0 <= v["stt_wer"] and 0.0 <= v["tts_wer"]
            n = len(v["cleaned_text"].split())
            words += n
            errors["stt"] += v["stt_wer"] * n
            errors["tts"] += v["tts_wer"] * n
            assert v["tts_ms"] > 0 and v["stt_ms"] > 0 and "tts_check_stt_ms" in v
            assert {k: v["channel"][k] for k in ("telephone", "snr_db")} == {"telephone": True, "snr_db": 40.0}
            assert v["channel"]["line"]  # the line preset it was (here: telephone and noise)
        assert extra["agent"]["voice"]["spoken_text"].startswith("Step ")
        assert extra["agent"]["voice"]["time_to_first_audio_ms"] > extra["agent"]["voice"]["tts_first_audio_ms"]
    # one message may be misheard badly (a CI machine heard 4 of the first 7 words wrong, WER 0.57:
    # Whisper falls back to sampling on a low-confidence decode); over the call's 36 words the
    # listener must still get most of them right
    assert errors["stt"] / words <= 0.25 and errors["tts"] / words <= 0.25
    first = json.loads(turns[0]["extra_json"])["user"]["voice"]
    assert first["spoken_text"].endswith("😞") and "😞" not in first["cleaned_text"]
    # what the agent heard came through the phone line (small Whisper on a noisy narrow band may
    # mishear a word: "laptop" was once "last cup"): its words are scored against the text
    heard_words = set(turns[0]["user_message"].lower().strip(".").split())
    assert heard_words & {"wifi", "drops", "every", "few", "minutes"}
    assert first["stt_wer"] == pytest.approx(wer(first["cleaned_text"], turns[0]["user_message"]), abs=1e-4)


def test_call_is_scored_and_reported_with_voice_figures(voice_run, capsys):
    cfg, run_id, _ = voice_run
    reader = StoreReader(cfg.store)
    assert reader.scores(run_id)[0]["figures"]["turns"] == 2
    summary = voice_summary(reader, run_id)
    assert summary["agent.time_to_first_audio_ms"]["n"] == 2
    assert summary["user.stt_wer"]["n"] == 2 and summary["user.stt_wer"]["mean"] <= 0.5
    stored = [json.loads(t["extra_json"])["user"]["voice"]["stt_wer"] for t in reader.turns(f"{run_id}:wifi/1")]
    assert summary["user.stt_wer"]["mean"] == pytest.approx(np.mean(stored), abs=1e-4)
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


# --- the four voice wrappers on the tone speech of tests/test_voice_stream_fakes.py (fast) ---

INNER_MS = 40.0
_SPOKEN = ["spoken_text", "channel", "cleaned_text", "tts_engine", "tts_ms", "tts_first_audio_ms"]
_HEARD = ["audio", "heard_text", "audio_s", "stt_ms", "stt_wer", "tts_wer"]
_CHECK = ["tts_check_stt_ms"]
_CHUNKED = ["stt_chunks", "stt_tail_ms", "stt_chunk_ms", "speech_end_s"]
_STREAMED = ["spoken_text", "channel", "cleaned_text", "pipeline", "llm_streamed", "spoken_chunks",
             "llm_first_sentence_ms", "tts_first_chunk_ms", "agent_first_audio_ms", "playback_stall_ms",
             "respond_ms", "tts_engine", "tts_ms", "tts_first_audio_ms"]


def _keys(streamed: bool, degraded: bool) -> tuple[list[str], list[str]]:
    """The measures' keys, in order, of a caller message and an agent reply (as stored before
    the wrappers shared their prologue)."""
    check = _CHECK if degraded else []
    if not streamed:
        user = _SPOKEN + _HEARD + check + ["respond_ms"]
        return user, user + ["time_to_first_audio_ms"]
    user = _SPOKEN + ["pipeline"] + _HEARD + check + _CHUNKED + ["respond_ms"]
    return user, _STREAMED + _HEARD + check + ["stt_tail_ms", "endpoint_ms", "time_to_first_audio_ms"]


class _Said:
    """An inner user or agent that takes ``INNER_MS`` and then says ``text``."""

    def __init__(self, text):
        self.text = text

    async def respond(self, *args):
        await asyncio.sleep(INNER_MS / 1000.0)
        return Reply(self.text)


def _turn(streamed, link, user_text="I restarted it. It still drops.",
          agent_text="Open the settings. Then restart the laptop."):
    user_cls, agent_cls = (StreamingVoiceUser, StreamingVoiceAgent) if streamed else (VoiceUser, VoiceAgent)
    problem = Problem("r:1", "q", None, None)
    user = asyncio.run(user_cls(_Said(user_text), link).respond(problem, [], 1))
    history = [Message("user", user.text)] if user.text is not None else []
    return user, asyncio.run(agent_cls(_Said(agent_text), link).respond(problem, history))


@pytest.mark.parametrize("streamed", [False, True], ids=["turn-based", "streamed"])
@pytest.mark.parametrize("degraded", [False, True], ids=["clean", "noise"])
def test_voice_wrappers_keep_their_measures(tmp_path, streamed, degraded):
    link = tone_link(str(tmp_path / "s.sqlite"))
    if degraded:
        link.channel = Channel(snr_db=40)
    user, agent = _turn(streamed, link)
    u, a = user.extra["voice"], agent.extra["voice"]
    assert (list(u), list(a)) == _keys(streamed, degraded)
    assert user.text == u["heard_text"] and agent.text == a["heard_text"]
    assert u["respond_ms"] >= INNER_MS and a["respond_ms"] >= INNER_MS
    if streamed:   # endpoint + the caller's STT tail + the agent's first audio
        wait = a["endpoint_ms"] + u["stt_tail_ms"] + a["agent_first_audio_ms"]
    else:          # the caller's STT + the agent's time + its first sentence's TTS
        wait = u["stt_ms"] + a["respond_ms"] + a["tts_first_audio_ms"]
    assert a["time_to_first_audio_ms"] == pytest.approx(wait, abs=0.2)


@pytest.mark.parametrize("streamed", [False, True], ids=["turn-based", "streamed"])
def test_a_hang_up_passes_through_and_a_silent_reply_is_silence(streamed):
    link = tone_link()
    user, agent = _turn(streamed, link, user_text=None, agent_text="🙂")
    assert user.text is None and user.extra is None and link.speaker.calls == []
    a = agent.extra["voice"]
    assert agent.text == "" and a["silent"] and a["heard_text"] == "" and a["audio"] is None
    assert "time_to_first_audio_ms" not in a and a["respond_ms"] >= INNER_MS


def test_line_noise_is_keyed_by_task_turn_and_side_not_by_run():
    from harness.voice.call import Channel, noise_key
    tone = np.sin(np.linspace(0, 2000, 16000)).astype(np.float32)
    line = Channel(telephone=True, snr_db=20)
    a, _ = line.apply(tone, 16000, noise_key("run-a:wifi/1", 1, "user"))
    b, _ = line.apply(tone, 16000, noise_key("run-b:wifi/1", 1, "user"))
    c, _ = line.apply(tone, 16000, noise_key("run-a:wifi/1", 2, "user"))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
