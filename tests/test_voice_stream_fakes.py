"""Fake speech for the streaming and duplex tests: a "speaker" that encodes every word as a
tone (its length in proportion to the word's characters, silence between words) and a
"transcriber" that decodes the tones back to the words. Deterministic and fast, and a cut
inside a word loses that word, as a real listener would. (No tests here.)"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from harness.voice.audio import check_speech, resample
from harness.voice.textclean import clean_for_speech
from harness.voice.tts import SpeechResult
from harness.voice.vad import speech_regions

RATE = 16_000
CHAR_S, WORD_S, GAP_S = 0.03, 0.08, 0.06


class Vocabulary:
    def __init__(self):
        self.words: list[str] = []

    def id(self, word: str) -> int:
        if word not in self.words:
            self.words.append(word)
        return self.words.index(word)

    @staticmethod
    def freq(i: int) -> float:
        return 200.0 + 45.0 * (i % 150)


def word_seconds(word: str) -> float:
    return WORD_S + CHAR_S * len(word)


class ToneSpeaker:
    """``Speaker`` look-alike: one tone per word (``engine = "tone"``)."""

    engine = "tone"

    def __init__(self, vocab: Vocabulary, ms_per_word: float = 0.0):
        self.vocab, self.ms_per_word, self.calls = vocab, ms_per_word, []

    def speak(self, text: str, out_path=None) -> SpeechResult:
        started = perf_counter()
        cleaned = clean_for_speech(text)
        self.calls.append(cleaned)
        parts = [np.zeros(int(0.05 * RATE), np.float32)]
        for w in cleaned.split():
            t = np.arange(int(word_seconds(w) * RATE)) / RATE
            parts += [0.5 * np.sin(2 * np.pi * self.vocab.freq(self.vocab.id(w)) * t).astype(np.float32),
                      np.zeros(int(GAP_S * RATE), np.float32)]
        samples = np.concatenate(parts)
        ms = (perf_counter() - started) * 1000.0 + self.ms_per_word * len(cleaned.split())
        return SpeechResult(None, ms, ms, cleaned, self.engine, RATE, samples)

    async def aspeak(self, text: str, out_path=None) -> SpeechResult:
        return self.speak(text, out_path)


@dataclass
class Heard:
    text: str
    seconds: float
    ms: float
    language: str = "en"


class ToneTranscriber:
    """``Transcriber`` look-alike: decodes :class:`ToneSpeaker` audio (``ms`` per pass is
    ``base_ms`` + ``ms_per_s`` per second of audio, so the schedule is predictable)."""

    def __init__(self, vocab: Vocabulary, base_ms: float = 100.0, ms_per_s: float = 10.0):
        self.vocab, self.base_ms, self.ms_per_s, self.calls = vocab, base_ms, ms_per_s, 0

    def transcribe(self, samples, sample_rate=RATE) -> Heard:
        samples = resample(check_speech(samples, sample_rate), sample_rate, RATE)
        self.calls += 1
        words = []
        for a, b in speech_regions(samples, RATE, bridge_s=0.03):
            part = samples[int(a * RATE):int(b * RATE)]
            spectrum = np.abs(np.fft.rfft(part, n=1 << 16))
            f = np.argmax(spectrum) * RATE / (1 << 16)
            i = int(round((f - 200.0) / 45.0))
            if 0 <= i < len(self.vocab.words):
                word = self.vocab.words[i]
                if (b - a) >= 0.7 * word_seconds(word):   # a word cut short is not understood
                    words.append(word)
        seconds = len(samples) / RATE
        return Heard(" ".join(words), seconds, self.base_ms + self.ms_per_s * seconds)

    async def atranscribe(self, samples, sample_rate=RATE) -> Heard:
        return await asyncio.to_thread(self.transcribe, samples, sample_rate)


def tone_link(store_path=None, **kwargs):
    """A ``SpeechLink`` on the tone speaker and transcriber (clean line)."""
    from harness.voice.audiostore import AudioStore
    from harness.voice.call import SpeechLink
    vocab = Vocabulary()
    return SpeechLink(ToneSpeaker(vocab), ToneTranscriber(vocab), None,
                      AudioStore(store_path) if store_path else None, store_path, **kwargs)


__all__ = ["ToneSpeaker", "ToneTranscriber", "Vocabulary", "tone_link"]
