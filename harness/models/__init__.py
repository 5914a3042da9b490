"""Model access: roles to chat models (``llm``), retries and error classes (``retry``), a
circuit breaker per endpoint (``circuit``), the embedded llama.cpp server (``engine``), model
files shipped on PyPI (``model_files``), offline MiniLM embeddings (``embeddings``) and the
bookkeeping of requests in flight on each endpoint, the agent first during a call (``traffic``),
and each endpoint's rate limits (``rate_limits``).

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "CircuitOpenError": "circuit",
    "EMBEDDED_MODELS": "model_files",
    "EmbeddingModelMissing": "embeddings",
    "EngineError": "engine",
    "EngineManager": "engine",
    "Limits": "rate_limits",
    "MiniLMEmbedder": "embeddings",
    "ModelCallError": "retry",
    "RetryPolicy": "retry",
    "classify": "retry",
    "headers_retry_after": "retry",
    "ModelFileError": "model_files",
    "ReliabilityScope": "circuit",
    "RoleClient": "llm",
    "ask_yes_no": "llm",
    "cache_dir": "model_files",
    "chat_model_for": "llm",
    "check_embedder": "embeddings",
    "cosine": "embeddings",
    "default_embedder": "embeddings",
    "derive_seed": "seeds",
    "embed": "embeddings",
    "embedder_for": "embeddings",
    "ensure_model": "model_files",
    "find_server_binary": "engine",
    "reliability_scope": "circuit",
    "seed_for": "seeds",
    "seeds_of_trial": "seeds",
    "trial_seeds": "seeds",
    "yielding": "traffic",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
