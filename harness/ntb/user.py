"""The NoisyToolBench simulated user, as the official one.

It holds the case's clarification. When the agent's question matches the anticipated question
(sentence-embedding cosine similarity at or above the threshold) it answers with the
clarification; otherwise, or when a matching question is asked again, it says it cannot
provide relevant information, and the question is redundant. The LLM variant words the
clarification itself (role ``user``) but decides relevance the same way.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from langchain_core.messages import HumanMessage, SystemMessage

from graphs.toolloop import Outcome
from harness.embeddings import cosine
from harness.llm import RoleClient
from harness.ntb.cases import Case

NO_INFO = "Sorry, I cannot provide relevant information."

Embedder = Callable[[Sequence[str]], list[list[float]]]


class SimulatedToolUser:
    """Answers clarifying questions from the case's clarification."""

    def __init__(self, embedder: Embedder, threshold: float, embedding_model: str,
                 paraphraser: RoleClient | None = None):
        self.embedder = embedder
        self.threshold = threshold
        self.embedding_model = embedding_model
        self.paraphraser = paraphraser

    async def reply(self, case: Case, question: str, steps: Sequence[dict[str, Any]]) -> Outcome:
        q, expected = self.embedder([question, case.question_to_ask])
        similarity = cosine(q, expected)
        already = any(s["type"] == "ask" and s.get("matched") for s in steps)
        matched = similarity >= self.threshold and not already
        detail = {"similarity": round(similarity, 4), "matched": matched, "redundant": not matched,
                  "threshold": self.threshold, "embedding_model": self.embedding_model}
        if not matched:
            return Outcome(NO_INFO, detail)
        if self.paraphraser is None:
            return Outcome(case.clarification, detail)
        text, call = await self.paraphraser.complete([
            SystemMessage("You are a user who asked an assistant for help. Answer the assistant's "
                          "question in one short sentence, using only this information: "
                          f"{case.clarification}"),
            HumanMessage(question)], "user:ntb-clarification")
        return Outcome(text.strip() or case.clarification, {**detail, "paraphrased": True}, [call])
