"""Audio on the wire of a voice bot: G.711 mu-law at 8 kHz (Twilio Media Streams) and
16-bit little-endian PCM (OpenAI Realtime, 24 kHz), in fixed frames, and the checks that find
audio in a format the protocol did not agree on.

Samples inside the harness are float32 in [-1, 1] (``harness.voice.audio``); :class:`WireFormat`
turns them into the protocol's bytes and back, resampling on the way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.voice.audio import resample

_BIAS = 0x84
_SEG_END = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF])
# container and compressed-audio signatures a bot may send by mistake in place of raw samples
_CONTAINERS = {b"RIFF": "a WAV file", b"OggS": "an Ogg file", b"ID3": "an MP3 file", b"fLaC": "a FLAC file",
               b"\x1aE\xdf\xa3": "a WebM file"}


class WireFormatError(ValueError):
    """Audio bytes that are not in the agreed wire format (the message says what they look like)."""


def _to_int16(samples: np.ndarray) -> np.ndarray:
    return (np.clip(np.asarray(samples, np.float32), -1.0, 1.0) * 32767.0).round().astype(np.int16)


def mulaw_encode(samples: np.ndarray) -> bytes:
    """float32 samples -> G.711 mu-law bytes (one byte a sample; the rate is the caller's).
    The reference encoder's arithmetic (14-bit magnitude, as Python's ``audioop.lin2ulaw``)."""
    pcm = _to_int16(samples).astype(np.int32) >> 2
    mask = np.where(pcm < 0, 0x7F, 0xFF)
    mag = np.minimum(np.abs(pcm) + (_BIAS >> 2), 0x1FFF)
    seg = np.searchsorted(_SEG_END, mag)
    uval = (seg << 4) | ((mag >> (seg + 1)) & 0x0F)
    return ((uval ^ mask) & 0xFF).astype(np.uint8).tobytes()


def mulaw_decode(data: bytes) -> np.ndarray:
    """G.711 mu-law bytes -> float32 samples."""
    u = ~np.frombuffer(data, np.uint8).astype(np.int32) & 0xFF
    sign, exponent, mantissa = u & 0x80, (u >> 4) & 0x07, u & 0x0F
    mag = (((mantissa << 3) + _BIAS) << exponent) - _BIAS
    return (np.where(sign != 0, -mag, mag) / 32768.0).astype(np.float32)


def pcm16_encode(samples: np.ndarray) -> bytes:
    """float32 samples -> 16-bit little-endian PCM bytes."""
    return _to_int16(samples).astype("<i2").tobytes()


def pcm16_decode(data: bytes) -> np.ndarray:
    """16-bit little-endian PCM bytes -> float32 samples.

    Raises:
        WireFormatError: an odd number of bytes (not 16-bit samples).
    """
    if len(data) % 2:
        raise WireFormatError(f"{len(data)} bytes is not a whole number of 16-bit samples")
    return (np.frombuffer(data, "<i2").astype(np.float32) / 32768.0)


def container_of(data: bytes) -> str | None:
    """What a payload is when it is a file rather than raw samples (``"a WAV file"``), else None."""
    for magic, name in _CONTAINERS.items():
        if data.startswith(magic):
            return name
    return None


@dataclass(frozen=True)
class WireFormat:
    """One protocol's audio: its encoding (``mulaw`` or ``pcm16``), rate and frame length."""

    encoding: str
    rate: int
    frame_ms: int = 20

    @property
    def frame_samples(self) -> int:
        """Samples in one frame."""
        return self.rate * self.frame_ms // 1000

    @property
    def frame_bytes(self) -> int:
        """Bytes in one frame."""
        return self.frame_samples * (1 if self.encoding == "mulaw" else 2)

    def describe(self) -> str:
        """``"mu-law 8000 Hz"``: for messages and the stored call record."""
        return f"{'mu-law' if self.encoding == 'mulaw' else 'PCM16'} {self.rate} Hz"

    def encode(self, samples: np.ndarray, rate: int) -> bytes:
        """float32 samples at ``rate`` -> this format's bytes."""
        wire = resample(np.asarray(samples, np.float32), rate, self.rate)
        return mulaw_encode(wire) if self.encoding == "mulaw" else pcm16_encode(wire)

    def decode(self, data: bytes) -> np.ndarray:
        """This format's bytes -> float32 samples at ``self.rate``.

        Raises:
            WireFormatError: the bytes are a file (WAV, MP3, ...) or not whole samples.
        """
        found = container_of(data)
        if found:
            raise WireFormatError(f"the audio is {found}, not raw {self.describe()} samples")
        return mulaw_decode(data) if self.encoding == "mulaw" else pcm16_decode(data)

    def frames(self, data: bytes) -> list[bytes]:
        """``data`` cut into frames (the last one padded with this format's silence)."""
        size = self.frame_bytes
        silence = self.silence()
        out = [data[i:i + size] for i in range(0, len(data), size)]
        if out and len(out[-1]) < size:
            out[-1] = out[-1] + silence[:size - len(out[-1])]
        return out

    def silence(self) -> bytes:
        """One frame of silence."""
        return (b"\xff" if self.encoding == "mulaw" else b"\x00\x00") * self.frame_samples


MULAW_8K = WireFormat("mulaw", 8000)
PCM16_24K = WireFormat("pcm16", 24000)
