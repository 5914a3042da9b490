"""The vectors of recently embedded texts, so that a text seen again is not encoded again."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

import numpy as np


class VectorCache:
    """The vectors of the texts embedded last (least recently used dropped past ``size``).

    A text's vector does not depend on the texts it is batched with (each row is padded and
    masked on its own; bit for bit the same alone or beside a longer text, see
    tests/test_embeddings.py), so a text seen again, such as a task's hidden fix that the
    simulated user compares with every agent message, is not encoded again. Thread-safe.
    """

    def __init__(self, size: int = 0):
        self.size = max(0, int(size))
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: list[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Vectors of ``texts`` in order: cached ones as stored, the others from ``encode``
        (each distinct missing text once, in first-seen order).

        Raises:
            TypeError: an input that is not a string.
        """
        if not self.size or not texts:
            return encode(texts)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("embedding inputs must be strings")
        with self._lock:
            found = {t: self._vectors[t] for t in texts if t in self._vectors}
            for text in found:
                self._vectors.move_to_end(text)
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            found.update(zip(missing, encode(missing)))
        out = np.stack([found[t] for t in texts]).astype(np.float32, copy=False)
        with self._lock:
            for text in missing:
                self._vectors[text] = found[text]
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return out
