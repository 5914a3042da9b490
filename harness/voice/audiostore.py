"""Audio files beside the store: ``<store dir>/audio/<run>/<interaction>/<turn>-<role>.wav``.

Turn rows reference the files by their path relative to the store's folder (so the folder can
be moved or copied whole). Only audio that decodes and holds sound is ever written, and every
file is written atomically: a broken recording raises
:class:`harness.voice.audio.AudioError` and leaves nothing behind.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import BinaryIO

import numpy as np

from harness.voice.audio import STT_RATE, check_speech, load_audio, write_wav

ROLES = ("user", "agent")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    """A file-system-safe folder name for a run or interaction id."""
    return _UNSAFE.sub("_", text).strip("._") or "_"


class AudioStore:
    """Where the audio of the runs in one store lives.

    Args:
        store_path: the SQLite store file; audio goes under ``audio/`` in its folder.
    """

    def __init__(self, store_path: str | Path):
        self.root = Path(store_path).resolve().parent

    def relative(self, run_id: str, interaction_id: str, turn_index: int, role: str) -> str:
        """The path (relative to the store's folder) of one turn's audio of one side."""
        if role not in ROLES:
            raise ValueError(f"audio role must be one of {ROLES}, got {role!r}")
        if turn_index < 1:
            raise ValueError(f"turn_index starts at 1, got {turn_index}")
        interaction = interaction_id.removeprefix(run_id + ":")
        return f"audio/{safe_name(run_id)}/{safe_name(interaction)}/{turn_index}-{role}.wav"

    def path(self, relative: str) -> Path:
        """Absolute path of a stored reference."""
        return self.root / relative

    def save(self, samples: np.ndarray, sample_rate: int, run_id: str, interaction_id: str,
             turn_index: int, role: str) -> str:
        """Write samples as a WAV; returns the reference to store in the turn row.

        Raises:
            AudioError: the samples are too short or silent (nothing is written).
        """
        samples = check_speech(samples, sample_rate)
        rel = self.relative(run_id, interaction_id, turn_index, role)
        write_wav(self.path(rel), samples, sample_rate)
        return rel

    def save_recording(self, source: str | Path | bytes | BinaryIO, run_id: str, interaction_id: str,
                       turn_index: int, role: str) -> tuple[str, np.ndarray]:
        """Validate a recording (any format :func:`load_audio` reads) and keep it as a 16 kHz
        mono WAV. Returns ``(reference, samples at 16 kHz)`` so it need not be decoded twice.

        Raises:
            AudioError: empty, corrupt, too short or silent audio (nothing is written).
        """
        samples = load_audio(source, STT_RATE)
        rel = self.relative(run_id, interaction_id, turn_index, role)
        write_wav(self.path(rel), samples, STT_RATE)
        return rel, samples
