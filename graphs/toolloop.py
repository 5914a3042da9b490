r"""The NoisyToolBench tool loop as a LangGraph StateGraph.

    agent_step -> execute -> record_step --(loop)--> agent_step
                                        \--> END (final answer, step cap, model-call cap)

At each step the agent chooses one action: call an API, ask the user a clarifying question,
or give the final answer (which, for a request beyond the tools, states the limitation).
``execute`` runs the action against the API environment or the simulated user; ``record_step``
hands the finished step to the sink, which commits it before the next step starts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, Sequence
import operator

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from graphs.protocols import LLMCall


@dataclass(slots=True)
class Action:
    """What the agent decided: ``kind`` is ``call``, ``ask`` or ``answer``."""

    kind: str
    text: str = ""
    name: str | None = None
    arguments: Any = None
    thought: str | None = None
    calls: list[LLMCall] = field(default_factory=list)
    error: str | None = None  # an unusable model output, kept for the log
    flags: dict[str, Any] = field(default_factory=dict)  # stored on the step (e.g. limitation)


@dataclass(slots=True)
class Outcome:
    """What came back: the observation of a call or the user's reply to a question."""

    text: str
    detail: dict[str, Any] = field(default_factory=dict)
    calls: list[LLMCall] = field(default_factory=list)


class ToolAgent(Protocol):
    """The agent of the tool loop: chooses each step's action."""

    async def act(self, case: Any, steps: Sequence[dict[str, Any]]) -> Action:
        """The next action on ``case`` after the stored ``steps`` (call an API, ask, or answer)."""
        ...


class ToolEnvironment(Protocol):
    """The APIs of a case, which the agent's ``call`` actions run against."""

    async def call(self, case: Any, name: str, arguments: Any) -> Outcome:
        """Run API ``name`` with ``arguments`` for ``case``; the outcome's text is the observation."""
        ...


class AskedUser(Protocol):
    """The user who answers the agent's clarifying questions (simulated, or a person live)."""

    async def reply(self, case: Any, question: str, steps: Sequence[dict[str, Any]],
                    thought: str | None = None) -> Outcome:
        """``question`` is what the user is shown; ``thought`` the rest of the asking message
        (the whole message is what the official code compares with the anticipated question)."""
        ...


class StepSink(Protocol):
    """Durably records each finished step of the tool loop."""

    def save_step(self, interaction_id: str, index: int, step: dict[str, Any],
                  calls: Sequence[LLMCall]) -> None:
        """Commit step ``index`` (1-based; :func:`step_record`'s form) with the LLM calls it made."""
        ...


class ToolLoopState(TypedDict, total=False):
    """State of one NoisyToolBench case: its stored steps (grown by reducer), the model-call count
    and the caps, and the current step's action and outcome (cleared by ``record_step``)."""

    interaction_id: str
    case: Any
    steps: Annotated[list[dict[str, Any]], operator.add]
    model_calls: int
    max_steps: int
    max_model_calls: int
    action: Action | None
    outcome: Outcome | None
    stop_reason: str | None   # answered | max_steps | max_model_calls


def step_record(action: Action, outcome: Outcome | None) -> dict[str, Any]:
    """The stored form of one step (the NoisyToolBench step log, docs/noisytoolbench.md)."""
    if action.kind == "call":
        step = {"type": "call", "name": action.name, "arguments": action.arguments,
                "observation": outcome.text if outcome else None}
    elif action.kind == "ask":
        step = {"type": "ask", "text": action.text, "reply": outcome.text if outcome else None}
    else:
        step = {"type": "answer", "text": action.text}
    if outcome:
        step.update(outcome.detail)
    if action.thought:
        step["thought"] = action.thought
    if action.error:
        step["agent_error"] = action.error
    step.update(action.flags)
    return step


def build_tool_loop_graph(agent: ToolAgent, environment: ToolEnvironment, user: AskedUser,
                          sink: StepSink, checkpointer: Any = None):
    """Compile the tool loop over the given collaborators. ``checkpointer``: a LangGraph
    checkpointer, needed when ``user`` pauses the graph with ``interrupt()`` (a person
    answering live); a batch needs none."""

    async def agent_step(state: ToolLoopState) -> dict:
        action = await agent.act(state["case"], state["steps"])
        return {"action": action, "model_calls": state["model_calls"] + len(action.calls)}

    async def execute(state: ToolLoopState) -> dict:
        action = state["action"]
        if action.kind == "call":
            outcome = await environment.call(state["case"], action.name, action.arguments)
        elif action.kind == "ask":
            outcome = await user.reply(state["case"], action.text, state["steps"], thought=action.thought)
        else:
            outcome = None
        return {"outcome": outcome}

    async def record_step(state: ToolLoopState) -> Command:
        action, outcome = state["action"], state["outcome"]
        step = step_record(action, outcome)
        index = len(state["steps"]) + 1
        sink.save_step(state["interaction_id"], index, step,
                       [*action.calls, *(outcome.calls if outcome else [])])
        stop = ("answered" if action.kind == "answer"
                else "max_steps" if index >= state["max_steps"]
                else "max_model_calls" if state["model_calls"] >= state["max_model_calls"] else None)
        return Command(update={"steps": [step], "action": None, "outcome": None, "stop_reason": stop},
                       goto=END if stop else "agent_step")

    graph = StateGraph(ToolLoopState)
    graph.add_node("agent_step", agent_step)
    graph.add_node("execute", execute)
    graph.add_node("record_step", record_step, destinations=("agent_step", END))
    graph.add_edge(START, "agent_step")
    graph.add_edge("agent_step", "execute")
    graph.add_edge("execute", "record_step")
    return graph.compile(checkpointer=checkpointer)


def tool_loop_state(interaction_id: str, case: Any, steps: list[dict[str, Any]], model_calls: int,
                    max_steps: int, max_model_calls: int) -> ToolLoopState:
    """State to start (no steps) or resume a case from its stored steps."""
    return {"interaction_id": interaction_id, "case": case, "steps": list(steps),
            "model_calls": model_calls, "max_steps": max_steps, "max_model_calls": max_model_calls,
            "action": None, "outcome": None, "stop_reason": None}
