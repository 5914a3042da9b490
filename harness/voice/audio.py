"""Audio in and out: load and validate recordings, resample, the telephone band, noise at a
set signal-to-noise ratio, and WAV files written atomically.

Audio inside deskbench is a mono ``float32`` numpy array in [-1, 1] plus its sample rate;
speech to text wants 16 kHz (:data:`STT_RATE`).
"""
from __future__ import annotations

import io
import wave
from math import gcd
from pathlib import Path
from typing import BinaryIO

import numpy as np

from harness.tasks.jsonl import atomic_write

STT_RATE = 16_000
TELEPHONE_RATE = 8_000
TELEPHONE_BAND_HZ = (300.0, 3400.0)
MIN_SECONDS = 0.1
SILENCE_PEAK = 10 ** (-60 / 20)   # -60 dBFS: nothing a microphone picked up
FORMATS_HINT = "WAV, WebM/Opus, OGG, MP3, FLAC or M4A"


class AudioError(ValueError):
    """Audio that cannot be used: missing, empty, corrupt, not audio, too short or silent.
    The message names the problem and what to do."""


def load_audio(source: str | Path | bytes | BinaryIO, sample_rate: int = STT_RATE) -> np.ndarray:
    """Decode any common audio file (or its bytes) to mono float32 at ``sample_rate``.

    Raises:
        AudioError: the file is missing or empty, cannot be decoded as audio, holds less than
            0.1 s, or is silent (peak below -60 dBFS).
    """
    import av
    from faster_whisper.audio import decode_audio

    name = "the audio"
    if isinstance(source, (str, Path)):
        path = Path(source)
        name = str(path)
        if not path.is_file():
            raise AudioError(f"{path}: no such audio file.")
        if path.stat().st_size == 0:
            raise AudioError(f"{path}: the file is empty (0 bytes); record again.")
        data: str | BinaryIO = str(path)
    elif isinstance(source, (bytes, bytearray)):
        if not source:
            raise AudioError("The audio is empty (0 bytes); record again.")
        data = io.BytesIO(bytes(source))
    else:
        data = source
    try:
        samples = decode_audio(data, sampling_rate=sample_rate)
    except (av.FFmpegError, OSError, ValueError, IndexError, StopIteration) as exc:
        raise AudioError(f"{name}: not a readable audio file ({type(exc).__name__}: {exc}). "
                         f"Send {FORMATS_HINT}.") from exc
    return check_speech(samples, sample_rate, name)


def check_speech(samples: np.ndarray, sample_rate: int, name: str = "the audio") -> np.ndarray:
    """``samples`` as mono float32 if it can hold speech; raises :class:`AudioError` if not."""
    samples = np.asarray(samples)
    if samples.ndim == 2:
        samples = samples.mean(axis=1 if samples.shape[1] <= 8 else 0)
    if samples.ndim != 1:
        raise AudioError(f"{name}: expected mono or stereo samples, got an array of shape {samples.shape}.")
    if samples.dtype.kind in "iu":
        samples = samples.astype(np.float32) / float(np.iinfo(samples.dtype).max)
    samples = samples.astype(np.float32, copy=False)
    if not np.all(np.isfinite(samples)):
        raise AudioError(f"{name}: holds NaN or infinite samples; the recording is corrupt.")
    seconds = len(samples) / sample_rate
    if seconds < MIN_SECONDS:
        raise AudioError(f"{name}: only {seconds:.3f} s of audio (at least {MIN_SECONDS} s is "
                         "needed); record again and speak after the recording starts.")
    if float(np.max(np.abs(samples))) < SILENCE_PEAK:
        raise AudioError(f"{name}: the recording is silent (peak below -60 dBFS); check that "
                         "the microphone is on and allowed, then record again.")
    return samples


def resample(samples: np.ndarray, rate_from: int, rate_to: int) -> np.ndarray:
    """Polyphase resampling (scipy), float32 out."""
    from scipy.signal import resample_poly
    if rate_from == rate_to:
        return samples.astype(np.float32, copy=False)
    g = gcd(rate_from, rate_to)
    return resample_poly(samples, rate_to // g, rate_from // g).astype(np.float32)


def telephone_band(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    """What a narrow-band phone line passes: 300-3400 Hz at 8 kHz (returned at 8 kHz)."""
    from scipy.signal import butter, sosfiltfilt
    narrow = resample(samples, sample_rate, TELEPHONE_RATE)
    sos = butter(4, TELEPHONE_BAND_HZ, btype="bandpass", fs=TELEPHONE_RATE, output="sos")
    return np.clip(sosfiltfilt(sos, narrow), -1.0, 1.0).astype(np.float32)


def add_noise(samples: np.ndarray, snr_db: float, rng: np.random.Generator) -> np.ndarray:
    """Add white Gaussian noise so that signal power / noise power is ``snr_db`` decibels
    (signal power measured over the whole utterance)."""
    power = float(np.mean(samples.astype(np.float64) ** 2))
    if power == 0.0:
        return samples.astype(np.float32, copy=False)
    noise = rng.normal(0.0, np.sqrt(power / 10 ** (snr_db / 10)), len(samples))
    return np.clip(samples + noise, -1.0, 1.0).astype(np.float32)


def snr_db(clean: np.ndarray, noisy: np.ndarray) -> float:
    """Measured signal-to-noise ratio of ``noisy`` against ``clean`` (same length), in dB."""
    noise = noisy.astype(np.float64) - clean.astype(np.float64)
    return float(10 * np.log10(np.mean(clean.astype(np.float64) ** 2) / np.mean(noise ** 2)))


def wav_bytes(samples: np.ndarray, sample_rate: int) -> bytes:
    """16-bit PCM mono WAV file contents."""
    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


def write_wav(path: str | Path, samples: np.ndarray, sample_rate: int) -> Path:
    """Write a 16-bit PCM mono WAV atomically (never a half-written file); returns the path."""
    data = wav_bytes(samples, sample_rate)
    with atomic_write(path, "wb") as f:
        f.write(data)
    return Path(path)


def seconds(samples: np.ndarray, sample_rate: int) -> float:
    """Duration of ``samples`` at ``sample_rate``, in seconds."""
    return len(samples) / float(sample_rate)
