"""The RAG agent of SelfScore and its knowledge base (a persistent chromadb collection).

Knowledge base
    One document per task: ``"Question: <question>\\n\\nAnswer: <answer>"`` where the answer is
    the task's ``reference_answer`` (or ``metadata["accepted_answer"]``); tasks with neither are
    skipped. Documents are cut into chunks of at most :data:`CHUNK_CHARS` (1,000) characters,
    consecutive chunks overlapping by about :data:`CHUNK_OVERLAP` (150) characters; cuts fall
    after a paragraph break when there is one in the second half of the window, else after a
    line break, a sentence end, a space. LFRQA averages about 5 characters per MiniLM token, so a
    chunk is about 200 tokens, inside the embedder's 256. Chunks after the first repeat the
    question (shortened to 200 characters) so that each chunk stands on its own. Chunk ids are
    ``"<task id>#<chunk index>"``; metadata holds ``task_id``, ``chunk`` and ``q_key`` (a hash of
    the normalised question). The collection uses cosine distance (``1 - cosine``) and records
    the embedding model and chunk sizes; reopening it with other ones is refused.

    Building is incremental: only chunks whose ids are not yet in the collection are embedded
    and added (changed task text under an existing id is *not* re-embedded: use a new folder).

Keeping test questions out
    The paper splits its pool 50/50 into knowledge-base material and test questions;
    :func:`split_tasks` applies the project's seeded split (:mod:`harness.tasks.split`) to tasks.
    Build the knowledge base from the ``kb`` half only and run the agent on the ``test`` half.
    As a second guard, :class:`RagAgent` never retrieves a chunk whose question is the
    problem's own question (``q_key`` filter, on by default; :class:`Problem` carries no task
    id) nor any chunk of ``exclude_task_ids``.
"""
from __future__ import annotations

import asyncio
import hashlib
import re
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import chromadb
from chromadb.config import Settings
from langchain_core.messages import SystemMessage

from graphs.protocols import Message, Problem, Reply
from harness.agents.history import HISTORY_CHARS, as_chat, window
from harness.config import RagConfig
from harness.models.embeddings import MiniLMEmbedder, default_embedder
from harness.models.llm import RoleClient
from harness.agents import prompts
from harness.tasks.datasets import Task
from harness.tasks.split import split_ids

DEFAULT_COLLECTION = "deskbench-kb"
CHUNK_CHARS = 1000
CHUNK_OVERLAP = 150
QUESTION_PREFIX_CHARS = 200
DEFAULT_K = RagConfig.model_fields["k"].default  # rag.k: passages per reply
QUERY_PART_CHARS = 600  # of the first and of the latest user message in the retrieval query
MIN_HISTORY_CHARS = 3000  # the conversation window never shrinks below this for excerpts
RAG_PROMPT_VERSION = "rag-p1"

RAG_BLOCK = (
    "\n\nKnowledge base excerpts\n"
    "The excerpts below were retrieved from a knowledge base of earlier help-desk questions "
    "and their answers. Use them when they are relevant to the user's problem and ignore them "
    "when they are not; everything above still applies.\n"
    "<knowledge_base_excerpts>\n{excerpts}\n</knowledge_base_excerpts>"
)

ProgressFn = Callable[[int, int], None]  # (chunks added so far, chunks to add)


class KnowledgeBaseError(RuntimeError):
    """A knowledge base that cannot be used as asked; the message says why and what to do."""


# --- chunking ----------------------------------------------------------------------------------
def question_key(question: str) -> str:
    """A short hash of the question, case and whitespace normalised."""
    return hashlib.sha256(" ".join(question.lower().split()).encode()).hexdigest()[:16]


def _clean(text: str) -> str:
    text = re.sub(r"[ \t]+\n", "\n", text.replace("\r\n", "\n"))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _cut(text: str, lo: int, hi: int) -> int:
    """Where to end a chunk inside ``text[lo:hi]``: after a paragraph break, else a line
    break, a sentence end, a space; ``hi`` when there is none."""
    for seps in (("\n\n",), ("\n",), (". ", "? ", "! "), (" ",)):
        found = [text.rfind(s, lo, hi) + len(s) for s in seps if text.rfind(s, lo, hi) >= 0]
        if found:
            return max(found)
    return hi


