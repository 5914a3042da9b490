"""Round trip on fixed help-desk sentences: speak (TTS), pass through a channel, transcribe
(STT), count word errors. Used by ``deskbench voice check``, the tests and the benchmark."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from harness.voice.call import Channel
from harness.voice.lines import LinePreset
from harness.voice.stt import Transcriber
from harness.voice.tts import Speaker
from harness.voice.wer import WordErrors, word_errors

SENTENCES: tuple[str, ...] = (
    "My laptop does not connect to the office network after the last update.",
    "Please open the terminal and restart the network manager service.",
    "The printer shows a paper jam, but the tray is empty.",
    "I forgot my password and the reset email never arrives.",
    "Can you check whether the backup finished last night?",
)


@dataclass(frozen=True)
class RoundTrip:
    """One sentence's round trip."""

    text: str
    heard: str
    errors: WordErrors
    tts_ms: float
    stt_ms: float
    audio_s: float


def round_trip(speaker: Speaker, transcriber: Transcriber, sentences: Sequence[str] = SENTENCES,
               channel: Channel | LinePreset | None = None) -> list[RoundTrip]:
    """Speak, pass through ``channel`` (a ``Channel`` or a line preset; clean by default) and
    transcribe each sentence."""
    channel = channel or LinePreset()
    out = []
    for n, text in enumerate(sentences):
        speech = speaker.speak(text)
        heard, rate = channel.apply(speech.samples, speech.sample_rate, f"roundtrip|{n}")
        transcript = transcriber.transcribe(heard, rate)
        out.append(RoundTrip(speech.cleaned_text, transcript.text, word_errors(speech.cleaned_text, transcript.text),
                             speech.ms, transcript.ms, speech.seconds))
    return out


def corpus_wer(rows: Sequence[RoundTrip]) -> float:
    """Word errors over all sentences / reference words over all sentences."""
    words = sum(r.errors.reference_words for r in rows)
    return sum(r.errors.errors for r in rows) / words if words else 0.0
