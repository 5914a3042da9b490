"""Speech to text, offline: faster-whisper with the Whisper base model assembled from its PyPI
parts (:mod:`harness.voice.models`), int8 on the CPU.

The model is loaded once per process per (model, compute type) and shared; transcription
holds a lock (it is CPU-bound and uses every core it is given), so call
:meth:`Transcriber.atranscribe` from async code: it runs in a worker thread.
"""
from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import BinaryIO

import numpy as np

from harness.voice.audio import STT_RATE, check_speech, load_audio, resample
from harness.voice.models import ensure_whisper

_models: dict[tuple[str, str, int], object] = {}
_models_lock = threading.Lock()
_run_lock = threading.Lock()


@dataclass(frozen=True)
class Transcript:
    """What was heard: the text, the audio's length in seconds, the transcription time in ms."""

    text: str
    seconds: float
    ms: float
    language: str = "en"


def _whisper(key: str, compute_type: str, threads: int):
    with _models_lock:
        model = _models.get((key, compute_type, threads))
        if model is None:
            from faster_whisper import WhisperModel
            model = WhisperModel(str(ensure_whisper(key)), device="cpu", compute_type=compute_type,
                                 cpu_threads=threads)
            _models[(key, compute_type, threads)] = model
        return model


class Transcriber:
    """Transcribes English speech.

    Args:
        model: a key of :data:`harness.voice.models.WHISPER_MODELS`.
        compute_type: CTranslate2 compute type (int8 is the measured default).
        beam_size: 1 is greedy decoding (fastest); 5 is Whisper's default.
        threads: CPU threads (0: CTranslate2's default).
        language: the spoken language (None: Whisper detects it).
        pad_s: seconds of silence put before and after the audio before decoding.
        vad_filter: let faster-whisper's Silero VAD cut non-speech first.
        initial_prompt: text Whisper reads as if it came before the audio (context).
    """

    def __init__(self, model: str = "whisper-base", compute_type: str = "int8", beam_size: int = 1,
                 threads: int = 0, language: str | None = "en", pad_s: float = 0.0,
                 vad_filter: bool = False, initial_prompt: str | None = None):
        self.model_key, self.compute_type, self.threads = model, compute_type, threads
        self.beam_size, self.language = beam_size, language
        self.pad_s, self.vad_filter, self.initial_prompt = pad_s, vad_filter, initial_prompt

    def load(self) -> "Transcriber":
        """Load (or assemble, first time) the model now instead of on the first transcription."""
        _whisper(self.model_key, self.compute_type, self.threads)
        return self

    def transcribe(self, audio: str | Path | bytes | BinaryIO | np.ndarray,
                   sample_rate: int = STT_RATE) -> Transcript:
        """Transcribe a file, its bytes, or samples at ``sample_rate``.

        Raises:
            harness.voice.audio.AudioError: empty, corrupt, too short or silent audio.
        """
        if isinstance(audio, np.ndarray):
            samples = resample(check_speech(audio, sample_rate), sample_rate, STT_RATE)
        else:
            samples = load_audio(audio, STT_RATE)
        seconds = len(samples) / STT_RATE
        if self.pad_s > 0:
            pad = np.zeros(int(round(self.pad_s * STT_RATE)), np.float32)
            samples = np.concatenate([pad, samples, pad])
        model = _whisper(self.model_key, self.compute_type, self.threads)
        started = perf_counter()
        with _run_lock:
            segments, info = model.transcribe(samples, language=self.language, beam_size=self.beam_size,
                                              condition_on_previous_text=False, vad_filter=self.vad_filter,
                                              initial_prompt=self.initial_prompt)
            text = " ".join(s.text.strip() for s in segments).strip()
        return Transcript(text, seconds, (perf_counter() - started) * 1000.0, info.language)

    async def atranscribe(self, audio, sample_rate: int = STT_RATE) -> Transcript:
        """:meth:`transcribe` in a worker thread."""
        return await asyncio.to_thread(self.transcribe, audio, sample_rate)