def chunk_text(text: str, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> list[str]:
    """Split ``text`` into chunks of at most ``size`` characters overlapping by about ``overlap``.

    Raises:
        ValueError: unless ``0 <= overlap < size // 2``.
    """
    if not 0 <= overlap < size // 2:
        raise ValueError("chunk overlap must be >= 0 and less than half the chunk size")
    text = _clean(text)
    chunks: list[str] = []
    start = 0
    while start < len(text):
        if len(text) - start <= size:
            chunks.append(text[start:].strip())
            break
        end = _cut(text, start + size // 2, start + size)
        chunks.append(text[start:end].strip())
        nxt = end - overlap
        space = text.find(" ", nxt, end)  # start the overlap on a word
        start = space + 1 if overlap and space >= 0 else nxt
    return [c for c in chunks if c]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One stored passage."""

    id: str
    task_id: str
    chunk: int
    text: str
    q_key: str


def task_answer(task: Task) -> str | None:
    """The answer a task contributes: its reference answer, else ``metadata['accepted_answer']``."""
    answer = task.reference_answer or task.metadata.get("accepted_answer")
    return answer if isinstance(answer, str) and answer.strip() else None


def task_chunks(task: Task, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> list[Chunk]:
    """The chunks of one task (none when it has no answer)."""
    answer = task_answer(task)
    if answer is None:
        return []
    key = question_key(task.question)
    short_q = textwrap.shorten(task.question, QUESTION_PREFIX_CHARS, placeholder=" ...")
    parts = chunk_text(f"Question: {task.question}\n\nAnswer: {answer}", size, overlap)
    return [Chunk(f"{task.id}#{i}", task.id, i, text if i == 0 else f"Question: {short_q}\n\n... {text}", key)
            for i, text in enumerate(parts)]


def split_tasks(tasks: Sequence[Task], kb_fraction: float = 0.5,
                seed: int = 0) -> tuple[list[Task], list[Task]]:
    """(knowledge-base tasks, test tasks): the project's seeded split (:func:`harness.tasks.split.split_ids`,
    50/50 as in the paper) applied to ``tasks``; each list keeps the input order."""
    kb_ids = set(split_ids([t.id for t in tasks], seed=seed, fraction=kb_fraction)["kb"])
    return [t for t in tasks if t.id in kb_ids], [t for t in tasks if t.id not in kb_ids]


# --- the knowledge base --------------------------------------------------------------------------
@dataclass(slots=True)
class BuildStats:
    """What one :meth:`KnowledgeBase.build` did."""

    tasks: int
    skipped_tasks: int  # without an answer
    chunks: int
    existing: int
    added: int
    seconds: float


class KnowledgeBase:
    """A persistent chromadb collection of task chunks.

    Args:
        path: Folder of the chromadb ``PersistentClient`` (created if missing).
        collection: Collection name (3-512 characters).
        embedder: The embedding function; the shared :func:`default_embedder` by default.
        chunk_chars: Maximum characters per chunk.
        chunk_overlap: Characters shared by consecutive chunks.

    Raises:
        KnowledgeBaseError: a bad collection name, or an existing collection built with another
            embedding model or other chunk sizes.
    """

    def __init__(self, path: str | Path, collection: str = DEFAULT_COLLECTION,
                 embedder: MiniLMEmbedder | None = None, chunk_chars: int = CHUNK_CHARS,
                 chunk_overlap: int = CHUNK_OVERLAP):
        if not 3 <= len(collection) <= 512:
            raise KnowledgeBaseError(f"Collection name {collection!r} must be 3 to 512 characters long.")
        chunk_text("", chunk_chars, chunk_overlap)  # validates the sizes
        self.path = Path(path)
        self.embedder = embedder or default_embedder()
        self.chunk_chars, self.chunk_overlap = chunk_chars, chunk_overlap
        self.path.mkdir(parents=True, exist_ok=True)
        self.client = chromadb.PersistentClient(path=str(self.path),
                                                settings=Settings(anonymized_telemetry=False))
        wanted = {"embedding_model": self.embedder.model_id, "chunk_chars": chunk_chars,
                  "chunk_overlap": chunk_overlap}
        self.collection = self.client.get_or_create_collection(
            collection, embedding_function=self.embedder, metadata=wanted,
            configuration={"hnsw": {"space": "cosine"}})
        stored = {k: (self.collection.metadata or {}).get(k) for k in wanted}
        if stored != wanted:
            raise KnowledgeBaseError(
                f"Collection {collection!r} in {self.path} was built with {stored}, not {wanted}. "
                "Use another folder or collection name, or delete the folder to rebuild.")

    @property
    def name(self) -> str:
        """The Chroma collection's name."""
        return self.collection.name

    @property
    def model_id(self) -> str:
        """The id of the embedding model the collection is built with."""
        return self.embedder.model_id

    def count(self) -> int:
        """Chunks in the collection."""
        return self.collection.count()

    def _existing_ids(self, ids: list[str], batch: int = 5000) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(ids), batch):
            found.update(self.collection.get(ids=ids[i:i + batch], include=[])["ids"])
        return found

    def build(self, tasks: Iterable[Task], progress: ProgressFn | None = None, batch_size: int = 64,
              quiet: bool = False) -> BuildStats:
        """Embed and add the chunks of ``tasks`` that are not in the collection yet.

        Args:
            tasks: The knowledge-base tasks (never the test questions; see :func:`split_tasks`).
            progress: Called as ``progress(added, to_add)`` after each batch; without it a rich
                progress bar is shown unless ``quiet``.
            batch_size: Chunks embedded and added per step.
            quiet: No rich output when no ``progress`` is given.
        """
        started = time.perf_counter()
        tasks = list(tasks)
        chunks = [c for t in tasks for c in task_chunks(t, self.chunk_chars, self.chunk_overlap)]
        skipped = sum(1 for t in tasks if task_answer(t) is None)
        existing = self._existing_ids([c.id for c in chunks])
        todo = [c for c in chunks if c.id not in existing]
        report, finish = self._reporter(progress, quiet, len(todo))
        try:
            for i in range(0, len(todo), batch_size):
                part = todo[i:i + batch_size]
                self.collection.add(
                    ids=[c.id for c in part], documents=[c.text for c in part],
                    embeddings=self.embedder.embed_array([c.text for c in part]),
                    metadatas=[{"task_id": c.task_id, "chunk": c.chunk, "q_key": c.q_key} for c in part])
                report(i + len(part), len(todo))
        finally:
            finish()
        return BuildStats(len(tasks), skipped, len(chunks), len(existing), len(todo),
                          time.perf_counter() - started)

    def _reporter(self, progress: ProgressFn | None, quiet: bool, total: int):
        if progress is not None or quiet:
            return (progress or (lambda done, total: None)), (lambda: None)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
        console = Console(stderr=True)
        if total == 0:
            console.print(f"[green]Knowledge base {self.name!r} is up to date ({self.count()} chunks).")
            return (lambda done, total: None), (lambda: None)
        bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                       TimeRemainingColumn(), console=console)
        job = bar.add_task(f"Embedding into {self.name!r}", total=total)
        bar.start()
        return (lambda done, total: bar.update(job, completed=done)), bar.stop

    def retrieve(self, query: str, k: int = DEFAULT_K, exclude_task_ids: Iterable[str] = (),
                 exclude_question: str | None = None) -> list[dict[str, Any]]:
        """The ``k`` chunks nearest to ``query``, nearest first.

        Args:
            query: Free text.
            k: How many chunks.
            exclude_task_ids: Tasks whose chunks must not be returned.
            exclude_question: Chunks of any task with this (normalised) question are not returned.

        Returns:
            Dicts with ``id``, ``task_id``, ``chunk``, ``text`` and ``distance`` (cosine distance,
            ``1 - cosine``).
        """
        n = self.count()
        if n == 0 or k <= 0 or not query.strip():
            return []
        filters: list[dict[str, Any]] = []
        if exclude := sorted(set(exclude_task_ids)):
            filters.append({"task_id": {"$nin": exclude}})
        if exclude_question:
            filters.append({"q_key": {"$ne": question_key(exclude_question)}})
        where = filters[0] if len(filters) == 1 else ({"$and": filters} if filters else None)
        res = self.collection.query(query_embeddings=self.embedder.embed_array([query]),
                                    n_results=min(k, n), where=where,
                                    include=["documents", "metadatas", "distances"])
        return [{"id": i, "task_id": m["task_id"], "chunk": m["chunk"], "text": d, "distance": float(dist)}
                for i, d, m, dist in zip(res["ids"][0], res["documents"][0], res["metadatas"][0],
                                         res["distances"][0])]


