"""Knowledge base (chunking, incremental chromadb build, retrieval) and the RAG agent."""
from __future__ import annotations

import json

import pytest
from langchain_core.messages import SystemMessage

from graphs.protocols import Message, Problem
from harness.config import ModelSpec
from harness.models.embeddings import MiniLMEmbedder, model_id
from harness.models.llm import RoleClient
from harness.agents import prompts
from harness.agents.rag import (CHUNK_CHARS, KnowledgeBase, KnowledgeBaseError, RagAgent, chunk_text,
                                question_key, rag_system_prompt, retrieval_query, split_tasks, task_chunks)
from harness.tasks.datasets import Task, load_dataset
from harness.tasks.split import split_ids
from tests.fakes import ScriptedChatModel
from tests.test_embeddings import network_guard

N_TASKS = 20


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return load_dataset("lfrqa_technology").tasks[:N_TASKS + 5]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def kb(tmp_path_factory, tasks, embedder) -> KnowledgeBase:
    base = KnowledgeBase(tmp_path_factory.mktemp("kb") / "chroma", embedder=embedder)
    base.build(tasks[:N_TASKS], quiet=True)
    return base


def agent_with(kb: KnowledgeBase, **kwargs) -> tuple[RagAgent, ScriptedChatModel]:
    model = ScriptedChatModel(responder=lambda messages, kw: " Step 1: check the certificate. ", prompts=[])
    return RagAgent(RoleClient("agent", ModelSpec(model="fake"), model), kb, **kwargs), model


# --- chunking ----------------------------------------------------------------------------------
def test_short_text_is_one_chunk():
    assert chunk_text("  one paragraph\n\n\n\nand another  ") == ["one paragraph\n\nand another"]
    assert chunk_text("") == []


def test_long_text_chunks_are_bounded_overlapping_and_complete():
    paragraphs = [" ".join(f"p{p}w{w}" for w in range(60)) + "." for p in range(12)]
    text = "\n\n".join(paragraphs)
    chunks = chunk_text(text, size=500, overlap=80)
    assert len(chunks) > 5 and all(len(c) <= 500 for c in chunks)
    for a, b in zip(chunks, chunks[1:]):
        assert a[-40:].split()[-1] in b  # the end of a chunk starts the next one
    words = set(text.split())
    assert words == set(" ".join(chunks).split())


def test_chunk_sizes_are_validated():
    with pytest.raises(ValueError):
        chunk_text("x", size=100, overlap=60)


def test_task_chunks_ids_and_metadata():
    answer = "\n\n".join(f"Paragraph {i}. " + "Reinstall the driver and reboot. " * 10 for i in range(8))
    chunks = task_chunks(Task("t-1", "Why does my wifi drop?", answer))
    assert [c.id for c in chunks] == [f"t-1#{i}" for i in range(len(chunks))]
    assert len(chunks) > 1 and all(c.task_id == "t-1" for c in chunks)
    assert chunks[0].text.startswith("Question: Why does my wifi drop?\n\nAnswer: Paragraph 0.")
    assert all(c.text.startswith("Question: Why does my wifi drop?") for c in chunks[1:])
    assert all(len(c.text) <= CHUNK_CHARS + 250 for c in chunks)
    assert {c.q_key for c in chunks} == {question_key("why does  my WIFI drop?")}
    assert task_chunks(Task("t-2", "No answer here")) == []
    assert task_chunks(Task("t-3", "Q", metadata={"accepted_answer": "A"}))[0].text == "Question: Q\n\nAnswer: A"


def test_split_is_deterministic_disjoint_and_half(tasks):
    kb_tasks, test_tasks = split_tasks(tasks)
    assert split_tasks(tasks) == (kb_tasks, test_tasks)
    assert not {t.id for t in kb_tasks} & {t.id for t in test_tasks}
    assert len(kb_tasks) + len(test_tasks) == len(tasks) and abs(len(kb_tasks) - len(test_tasks)) <= 1
    assert split_tasks(tasks, seed=1) != (kb_tasks, test_tasks)
    assert {t.id for t in kb_tasks} == set(split_ids([t.id for t in tasks])["kb"])


# --- the knowledge base --------------------------------------------------------------------------
def test_each_task_question_retrieves_its_own_document_at_rank_1(kb, tasks):
    assert kb.count() >= N_TASKS
    top1 = 0
    for task in tasks[:N_TASKS]:
        hits = kb.retrieve(task.question, k=3)
        assert set(hits[0]) == {"id", "task_id", "chunk", "text", "distance"}
        assert task.id in {h["task_id"] for h in hits}, task.question
        distances = [h["distance"] for h in hits]
        assert distances == sorted(distances) and 0.0 <= distances[0] < 0.5
        top1 += hits[0]["task_id"] == task.id
    # LFRQA holds near-duplicate questions: "two factor and two step verification" (519) and
    # "two step verification and two factor authentication" (515) are 0.001 apart.
    assert top1 >= N_TASKS - 1
    known = kb.retrieve("is the aes iv secret?", k=1)[0]
    assert known["id"] == "technology-search-test-512#0" and "initialization vector" in known["text"]


