"""Energy voice-activity detection for simulated calls: where speech is, where it pauses.

Frames of ``FRAME_S`` (20 ms) are voiced when their RMS is above an adaptive threshold: the
larger of a fraction of the loudest frame and a multiple of the noise floor (the 10th
percentile frame; at most half the loudest), so it works on a clean line and on a noisy one. Gaps shorter than
``bridge_s`` (the silence inside a word or between close words) are bridged.

Used to split the caller's speech on pauses (transcribed chunk by chunk while later audio is
still arriving, :mod:`harness.voice.chunked_stt`), to find when the speech of a clip starts
and ends on the call's timeline, and by the agent's barge-in detector
(:func:`confirm_speech`).
"""
from __future__ import annotations

import numpy as np

FRAME_S = 0.02
PEAK_FRACTION = 0.05      # voiced: above 5% of the loudest frame's RMS ...
FLOOR_FACTOR = 3.0        # ... and above 3x the noise floor


def voiced_frames(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    """One boolean per ``FRAME_S`` frame: True where there is speech."""
    size = max(1, int(round(sample_rate * FRAME_S)))
    n = len(samples) // size
    if n == 0:
        return np.zeros(0, bool)
    frames = np.asarray(samples[:n * size], np.float64).reshape(n, size)
    rms = np.sqrt((frames ** 2).mean(axis=1))
    peak = float(rms.max())
    if peak <= 1e-6:
        return np.zeros(n, bool)
    floor = float(np.percentile(rms, 10))
    # a clip with no pause at all has its "floor" at speech level: never above half the peak
    return rms > max(PEAK_FRACTION * peak, min(FLOOR_FACTOR * floor, 0.5 * peak), 1e-4)


def speech_regions(samples: np.ndarray, sample_rate: int, bridge_s: float = 0.08) -> list[tuple[float, float]]:
    """``(start_s, end_s)`` of each stretch of speech; gaps under ``bridge_s`` are bridged."""
    voiced = voiced_frames(samples, sample_rate)
    regions: list[list[float]] = []
    for i in np.flatnonzero(voiced):
        start, end = i * FRAME_S, (i + 1) * FRAME_S
        if regions and start - regions[-1][1] < bridge_s - 1e-9:
            regions[-1][1] = end
        else:
            regions.append([start, end])
    return [(round(a, 3), round(b, 3)) for a, b in regions]


def split_on_pauses(samples: np.ndarray, sample_rate: int, pause_s: float = 0.25,
                    min_chunk_s: float = 1.0) -> list[tuple[float, float]]:
    """The speech cut into chunks at pauses of at least ``pause_s``; a chunk shorter than
    ``min_chunk_s`` is merged into the next (Whisper guesses on very short audio).

    Returns ``(start_s, end_s)`` of each chunk's speech ([] for silence).
    """
    chunks = [list(r) for r in speech_regions(samples, sample_rate, bridge_s=pause_s)]
    merged: list[list[float]] = []
    for c in chunks:
        if merged and merged[-1][1] - merged[-1][0] < min_chunk_s:
            merged[-1][1] = c[1]
        else:
            merged.append(c)
    if len(merged) > 1 and merged[-1][1] - merged[-1][0] < min_chunk_s:
        last = merged.pop()
        merged[-1][1] = last[1]
    return [(a, b) for a, b in merged]


def speech_span(samples: np.ndarray, sample_rate: int) -> tuple[float, float]:
    """Start and end of the speech in a clip (the whole clip if no frame is voiced)."""
    regions = speech_regions(samples, sample_rate)
    if not regions:
        return 0.0, len(samples) / float(sample_rate)
    return regions[0][0], regions[-1][1]


def confirm_speech(samples: np.ndarray, sample_rate: int, min_speech_s: float = 0.6,
                   max_gap_s: float = 0.4) -> float | None:
    """When a barge-in detector is sure someone is talking: the time (from the clip's start)
    at which speech that began at the first voiced frame has lasted ``min_speech_s`` with no
    gap longer than ``max_gap_s``. None if it never does (a short "mhm" never does)."""
    regions = speech_regions(samples, sample_rate, bridge_s=max_gap_s)
    for start, end in regions:
        if end - start >= min_speech_s:
            return round(start + min_speech_s, 3)
    return None


def quietest_point(samples: np.ndarray, sample_rate: int, at_s: float, window_s: float = 0.15) -> float:
    """The quietest frame boundary within ``window_s`` of ``at_s`` (where to cut speech
    between two words rather than inside one)."""
    size = max(1, int(round(sample_rate * FRAME_S)))
    lo = max(0, int((at_s - window_s) * sample_rate) // size)
    hi = min(len(samples) // size, int((at_s + window_s) * sample_rate) // size + 1)
    if hi <= lo:
        return max(0.0, min(at_s, len(samples) / float(sample_rate)))
    frames = np.asarray(samples[lo * size:hi * size], np.float64).reshape(hi - lo, size)
    energy = (frames ** 2).mean(axis=1)
    # prefer the candidate nearest at_s among the quietest (ties: silence everywhere)
    best = np.flatnonzero(energy <= energy.min() + 1e-12)
    centres = (lo + best + 0.5) * FRAME_S
    return float(centres[np.argmin(np.abs(centres - at_s))])
