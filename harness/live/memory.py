"""Idle live conversations leave memory: the part of
:class:`harness.live.sessions.LiveSessions` that records each session's last activity, drops
the paused graphs of sessions idle for ``app.idle_minutes`` and counts those held. Nothing
stored is touched: the next message rebuilds a session's graph from the store.
"""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class IdleMemory:
    """Mixin of :class:`~harness.live.sessions.LiveSessions`; uses its ``clock``, ``app``,
    ``checkpointer``, ``limiter``, ``_touched``, ``_locks`` and ``_last_sweep``."""

    def _touch(self, session_id: str) -> None:
        now = self._touched[session_id] = self.clock()
        if now - self._last_sweep >= 60.0:
            self._last_sweep = now
            self.evict_idle()

    def evict_idle(self) -> list[str]:
        """Drop the paused graphs of conversations idle for ``app.idle_minutes`` (none with a
        turn in flight); returns their ids. Nothing stored is touched: the next message, or a
        view of an agent-mode session, rebuilds the graph from the stored turns."""
        cutoff = self.clock() - self.app.idle_minutes * 60.0
        evicted = []
        for session_id, last in list(self._touched.items()):
            lock = self._locks.get(session_id)
            if last <= cutoff and (lock is None or not lock.locked()):
                evicted.append(session_id)
        if evicted:
            self._forget(*evicted)
            log.info("live sessions: %d idle conversation(s) left memory", len(evicted))
        return evicted

    def _forget(self, *session_ids: str) -> None:
        """Drop these sessions' paused graphs, locks and rate-limit entries."""
        self._delete_threads(set(session_ids))
        for session_id in session_ids:
            self._touched.pop(session_id, None)
            self._locks.pop(session_id, None)
            self.limiter.forget(session_id)

    def _delete_threads(self, thread_ids: set[str]) -> None:
        """``InMemorySaver.delete_thread`` for many threads in one pass: it scans every
        thread's writes and blobs per call, so a sweep of n idle threads would cost n^2.
        (Its tables, like :meth:`in_memory`'s ``storage``, are those of langgraph 1.2.)"""
        saver = self.checkpointer
        for thread_id in thread_ids:
            saver.storage.pop(thread_id, None)
        for table in (saver.writes, saver.blobs):
            for key in [k for k in table if k[0] in thread_ids]:
                del table[key]

    def in_memory(self) -> int:
        """Conversations whose paused graph is held in memory."""
        return sum(1 for spaces in self.checkpointer.storage.values() if any(spaces.values()))
