"""Audio checks, channels, WAV files, the audio store, the Whisper model assembly, the voice
config, the no-audio-device message and voice-activity turn taking. No speech models run."""
import json
from pathlib import Path

import numpy as np
import pytest

from harness.config import ConfigError, load_config
from harness.models.model_files import ModelFileError
from harness.voice import models
from harness.voice.audio import (STT_RATE, TELEPHONE_RATE, AudioError, add_noise, load_audio, snr_db,
                                 telephone_band, write_wav)
from harness.voice.audiostore import AudioStore
from harness.voice.call import Channel
from harness.voice.devices import NoAudioDevice, require_devices
from harness.voice.local_call import EnergyVad, Microphone


def tone(freq: float, seconds: float = 1.0, rate: int = STT_RATE, amp: float = 0.5) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def band_power(x: np.ndarray, rate: int, lo: float, hi: float) -> float:
    spectrum = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / rate)
    return float(spectrum[(freqs >= lo) & (freqs < hi)].sum())


# -- loading and validating -------------------------------------------------------------------
def test_load_audio_reads_a_wav_at_16k_mono(tmp_path):
    path = write_wav(tmp_path / "a.wav", tone(440, 1.0, 22050), 22050)
    x = load_audio(path)
    assert x.dtype == np.float32 and x.ndim == 1 and abs(len(x) - STT_RATE) <= 2
    assert np.allclose(load_audio(path.read_bytes()), x)


@pytest.mark.parametrize("content, problem", [
    (b"", "empty"),
    (b"this is not audio at all", "not a readable audio file"),
    (b"RIFF\x24\x00\x00\x00WAVEfmt ", "not a readable audio file"),
    (bytes(range(256)) * 4, "not a readable audio file"),
])
def test_broken_audio_gives_a_clear_error(tmp_path, content, problem):
    path = tmp_path / "rec.webm"
    path.write_bytes(content)
    with pytest.raises(AudioError, match=problem):
        load_audio(path)


def test_missing_silent_and_too_short_audio_are_refused(tmp_path):
    with pytest.raises(AudioError, match="no such audio file"):
        load_audio(tmp_path / "nope.wav")
    with pytest.raises(AudioError, match="silent"):
        load_audio(write_wav(tmp_path / "s.wav", np.zeros(STT_RATE, np.float32), STT_RATE))
    with pytest.raises(AudioError, match="only 0.050 s"):
        load_audio(write_wav(tmp_path / "short.wav", tone(440, 0.05), STT_RATE))
    with pytest.raises(AudioError, match="empty"):
        load_audio(b"")


# -- channels ---------------------------------------------------------------------------------
def test_telephone_band_keeps_voice_band_and_cuts_the_rest():
    x = tone(150) + tone(1000) + tone(6000)
    y = telephone_band(x, STT_RATE)
    assert len(y) == pytest.approx(TELEPHONE_RATE, abs=2)
    kept = band_power(y, TELEPHONE_RATE, 900, 1100)
    assert band_power(y, TELEPHONE_RATE, 100, 200) < 0.05 * kept     # below 300 Hz: attenuated
    assert band_power(y, TELEPHONE_RATE, 3500, 4000) < 0.01 * kept   # 6 kHz cannot pass 8 kHz sampling


@pytest.mark.parametrize("target", [20.0, 10.0, 0.0])
def test_noise_is_added_at_the_asked_snr(target):
    x = tone(440, 2.0, amp=0.2)
    y = add_noise(x, target, np.random.default_rng(1))
    assert snr_db(x, y) == pytest.approx(target, abs=0.3)


def test_channel_noise_is_reproducible_per_message_and_differs_between_messages():
    ch = Channel(telephone=True, snr_db=15.0, seed=7)
    a1, rate = ch.apply(tone(700), STT_RATE, "run:t|1|user")
    a2, _ = ch.apply(tone(700), STT_RATE, "run:t|1|user")
    b, _ = ch.apply(tone(700), STT_RATE, "run:t|2|user")
    assert rate == TELEPHONE_RATE and np.array_equal(a1, a2) and not np.array_equal(a1, b)
    clean, clean_rate = Channel().apply(tone(700), STT_RATE, "k")
    assert clean_rate == STT_RATE and np.array_equal(clean, tone(700))


# -- files and the audio store ----------------------------------------------------------------
def test_write_wav_is_atomic_and_leaves_no_temp_files(tmp_path):
    write_wav(tmp_path / "x" / "a.wav", tone(300), STT_RATE)
    assert [p.name for p in (tmp_path / "x").iterdir()] == ["a.wav"]


def test_audio_store_paths_and_saves(tmp_path):
    store = AudioStore(tmp_path / "deskbench.sqlite")
    rel = store.relative("run-1", "run-1:se/42", 3, "agent")
    assert rel == "audio/run-1/se_42/3-agent.wav"
    ref, samples = store.save_recording(write_wav(tmp_path / "in.wav", tone(500), 22050),
                                        "run-1", "run-1:q1", 1, "user")
    assert ref == "audio/run-1/q1/1-user.wav" and (tmp_path / ref).is_file()
    assert len(load_audio(tmp_path / ref)) == len(samples)
    with pytest.raises(ValueError, match="role"):
        store.relative("r", "r:i", 1, "judge")


