r"""The SelfScore turn loop as a LangGraph StateGraph.

One turn, following SELFSCORE.md:

    user_turn -> judge_user -> agent_turn -> judge_agent -> record_turn --(loop)--> user_turn
                                                                      \--> END (solved, max turns)

``judge_user`` scores the user's message (turn 1: how much helpful information the initial
question holds); ``judge_agent`` scores the agent's reply and runs the solved-check against
the extracted problem (the two calls are independent and run concurrently); ``record_turn``
prices the turn, computes its quality and hands the whole turn to the sink, which commits it
before the next turn starts.

An agent under test that fails a turn for good (``AgentFailure``: retries spent, a timeout, a
malformed response) ends the conversation with stop reason ``agent_error`` (a voice bot's
failure with its own, ``bot_error``, ``bot_timeout``, ``bot_hung_up``): its reply is not
judged and the unanswered turn is not recorded (the batch stores the failure with the
interaction). A reply whose ``extra`` says ``end`` ends it with ``agent_ended`` (or the reply's
``stop_reason``) after the turn.
"""
from __future__ import annotations

import asyncio
from time import perf_counter
from typing import Callable, Optional

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from graphs.protocols import Agent, AgentFailure, Message, TurnCost, TurnJudges, TurnSink, User, agent_has_reply
from graphs.state import TurnLoopState

QualityFn = Callable[[Optional[int], Optional[int]], Optional[float]]


def build_selfscore_graph(user: User, agent: Agent, judges: TurnJudges, cost: TurnCost,
                          sink: TurnSink, turn_quality: QualityFn, stop_on_solved: bool = True,
                          checkpointer=None):
    """Compile the turn loop over the given collaborators.

    Args:
        user: produces the user's message each turn (simulated, scripted or live).
        agent: produces the help-desk reply.
        judges: user/agent helpfulness and the solved-check.
        cost: prices a turn from its LLM calls.
        sink: durably records each finished turn.
        turn_quality: (user helpfulness, agent helpfulness) -> quality of the turn.
        stop_on_solved: end when the solved-check fires (SelfScore). Re-judging a stored
            conversation sets it False: every stored turn is judged, the user script ends it.
        checkpointer: a LangGraph checkpointer. Batch runs need none (each turn is durable in
            the store); a live session needs one so that a live user's ``interrupt()`` can be
            resumed with ``Command(resume=...)`` on the session's thread id.
    """

    async def user_turn(state: TurnLoopState) -> Command:
        started = perf_counter()
        reply = await user.respond(state["problem"], state["history"], state["turn_index"])
        if reply.text is None:
            return Command(update={"user_reply": reply, "stop_reason": "user_ended"}, goto=END)
        if not agent_has_reply(agent, state["problem"], state["history"]):
            # a replayed help-desk worker's thread is over: nobody would answer this message,
            # so it is not stored (a scripted user whose script ends too ends it as user_ended)
            return Command(update={"stop_reason": "agent_ended"}, goto=END)
        # the user's message is judged while the agent answers it: the judgment does not feed
        # the agent, and the reply (what a live participant waits for) no longer waits for it
        return Command(update={"user_reply": reply, "turn_started": started,
                               "history": [Message("user", reply.text)]},
                       goto=["judge_user", "agent_turn"])

    async def judge_user(state: TurnLoopState) -> dict:
        judgment = await judges.user_helpfulness(
            state["problem"], state["history"], state["turn_index"] == 1)
        return {"judgments": [judgment]}

    async def agent_turn(state: TurnLoopState) -> dict:
        try:
            reply = await agent.respond(state["problem"], state["history"])
        except AgentFailure as failure:
            # the agent's result, not the harness's crash: the conversation ends at record_turn,
            # the failure (and the user's unanswered message) goes to the store with the interaction
            return {"agent_failure": failure}
        trace = (reply.extra or {}).get("trace")
        return {"agent_reply": reply, "history": [Message("agent", reply.text or "", trace)]}

    async def judge_agent(state: TurnLoopState) -> dict:
        if state.get("agent_failure") is not None:
            return {}  # no reply to judge
        helpful, solved = await asyncio.gather(
            judges.agent_helpfulness(state["problem"], state["history"]),
            judges.solved(state["problem"], state["history"]),
        )
        return {"judgments": [*state["judgments"], helpful, solved],
                "solved": bool(solved.ok and solved.value)}

    async def record_turn(state: TurnLoopState) -> Command:
        if state.get("agent_failure") is not None:  # the unanswered turn is not a turn row
            return Command(update={"stop_reason": state["agent_failure"].stop_reason}, goto=END)
        turn = state["turn_index"]
        judgments = state["judgments"]
        scores = {j.kind: j.value for j in judgments if j.ok}
        quality = turn_quality(scores.get("user_helpfulness"), scores.get("agent_helpfulness"))
        user_reply, agent_reply = state["user_reply"], state["agent_reply"]
        calls = [*user_reply.calls, *agent_reply.calls]
        for j in judgments:
            calls.extend(j.calls)
        sink.save_turn(
            state["problem"].interaction_id, turn, user_reply, agent_reply, judgments,
            quality, cost.turn_cost(calls), (perf_counter() - state["turn_started"]) * 1000.0,
        )
        stop = _stop_reason(state, stop_on_solved)
        return Command(update={"turn_index": turn + 1, "judgments": [], "user_reply": None,
                               "agent_reply": None, "solved": None, "stop_reason": stop},
                       goto=END if stop else "user_turn")

    return _compile_turn_loop(user_turn, judge_user, agent_turn, judge_agent, record_turn, checkpointer)


