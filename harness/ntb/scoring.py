"""NoisyToolBench scores of one case (A1, A2, A3, Re, Steps) and their tables.

The method is /work/shared/NOISYTOOLBENCH.md; the official code is github.com/Mysterchan/learning_to_ask
(``single_chain_interaction.py`` for asking, ``tooleval/auto_evaluator.py`` for A2/A3).

A case's step log, in order (what a run stores and a transcript holds)::

    {"type": "ask", "text": str, "reply": str?}         the agent asked the user
    {"type": "call", "name": str, "arguments": object | str | null, "observation": str?, "source": str?}
    {"type": "answer", "text": str}                      final answer, or the tools' limitation
    {"type": "think", "text": str}                       reasoning

Metrics
    **A1** (0/1): some ask matched the anticipated question: sentence-embedding cosine
    ``>= threshold`` (official code: 0.4; the paper: 0.8; :data:`DEFAULT_THRESHOLD` is 0.4).
    The embedding model is whatever ``embedder`` is (default :func:`harness.models.embeddings.embed`,
    offline MiniLM, not the official ``bert-base-nli-stsb-mean-tokens``); its id is recorded.
    What is compared (``ask_match``, recorded): ``message`` (default, the official code: the
    whole assistant message that asks, here the step's ``thought`` and ``text``, see
    :func:`ask_match_text`) or ``question`` (the question text alone).

    **Re**: asks that did not match, plus matching asks after the first match (the official
    counter). Lower is better.

    **Steps**: every step of the log counts 1: each ask, each API call, each answer, each think.
    The user's replies, the API observations and a ``thought`` field inside a step are not
    steps. ``step_counts`` gives the count
    per type, so a tool-calls-only figure (``step_counts["call"]``) is at hand. The official
    code counts assistant messages instead (one message may carry several calls, and the final
    ``Finish`` call is a message of its own), so Steps compare across harnesses only roughly.

    **A2** (0/1): the expected calls were made with correct arguments.
    ``exact-set`` (deterministic, the scoring recipe): the set of expected calls equals the set
    of made calls, each call reduced to ``(name, normalise_arguments(arguments))`` where the
    name is the case's callable name it resolves to (``resolve_api_name``: letter case,
    punctuation, ToolBench's 64-character cut), else the name lower-cased; order and repeats
    are ignored, an extra call fails. Two source cases name an API that is not among their
    APIs (IMKI/40 ``club_profile_for_transfermarket``, IMR/26 ``ohclv_...``): no call of an
    offered API can match them, so their exact-set A2 is always 0.
    ``llm-judge`` (the official code): a judge decides whether every expected call was made
    with correct arguments; order ignored, extra calls and extra optional arguments allowed.

    **A3** (0/1): a judge says the final answer fulfils the user's (clarified) intent using
    the API results. Official rule: A3 = 0 when A2 = 0 (no judge call then). No final answer
    also gives A3 = 0 without a judge call (the official judge prompt says so), and so does a
    final answer flagged ``limitation`` (an Ask-when-Needed run's "limitation of toolset"
    statement: in the official loop that message ends the case without a final answer).

    Without a judge (``--no-judge``) A3 is None for every case, even where a rule would give
    0 (A2 = 0, no answer, IBTC): filling in only the rule-decided zeros would bias its mean.

    A judgment that fails (after :class:`harness.selfscore.judges.StructuredJudge`'s bounded retries)
    leaves its value ``None`` and is counted in ``failed_judgments``, never defaulted; A3 is
    then ``None`` too when it depended on a failed A2.

IBTC (instruction beyond the tools' capabilities)
    IBTC cases expect no API call; the right behaviour is to say the request cannot be done.
    A1 and Re are computed as for every case (the anticipated "question" is an apology; the
    official code compares only asks, so a plain statement of the limitation is not an ask).

    *Our convention* (default, ``ibtc-excluded``): IBTC cases are left out of the A2 and A3
    means and reported on their own (:func:`tables` ``"ibtc"``), with ``limitation_stated``:
    a judge's verdict on whether the agent told the user the request is beyond its tools
    without inventing a result (``None`` when not judged).

    *Official convention* (``official``): IBTC cases count in the A2/A3 means with the values
    the official pipeline gives them, stored in the row's ``A2``/``A3``:

    * A2 with ``llm-judge`` = 1 without a model call: with no expected call, none is missing,
      and extra calls are allowed (the official judge answered Success on IBTC rows).
      A2 with ``exact-set`` = 1 exactly when no API call was made (the empty set).
    * A3 = 0 without a model call: the official judge fails a final answer unless it achieves
      the user's instruction from API data, which an IBTC request cannot be by construction
      (the official published IBTC rows are Failure).

The metrics are computed in their own modules and combined here: :mod:`harness.ntb.steplog`
(the step log, Steps), :mod:`harness.ntb.ask_matching` (A1, Re), :mod:`harness.ntb.call_matching`
(A2) and :mod:`harness.ntb.answer_judging` (A3, the IBTC limitation). The judge prompts are
versioned by :data:`harness.ntb.judge_prompts.PROMPT_VERSION`; change any text and bump it.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from graphs.protocols import Judgment
from harness.config import NtbConfig
from harness.ntb.answer_judging import judge_a3, judge_limitation
from harness.ntb.ask_matching import (ASK_MATCH_MODES, DEFAULT_ASK_MATCH, DEFAULT_THRESHOLD, Embedder,
                                      ask_match_text, ask_matches, check_threshold, embedder_id)
from harness.ntb.call_matching import A2_METHODS, a2_exact_set, ibtc_official_a2, judge_a2
from harness.ntb.cases import Case, case_key
from harness.ntb.judge_prompts import PROMPT_VERSION
from harness.ntb.steplog import Step, calls_of, final_answer, step_counts, validate_steps
from harness.selfscore.judges import StructuredJudge
from harness.tasks.jsonl import atomic_write

SCORER_NAME = "noisytoolbench"
SCORER_VERSION = "ntb-1.2"
CATEGORIES = ("IMKI", "IMR", "IwE", "IBTC")
IBTC = "IBTC"
CONVENTIONS = ("ibtc-excluded", "official")
DEFAULT_CONVENTION = "ibtc-excluded"
DEFAULT_A2_METHOD = NtbConfig.model_fields["a2_method"].default  # ntb.a2_method
CSV_FIELDS = ("query_id", "query", "steps", "redundant_asking", "A1", "A2", "A3", "reason", "category", "trial")

CONVENTION_TEXT = {
    "ibtc-excluded": "IBTC cases are excluded from the A2 and A3 means and reported separately "
                     "(A1, Re and Steps include them).",
    "official": "IBTC cases count in every mean, as in the official code: A2 = 1 (llm-judge: no "
                "expected call is missing; exact-set: 1 iff no API call was made), A3 = 0 (an IBTC "
                "request cannot be fulfilled from API data).",
}
NOT_JUDGED = "not judged (no judge)"
IBTC_A3_REASON = "IBTC: A3 = 0 (an instruction beyond the tools cannot be fulfilled from API data)"


# --- one case ----------------------------------------------------------------------------------

def check_settings(threshold: float, a2_method: str, ask_match: str = DEFAULT_ASK_MATCH) -> None:
    """Raises ValueError for a threshold outside 0..1, an unknown A2 method or ask_match."""
    check_threshold(threshold)
    if a2_method not in A2_METHODS:
        raise ValueError(f"unknown A2 method {a2_method!r}; choose one of {', '.join(A2_METHODS)}")
    if ask_match not in ASK_MATCH_MODES:
        raise ValueError(f"unknown ask_match {ask_match!r}; choose one of {', '.join(ASK_MATCH_MODES)}")


class _Judged:
    """Collects the judgments of one case: statuses, errors, reasons and call accounting."""

    def __init__(self) -> None:
        self.status: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.reasons: list[str] = []
        self.judgments: list[Judgment] = []

    def rule(self, metric: str, value: int | None, reason: str, status: str = "rule") -> int | None:
        self.status[metric] = status
        self.reasons.append(f"{metric}: {reason}")
        return value

    def take(self, metric: str, judgment: Judgment) -> int | None:
        self.judgments.append(judgment)
        if judgment.ok:
            self.status[metric] = "ok"
            self.reasons.append(f"{metric}: {judgment.reason or ''}".rstrip())
            return int(bool(judgment.value))
        self.status[metric] = "failed"
        self.errors[metric] = judgment.error or "judgment failed"
        self.reasons.append(f"{metric}: judgment failed ({self.errors[metric]})")
        return None


async def score_case(case: Case, steps: Sequence[Step], *, embedder: Embedder | None = None,
                     threshold: float = DEFAULT_THRESHOLD, a2_method: str = DEFAULT_A2_METHOD,
                     judge: StructuredJudge | None = None,
                     ask_match: str = DEFAULT_ASK_MATCH) -> dict[str, Any]:
    """All scores of one case from its step log.

    Args:
        case: the NoisyToolBench case.
        steps: the step log (see the module docstring); validated here.
        embedder: texts -> vectors for A1; default :func:`harness.models.embeddings.embed`.
        threshold: A1 similarity threshold (0.4 official code, 0.8 paper).
        a2_method: ``exact-set`` or ``llm-judge`` (which needs ``judge``).
        judge: a :class:`StructuredJudge` (role ``judge``) for A2 (``llm-judge``), A3 and the
            IBTC limitation; None judges nothing: A3 and ``limitation_stated`` are None for
            every case (rule-decided A3 values included).
        ask_match: ``message`` (the whole asking message, official) or ``question``
            (:func:`ask_match_text`).

    Returns:
        A row: ``case``, ``category``, ``query_id``, ``query``, ``steps`` (total),
        ``redundant_asking``, ``A1``, ``A2``, ``A3`` (0/1 or None), ``reason``,
        ``limitation_stated`` (IBTC only), ``step_counts``, ``asks`` (per ask: text,
        similarity, matched, redundant), ``calls_made``, ``answered``, ``judged`` (metric ->
        ``ok``/``failed``/``rule``/``not_judged``/``skipped``), ``failed_judgments``,
        ``judge_errors``, ``judge_calls``, ``judge_input_tokens``, ``judge_output_tokens``,
        ``judge_cost`` and the provenance: ``threshold``, ``embedding_model``, ``ask_match``,
        ``a2_method``, ``judge_model`` (None when no model judged this case),
        ``prompt_version``, ``scorer_version``. Each ``asks`` entry's ``text`` is the question;
        ``compared`` is the text that was embedded when it differs.

    Raises:
        ValueError: bad settings, ``llm-judge`` without a judge, or an invalid step log.
    """
    check_settings(threshold, a2_method, ask_match)
    if a2_method == "llm-judge" and judge is None:
        raise ValueError("a2_method 'llm-judge' needs a judge; use 'exact-set' to score without one")
    problems = validate_steps(steps)
    if problems:
        raise ValueError(f"{case_key(case)}: invalid step log: " + "; ".join(problems[:5]))
    ask_steps = [s for s in steps if s.get("type") == "ask"]
    compared = [ask_match_text(s, ask_match) for s in ask_steps]
    matches = ask_matches(compared, case.question_to_ask, embedder, threshold)
    for match, step in zip(matches, ask_steps):
        if match["text"] != step["text"]:
            match["compared"], match["text"] = match["text"], step["text"]
    calls, answer, judged = calls_of(steps), final_answer(steps), _Judged()
    limitation = None
    if case.category == IBTC:
        a2, a3, limitation = await _ibtc(case, steps, calls, answer, a2_method, judge, judged)
    else:
        if a2_method == "exact-set":
            a2 = judged.rule("A2", *a2_exact_set(case.expected_calls, calls, case))
        else:
            a2 = judged.take("A2", await judge_a2(judge, case, calls))
        a3 = await _a3(case, steps, a2, answer, judge, judged)
    counts = step_counts(steps)
    calls_made = [c for j in judged.judgments for c in j.calls]
    return {
        "case": case_key(case), "category": case.category, "query_id": case.query_id,
        "query": case.query, "steps": counts["total"],
        "redundant_asking": sum(m["redundant"] for m in matches),
        "A1": int(any(m["matched"] for m in matches)), "A2": a2, "A3": a3,
        "reason": " | ".join(judged.reasons),
        "limitation_stated": limitation, "step_counts": counts, "asks": matches,
        "calls_made": len(calls), "answered": answer is not None,
        "judged": judged.status, "failed_judgments": sum(v == "failed" for v in judged.status.values()),
        "judge_errors": judged.errors, "judge_calls": len(calls_made),
        "judge_input_tokens": sum(c.input_tokens for c in calls_made),
        "judge_output_tokens": sum(c.output_tokens for c in calls_made),
        "judge_cost": sum(c.cost for c in calls_made),
        "threshold": threshold, "embedding_model": embedder_id(embedder), "ask_match": ask_match,
        "a2_method": a2_method, "judge_model": judge.client.model_name if judged.judgments else None,
        "prompt_version": PROMPT_VERSION, "scorer_version": SCORER_VERSION,
    }


async def _ibtc(case: Case, steps: Sequence[Step], calls: Sequence[Step], answer: str | None, a2_method: str,
                judge: StructuredJudge | None, judged: _Judged) -> tuple[int | None, int | None, int | None]:
    """A2, A3 and ``limitation_stated`` of an IBTC case: A2 and A3 by the official convention's
    rules (A3 None without a judge), the limitation by the judge (0 when there is no answer)."""
    limitation = None
    a2 = judged.rule("A2", *ibtc_official_a2(calls, a2_method))
    if judge is None:
        a3 = judged.rule("A3", None, NOT_JUDGED, "not_judged")
        judged.rule("limitation", None, NOT_JUDGED, "not_judged")
    else:
        a3 = judged.rule("A3", 0, IBTC_A3_REASON)
        if answer is None:  # nothing was said to the user, so no limitation was stated
            limitation = judged.rule("limitation", 0, "no final answer")
        else:
            limitation = judged.take("limitation", await judge_limitation(judge, case, steps))
    return a2, a3, limitation


async def _a3(case: Case, steps: Sequence[Step], a2: int | None, answer: str | None,
              judge: StructuredJudge | None, judged: _Judged) -> int | None:
    """A3 of a non-IBTC case: None without a judge; else the rules (A2 = 0, A2 failed, no
    answer), then the judge."""
    if judge is None:
        return judged.rule("A3", None, NOT_JUDGED, "not_judged")
    if a2 == 0:
        return judged.rule("A3", 0, "0 because A2 = 0 (official rule)")
    if a2 is None:
        return judged.rule("A3", None, "not judged: the A2 judgment failed", "skipped")
    if answer is None:
        return judged.rule("A3", 0, "0: no final answer")
    if _last_answer(steps).get("limitation"):
        return judged.rule("A3", 0, "0: the agent stated the toolset's limitation (official: that "
                                    "message ends the case without a final answer)")
    return judged.take("A3", await judge_a3(judge, case, steps))


def _last_answer(steps: Sequence[Step]) -> Step:
    answers = [s for s in steps if s.get("type") == "answer"]
    return answers[-1] if answers else {}


# --- tables ------------------------------------------------------------------------------------

def _mean(values: Iterable[float | int | None]) -> tuple[float | None, int]:
    vals = [v for v in values if v is not None]
    return (sum(vals) / len(vals) if vals else None), len(vals)


def summarise(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Means of A1, A2, A3, Re, Steps over ``rows`` and their counts.

    ``n`` counts the rows, ``n_A2``/``n_A3`` the values averaged (None values are left out),
    ``failed_A2``/``failed_A3`` the failed judgments among them (never defaulted) and
    ``failed_judgments`` all failed judgments of the rows (the IBTC limitation included).
    """
    out: dict[str, Any] = {"n": len(rows)}
    out["A1"], _ = _mean(r["A1"] for r in rows)
    for metric in ("A2", "A3"):
        out[metric], out[f"n_{metric}"] = _mean(r[metric] for r in rows)
        out[f"failed_{metric}"] = sum(r["judged"].get(metric) == "failed" for r in rows)
    out["Re"], _ = _mean(r["redundant_asking"] for r in rows)
    out["Steps"], _ = _mean(r["steps"] for r in rows)
    out["failed_judgments"] = sum(r["failed_judgments"] for r in rows)
    return out


