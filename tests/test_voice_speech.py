"""The real offline speech models: piper and espeak-ng speak, Whisper base transcribes.
Round trips on fixed sentences stay within a word-error bound. (About half a minute.)"""
import asyncio

import numpy as np
import pytest

from harness.voice.audio import AudioError, load_audio
from harness.voice.call import Channel
from harness.voice.roundtrip import SENTENCES, corpus_wer, round_trip
from harness.voice.stt import Transcriber
from harness.voice.tts import Speaker, SpeechError
from harness.voice.wer import wer


@pytest.fixture(scope="module")
def transcriber():
    return Transcriber().load()


def test_piper_round_trip_on_fixed_sentences(transcriber):
    rows = round_trip(Speaker("piper"), transcriber, SENTENCES)
    # piper's speech varies between runs (0-4% word errors measured here); 10% leaves room
    assert corpus_wer(rows) <= 0.10, [(r.text, r.heard) for r in rows]
    assert all(r.audio_s > 1.0 and r.tts_ms > 0 and r.stt_ms > 0 for r in rows)


def test_espeak_round_trip_on_fixed_sentences(transcriber):
    rows = round_trip(Speaker("espeak-ng"), transcriber, SENTENCES[:3])
    assert corpus_wer(rows) <= 0.15, [(r.text, r.heard) for r in rows]


def test_telephone_band_with_noise_round_trip_stays_understandable(transcriber):
    rows = round_trip(Speaker("piper"), transcriber, SENTENCES[:2], Channel(telephone=True, snr_db=20.0))
    assert corpus_wer(rows) <= 0.25, [(r.text, r.heard) for r in rows]


def test_speak_cleans_text_and_writes_a_wav_that_transcribes(tmp_path, transcriber):
    result = Speaker().speak("**Restart** the router 🙂 and see https://askubuntu.com/q/1 for details.",
                             tmp_path / "out.wav")
    assert result.cleaned_text == "Restart the router and see askubuntu.com for details."
    assert result.path.is_file() and 0 < result.first_audio_ms <= result.ms
    heard = transcriber.transcribe(result.path)
    # piper's speech varies from run to run ("Restart" was once heard as "We start"): bound the
    # word error rate instead of asking for every word
    assert "the router" in heard.text.lower() and wer(result.cleaned_text, heard.text) <= 0.3
    assert heard.seconds == pytest.approx(len(load_audio(result.path)) / 16000)


def test_nothing_speakable_raises_a_clear_error():
    with pytest.raises(SpeechError, match="Nothing to speak"):
        Speaker().speak("🎉🎉 ✅")


def test_transcribing_broken_audio_raises_audio_error(tmp_path, transcriber):
    bad = tmp_path / "broken.ogg"
    bad.write_bytes(b"OggS" + bytes(60))
    with pytest.raises(AudioError, match="not a readable audio file"):
        transcriber.transcribe(bad)
    with pytest.raises(AudioError, match="silent"):
        transcriber.transcribe(np.zeros(16000, np.float32))


async def test_concurrent_async_transcriptions_share_one_model(transcriber):
    speech = Speaker().speak("Please reboot the server.")
    a, b = await asyncio.gather(transcriber.atranscribe(speech.samples, speech.sample_rate),
                                transcriber.atranscribe(speech.samples, speech.sample_rate))
    assert a.text == b.text and "reboot" in a.text.lower()


FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "audio"


def test_browser_recording_formats_transcribe_and_broken_uploads_store_nothing(tmp_path, transcriber):
    from harness.voice.audiostore import AudioStore
    for name in ("restart-printer.wav", "restart-printer.webm"):
        heard = transcriber.transcribe(FIXTURES / name)
        assert "restart the printer" in heard.text.lower(), (name, heard.text)
    store = AudioStore(tmp_path / "s.sqlite")
    ref, samples = store.save_recording(FIXTURES / "restart-printer.webm", "r", "r:t", 1, "user")
    assert len(load_audio(tmp_path / ref)) == len(samples)
    with pytest.raises(AudioError, match="truncated.webm: not a readable audio file"):
        store.save_recording(FIXTURES / "truncated.webm", "r", "r:t", 2, "user")
    assert not (tmp_path / "audio/r/t/2-user.wav").exists()