def test_build_is_incremental_with_progress(tmp_path, tasks, embedder):
    kb = KnowledgeBase(tmp_path / "chroma", collection="kb-incremental", embedder=embedder)
    seen: list[tuple[int, int]] = []
    first = kb.build(tasks[:10], progress=lambda done, total: seen.append((done, total)), batch_size=4)
    assert first.added == first.chunks == kb.count() and first.existing == 0
    assert seen[-1] == (first.added, first.added) and len(seen) == -(-first.added // 4)
    second = kb.build(tasks[:10], quiet=True)
    assert second.added == 0 and second.existing == first.chunks
    third = kb.build(tasks[:15], quiet=True)
    assert third.existing == first.chunks and third.added == kb.count() - first.chunks > 0
    reopened = KnowledgeBase(tmp_path / "chroma", collection="kb-incremental", embedder=embedder)
    assert reopened.count() == kb.count()
    assert reopened.build(tasks[:15], quiet=True).added == 0


def test_build_without_callback_prints_with_rich(tmp_path, tasks, embedder, capsys):
    kb = KnowledgeBase(tmp_path / "chroma", embedder=embedder)
    kb.build(tasks[:3])
    kb.build(tasks[:3])
    err = capsys.readouterr().err
    assert "Embedding into 'deskbench-kb'" in err and "up to date" in err


def test_collection_name_and_settings_are_checked(tmp_path, embedder):
    with pytest.raises(KnowledgeBaseError, match="3 to 512"):
        KnowledgeBase(tmp_path / "a", collection="kb", embedder=embedder)
    KnowledgeBase(tmp_path / "b", embedder=embedder)
    with pytest.raises(KnowledgeBaseError, match="was built with"):
        KnowledgeBase(tmp_path / "b", embedder=embedder, chunk_chars=600, chunk_overlap=100)


def test_retrieve_exclusions(kb, tasks):
    target = tasks[3]
    assert kb.retrieve(target.question, k=1)[0]["task_id"] == target.id
    by_question = kb.retrieve(target.question, k=5, exclude_question=target.question.upper())
    by_id = kb.retrieve(target.question, k=5, exclude_task_ids=[target.id, tasks[4].id])
    both = kb.retrieve(target.question, k=5, exclude_task_ids=[tasks[4].id], exclude_question=target.question)
    assert by_question and target.id not in {h["task_id"] for h in by_question}
    assert by_id and not {target.id, tasks[4].id} & {h["task_id"] for h in by_id}
    assert both and not {target.id, tasks[4].id} & {h["task_id"] for h in both}
    assert kb.retrieve("   ", k=3) == [] and kb.retrieve("wifi", k=0) == []


# --- the agent ---------------------------------------------------------------------------------
def test_retrieval_query_is_first_plus_latest_user_message():
    problem = Problem("i", "Q?", None, None)
    assert retrieval_query(problem, []) == "Q?"
    assert retrieval_query(problem, [Message("user", "first")]) == "first"
    history = [Message("user", "first"), Message("agent", "try x"), Message("user", "mid"),
               Message("agent", "try y"), Message("user", "latest")]
    assert retrieval_query(problem, history) == "first\nlatest"


async def test_agent_prompt_holds_the_passages_and_extra_the_ids(kb, tasks):
    target = tasks[0]  # "are all https sites legitimate?"
    agent, model = agent_with(kb, k=3)
    problem = Problem("run-1/i-7", "Is every website with https safe to visit?", None, None)
    history = [Message("user", problem.question)]
    reply = await agent.respond(problem, history)

    assert reply.text == "Step 1: check the certificate."
    assert len(reply.calls) == 1 and reply.calls[0].purpose == "agent:reply"
    messages = model.prompts[-1]
    system = messages[0]
    assert isinstance(system, SystemMessage) and system.content.startswith(prompts.AGENT_SYSTEM)
    assert "Knowledge base excerpts" in system.content
    assert system.content.count("<excerpt n=") == 3 and "</knowledge_base_excerpts>" in system.content
    assert messages[-1].content == problem.question

    retrieved = reply.extra["retrieved"]
    assert [r["id"] for r in retrieved][0].startswith(f"{target.id}#")
    assert all(set(r) == {"id", "task_id", "distance"} for r in retrieved) and len(retrieved) == 3
    assert [r["distance"] for r in retrieved] == sorted(r["distance"] for r in retrieved)
    for r in retrieved:  # every retrieved passage is in the prompt
        text = kb.collection.get(ids=[r["id"]])["documents"][0]
        assert text in system.content
    assert reply.extra["rag_k"] == 3 and reply.extra["embedding_model"] == model_id()
    json.dumps(reply.extra)  # stored as the turn's extra_json


async def test_agent_never_retrieves_the_test_question_itself(kb, tasks):
    target = tasks[5]
    agent, _ = agent_with(kb, k=4)
    reply = await agent.respond(Problem("i", target.question, None, None), [Message("user", target.question)])
    assert target.id not in {r["task_id"] for r in reply.extra["retrieved"]}
    guarded, _ = agent_with(kb, k=4, exclude_task_ids=[tasks[6].id], exclude_same_question=False)
    reply = await guarded.respond(Problem("i", tasks[6].question, None, None), [Message("user", tasks[6].question)])
    assert tasks[6].id not in {r["task_id"] for r in reply.extra["retrieved"]}


async def test_agent_with_empty_kb_uses_the_plain_prompt(tmp_path, embedder):
    agent, model = agent_with(KnowledgeBase(tmp_path / "empty", embedder=embedder))
    reply = await agent.respond(Problem("i", "Q", None, None), [Message("user", "Q")])
    assert model.prompts[-1][0].content == prompts.AGENT_SYSTEM
    assert reply.extra["retrieved"] == []
    assert rag_system_prompt([]) == prompts.AGENT_SYSTEM


async def test_build_and_answer_offline(monkeypatch, tmp_path, tasks):
    with network_guard(monkeypatch) as attempts:
        kb = KnowledgeBase(tmp_path / "offline", embedder=MiniLMEmbedder())
        kb.build(tasks[:5], quiet=True)
        agent, _ = agent_with(kb, k=2)
        reply = await agent.respond(Problem("i", "is the AES IV secret", None, None),
                                    [Message("user", "is the AES IV secret")])
    assert attempts == []
    assert len(reply.extra["retrieved"]) == 2