def overall(rows: Sequence[Mapping[str, Any]], convention: str = DEFAULT_CONVENTION) -> dict[str, Any]:
    """:func:`summarise` of all rows; under ``ibtc-excluded`` the A2/A3 figures are those of
    the non-IBTC rows only.

    Raises:
        ValueError: an unknown convention.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown IBTC convention {convention!r}; choose one of {', '.join(CONVENTIONS)}")
    stats = summarise(rows)
    if convention == "ibtc-excluded":
        kept = summarise([r for r in rows if r["category"] != IBTC])
        stats.update({k: kept[k] for m in ("A2", "A3") for k in (m, f"n_{m}", f"failed_{m}")})
    return stats


def tables(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per-category, overall and IBTC tables of :func:`score_case` rows.

    Returns:
        ``per_category``: {IMKI, IMR, IwE present: :func:`summarise` stats};
        ``ibtc``: stats of the IBTC rows (A2/A3 as the official convention sets them) plus
        ``limitation_stated`` (mean) and ``n_limitation``/``failed_limitation``, or None when
        there is no IBTC row;
        ``overall``: {``ibtc-excluded``: stats with A2/A3 over non-IBTC rows, ``official``:
        stats over all rows};
        ``convention``: {``default``: ``ibtc-excluded``, and a text per convention};
        ``provenance``: sorted distinct thresholds, embedding models, ask-match modes, A2
        methods, judge models, agent variants (set by runs), prompt and scorer versions of the
        rows.
    """
    per_category = {c: summarise([r for r in rows if r["category"] == c])
                    for c in CATEGORIES if c != IBTC and any(r["category"] == c for r in rows)}
    ibtc_rows = [r for r in rows if r["category"] == IBTC]
    ibtc = None
    if ibtc_rows:
        ibtc = summarise(ibtc_rows)
        ibtc["limitation_stated"], ibtc["n_limitation"] = _mean(r.get("limitation_stated") for r in ibtc_rows)
        ibtc["failed_limitation"] = sum(r["judged"].get("limitation") == "failed" for r in ibtc_rows)
    provenance = {key: sorted({r.get(key) for r in rows if r.get(key) is not None}, key=str)
                  for key in ("threshold", "embedding_model", "ask_match", "a2_method", "judge_model",
                              "agent_variant", "prompt_version", "scorer_version")}
    return {"per_category": per_category, "ibtc": ibtc,
            "overall": {c: overall(rows, c) for c in CONVENTIONS},
            "convention": {"default": DEFAULT_CONVENTION, **CONVENTION_TEXT},
            "provenance": provenance}


# --- CSV ---------------------------------------------------------------------------------------

def write_csv(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Write the official CSV columns (``query_id, query, steps, redundant_asking, A1, A2, A3,
    reason``) plus ``category`` and ``trial``, one row per case and trial; None is an empty cell. Atomic: written to a
    temporary file beside ``path`` and renamed over it."""
    path = Path(path)
    with atomic_write(path) as f:
        writer = csv.writer(f)
        writer.writerow(CSV_FIELDS)
        for row in rows:
            writer.writerow(["" if row.get(k) is None else row[k] for k in CSV_FIELDS])
    return path
