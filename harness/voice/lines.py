"""Line conditions as named presets: what the phone line does to speech between the two sides.

A :class:`LinePreset` is a line (clean, a narrow-band telephone line, white noise at a set SNR,
lost packets) and behaves like :class:`harness.voice.call.Channel` (``apply``, ``degraded``,
``describe``), so it can be used wherever a channel is. Applied in the order of a real call:
the telephone band (300-3400 Hz at 8 kHz), then the caller-side noise, then the network's packet
loss (the audio cut into ``frame_ms`` frames, each lost independently with ``loss_rate``).

Lost frames are concealed by repeating the last frame that arrived (``concealment="previous"``,
the simplest packet-loss concealment; a first frame lost becomes silence), or replaced by
silence (``concealment="silence"``). The length of the audio never changes.

Everything random is seeded by the line's ``seed`` and the message's key (interaction, turn,
side), so a run sounds the same whatever order its conversations ran in; noise is drawn exactly
as ``Channel`` draws it, so ``Channel(telephone, snr_db, seed)`` and
``from_channel(Channel(...))`` give the same audio.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from harness.voice.audio import TELEPHONE_RATE, add_noise, telephone_band

Concealment = Literal["previous", "silence"]
FRAME_MS = 20
_LOSS_STREAM = 0x1055   # a third seed word: loss draws never collide with the noise draws


class LineError(ValueError):
    """An unknown line preset name or an impossible line; the message names the valid presets."""


@dataclass(frozen=True)
class LinePreset:
    """One line condition (see the module docstring). ``name`` is what the run stores and the
    voice report groups by."""

    name: str = "clean"
    telephone: bool = False
    snr_db: float | None = None
    loss_rate: float = 0.0
    frame_ms: int = FRAME_MS
    concealment: Concealment = "previous"
    seed: int = 0
    description: str = field(default="", compare=False)

    def __post_init__(self):
        if not 0.0 <= self.loss_rate < 1.0:
            raise LineError(f"loss_rate must be in [0, 1); got {self.loss_rate}.")
        if self.frame_ms <= 0:
            raise LineError(f"frame_ms must be positive; got {self.frame_ms}.")
        if self.concealment not in ("previous", "silence"):
            raise LineError(f"concealment must be 'previous' or 'silence'; got {self.concealment!r}.")

    @property
    def degraded(self) -> bool:
        """True when the line changes the audio (telephone band, noise or packet loss)."""
        return self.telephone or self.snr_db is not None or self.loss_rate > 0

    def describe(self) -> dict[str, Any]:
        """What is stored with each message (``channel``): ``Channel.describe()`` plus the
        preset's name and, for a lossy line, its loss settings."""
        out: dict[str, Any] = {"line": self.name, "telephone": self.telephone, "snr_db": self.snr_db}
        if self.loss_rate:
            out.update(loss_rate=self.loss_rate, frame_ms=self.frame_ms, concealment=self.concealment)
        return out

    def apply(self, samples: np.ndarray, sample_rate: int, key: str) -> tuple[np.ndarray, int]:
        """The audio as the listener gets it, and its sample rate."""
        if self.telephone:
            samples, sample_rate = telephone_band(samples, sample_rate), TELEPHONE_RATE
        crc = zlib.crc32(key.encode("utf-8"))
        if self.snr_db is not None:
            samples = add_noise(samples, self.snr_db, np.random.default_rng([self.seed, crc]))
        if self.loss_rate > 0:
            samples = drop_frames(samples, sample_rate, self.loss_rate, np.random.default_rng(
                [self.seed, crc, _LOSS_STREAM]), self.frame_ms, self.concealment)[0]
        return samples, sample_rate

    def with_(self, **changes: Any) -> "LinePreset":
        """A copy with some fields changed (e.g. ``seed`` or ``snr_db``)."""
        return replace(self, **changes)


