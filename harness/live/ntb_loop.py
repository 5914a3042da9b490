"""The tool loop of a live NoisyToolBench session: the part of
:class:`harness.live.ntb_sessions.NtbLiveSessions` that runs the session's paused loop, rebuilds
it from the stored steps, finds the agent's waiting question, and finishes and scores the
session as a batch case is scored.
"""
from __future__ import annotations

from typing import Any, AsyncIterator

from graphs.toolloop import Action, step_record, tool_loop_state
from harness.live.guards import dropping_failed_work
from harness.ntb.batch import StoreStepSink, score_row


class NtbToolLoop:
    """Mixin of :class:`~harness.live.ntb_sessions.NtbLiveSessions`; uses its ``config``,
    ``batch``, ``matcher``, ``writer``, ``store``, ``checkpointer``, ``_graph``, ``_graphs``,
    ``_case_of``, ``_steps``, ``_touch`` and ``_forget``."""

    def _thread(self, session_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": session_id},
                "recursion_limit": 3 * self.config.ntb.max_steps + 10}

    async def _stream(self, sess: dict[str, Any], graph_input: Any) -> AsyncIterator[None]:
        """Run the session's loop on ``graph_input`` (a start state or a resume); yield after
        each stored step; when the loop ends, finish and score the session."""
        graph = self._graph(sess["id"])
        async for update in graph.astream(graph_input, self._thread(sess["id"]), stream_mode="updates"):
            if "record_step" in update:
                yield
        snapshot = await graph.aget_state(self._thread(sess["id"]))
        if not snapshot.next:  # the loop ended: answered, max_steps or max_model_calls
            await self._finish(sess, snapshot.values.get("stop_reason"))

    async def _rebuild(self, sess: dict[str, Any]) -> AsyncIterator[None]:
        """When the session's loop is not in memory, start it from the stored steps (as a
        batch resume does) and run it to the next question or the end; yields after each
        stored step. Nothing happens when the loop is paused in memory, or after the person
        ended the session while its scoring was left to do (the last step is unanswered)."""
        self._touch(sess["id"])
        snapshot = await self._graph(sess["id"]).aget_state(self._thread(sess["id"]))
        if snapshot.next:
            return
        iid, ntb = sess["interaction_id"], self.config.ntb
        steps = self._steps(iid)
        if steps and steps[-1].get("unanswered"):
            return
        stop = ("answered" if steps and steps[-1]["type"] == "answer"
                else "max_steps" if len(steps) >= ntb.max_steps else None)
        if stop:  # stopped after its last step was stored, before it was scored
            await self._finish(sess, stop)
            return
        state = tool_loop_state(iid, self._case_of(sess["task_id"]), steps, self.batch._model_calls(iid),
                                ntb.max_steps, ntb.max_model_calls)
        async for _ in self._stream(sess, state):
            yield

    async def _pending(self, session_id: str) -> Action | None:
        """The agent's question waiting in the paused loop, if any."""
        graph = self._graphs.get(session_id)
        if graph is None:
            return None
        snapshot = await graph.aget_state(self._thread(session_id))
        action = snapshot.values.get("action") if snapshot.next == ("execute",) else None
        return action if action is not None and action.kind == "ask" else None

    def _store_unanswered(self, sess: dict[str, Any], action: Action) -> None:
        iid = sess["interaction_id"]
        steps = self._steps(iid)
        step = step_record(action, None)
        step.update({**self.matcher.match(self._case_of(sess["task_id"]), action.text, steps, action.thought),
                     "person": True, "unanswered": True})
        StoreStepSink(self.writer).save_step(iid, len(steps) + 1, step, action.calls)

    async def _finish(self, sess: dict[str, Any], stop_reason: str | None) -> None:
        """Finish the interaction and the session; score it as a batch case is scored."""
        iid = sess["interaction_id"]
        steps = self._steps(iid)
        if not steps:
            self.writer.finish_interaction(iid, "abandoned", stop_reason, 0,
                                           error="ended before the agent's first step")
            self.store.end_session(sess["id"], "abandoned")
        else:
            figures = await self.batch.case_figures(self._case_of(sess["task_id"]), steps)
            self.writer.finish_interaction(iid, "completed", stop_reason, len(steps),
                                           run_id=sess["run_id"], scores=[score_row(iid, figures)])
            self.store.end_session(sess["id"], "ended")
        self._forget(sess["id"])

    def _model_failures(self, session_id: str):
        """A model that fails for good (after its retries) or an open circuit breaker: the
        step in flight is dropped (nothing of it was stored), the paused loop leaves memory,
        and the person is told to continue (the loop is rebuilt from the stored steps)."""
        return dropping_failed_work(self.checkpointer, session_id,
                                    "live NoisyToolBench session %s: a step failed",
                                    "Every finished step is stored, your answers included: press "
                                    "Continue (or End) in a moment.")
