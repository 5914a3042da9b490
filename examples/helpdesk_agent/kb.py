"""The agent's knowledge base: question/answer entries in a persistent chromadb collection,
embedded offline with deskbench's MiniLM (``harness.models.embeddings.MiniLMEmbedder``, a chromadb
embedding function: nothing is downloaded).

The entries come from ``HELPDESK_KB`` (a JSONL of ``{"id", "question", "answer"}``), else from
the data deskbench ships (SOURCE.md): LFRQA technology questions about Linux and the shell
(not about macOS, Windows or phones) with their human reference answers, and the #ubuntu IRC
threads with their helpers' replies, leaving out the 30 threads of the task set
``ubuntu_irc_troubleshooting`` (deskbench's default test questions must not be in the agent's
knowledge base).
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import chromadb
from chromadb.config import Settings as ChromaSettings

from harness.models.embeddings import MiniLMEmbedder
from examples.helpdesk_agent.settings import load_settings

DOC_CHARS = 1000  # one document per entry, cut to about MiniLM's 256 tokens
MIN_ANSWER_CHARS = 80  # IRC threads whose helpers said less ("okay, what site?") are left out
LINUX_TOPICS = re.compile(r"\b(ubuntu|debian|linux|apt|apt-get|dpkg|grub|ssh|sudo|bash|shell|terminal|mount|"
                          r"ntfs|fstab|xorg|x11|kernel|boot|partition|wifi|wireless|alsa|pulseaudio|cron|"
                          r"chmod|chown|systemd|init|package|repository|dns|firewall|iptables|usb)\b", re.I)
OTHER_SYSTEMS = re.compile(r"\b(mac|macs|os x|osx|macos|mavericks|yosemite|iphone|ipad|ios|android|windows|"
                           r"excel|word|outlook)\b", re.I)
TEST_SET = "ubuntu_irc_troubleshooting"


@dataclass(frozen=True, slots=True)
class Entry:
    """One knowledge-base entry: a question and its answer."""

    id: str
    question: str
    answer: str

    @property
    def document(self) -> str:
        """The text embedded and retrieved: question and answer, cut to :data:`DOC_CHARS`."""
        return f"Question: {self.question.strip()}\nAnswer: {self.answer.strip()}"[:DOC_CHARS]


def shipped_entries() -> list[Entry]:
    """The default knowledge base from deskbench's shipped task sets (SOURCE.md)."""
    from harness.tasks.datasets import load_dataset
    entries = [Entry(t.id, t.question, t.reference_answer)
               for t in load_dataset("lfrqa_technology").tasks
               if t.reference_answer and LINUX_TOPICS.search(t.question) and not OTHER_SYSTEMS.search(t.question)]
    held_out = {t.id for t in load_dataset(TEST_SET).tasks}
    for t in load_dataset("ubuntu_irc").tasks:
        answer = "\n".join(t.agent_replies)
        if t.id not in held_out and len(answer) >= MIN_ANSWER_CHARS:
            entries.append(Entry(t.id, t.question, answer))
    return entries


def jsonl_entries(path: Path) -> list[Entry]:
    """Entries of a JSONL file, one ``{"id", "question", "answer"}`` object a line.

    Raises:
        ValueError: a line that is not such an object (its line number named).
    """
    entries = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            entries.append(Entry(str(obj["id"]), str(obj["question"]), str(obj["answer"])))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: expected {{\"id\", \"question\", \"answer\"}} ({exc})") from exc
    return entries


class KnowledgeBase:
    """A chromadb collection of entries (cosine distance), built incrementally.

    Args:
        index_dir: chromadb's folder (created if missing).
        entries: what the collection holds; its name is a hash of them, so another set of
            entries gets another collection in the same folder.
    """

    def __init__(self, index_dir: Path, entries: Iterable[Entry]):
        self.entries = list(entries)
        digest = hashlib.sha256(json.dumps([(e.id, e.document) for e in self.entries]).encode()).hexdigest()
        index_dir.mkdir(parents=True, exist_ok=True)
        client = chromadb.PersistentClient(path=str(index_dir), settings=ChromaSettings(anonymized_telemetry=False))
        self.collection = client.get_or_create_collection(
            f"helpdesk-{digest[:16]}", embedding_function=MiniLMEmbedder(),
            configuration={"hnsw": {"space": "cosine"}})

    def build(self, batch: int = 64) -> int:
        """Embed and add the entries not in the collection yet; returns how many were added."""
        have = set(self.collection.get(include=[])["ids"])
        todo = [e for e in self.entries if e.id not in have]
        for i in range(0, len(todo), batch):
            part = todo[i:i + batch]
            self.collection.add(ids=[e.id for e in part], documents=[e.document for e in part])
        return len(todo)

    def search(self, query: str, k: int = 3) -> list[dict[str, Any]]:
        """The ``k`` entries nearest to ``query``: ``{"id", "text", "score"}`` (cosine similarity)."""
        n = self.collection.count()
        if not query.strip() or n == 0:
            return []
        found = self.collection.query(query_texts=[query], n_results=min(k, n),
                                      include=["documents", "distances"])
        return [{"id": i, "text": text, "score": round(1.0 - float(d), 4)}
                for i, text, d in zip(found["ids"][0], found["documents"][0], found["distances"][0])]


_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _shared() -> KnowledgeBase:
    settings = load_settings(require_llm=False)
    entries = jsonl_entries(settings.kb_path) if settings.kb_path else shipped_entries()
    kb = KnowledgeBase(settings.index_dir, entries)
    kb.build()
    return kb


def knowledge_base() -> KnowledgeBase:
    """The agent's knowledge base from the settings, built on first use (once, whichever thread
    asks first) and then shared."""
    with _LOCK:
        return _shared()
