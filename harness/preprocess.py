"""Preprocessing of a problem with the paper's prompts, cached in the store.

The summarized question feeds the complexity judgment; the extracted underlying problem feeds
the solved-check. A task that brings its own ``problem`` skips extraction.
"""
from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from graphs.protocols import LLMCall
from harness import prompts
from harness.judges import escape_judged_text
from harness.llm import RoleClient
from store import StoreReader, StoreWriter


def extraction_messages(kind: str, question: str, solution: str | None = None) -> list[BaseMessage]:
    """The extractor's prompt for the ``summary`` or the ``problem`` of a question; the
    problem is extracted from the thread's ``solution`` where there is one (the paper's way)."""
    if kind == "summary":
        system, template = prompts.SUMMARY_SYSTEM, prompts.SUMMARY_PROMPT
    elif solution:
        system, template = prompts.PROBLEM_SYSTEM, prompts.PROBLEM_FROM_SOLUTION_PROMPT
    else:
        system, template = prompts.PROBLEM_SYSTEM, prompts.PROBLEM_PROMPT
    # the texts are data inside the prompt's tags: they can neither close nor open them
    return [SystemMessage(system), HumanMessage(template.format(
        question=escape_judged_text(question), solution=escape_judged_text(solution or "")))]


async def preprocessed_text(kind: str, problem_id: str, question: str, extractor: RoleClient,
                            reader: StoreReader, writer: StoreWriter,
                            solution: str | None = None) -> tuple[str, list[LLMCall]]:
    """The ``summary`` or ``problem`` text of a problem, from the cache or the extractor."""
    model, version = extractor.model_name, prompts.PROMPT_VERSION
    cached = reader.preprocessing(problem_id, kind, model, version)
    if cached is not None:
        return cached, []
    text, call = await extractor.complete(extraction_messages(kind, question, solution),
                                          f"extractor:{kind}")
    text = text.strip()
    if not text:
        raise RuntimeError(f"The extractor returned an empty {kind} for problem {problem_id}.")
    writer.put_preprocessing({"problem_id": problem_id, "kind": kind, "model": model,
                              "prompt_version": version, "text": text, "raw": text})
    return text, [call]
