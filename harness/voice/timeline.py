"""One call on one simulated clock: both sides' audio laid on a timeline, its measures, and
the stereo recording (caller left, agent right).

The clock never waits: it advances by the audio's own durations and by the processing
latencies put on it. How compute time is accounted (:class:`Compute`):

- ``measured``: this machine's measured times (each STT pass, the LLM's time to each
  sentence, each TTS pass), as a real-time pipeline would have seen them;
- ``modelled``: set per-stage latencies (:class:`ModelledLatency`) computed from the audio and
  text lengths alone, so the whole timeline is deterministic and independent of the machine.

Speech on the timeline is each clip's voiced stretches (:mod:`harness.voice.vad`, gaps under
0.3 s bridged); dead air is time within the call when neither side speaks, overlap is time when
both do.
"""
from __future__ import annotations

import wave
from dataclasses import dataclass, field

import numpy as np

from harness.tasks.jsonl import atomic_write
from harness.voice.audio import STT_RATE, resample
from harness.voice.vad import speech_regions

SIDES = ("caller", "agent")
BRIDGE_S = 0.3


@dataclass(frozen=True)
class ModelledLatency:
    """Set per-stage latencies of the ``modelled`` clock (a fast GPU-served pipeline)."""

    stt_base_ms: float = 250.0          # one STT pass ...
    stt_ms_per_audio_s: float = 50.0    # ... plus this per second of audio
    llm_first_token_ms: float = 350.0   # prompt evaluation
    llm_tokens_per_s: float = 40.0      # generation (a token: 4 characters)
    tts_base_ms: float = 60.0           # one TTS pass ...
    tts_rtf: float = 0.05               # ... plus this times the audio's length

    def stt_ms(self, audio_s: float) -> float:
        """Modelled ms of one STT pass over ``audio_s`` seconds of audio."""
        return self.stt_base_ms + self.stt_ms_per_audio_s * audio_s

    def llm_text_ms(self, chars: int) -> float:
        """Modelled ms until the LLM has written ``chars`` characters (4 characters a token)."""
        return self.llm_first_token_ms + (chars / 4.0) / self.llm_tokens_per_s * 1000.0

    def tts_ms(self, audio_s: float) -> float:
        """Modelled ms to synthesize ``audio_s`` seconds of speech."""
        return self.tts_base_ms + self.tts_rtf * audio_s * 1000.0


@dataclass(frozen=True)
class Compute:
    """How compute time enters the clock: ``measured`` or ``modelled``."""

    mode: str = "measured"
    latency: ModelledLatency = field(default_factory=ModelledLatency)

    def __post_init__(self):
        if self.mode not in ("measured", "modelled"):
            raise ValueError(f"compute must be 'measured' or 'modelled', got {self.mode!r}")

    def stt_cost(self):
        """``(chunk seconds, measured ms) -> ms`` for :func:`transcribe_chunks`."""
        if self.mode == "measured":
            return None
        return lambda seconds, _measured: self.latency.stt_ms(seconds)

    def reply_times(self, chunks) -> list[tuple[float, float]]:
        """``(text ready, audio ready)`` ms of each spoken chunk of a reply."""
        if self.mode == "measured":
            return [(c.text_ms, c.audio_ms) for c in chunks]
        out, chars, ready = [], 0, 0.0
        for c in chunks:
            chars += len(c.text) + 1
            text_ms = self.latency.llm_text_ms(chars)
            ready = max(text_ms, ready) + self.latency.tts_ms(c.seconds)
            out.append((text_ms, ready))
        return out


@dataclass
class Segment:
    """One clip on the timeline (16 kHz mono) and what it was."""

    side: str
    start_s: float
    samples: np.ndarray = field(repr=False)
    kind: str            # speech | backchannel | barge-in
    turn: int
    text: str = ""

    @property
    def end_s(self) -> float:
        """When the clip ends on the call's clock (s)."""
        return self.start_s + len(self.samples) / STT_RATE

    def speech(self) -> list[tuple[float, float]]:
        """The clip's speech regions on the call's clock (gaps under ``BRIDGE_S`` bridged)."""
        return [(self.start_s + a, self.start_s + b)
                for a, b in speech_regions(self.samples, STT_RATE, bridge_s=BRIDGE_S)]


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + 1e-9:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _length(spans) -> float:
    return sum(b - a for a, b in spans)


def _intersect(x, y) -> list[tuple[float, float]]:
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if a < b:
            out.append((a, b))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


class Timeline:
    """Both sides' clips of one call, on one clock (seconds from the call's start)."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []

    def add(self, side: str, start_s: float, samples: np.ndarray, sample_rate: int, kind: str,
            turn: int, text: str = "") -> Segment:
        """Put a clip of ``side`` at ``start_s`` (resampled to 16 kHz); returns its segment.

        Raises:
            ValueError: ``side`` is not ``caller`` or ``agent``.
        """
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        seg = Segment(side, round(float(start_s), 4), resample(np.asarray(samples, np.float32), sample_rate, STT_RATE),
                      kind, turn, text)
        self.segments.append(seg)
        return seg

    @property
    def end_s(self) -> float:
        """When the last clip ends (s; 0.0 for an empty timeline)."""
        return max((s.end_s for s in self.segments), default=0.0)

    def speech(self, side: str) -> list[tuple[float, float]]:
        """The side's speech as merged ``(start, end)`` spans."""
        return _union([span for s in self.segments if s.side == side for span in s.speech()])

    def measures(self) -> dict[str, float]:
        """Seconds: call length (first to last speech), each side's speech, overlap, dead air."""
        caller, agent = self.speech("caller"), self.speech("agent")
        both = _union(caller + agent)
        if not both:
            return {"call_s": 0.0, "caller_speech_s": 0.0, "agent_speech_s": 0.0,
                    "overlap_s": 0.0, "dead_air_s": 0.0}
        start, end = both[0][0], both[-1][1]
        return {"call_s": round(end - start, 3), "caller_speech_s": round(_length(caller), 3),
                "agent_speech_s": round(_length(agent), 3),
                "overlap_s": round(_length(_intersect(caller, agent)), 3),
                "dead_air_s": round((end - start) - _length(both), 3)}

    def stereo(self) -> np.ndarray:
        """``(n, 2)`` float32 at 16 kHz: the caller left, the agent right."""
        n = int(np.ceil(self.end_s * STT_RATE)) + 1
        out = np.zeros((n, 2), np.float32)
        for s in self.segments:
            i = int(round(s.start_s * STT_RATE))
            ch = SIDES.index(s.side)
            out[i:i + len(s.samples), ch] += s.samples[:max(0, n - i)]
        return np.clip(out, -1.0, 1.0)

    def write_stereo(self, path) -> None:
        """The recording as a 16-bit stereo WAV, written atomically."""
        pcm = (self.stereo() * 32767.0).round().astype("<i2")
        with atomic_write(path, "wb") as f:
            with wave.open(f, "wb") as w:
                w.setnchannels(2)
                w.setsampwidth(2)
                w.setframerate(STT_RATE)
                w.writeframes(pcm.tobytes())
