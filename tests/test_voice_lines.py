"""Line presets (harness.voice.lines): the registry, the old Channel as a preset, deterministic
packet loss, the voice.line setting and --line option, and the voice report by line. No speech
models run."""
import json

import numpy as np
import pytest

from harness.config import ConfigError, load_config
from harness.voice.audio import STT_RATE, TELEPHONE_RATE
from harness.voice.call import Channel
from harness.voice.lines import (PRESETS, LineError, LinePreset, drop_frames, from_channel, line_of,
                                 preset, resolve)


def speechlike(seconds: float = 2.0, rate: int = STT_RATE) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    x = sum(np.sin(2 * np.pi * f * t) for f in (220, 660, 1500)) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
    return (0.2 * x).astype(np.float32)


# -- registry ---------------------------------------------------------------------------------
def test_the_four_presets_are_registered():
    assert list(PRESETS) == ["clean", "telephone", "telephone-noise", "packet-loss"]
    assert not preset("clean").degraded and all(preset(n).degraded for n in list(PRESETS)[1:])
    assert preset("telephone-noise").snr_db == 20.0 and preset("telephone-noise").telephone
    loss = preset("packet-loss", seed=3)
    assert (loss.loss_rate, loss.frame_ms, loss.concealment, loss.seed) == (0.10, 20, "previous", 3)


def test_a_bad_preset_name_names_the_valid_ones():
    with pytest.raises(LineError, match="Unknown line preset 'phone'; use one of: clean, telephone, "
                                        "telephone-noise, packet-loss"):
        preset("phone")
    with pytest.raises(LineError, match="loss_rate"):
        LinePreset("x", loss_rate=1.5)
    with pytest.raises(LineError, match="concealment"):
        LinePreset("x", loss_rate=0.1, concealment="interpolate")


# -- the old Channel is a preset --------------------------------------------------------------
@pytest.mark.parametrize("telephone, snr, name", [
    (False, None, "clean"), (True, None, "telephone"), (True, 20.0, "telephone-noise"), (False, 10.0, "noise")])
def test_a_channel_and_its_preset_give_the_same_audio(telephone, snr, name):
    ch = Channel(telephone, snr, seed=5)
    line = from_channel(ch)
    assert line.name == name and line.degraded == ch.degraded
    assert resolve(None, telephone, snr, seed=5) == line
    a, ra = ch.apply(speechlike(), STT_RATE, "run:t|2|user")
    b, rb = line.apply(speechlike(), STT_RATE, "run:t|2|user")
    assert ra == rb and np.array_equal(a, b)
    assert line.describe() == {"line": name, **ch.describe()}


def test_the_telephone_noise_preset_is_the_old_telephone_20_db_channel():
    a, _ = Channel(True, 20.0).apply(speechlike(), STT_RATE, "k")
    b, rate = preset("telephone-noise").apply(speechlike(), STT_RATE, "k")
    assert rate == TELEPHONE_RATE and np.array_equal(a, b)


# -- packet loss ------------------------------------------------------------------------------
def test_packet_loss_is_deterministic_per_message_and_keeps_the_length():
    line = preset("packet-loss", seed=1)
    x = speechlike(3.0)
    a, rate = line.apply(x, STT_RATE, "run:t|1|user")
    b, _ = line.apply(x, STT_RATE, "run:t|1|user")
    c, _ = line.apply(x, STT_RATE, "run:t|2|user")
    assert rate == TELEPHONE_RATE and len(a) == len(preset("telephone").apply(x, STT_RATE, "k")[0])
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert not np.array_equal(a, preset("packet-loss", seed=2).apply(x, STT_RATE, "run:t|1|user")[0])


@pytest.mark.parametrize("rate", [0.05, 0.10, 0.30])
def test_packet_loss_rate_is_about_as_set(rate):
    x = speechlike(60.0, TELEPHONE_RATE)       # 3000 frames of 20 ms
    out, lost = drop_frames(x, TELEPHONE_RATE, rate, np.random.default_rng(0))
    assert len(out) == len(x) and out.dtype == np.float32 and len(lost) == 3000
    assert lost.mean() == pytest.approx(rate, abs=0.02)


