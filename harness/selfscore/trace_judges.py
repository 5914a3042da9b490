"""The judges shown the agent's trace (``agent.judge_sees_trace``, off by default): an agent
under test may report the tool calls it made and the passages it retrieved; with this option the
agent-helpfulness judge and the solved-check read that trace below the agent's reply, marked as
what the user did not see. The paper's judges read the reply alone; this is an option of the
harness, recorded on every judgment and score (``judge_sees_trace`` in the profile record)."""
from __future__ import annotations

import json
from typing import Any, Sequence

from graphs.protocols import Judgment, Message, Problem, TurnJudges

TRACE_HEADER = "[The agent's own trace of this reply: tool calls and retrieved passages. The user did not see it.]"
MAX_RESULT_CHARS = 400


def render_trace(trace: dict[str, Any] | None) -> str:
    """A trace as plain lines: each tool call with its arguments and (clipped) result, each
    retrieved passage with its id and score, then other keys as JSON."""
    if not trace:
        return ""
    lines = []
    for call in trace.get("tool_calls") or []:
        args = json.dumps(call.get("arguments"), ensure_ascii=False, default=str)
        result = str(call.get("result"))[:MAX_RESULT_CHARS] if call.get("result") is not None else "(no result)"
        lines.append(f"tool call {call.get('name')}({args}) -> {result}")
    for passage in trace.get("retrieved") or []:
        score = passage.get("score")
        lines.append(f"retrieved {passage.get('id')}" + (f" (score {score:.2f})" if isinstance(score, (int, float))
                                                         else "") + f": {str(passage.get('text'))[:MAX_RESULT_CHARS]}")
    rest = {k: v for k, v in trace.items() if k not in ("tool_calls", "retrieved")}
    if rest:
        lines.append(json.dumps(rest, ensure_ascii=False, default=str)[:MAX_RESULT_CHARS])
    return "\n".join(lines)


def with_trace(history: Sequence[Message]) -> list[Message]:
    """``history`` with the latest agent message's trace written below its text (other messages as they are)."""
    out = list(history)
    for i in range(len(out) - 1, -1, -1):
        m = out[i]
        if m.role == "agent":
            shown = render_trace(m.trace)
            if shown:
                out[i] = Message("agent", f"{m.content}\n\n{TRACE_HEADER}\n{shown}", m.trace)
            break
    return out


class TraceJudges:
    """``TurnJudges`` whose agent-side judges read the agent's trace (the user side unchanged)."""

    def __init__(self, inner: TurnJudges):
        self.inner = inner

    async def user_helpfulness(self, problem: Problem, history: Sequence[Message], first_turn: bool) -> Judgment:
        """The user's message, judged as without the option (the trace belongs to the agent's reply)."""
        return await self.inner.user_helpfulness(problem, history, first_turn)

    async def agent_helpfulness(self, problem: Problem, history: Sequence[Message]) -> Judgment:
        """The agent's reply with its trace below it."""
        return await self.inner.agent_helpfulness(problem, with_trace(history))

    async def solved(self, problem: Problem, history: Sequence[Message]) -> Judgment:
        """The solved-check on the conversation whose latest agent reply carries its trace."""
        return await self.inner.solved(problem, with_trace(history))
