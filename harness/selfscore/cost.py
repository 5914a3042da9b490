"""SelfScore's three cost modes, applied to the agent's calls of a turn.

``total``: all agent tokens at one price; ``split``: input and output tokens at the agent
model's own prices; ``per_turn``: a fixed price per turn (so an interaction costs price x
turns); ``none``: 0. Every LLM call of every role is also priced at its role's prices in the
``llm_calls`` table, so the cost of simulating and judging is visible separately.
"""
from __future__ import annotations

from typing import Sequence

from graphs.protocols import LLMCall
from harness.config import EXTERNAL_AGENTS, CostConfig, ModelSpec


class AgentTurnCost:
    """Implements ``graphs.protocols.TurnCost``."""

    def __init__(self, config: CostConfig, agent_spec: ModelSpec):
        self.config = config
        self.agent_spec = agent_spec

    def turn_cost(self, calls: Sequence[LLMCall]) -> float | None:
        """The turn's cost by ``config.mode``: 0 (``none``), the fixed ``price_per_turn``
        (``per_turn``), None where the agent under test reported no usage, or the agent calls' tokens at one price (``total``) or at the agent
        model's input and output prices (``split``); prices are per million tokens."""
        mode = self.config.mode
        if mode == "none":
            return 0.0
        if mode == "per_turn":
            return self.config.price_per_turn
        agent = [c for c in calls if c.role == "agent"]
        if not all(c.usage_reported for c in agent):
            return None  # an agent under test that reported no usage: its cost is "not reported"
        if mode == "split" and any(c.purpose.removeprefix("agent:") in EXTERNAL_AGENTS for c in agent):
            # an external agent's own reported cost, else its tokens at the agent role's prices
            # (harness.adapters.external): already on each call
            return sum(c.cost for c in agent)
        tin = sum(c.input_tokens for c in agent)
        tout = sum(c.output_tokens for c in agent)
        if mode == "total":
            return (tin + tout) * self.config.price_per_mtok / 1e6
        return (tin * self.agent_spec.input_price_per_mtok + tout * self.agent_spec.output_price_per_mtok) / 1e6