def drop_frames(samples: np.ndarray, sample_rate: int, loss_rate: float, rng: np.random.Generator,
                frame_ms: int = FRAME_MS, concealment: Concealment = "previous") -> tuple[np.ndarray, np.ndarray]:
    """Lose each ``frame_ms`` frame with probability ``loss_rate`` and conceal it.

    Returns the audio (same length and dtype) and a boolean array, one entry per frame, True
    where the frame was lost. The last, shorter frame counts as a frame.
    """
    out = np.array(samples, dtype=np.float32, copy=True)
    size = max(1, int(round(sample_rate * frame_ms / 1000)))
    n = -(-len(out) // size)
    lost = rng.random(n) < loss_rate
    last: np.ndarray | None = None   # the last frame that arrived
    for i in range(n):
        frame = out[i * size:(i + 1) * size]
        if not lost[i]:
            last = frame.copy()
        elif concealment == "previous" and last is not None:
            frame[:] = last[:len(frame)]
        else:
            frame[:] = 0.0
    return out, lost


PRESETS: dict[str, LinePreset] = {p.name: p for p in (
    LinePreset("clean", description="no line: the speech as synthesized"),
    LinePreset("telephone", telephone=True, description="narrow-band phone line: 300-3400 Hz at 8 kHz"),
    LinePreset("telephone-noise", telephone=True, snr_db=20.0,
               description="phone line with white noise at 20 dB SNR"),
    LinePreset("packet-loss", telephone=True, loss_rate=0.10,
               description="phone line losing 10% of its 20 ms frames, each replaced by the last "
                           "frame that arrived"),
)}


def preset(name: str, seed: int = 0) -> LinePreset:
    """The registered preset ``name`` with ``seed``.

    Raises:
        LineError: unknown name; the message lists the valid ones.
    """
    try:
        return PRESETS[name].with_(seed=seed)
    except KeyError:
        raise LineError(f"Unknown line preset {name!r}; use one of: {', '.join(PRESETS)}.") from None


def line_name(telephone: bool, snr_db: float | None, loss_rate: float = 0.0) -> str:
    """The preset name of a line's shape ("noise" for noise on a wide-band line, no preset)."""
    if loss_rate:
        return "packet-loss"
    if telephone:
        return "telephone-noise" if snr_db is not None else "telephone"
    return "clean" if snr_db is None else "noise"


def from_channel(channel: Any) -> LinePreset:
    """The preset equivalent of a ``Channel(telephone, snr_db, seed)`` (same audio out)."""
    return LinePreset(line_name(channel.telephone, channel.snr_db), channel.telephone,
                      channel.snr_db, seed=channel.seed)


def resolve(line: str | None = None, telephone: bool = False, snr_db: float | None = None,
            seed: int = 0) -> LinePreset:
    """The line of the settings ``voice.line`` / ``voice.telephone`` / ``voice.snr_db``.

    Without ``line`` the line is the old ``Channel(telephone, snr_db)``. With it, the preset is
    used; ``snr_db`` (if given) sets the preset's noise level, and ``telephone=True`` on a preset
    without the telephone band is refused.

    Raises:
        LineError: unknown preset, or ``telephone`` contradicting it.
    """
    if line is None:
        return LinePreset(line_name(telephone, snr_db), telephone, snr_db, seed=seed)
    base = preset(line, seed)
    if telephone and not base.telephone:
        raise LineError(f"Line preset {line!r} has no telephone band; drop the telephone setting "
                        "or use a telephone preset (telephone, telephone-noise, packet-loss).")
    return base if snr_db is None else base.with_(snr_db=snr_db)


def line_of(voice_config: Any) -> LinePreset:
    """The line of a ``harness.config.VoiceConfig`` (``voice.line``, ``telephone``, ``snr_db``,
    ``seed``)."""
    return resolve(getattr(voice_config, "line", None), voice_config.telephone, voice_config.snr_db,
                   voice_config.seed)