def test_broken_recording_stores_nothing(tmp_path):
    store = AudioStore(tmp_path / "deskbench.sqlite")
    for bad in (b"", b"garbage bytes, not audio", Path(write_wav(tmp_path / "s.wav", np.zeros(8000), STT_RATE))):
        with pytest.raises(AudioError):
            store.save_recording(bad, "run-1", "run-1:q1", 1, "user")
        with pytest.raises(AudioError):
            store.save(np.zeros(10, np.float32), STT_RATE, "run-1", "run-1:q1", 1, "user")
    assert not (tmp_path / "audio").exists()


# -- the Whisper model files ------------------------------------------------------------------
def test_whisper_model_is_assembled_once_verified_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("DESKBENCH_CACHE", str(tmp_path))
    folder = models.ensure_whisper()
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.bin", "model.sha256",
                                                        "tokenizer.json", "vocabulary.txt"]
    assert json.loads((folder / "config.json").read_text())
    stamp = (folder / "model.bin").stat().st_mtime_ns
    assert models.ensure_whisper() == folder and (folder / "model.bin").stat().st_mtime_ns == stamp
    (folder / "model.sha256").write_text("tampered")
    assert models.ensure_whisper() == folder and (folder / "model.sha256").read_text() == \
        models.WHISPER_MODELS["whisper-base"].model_sha256
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]


def test_whisper_checksum_mismatch_and_unknown_key_are_clear_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("DESKBENCH_CACHE", str(tmp_path))
    real = models.WHISPER_MODELS["whisper-base"]
    wrong = models.WhisperFiles("whisper-wrong", real.part_modules, real.model_size, "0" * 64)
    monkeypatch.setitem(models.WHISPER_MODELS, "whisper-wrong", wrong)
    with pytest.raises(ModelFileError, match="expected 0000"):
        models.ensure_whisper("whisper-wrong")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ModelFileError, match="Unknown speech-to-text model 'tiny'"):
        models.ensure_whisper("tiny")
    missing = models.WhisperFiles("whisper-x", ("no_such_whisper_part1",), 1, "0" * 64)
    monkeypatch.setitem(models.WHISPER_MODELS, "whisper-x", missing)
    with pytest.raises(ModelFileError, match=r"not installed.*\[voice\]"):
        models.ensure_whisper("whisper-x")


# -- config -----------------------------------------------------------------------------------
def test_voice_config_defaults_and_strictness():
    cfg = load_config(overrides={"voice": {"enabled": True, "telephone": True, "snr_db": 20}})
    assert cfg.voice.enabled and cfg.voice.telephone and cfg.voice.snr_db == 20 and cfg.voice.tts == "piper"
    with pytest.raises(ConfigError, match="voice.snr: .*unknown key"):
        load_config(overrides={"voice": {"snr": 20}})
    with pytest.raises(ConfigError, match="voice.tts"):
        load_config(overrides={"voice": {"tts": "festival"}})


# -- no audio device --------------------------------------------------------------------------
def test_no_audio_device_message_points_to_the_browser(monkeypatch):
    import sounddevice as sd
    monkeypatch.setattr(sd, "query_devices", lambda: [])
    with pytest.raises(NoAudioDevice, match=r"no microphone and no speakers.*python app\.py"):
        require_devices()
    monkeypatch.setattr(sd, "query_devices", lambda: [{"name": "mic", "max_input_channels": 1,
                                                       "max_output_channels": 0}])
    with pytest.raises(NoAudioDevice, match=r"no speakers on this machine"):
        require_devices()


def test_this_machine_without_devices_gets_the_message_from_the_real_portaudio():
    import sounddevice as sd
    if len(sd.query_devices()):
        pytest.skip("this machine has audio devices")
    with pytest.raises(NoAudioDevice, match="browser"):
        require_devices()
    mic = Microphone(sd, "vad")
    with pytest.raises(NoAudioDevice, match=r"Recording failed: .*python app\.py"):
        mic.listen()


def test_cli_call_local_without_devices_exits_2_with_the_message(monkeypatch, capsys):
    import sounddevice as sd

    from harness.cli.main import main
    monkeypatch.setattr(sd, "query_devices", lambda: [])
    assert main(["call", "local"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "No audio device" in err and "python app.py" in err


# -- voice-activity turn taking ---------------------------------------------------------------
def feed_all(vad: EnergyVad, x: np.ndarray, block: int = 480) -> bool:
    for i in range(0, len(x), block):
        if vad.feed(x[i:i + block]):
            return True
    return False


def test_vad_cuts_a_message_after_a_pause():
    quiet = np.zeros(int(0.5 * STT_RATE), np.float32)
    x = np.concatenate([quiet, tone(300, 1.0, amp=0.3), np.zeros(2 * STT_RATE, np.float32)])
    vad = EnergyVad()
    assert feed_all(vad, x)
    u = vad.utterance()
    assert 1.0 < len(u) / STT_RATE < 1.0 + 0.3 + vad.pause_s + 0.1   # speech + lead-in + pause


def test_vad_hangs_up_after_silence():
    vad = EnergyVad(timeout_s=1.0)
    assert feed_all(vad, np.zeros(2 * STT_RATE, np.float32)) and vad.utterance() is None