# --- the agent ---------------------------------------------------------------------------------
def retrieval_query(problem: Problem, history: Sequence[Message]) -> str:
    """The first user message plus the latest one (each cut to :data:`QUERY_PART_CHARS`)."""
    users = [m.content for m in history if m.role == "user"] or [problem.question]
    first, latest = users[0], users[-1]
    parts = [first[:QUERY_PART_CHARS]]
    if len(users) > 1 and latest != first:
        parts.append(latest[:QUERY_PART_CHARS])
    return "\n".join(parts)


def rag_system_prompt(passages: Sequence[dict[str, Any]], base: str = prompts.AGENT_SYSTEM) -> str:
    """``base`` plus a delimited block of the retrieved passages (``base`` alone when none)."""
    if not passages:
        return base
    excerpts = "\n".join(f'<excerpt n="{n}">\n{p["text"]}\n</excerpt>' for n, p in enumerate(passages, 1))
    return base + RAG_BLOCK.format(excerpts=excerpts)


class RagAgent:
    """The paper's RAG agent: the plain agent's prompt plus retrieved knowledge-base excerpts.

    Args:
        client: The agent role's client.
        kb: The knowledge base (built from tasks other than the test questions).
        k: Passages per reply.
        system_prompt: The base system prompt (the paper's plain agent prompt).
        exclude_task_ids: Tasks never retrieved (e.g. the test split, as a guard).
        exclude_same_question: Never retrieve a chunk whose question is the problem's question.
    """

    def __init__(self, client: RoleClient, kb: KnowledgeBase, k: int = DEFAULT_K,
                 system_prompt: str = prompts.AGENT_SYSTEM, exclude_task_ids: Iterable[str] = (),
                 exclude_same_question: bool = True):
        self.client, self.kb, self.k = client, kb, k
        self.system_prompt = system_prompt
        self.exclude_task_ids = frozenset(exclude_task_ids)
        self.exclude_same_question = exclude_same_question

    def _retrieve(self, problem: Problem, history: Sequence[Message]) -> list[dict[str, Any]]:
        return self.kb.retrieve(retrieval_query(problem, history), self.k, self.exclude_task_ids,
                                problem.question if self.exclude_same_question else None)

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        """The agent's reply with the ``k`` retrieved passages in its system prompt (the history
        window shrunk by their length); ``extra`` records the passages' ids and distances,
        ``k``, the embedding model and the collection."""
        passages = await asyncio.to_thread(self._retrieve, problem, history)
        system = rag_system_prompt(passages, self.system_prompt)
        budget = max(MIN_HISTORY_CHARS, HISTORY_CHARS - (len(system) - len(self.system_prompt)))
        messages = [SystemMessage(system), *as_chat(window(history, budget), "agent")]
        text, call = await self.client.complete(messages, "agent:reply")
        extra = {"retrieved": [{"id": p["id"], "task_id": p["task_id"], "distance": round(p["distance"], 6)}
                               for p in passages],
                 "rag_k": self.k, "embedding_model": self.kb.model_id, "kb_collection": self.kb.name,
                 "rag_prompt_version": RAG_PROMPT_VERSION}
        return Reply(text.strip(), [call], extra=extra)
