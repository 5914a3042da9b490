"""Full-duplex simulated calls on one simulated clock: barge-in truncation (the judges read only
what was played), the call measures, caller presets, determinism, the stereo recording.
Fake LLMs and the tone speech of tests/test_voice_stream_fakes.py, except one real-piper test."""
import asyncio
import json
import wave
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from harness.compose import Runtime
from harness.config import ConfigError, load_config
from harness.selfscore.batch import arun_selfscore
from harness.study.call_report import call_lines, duplex_measures
from harness.tasks.datasets import load_dataset
from harness.voice.callers import OPENERS, PRESETS, CallerError, barge_in, caller_preset
from harness.voice.duplex import BARGE_CONFIRM_S, STOP_S
from harness.voice.timeline import Compute, ModelledLatency, Timeline
from store import StoreReader
from tests.fakes import default_responder, fake_factory
from tests.test_voice_stream_fakes import RATE, tone_link

REPLY = ("First open the network settings panel. Then switch the wireless adapter off. "
         "Wait ten seconds and switch it back on. Finally restart the laptop completely.")
FACT = "The wireless adapter is an Intel card"


def responders(reply=REPLY):
    base = default_responder(solve_at=None)

    def for_role(role):
        if role == "agent":
            return lambda messages, kwargs: reply
        return base(role)
    return for_role


def duplex_run(tmp_path, caller="interrupting", compute="modelled", seed=0, facts=(), max_turns=2,
               reply=REPLY, name="s"):
    tasks = tmp_path / f"{name}.jsonl"
    tasks.write_text(json.dumps({"id": "w/1", "question": "My laptop wifi drops every few minutes.",
                                 "facts": list(facts)}) + "\n")
    cfg = load_config(overrides={"store": str(tmp_path / f"{name}.sqlite"),
                                 "run": {"limit": 1, "max_turns": max_turns, "concurrency": 1},
                                 "voice": {"enabled": True, "duplex": True, "caller": caller,
                                           "compute": compute, "seed": seed}})
    with Runtime(cfg, fake_factory(responders(reply))) as runtime:
        runtime.voice_link = tone_link(cfg.store)
        run_id, progress = asyncio.run(arun_selfscore(runtime, load_dataset(str(tasks))))
        hub = runtime.voice_hub
    assert progress.failed == 0, progress
    reader = StoreReader(cfg.store)
    turns = reader.turns(f"{run_id}:w/1")
    return cfg, run_id, reader, turns, hub.calls[f"{run_id}:w/1"]


def voices(turn):
    extra = json.loads(turn["extra_json"])
    return extra["user"]["voice"], extra["agent"]["voice"]


def test_barge_in_cuts_the_reply_to_what_was_played(tmp_path):
    cfg, run_id, reader, turns, state = duplex_run(tmp_path)
    user1, agent1 = voices(turns[0])
    barge = agent1["duplex"]["barge_in"]
    assert barge["reason"] == "too_long" and barge["sentence"] == 2   # after 2 sentences
    # the judges read the transcript of the played part only; the full reply stays for audit
    assert agent1["spoken_text"] == REPLY
    assert turns[0]["agent_message"] == agent1["heard_text"]
    assert agent1["heard_text"] == agent1["played_text"]
    assert REPLY.startswith(agent1["played_text"].rstrip("."))
    assert "Finally" not in turns[0]["agent_message"]
    assert len(agent1["played_text"]) < len(agent1["cleaned_text"])
    # the agent stops once its detector is sure: confirm time + the output buffer
    assert barge["yield_ms"] == pytest.approx((BARGE_CONFIRM_S + STOP_S) * 1000, abs=25)
    assert barge["opener"] in OPENERS["too_long"]
    # the caller's next message begins with its opener, right where it barged in
    user2, _ = voices(turns[1])
    assert user2["spoken_text"].startswith(barge["opener"])
    assert turns[1]["user_message"].startswith(barge["opener"].split()[0])
    assert user2["duplex"]["after_barge_in"] and user2["duplex"]["start_s"] < barge["at_s"]
    # what was cut is not on the timeline: the agent falls silent at the barge-in + yield
    agent_t1 = [s for s in state.timeline.segments if s.side == "agent" and s.turn == 1]
    assert max(s.end_s for s in agent_t1) == pytest.approx(barge["at_s"] + barge["yield_ms"] / 1000, abs=0.03)


