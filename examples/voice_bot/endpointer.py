"""Where the caller's utterances start and end, frame by frame, as the audio arrives.

Each 20 ms frame is *loud* when its level (dBFS) is at least ``margin_db`` above the line's noise
floor and above ``min_dbfs``. The floor is the 5th percentile of the levels of the last
``window_s`` seconds of frames (digital silence, below -80 dBFS, left out: a line that sends exact
zeros between utterances has no floor to learn from it), so the threshold follows the line: about
-50 dBFS on a clean line, about 10 dB over the hiss of a noisy one (white noise 20 dB under the
speech sits near -41 dBFS under piper's voice; the noise frames never pass, the speech frames do).

Speech *starts* when ``start_frames`` of the last ``start_frames + 1`` frames are loud (about
100 ms); it is *confirmed* once it spans ``confirm_ms`` (first to last loud frame; the barge-in
test); it *stops* after ``end_silence_ms`` without a loud frame (or ``max_s`` after its start).
An utterance keeps ``preroll_ms`` of audio before the start and ``tail_ms`` after the last loud
frame, for speech to text.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

FRAME_S = 0.02
SILENT_DBFS = -80.0        # digital silence: not part of the noise floor
FLOOR_PERCENTILE = 5


@dataclass
class Utterance:
    """One stretch of the caller's speech: its samples (at ``rate``) and where the speech
    starts and ends on the stream's clock (seconds of audio since the call began)."""

    samples: np.ndarray
    rate: int
    start_s: float
    end_s: float

    @property
    def seconds(self) -> float:
        """Length of the samples, in seconds."""
        return len(self.samples) / float(self.rate)


@dataclass
class VadEvent:
    """``start``, ``confirmed`` or ``stop`` at ``at_s`` on the stream's clock; a stop carries
    the utterance."""

    kind: str
    at_s: float
    utterance: Utterance | None = None


def level_dbfs(frame: np.ndarray) -> float:
    """The frame's RMS level in dBFS (-120 for digital silence)."""
    power = float(np.mean(np.square(frame, dtype=np.float64))) if len(frame) else 0.0
    return 10.0 * np.log10(power + 1e-12)


class Endpointer:
    """Streaming voice-activity endpointing for one call's incoming audio (see the module
    docstring). Feed samples of any length with :meth:`push`; it returns the events they caused."""

    def __init__(self, rate: int, end_silence_ms: int = 600, confirm_ms: int = 300, start_frames: int = 5,
                 preroll_ms: int = 300, tail_ms: int = 200, window_s: float = 5.0, margin_db: float = 10.0,
                 min_dbfs: float = -50.0, max_s: float = 30.0,
                 learn_frames: int = 25, learn_max_s: float = 1.0):
        self.rate, self.frame = rate, int(round(rate * FRAME_S))
        self.end_silence_s, self.confirm_s = end_silence_ms / 1000.0, confirm_ms / 1000.0
        self.start_frames, self.tail_s, self.max_s = start_frames, tail_ms / 1000.0, max_s
        self.margin_db, self.min_dbfs = margin_db, min_dbfs
        self._levels: deque[float] = deque(maxlen=max(1, int(window_s / FRAME_S)))
        self._recent: deque[bool] = deque(maxlen=start_frames + 1)
        self._before: deque[np.ndarray] = deque(maxlen=int(preroll_ms / 1000.0 / FRAME_S) + start_frames + 1)
        self._pending = np.zeros(0, np.float32)
        self._frames = 0
        self.learn_frames, self.learn_max_s = learn_frames, learn_max_s
        self._learned, self._held_t0 = False, 0.0
        self._held: list[tuple[float, np.ndarray, float]] = []
        self._audio: list[np.ndarray] = []
        self._audio_t0 = self.start_s = self.last_loud_s = 0.0
        self.speaking = self.confirmed = False

    @property
    def stream_s(self) -> float:
        """Seconds of audio pushed so far (whole frames)."""
        return self._frames * FRAME_S

    def threshold_dbfs(self) -> float:
        """The level a frame must pass to be loud, now."""
        floor = float(np.percentile(self._levels, FLOOR_PERCENTILE)) if self._levels else SILENT_DBFS
        return max(floor + self.margin_db, self.min_dbfs)

    def push(self, samples: np.ndarray) -> list[VadEvent]:
        """Take the next samples of the call; returns the events in them, in order."""
        self._pending = np.concatenate([self._pending, np.asarray(samples, np.float32)])
        events: list[VadEvent] = []
        usable = len(self._pending) - len(self._pending) % self.frame
        for i in range(0, usable, self.frame):
            events += self._step(self._pending[i:i + self.frame])
        self._pending = self._pending[usable:]
        return events

    def force_stop(self) -> Utterance | None:
        """End the utterance now (a client's commit); None when no speech is under way."""
        held, self._held = self._held, []
        for t, f, lv in held:
            self._decide(t, f, lv > self.threshold_dbfs())
        self._learned = True
        return self._finish() if self.speaking else None

    def _step(self, frame: np.ndarray) -> list[VadEvent]:
        t0 = self.stream_s
        self._frames += 1
        level = level_dbfs(frame)
        if level > SILENT_DBFS:
            self._levels.append(level)
        if not self._learned and self._levels:
            if not self._held:
                self._held_t0 = t0
            if len(self._levels) < self.learn_frames and t0 - self._held_t0 < self.learn_max_s:
                self._held.append((t0, frame, level))
                return []
            self._learned = True
        held, self._held = self._held + [(t0, frame, level)], []
        events: list[VadEvent] = []
        for t, f, lv in held:
            events += self._decide(t, f, lv > self.threshold_dbfs())
        return events

    def _decide(self, t0: float, frame: np.ndarray, loud: bool) -> list[VadEvent]:
        now = t0 + FRAME_S
        self._recent.append(loud)
        if not self.speaking:
            self._before.append(frame)
            if sum(self._recent) < self.start_frames:
                return []
            first = len(self._recent) - 1 - next(i for i, x in enumerate(self._recent) if x)
            self.speaking, self.confirmed = True, False
            self.start_s, self.last_loud_s = round(t0 - first * FRAME_S, 3), now
            self._audio = list(self._before)
            self._audio_t0 = now - len(self._audio) * FRAME_S
            return [VadEvent("start", self.start_s)]
        self._audio.append(frame)
        events = []
        if loud:
            self.last_loud_s = now
        if not self.confirmed and self.last_loud_s - self.start_s >= self.confirm_s - 1e-9:
            self.confirmed = True
            events.append(VadEvent("confirmed", round(self.last_loud_s, 3)))
        if now - self.last_loud_s >= self.end_silence_s - 1e-9 or now - self.start_s >= self.max_s:
            utterance = self._finish()
            events.append(VadEvent("stop", utterance.end_s, utterance))
        return events

    def _finish(self) -> Utterance:
        audio = np.concatenate(self._audio) if self._audio else np.zeros(0, np.float32)
        keep = int(round((self.last_loud_s + self.tail_s - self._audio_t0) * self.rate))
        utterance = Utterance(audio[:max(0, keep)], self.rate, self.start_s, round(self.last_loud_s, 3))
        self.speaking, self._audio = False, []
        self._recent.clear()
        self._before.clear()
        return utterance
