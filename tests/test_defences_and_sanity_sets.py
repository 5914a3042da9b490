"""The judge defences leave the judge sanity sets alone.

The manipulation defence (``harness.defence.manipulation``) and the other-languages handling
(``harness.selfscore.languages``) change what a judge reads only for a message they flag. None of the
texts of the sanity sets (helpfulness pairs, complexity pairs, the solved-check conversations,
the simulated user's outcome scenarios) is flagged, so with the defences on (the default) every
sanity judgment reads exactly the text it read without them: the sanity results cannot move
because of the defences (issue 17: "the sanity results unchanged").
"""
from __future__ import annotations

import pytest

from harness.defence.manipulation import screen
from harness.selfscore.languages import is_english
from harness.selfscore.sanity import (COMPLEXITY_PAIRS, HELPFULNESS_PAIRS, STABILITY_CASES, outcome_cases, solved_cases,
                            turn_helpfulness_cases)


def sanity_texts() -> list[tuple[str, str]]:
    """Every text a sanity judgment reads, with where it comes from."""
    texts: list[tuple[str, str]] = []
    for i, pair in enumerate(HELPFULNESS_PAIRS):
        texts += [(f"helpfulness {i} [{j}]", t) for j, t in enumerate(pair)]
    for i, pair in enumerate(COMPLEXITY_PAIRS):
        texts += [(f"complexity {i} [{j}]", t) for j, t in enumerate(pair)]
    for case in solved_cases():
        texts.append((f"solved {case['id']} problem", case["problem"]))
        texts += [(f"solved {case['id']} {m['role']} {j}", m["content"])
                  for j, m in enumerate(case["conversation"])]
    for case in outcome_cases():
        for key in ("problem", "solution", "question", "agent"):
            texts.append((f"outcome {case['id']} {key}", case[key]))
        texts += [(f"outcome {case['id']} fact {j}", f) for j, f in enumerate(case.get("facts", []))]
    for case in turn_helpfulness_cases():
        texts += [(f"turn {case['id']} {key}", case[key]) for key in ("helpful", "useless")]
        texts += [(f"turn {case['id']} {m['role']} {j}", m["content"]) for j, m in enumerate(case["conversation"])]
    for case_id, messages in STABILITY_CASES:
        texts += [(f"stability {case_id} {role} {j}", text) for j, (role, text) in enumerate(messages)]
    return texts


def test_the_sanity_sets_are_all_there():
    """Every case of every sanity set, and every message of each, is among the texts checked
    below: a set left out, or a case read only in part (its problem but not its conversation),
    fails here."""
    texts = sanity_texts()
    where = {w for w, _ in texts}
    read = [t for _, t in texts]
    assert {f"helpfulness {i} [{j}]" for i in range(len(HELPFULNESS_PAIRS)) for j in (0, 1)} <= where
    assert {f"complexity {i} [{j}]" for i in range(len(COMPLEXITY_PAIRS)) for j in (0, 1)} <= where
    families = {"solved": solved_cases(), "outcome": outcome_cases(), "turn": turn_helpfulness_cases()}
    for family, cases in families.items():
        assert cases, family
        for case in cases:
            assert f"{family} {case['id']} problem" in where or f"{family} {case['id']} helpful" in where, case["id"]
            assert all(m["content"] in read for m in case.get("conversation", [])), (family, case["id"])
    assert all(f"outcome {c['id']} {k}" in where for c in outcome_cases() for k in ("solution", "question", "agent"))
    assert all(text in read for _, messages in STABILITY_CASES for _, text in messages)
    # a user's confirmation inside a solved-check conversation (not only its problem) is read
    assert "chmod 600 did it, I can log in with my key now." in read


@pytest.mark.parametrize("where,text", sanity_texts(), ids=lambda v: v if len(v) < 40 else None)
def test_no_sanity_text_is_screened_or_translated(where, text):
    screened = screen(text)
    assert not screened.flagged, (where, screened.kinds)
    assert is_english(text), where