def test_lost_frames_are_silence_or_the_last_frame_that_arrived():
    x = np.arange(1, 1 + 160 * 50, dtype=np.float32) / 1e4   # 50 frames of 160 samples, no zeros
    quiet, lost = drop_frames(x, TELEPHONE_RATE, 0.3, np.random.default_rng(4), concealment="silence")
    frames = quiet.reshape(50, 160)
    assert lost.any() and np.all(frames[lost] == 0) and np.array_equal(frames[~lost], x.reshape(50, 160)[~lost])
    held, lost2 = drop_frames(x, TELEPHONE_RATE, 0.3, np.random.default_rng(4), concealment="previous")
    assert np.array_equal(lost, lost2)
    frames, orig = held.reshape(50, 160), x.reshape(50, 160)
    for i in np.flatnonzero(lost):
        arrived = [j for j in range(i) if not lost[j]]
        assert np.array_equal(frames[i], orig[arrived[-1]] if arrived else np.zeros(160))
    partial, _ = drop_frames(x[:1000], TELEPHONE_RATE, 0.5, np.random.default_rng(1))
    assert len(partial) == 1000           # a shorter last frame is a frame too


def test_a_lossy_line_describes_its_loss():
    assert preset("packet-loss").describe() == {"line": "packet-loss", "telephone": True, "snr_db": None,
                                                "loss_rate": 0.1, "frame_ms": 20, "concealment": "previous"}


# -- settings and the CLI ---------------------------------------------------------------------
def test_voice_line_setting_sets_the_channel_and_is_stored_with_the_config():
    v = load_config(overrides={"voice": {"line": "telephone-noise"}}).voice
    assert (v.line, v.telephone, v.snr_db) == ("telephone-noise", True, 20.0)
    assert line_of(v) == preset("telephone-noise")
    v = load_config(overrides={"voice": {"line": "telephone-noise", "snr_db": 10}}).voice
    assert v.snr_db == 10.0 and line_of(v).snr_db == 10.0
    v = load_config(overrides={"voice": {"line": "packet-loss", "seed": 4}}).voice
    assert line_of(v) == preset("packet-loss", seed=4)
    dumped = load_config(overrides={"voice": {"line": "telephone"}}).model_dump()["voice"]
    assert load_config(overrides={"voice": dumped}).voice.line == "telephone"   # a resumed run
    v = load_config(overrides={"voice": {"telephone": True, "snr_db": 20}}).voice
    assert v.line is None and line_of(v) == preset("telephone-noise")            # as before


def test_bad_line_settings_are_clear_errors():
    with pytest.raises(ConfigError, match=r"voice.line: .*Unknown line preset 'phone'; use one of: clean, "):
        load_config(overrides={"voice": {"line": "phone"}})
    with pytest.raises(ConfigError, match="'clean' has no telephone band"):
        load_config(overrides={"voice": {"line": "clean", "telephone": True}})


def test_cli_line_option(capsys):
    import argparse

    from harness.cli.voice import _voice_overrides, add_voice_commands
    parser = argparse.ArgumentParser()
    add_voice_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["call", "simulate", "--line", "packet-loss"])
    assert _voice_overrides(args)["voice"]["line"] == "packet-loss"
    args = parser.parse_args(["call", "simulate", "--telephone", "--snr", "20"])
    assert _voice_overrides(args)["voice"] == {"enabled": True, "telephone": True, "snr_db": 20.0}
    assert parser.parse_args(["voice", "check", "--line", "telephone-noise"]).line == "telephone-noise"
    with pytest.raises(SystemExit):
        parser.parse_args(["voice", "check", "--line", "dialup"])
    assert "Unknown line preset 'dialup'; use one of: clean, telephone" in capsys.readouterr().err


# -- the report by line -----------------------------------------------------------------------
def _turn(line: dict, user_text: str, heard: str, wer: float) -> dict:
    voice = {"channel": line, "cleaned_text": user_text, "heard_text": heard, "stt_wer": wer, "audio_s": 1.0}
    return {"extra_json": json.dumps({"user": {"voice": voice}})}


def test_report_figures_by_line_preset_and_length():
    from harness.study.voice_report import voice_by_line, wer_by_length_rows
    turns = [_turn(preset("packet-loss").describe(), "Yes, I did.", "Yeah, I did.", 0.3333),
             _turn({"telephone": True, "snr_db": 20.0}, "It still does not work.", "It still does not work.", 0.0),
             _turn({"telephone": True, "snr_db": 20.0}, "No luck.", "No look.", 0.5)]
    by_line = voice_by_line(turns)
    assert list(by_line) == ["packet-loss", "telephone-noise"]
    assert by_line["telephone-noise"]["user.stt_wer"]["n"] == 2
    assert by_line["telephone-noise"]["user.stt_wer"]["mean"] == pytest.approx(0.25)
    rows = {(r["line"], r["words"]): r for r in wer_by_length_rows(turns)}
    assert rows[("telephone-noise", "1-3")]["errors"] == 1 and rows[("telephone-noise", "4-8")]["errors"] == 0
    assert rows[("telephone-noise", "all")]["corpus"] == pytest.approx(1 / 7)
    assert rows[("packet-loss", "all")]["mean"] == pytest.approx(1 / 3)
