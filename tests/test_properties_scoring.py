"""Property-based tests (Hypothesis) for the SelfScore formulas: bounds, monotonicity, weights,
and the handling of failed (None) judgments."""
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.selfscore.scoring import score_interaction, summarize, turn_quality, weighted_complexity

SETTINGS = settings(max_examples=200, deadline=None)
score = st.integers(1, 10)
maybe = st.none() | score
complexity = st.fixed_dictionaries({"critical_thinking": score, "error_handling": score, "topic_knowledge": score})
turn = st.fixed_dictionaries({"user_helpfulness": maybe, "agent_helpfulness": maybe, "solved": st.booleans(),
                              "input_tokens": st.none() | st.integers(0, 5000),
                              "output_tokens": st.none() | st.integers(0, 5000),
                              "cost": st.none() | st.floats(0, 1)})
turns = st.lists(turn, max_size=8)
formula = st.sampled_from(["paper", "agent_only"])


@st.composite
def weights(draw):
    """Three non-negative weights that sum to 1 (what the config accepts)."""
    a, b = sorted(draw(st.tuples(st.floats(0, 1), st.floats(0, 1))))
    return (a, b - a, 1 - b)


@SETTINGS
@given(score, score, score, weights())
def test_weighted_complexity_stays_in_the_scale(ct, eh, tk, w):
    wc = weighted_complexity(ct, eh, tk, w)
    assert min(ct, eh, tk) - 1e-9 <= wc <= max(ct, eh, tk) + 1e-9
    assert math.isclose(weighted_complexity(ct, ct, ct, w), ct)


@SETTINGS
@given(score, score, score, weights(), st.integers(0, 2))
def test_weighted_complexity_is_monotone_in_each_scale(ct, eh, tk, w, which):
    values = [ct, eh, tk]
    higher = list(values)
    higher[which] = min(10, higher[which] + 1)
    assert weighted_complexity(*higher, w) >= weighted_complexity(*values, w) - 1e-12


@SETTINGS
@given(score, score, score)
def test_paper_weights_by_default(ct, eh, tk):
    assert math.isclose(weighted_complexity(ct, eh, tk), 0.5 * ct + 0.4 * eh + 0.1 * tk)
    assert math.isclose(weighted_complexity(ct, eh, tk, (1, 0, 0)), ct)


@SETTINGS
@given(maybe, maybe)
def test_turn_quality(user, agent):
    q = turn_quality(user, agent)
    assert (q is None) == (user is None or agent is None)
    if q is not None:
        assert 0.1 <= q <= 10 and math.isclose(q * user, agent)


@SETTINGS
@given(complexity, turns, formula, weights())
def test_bounds_and_counts(cx, ts, f, w):
    s = score_interaction(cx, ts, "max_turns", f, w)
    users = [t["user_helpfulness"] for t in ts if t["user_helpfulness"] is not None]
    agents = [t["agent_helpfulness"] for t in ts if t["agent_helpfulness"] is not None]
    assert s["turns"] == len(ts) and s["formula"] == f
    assert s["failed_user_judgments"] == len(ts) - len(users)
    assert s["failed_agent_judgments"] == len(ts) - len(agents)
    assert 1 - 1e-9 <= s["weighted_complexity"] <= 10 + 1e-9
    assert s["solved"] == any(t["solved"] for t in ts)
    # a figure no turn reported is "not reported" (None), never 0 (an agent under test may report none)
    if ts and all(t["input_tokens"] is None for t in ts):
        assert s["input_tokens"] is None
    else:
        assert s["input_tokens"] == sum(t["input_tokens"] or 0 for t in ts)
    if ts and all(t["cost"] is None for t in ts):
        assert s["cost"] is None
    else:
        assert math.isclose(s["cost"], sum(t["cost"] or 0 for t in ts))
    if not agents or (f == "paper" and not users):
        assert s["quality"] is None and s["final_score"] is None
        return
    if f == "paper":
        assert 0.1 - 1e-9 <= s["quality"] <= 10 + 1e-9
        assert 5.5 - 1e-9 <= s["final_score"] <= 100 + 1e-9
    else:
        assert 1 <= s["quality"] <= 10
        assert 10 - 1e-9 <= s["final_score"] <= 100 + 1e-9
    assert math.isclose(s["final_score"], (s["weighted_complexity"] + s["quality"]) / 2 * 10)


@SETTINGS
@given(complexity, st.lists(turn, min_size=1, max_size=8), formula, st.data())
def test_more_agent_helpfulness_never_lowers_the_score(cx, ts, f, data):
    i = data.draw(st.integers(0, len(ts) - 1))
    before = score_interaction(cx, ts, None, f)["final_score"]
    old = ts[i]["agent_helpfulness"]
    better = [dict(t) for t in ts]
    better[i]["agent_helpfulness"] = data.draw(st.integers(old or 1, 10))
    after = score_interaction(cx, better, None, f)["final_score"]
    if before is not None and old is not None:
        assert after >= before - 1e-9


@SETTINGS
@given(complexity, st.lists(turn, min_size=1, max_size=8), st.data())
def test_user_helpfulness_moves_the_paper_score_down_and_the_agent_only_score_not_at_all(cx, ts, data):
    i = data.draw(st.integers(0, len(ts) - 1))
    old = ts[i]["user_helpfulness"]
    more = [dict(t) for t in ts]
    more[i]["user_helpfulness"] = data.draw(st.integers(old or 1, 10))
    paper_before, paper_after = (score_interaction(cx, x, None, "paper")["final_score"] for x in (ts, more))
    if paper_before is not None and old is not None:
        assert paper_after <= paper_before + 1e-9
    assert score_interaction(cx, ts, None, "agent_only")["final_score"] == \
        score_interaction(cx, more, None, "agent_only")["final_score"]


@SETTINGS
@given(complexity, turns, formula)
def test_a_turn_whose_judgments_failed_changes_counts_but_not_figures(cx, ts, f):
    failed = {"user_helpfulness": None, "agent_helpfulness": None, "solved": False}
    a, b = score_interaction(cx, ts, None, f), score_interaction(cx, ts + [failed], None, f)
    for key in ("avg_user_helpfulness", "avg_agent_helpfulness", "quality", "final_score"):
        assert a[key] == b[key]
    assert b["turns"] == a["turns"] + 1
    assert b["failed_user_judgments"] == a["failed_user_judgments"] + 1
    assert b["failed_agent_judgments"] == a["failed_agent_judgments"] + 1


@SETTINGS
@given(turns, formula)
def test_failed_complexity_leaves_no_final_score(ts, f):
    s = score_interaction(None, ts, None, f)
    assert s["final_score"] is None and s["weighted_complexity"] is None and s["complexity_failed"]


@SETTINGS
@given(st.lists(st.tuples(st.none() | complexity, turns, formula), max_size=6))
def test_summary_counts_and_means(items):
    figures = [score_interaction(cx, ts, None, f) for cx, ts, f in items]
    s = summarize(figures)
    assert s["interactions"] == len(figures) and s["scored"] + s["unscored"] == len(figures)
    finals = [f["final_score"] for f in figures if f["final_score"] is not None]
    if finals:
        assert min(finals) - 1e-9 <= s["mean_final_score"] <= max(finals) + 1e-9
    else:
        assert s["mean_final_score"] is None
    assert s["solved_rate"] is None if not figures else 0 <= s["solved_rate"] <= 1
    assert s["failed_judgments"] == sum(f["failed_user_judgments"] + f["failed_agent_judgments"]
                                        + int(f["complexity_failed"]) for f in figures)
