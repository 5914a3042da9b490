"""SelfScore formulas on hand-computed cases, and the three cost modes."""
import pytest

from graphs.protocols import LLMCall
from harness.config import CostConfig, ModelSpec
from harness.selfscore.cost import AgentTurnCost
from harness.selfscore.scoring import score_interaction, summarize, turn_quality, weighted_complexity

C = {"critical_thinking": 8, "error_handling": 6, "topic_knowledge": 2}


def turns(*pairs, solved_last=False):
    rows = [{"user_helpfulness": u, "agent_helpfulness": a, "solved": 0, "input_tokens": 100,
             "output_tokens": 50, "cost": 0.5} for u, a in pairs]
    if solved_last:
        rows[-1]["solved"] = 1
    return rows


def test_weighted_complexity_uses_paper_weights():
    assert weighted_complexity(8, 6, 2) == pytest.approx(0.5 * 8 + 0.4 * 6 + 0.1 * 2) == pytest.approx(6.6)
    assert weighted_complexity(8, 6, 2, (0.2, 0.2, 0.6)) == pytest.approx(4.0)


def test_paper_formula_hand_computed():
    f = score_interaction(C, turns((6, 8), (4, 6), (5, 10), solved_last=True), "solved")
    # avg user 5, avg agent 8, quality 1.6, final (6.6 + 1.6) / 2 * 10 = 41
    assert f["avg_user_helpfulness"] == 5 and f["avg_agent_helpfulness"] == 8
    assert f["quality"] == pytest.approx(1.6) and f["final_score"] == pytest.approx(41.0)
    assert f["turns"] == 3 and f["solved"] is True and f["stop_reason"] == "solved"
    assert (f["input_tokens"], f["output_tokens"], f["cost"]) == (300, 150, 1.5)


def test_paper_formula_inconsistency_is_reproduced_not_fixed():
    # perfect user and agent on the most complex problem: 55, not the 100 the paper's prose claims
    top = {"critical_thinking": 10, "error_handling": 10, "topic_knowledge": 10}
    assert score_interaction(top, turns((10, 10)))["final_score"] == pytest.approx(55.0)
    # an unhelpful user pushes quality above 10
    assert score_interaction(top, turns((1, 10)))["quality"] == pytest.approx(10.0)


def test_agent_only_variant_is_opt_in_and_named():
    top = {"critical_thinking": 10, "error_handling": 10, "topic_knowledge": 10}
    f = score_interaction(top, turns((3, 10)), formula="agent_only")
    assert f["final_score"] == pytest.approx(100.0) and f["formula"] == "agent_only"
    with pytest.raises(ValueError, match="unknown formula"):
        score_interaction(top, turns((3, 10)), formula="mine")


def test_failed_judgments_are_excluded_and_counted():
    f = score_interaction(C, turns((6, 8), (None, 6), (4, None)))
    assert f["avg_user_helpfulness"] == 5 and f["avg_agent_helpfulness"] == 7
    assert f["failed_user_judgments"] == 1 and f["failed_agent_judgments"] == 1
    no_complexity = score_interaction(None, turns((6, 8)))
    assert no_complexity["final_score"] is None and no_complexity["complexity_failed"]
    s = summarize([f, no_complexity])
    assert s["scored"] == 1 and s["unscored"] == 1 and s["failed_judgments"] == 3


def test_turn_quality():
    assert turn_quality(4, 8) == 2.0 and turn_quality(None, 8) is None and turn_quality(4, None) is None


def calls():
    return [LLMCall("agent", "agent:reply", "m", 1000, 200), LLMCall("judge", "judge:x", "m", 5000, 80),
            LLMCall("user", "user:reply", "m", 700, 30)]


@pytest.mark.parametrize("cost,expected", [
    (CostConfig(mode="none"), 0.0),
    (CostConfig(mode="total", price_per_mtok=2.0), (1000 + 200) * 2.0 / 1e6),
    (CostConfig(mode="split"), (1000 * 3.0 + 200 * 15.0) / 1e6),
    (CostConfig(mode="per_turn", price_per_turn=0.25), 0.25),
])
def test_cost_modes_price_only_the_agent(cost, expected):
    spec = ModelSpec(input_price_per_mtok=3.0, output_price_per_mtok=15.0)
    assert AgentTurnCost(cost, spec).turn_cost(calls()) == pytest.approx(expected)