def _stop_reason(state: TurnLoopState, stop_on_solved: bool) -> str | None:
    """Why the conversation ends after this turn (None: it goes on): solved, the agent said it
    is over (a response with ``end``), or the last turn."""
    if state["solved"] and stop_on_solved:
        return "solved"
    extra = state["agent_reply"].extra or {}
    if extra.get("end"):
        return extra.get("stop_reason") or "agent_ended"
    return "max_turns" if state["turn_index"] >= state["max_turns"] else None


def _compile_turn_loop(user_turn, judge_user, agent_turn, judge_agent, record_turn, checkpointer):
    """Wire the five node functions into the turn loop's StateGraph and compile it."""
    # The two branching nodes route themselves with ``Command(goto=...)`` rather than through
    # conditional edges: same graph (``destinations`` declares the same edges), same steps, but
    # no router runnable per branch. A plain-function router is run by LangGraph in a worker
    # thread (``run_in_executor``) under its own callback run, which cost about 0.5 ms a turn
    # and, with many conversations, queued on the default thread pool.
    graph = StateGraph(TurnLoopState)
    graph.add_node("user_turn", user_turn, destinations=("judge_user", "agent_turn", END))
    graph.add_node("judge_user", judge_user)
    graph.add_node("agent_turn", agent_turn)
    graph.add_node("judge_agent", judge_agent)
    graph.add_node("record_turn", record_turn, destinations=("user_turn", END))
    graph.add_edge(START, "user_turn")
    graph.add_edge(["judge_user", "agent_turn"], "judge_agent")  # both, then the agent's judges
    graph.add_edge("judge_agent", "record_turn")
    return graph.compile(checkpointer=checkpointer)


def initial_state(problem, history: list[Message], next_turn: int, max_turns: int) -> TurnLoopState:
    """State to start (``history`` empty, turn 1) or resume an interaction."""
    return {"problem": problem, "history": list(history), "turn_index": next_turn,
            "max_turns": max_turns, "judgments": [], "solved": None, "stop_reason": None,
            "user_reply": None, "agent_reply": None, "turn_started": perf_counter(),
            "agent_failure": None}


def recursion_limit(max_turns: int) -> int:
    """LangGraph super-steps needed for ``max_turns`` turns (5 nodes a turn, plus slack)."""
    return 5 * max_turns + 10
