"""The NoisyToolBench simulated user, as the official one (``single_chain_interaction.py``).

It holds the case's clarification. The agent's asking message (``ask_match``: the whole
message, as the official code, or the question alone; :func:`harness.ntb.ask_matching.ask_match_text`)
is compared with the anticipated question by sentence-embedding cosine similarity. At or above
the threshold the user answers with the clarification, also when a matching question is asked
again (that repeat counts as redundant, as in the official code); below it the user answers
that it cannot provide relevant information, and the question is redundant. The LLM variant
words the clarification itself (role ``user``) but decides relevance the same way.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from langchain_core.messages import HumanMessage, SystemMessage

from graphs.toolloop import Outcome
from harness.models.embeddings import cosine
from harness.models.llm import RoleClient
from harness.ntb.ask_matching import DEFAULT_ASK_MATCH, ask_match_text
from harness.ntb.cases import Case

NO_INFO = "I could not provide relevant information for this question."
"""The official user's reply to a question that does not match (its exact words)."""

Embedder = Callable[[Sequence[str]], list[list[float]]]


class SimulatedToolUser:
    """Answers clarifying questions from the case's clarification."""

    def __init__(self, embedder: Embedder, threshold: float, embedding_model: str,
                 paraphraser: RoleClient | None = None, ask_match: str = DEFAULT_ASK_MATCH):
        self.embedder = embedder
        self.threshold = threshold
        self.embedding_model = embedding_model
        self.paraphraser = paraphraser
        self.ask_match = ask_match

    def match(self, case: Case, question: str, steps: Sequence[dict[str, Any]],
              thought: str | None = None) -> dict[str, Any]:
        """How the asking message compares with the anticipated question: what an ask step
        stores (``similarity``, ``matched``, ``redundant``, ``repeated`` and the settings)."""
        compared = ask_match_text({"text": question, "thought": thought}, self.ask_match)
        q, expected = self.embedder([compared, case.question_to_ask])
        similarity = cosine(q, expected)
        matched = similarity >= self.threshold
        repeated = matched and any(s["type"] == "ask" and s.get("matched") for s in steps)
        detail = {"similarity": round(similarity, 4), "matched": matched, "redundant": repeated or not matched,
                  "threshold": self.threshold, "embedding_model": self.embedding_model,
                  "ask_match": self.ask_match}
        if repeated:
            detail["repeated"] = True
        return detail

    async def reply(self, case: Case, question: str, steps: Sequence[dict[str, Any]],
                    thought: str | None = None) -> Outcome:
        """The user's reply to an ask: the clarification (worded by the paraphraser when there is
        one) when the question matches, else :data:`NO_INFO`; the detail is :meth:`match`'s."""
        detail = self.match(case, question, steps, thought)
        matched = detail["matched"]
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