def test_call_measures_and_stereo_recording(tmp_path):
    cfg, run_id, reader, turns, state = duplex_run(tmp_path)
    _, agent2 = voices(turns[-1])
    call = agent2["call"]
    assert call["interruptions"] == 2 and call["turns"] == 2
    assert call["overlap_s"] >= 0.5      # the caller's opener over the agent's last words
    assert call["dead_air_s"] > 0 and call["call_s"] > call["agent_speech_s"]
    d = agent2["duplex"]
    lat = ModelledLatency()
    assert d["compute"] == "modelled" and d["response_latency_ms"] > lat.llm_first_token_ms
    ref = agent2["call_audio"]
    assert ref == f"audio/{run_id}/w_1/call.wav"
    with wave.open(str(Path(cfg.store).parent / ref)) as w:
        assert w.getnchannels() == 2 and w.getframerate() == RATE
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2").reshape(-1, 2)
    caller, agent = pcm[:, 0].astype(float), pcm[:, 1].astype(float)
    first_caller = next(s for s in state.timeline.segments if s.side == "caller")
    i = int(first_caller.start_s * RATE)
    assert np.abs(caller[i:i + RATE // 2]).max() > 1000 and np.abs(agent[i:i + RATE // 2]).max() == 0
    figures = duplex_measures(reader.turns_for_run(run_id))
    assert figures["call.interruptions"] == [2.0] and len(figures["barge_in.yield_ms"]) == 2
    text = "\n".join(call_lines(reader, run_id))
    assert "Full-duplex calls" in text and "1 stereo recordings" in text


def test_patient_caller_never_interrupts_and_hears_everything(tmp_path):
    _, _, _, turns, state = duplex_run(tmp_path, caller="patient")
    for t in turns:
        _, agent = voices(t)
        assert agent["duplex"]["barge_in"] is None
        assert t["agent_message"] == agent["cleaned_text"]
    assert state.interruptions == 0 and state.backchannels >= 1   # "mhm" while the agent talks
    kinds = {s.kind for s in state.timeline.segments if s.side == "caller"}
    assert kinds == {"speech", "backchannel"}


def test_impatient_caller_cuts_in_on_a_repetition(tmp_path):
    short = "Open the network settings panel and toggle the wireless adapter."
    _, _, _, turns, _ = duplex_run(tmp_path, caller="impatient", reply=short, max_turns=2)
    assert voices(turns[0])[1]["duplex"]["barge_in"] is None
    barge = voices(turns[1])[1]["duplex"]["barge_in"]
    assert barge["reason"] == "wrong"


def test_caller_remembers_a_fact_and_tells_it(tmp_path):
    _, _, _, turns, state = duplex_run(tmp_path, facts=[FACT])
    barge = voices(turns[0])[1]["duplex"]["barge_in"]
    assert barge["reason"] == "fact" and barge["fact"] == FACT and barge["sentence"] == 1
    assert "I just remembered: The wireless adapter is an Intel card." in voices(turns[1])[0]["spoken_text"]
    assert FACT in state.facts_told


def test_same_seed_same_call_other_seed_other_pauses(tmp_path):
    runs = [duplex_run(tmp_path, caller="patient", seed=s, name=n) for s, n in ((1, "a"), (1, "b"), (2, "c"))]
    timelines = [[(s.side, s.start_s, s.kind, s.text) for s in r[4].timeline.segments] for r in runs]
    assert timelines[0] == timelines[1]
    assert np.array_equal(runs[0][4].timeline.stereo(), runs[1][4].timeline.stereo())
    assert timelines[0] != timelines[2]
    assert [t["agent_message"] for t in runs[0][3]] == [t["agent_message"] for t in runs[2][3]]


def test_bad_caller_preset_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(CallerError, match="use one of: patient, impatient, interrupting"):
        caller_preset("rude")
    with pytest.raises(ConfigError, match="voice.caller.*Unknown caller preset 'rude'"):
        load_config(overrides={"voice": {"caller": "rude"}})
    with pytest.raises(SystemExit):
        main(["call", "simulate", "--caller", "rude"])
    assert "Unknown caller preset 'rude'" in capsys.readouterr().err
    assert set(PRESETS) == {"patient", "impatient", "interrupting"}


def test_barge_in_rules_in_speech_time():
    p = caller_preset("interrupting")
    s = [("One two three.", 0.0, 2.0), ("Four five six.", 2.1, 4.0), ("Seven eight.", 4.1, 5.0)]
    b = barge_in(p, s)
    assert (b.reason, b.sentence, b.at_s) == ("too_long", 2, pytest.approx(4.1 + p.reaction_s))
    assert barge_in(caller_preset("patient"), s) is None
    # a trigger after the reply's end is no barge-in
    assert barge_in(caller_preset("impatient"), s[:1]) is None
    # the fact must be news: a word the caller already said does not remind it
    facts = ["the router is a netgear model"]
    said = [("Please restart the router now.", 0.0, 2.0)]
    assert barge_in(p, said, facts=facts, known="my router").__class__ is type(None)
    assert barge_in(p, said, facts=facts).reason == "fact"


def test_timeline_overlap_and_dead_air():
    t = Timeline()
    tone = 0.5 * np.sin(2 * np.pi * 300 * np.arange(RATE) / RATE).astype(np.float32)   # 1 s
    t.add("caller", 0.0, tone, RATE, "speech", 1)
    t.add("agent", 1.5, tone, RATE, "speech", 1)           # 0.5 s of dead air
    t.add("caller", 2.25, tone[:RATE // 2], RATE, "barge-in", 2)   # 0.25 s over the agent
    m = t.measures()
    assert m["overlap_s"] == pytest.approx(0.25, abs=0.03)
    assert m["dead_air_s"] == pytest.approx(0.5, abs=0.03)
    assert m["call_s"] == pytest.approx(2.75, abs=0.03)
    with pytest.raises(ValueError):
        Compute("fast")


def test_real_tts_stereo_recording_keeps_each_side_on_its_channel(tmp_path):
    from harness.voice.tts import Speaker
    speaker = Speaker("piper")
    caller = speaker.speak("My wifi keeps dropping.")
    agent = speaker.speak("Let us check the adapter first.")
    t = Timeline()
    t.add("caller", 0.0, caller.samples, caller.sample_rate, "speech", 1)
    start = caller.seconds + 0.5
    t.add("agent", start, agent.samples, agent.sample_rate, "speech", 1)
    path = tmp_path / "call.wav"
    t.write_stereo(path)
    with wave.open(str(path)) as w:
        assert (w.getnchannels(), w.getframerate(), w.getsampwidth()) == (2, RATE, 2)
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2").reshape(-1, 2).astype(float)
    assert len(pcm) / RATE == pytest.approx(start + agent.seconds, abs=0.05)
    cut = int((caller.seconds + 0.25) * RATE)
    assert np.abs(pcm[:cut, 0]).max() > 1000 and np.abs(pcm[:cut, 1]).max() == 0
    assert np.abs(pcm[cut:, 1]).max() > 1000 and np.abs(pcm[cut:, 0]).max() == 0
    assert t.measures()["dead_air_s"] >= 0.5 and t.measures()["overlap_s"] == 0


def test_cli_flags_set_the_voice_settings():
    import argparse

    from harness.cli.voice import _voice_overrides
    args = argparse.Namespace(duplex=True, caller="impatient", compute="modelled", turn_based=True)
    voice = _voice_overrides(args)["voice"]
    assert voice == {"enabled": True, "duplex": True, "caller": "impatient", "compute": "modelled",
                     "streaming": False}
    cfg = load_config(overrides={"voice": voice})
    assert (cfg.voice.duplex, cfg.voice.caller, cfg.voice.compute, cfg.voice.streaming) == (
        True, "impatient", "modelled", False)
    assert load_config().voice.streaming is True and load_config().voice.duplex is False
