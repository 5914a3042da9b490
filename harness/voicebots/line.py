"""One call to a voice bot over its websocket, in real time: the phone line.

:class:`BotLine` connects, sends the protocol's opening, then runs two tasks for the whole call:

- the **sender** sends one 20 ms frame every 20 ms of the call's clock, the caller's speech when
  some is queued (:meth:`BotLine.say`), else silence, as a phone line (or a microphone) does;
  frames late because the event loop was busy go out at once, so the slot schedule holds;
- the **receiver** reads the bot's messages, stamps each with the call's clock and lays the
  bot's audio on the **playback** the caller hears: a chunk plays when it arrives or when the
  audio before it has played, whichever is later (a jitter buffer). A Twilio ``mark`` is echoed
  when the audio before it has played; ``clear`` (or :meth:`flush` on a Realtime barge-in) drops
  what was not played yet, and echoes the marks waiting. Chunks that hold only silence (a bot may
stream silence between its replies) are played but do not count as the bot talking.

Everything the bot did is kept with its time (:attr:`BotLine.log`); what the caller heard is
:meth:`BotLine.heard`. A message the protocol cannot read ends the reading (:attr:`fault`); the
bot closing the socket sets :attr:`closed`.
"""
from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import numpy as np

from harness.voicebots.protocols import BotEvent, BotProtocolError

FRAME_S = 0.02
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
VOICED_RMS = 0.003   # about -50 dBFS: a chunk above it holds sound, below it is the bot's silence


def voiced(samples: np.ndarray) -> bool:
    """Whether a chunk of the bot's audio holds sound (a bot may stream silence between replies)."""
    return bool(len(samples)) and float(np.sqrt(np.mean(np.square(samples, dtype=np.float64)))) > VOICED_RMS


@dataclass
class Played:
    """A chunk of the bot's audio on the caller's playback: when it starts and what it is."""

    start_s: float
    samples: np.ndarray = field(repr=False)
    rate: int
    arrived_s: float
    voiced: bool = True

    @property
    def end_s(self) -> float:
        """When the chunk has played (s on the call's clock)."""
        return self.start_s + len(self.samples) / self.rate


class BotLine:
    """The phone line of one call (see the module docstring).

    Args:
        url: the bot's ``ws://`` or ``wss://`` address.
        protocol: a :class:`~harness.voicebots.protocols.TwilioProtocol` or ``RealtimeProtocol``.
        headers: sent with the websocket handshake (e.g. ``Authorization``).
        open_timeout_s: seconds the handshake may take.
    """

    def __init__(self, url: str, protocol, headers: dict[str, str] | None = None, open_timeout_s: float = 10.0):
        self.url, self.protocol, self.headers = url, protocol, dict(headers or {})
        self.open_timeout_s = open_timeout_s
        self.wire = protocol.wire
        self.log: list[tuple[float, BotEvent]] = []
        self.played: list[Played] = []
        self.playback_end_s = 0.0
        self.voiced_until_s = 0.0          # when the last chunk that held sound has played
        self.fault: tuple[float, BotProtocolError] | None = None
        self.closed: tuple[float, int | None, str] | None = None
        self.hung_up = False
        #: each ``clear`` of the bot: when, and the seconds of its audio it dropped unplayed
        self.cleared: list[tuple[float, float]] = []
        self.changed = asyncio.Event()
        self._queue: deque[bytes] = deque()
        self._slot = 0                      # frames sent so far (the next frame's slot)
        self._t0 = 0.0
        self._ws: Any = None
        self._tasks: list[asyncio.Task] = []
        self._marks: list[tuple[float, str]] = []

    # -- the call's clock -------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the call connected."""
        return perf_counter() - self._t0

    async def until(self, t_s: float) -> None:
        """Sleep until the call's clock reads ``t_s``."""
        delay = t_s - self.now()
        if delay > 0:
            await asyncio.sleep(delay)

    # -- connecting and hanging up ----------------------------------------------------------
    async def open(self) -> None:
        """Connect, send the opening, start the sender and the receiver.

        Raises:
            OSError, websockets.exceptions.WebSocketException, TimeoutError: the bot cannot be reached.
        """
        from websockets.asyncio.client import connect
        self._ws = await connect(self.url, additional_headers=self.headers or None,
                                 open_timeout=self.open_timeout_s, max_size=MAX_MESSAGE_BYTES,
                                 ping_interval=None)
        self._t0 = perf_counter()
        for message in self.protocol.opening():
            await self.send(message)
        self._tasks = [asyncio.create_task(self._sender()), asyncio.create_task(self._receiver())]

    async def send(self, message: dict) -> None:
        """Send one JSON message (nothing once the socket is closed)."""
        if self._ws is None or self.closed is not None:
            return
        try:
            await self._ws.send(json.dumps(message))
        except Exception:   # the socket closed under us: the receiver records how
            pass

    async def send_all(self, messages: list[dict]) -> None:
        """Send several messages in order."""
        for m in messages:
            await self.send(m)

    async def hang_up(self) -> None:
        """The caller hangs up: the protocol's closing, then the socket closes."""
        if self.hung_up:
            return
        self.hung_up = True
        if self.closed is None:
            await self.send_all(self.protocol.closing())
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._ws is not None:
            try:
                await asyncio.wait_for(self._ws.close(), 5.0)
            except Exception:
                pass

    # -- the caller's side ------------------------------------------------------------------
    def say(self, samples: np.ndarray, rate: int) -> tuple[float, float]:
        """Queue the caller's speech; returns ``(start_s, end_s)``: when its first frame goes out
        and when its last has gone, on the call's clock."""
        frames = self.wire.frames(self.wire.encode(samples, rate))
        first = max(self._slot + len(self._queue), int(self.now() / FRAME_S) + 1)
        pad = first - (self._slot + len(self._queue))
        self._queue.extend([self.wire.silence()] * pad + frames)
        return first * FRAME_S, (first + len(frames)) * FRAME_S

    @property
    def speaking_until_s(self) -> float:
        """When the caller's queued speech has all gone out."""
        return (self._slot + len(self._queue)) * FRAME_S

    async def _sender(self) -> None:
        silence = self.wire.silence()
        while self.closed is None:
            await self.until(self._slot * FRAME_S)
            frame = self._queue.popleft() if self._queue else silence
            self._slot += 1
            await self.send(self.protocol.audio(frame))

    # -- the bot's side ---------------------------------------------------------------------
    async def _receiver(self) -> None:
        from websockets.exceptions import ConnectionClosed
        try:
            async for message in self._ws:
                t = self.now()
                try:
                    events = self.protocol.parse(message)
                except BotProtocolError as exc:
                    self.fault = (t, exc)
                    self.changed.set()
                    return
                for event in events:
                    self._take(t, event)
                self.changed.set()
        except ConnectionClosed:
            pass
        finally:
            if self.closed is None and not self.hung_up:
                ws = self._ws
                self.closed = (self.now(), getattr(ws, "close_code", None), str(getattr(ws, "close_reason", "") or ""))
            self.changed.set()

    def _take(self, t: float, event: BotEvent) -> None:
        self.log.append((t, event))
        if event.kind == "audio" and event.samples is not None and len(event.samples):
            start = max(t, self.playback_end_s)
            played = Played(start, event.samples, self.wire.rate, t, voiced(event.samples))
            self.played.append(played)
            self.playback_end_s = played.end_s
            if played.voiced:
                self.voiced_until_s = played.end_s
        elif event.kind == "mark":
            self._marks.append((self.playback_end_s, event.name))
            asyncio.get_running_loop().create_task(self._echo_marks(self.playback_end_s))
        elif event.kind == "clear":
            self.cleared.append((t, self.flush(t)))

    async def _echo_marks(self, at_s: float) -> None:
        await self.until(at_s)
        await self._echo_due(self.now())

    async def _echo_due(self, t: float) -> None:
        due = [m for m in self._marks if m[0] <= t + 1e-6]
        self._marks = [m for m in self._marks if m[0] > t + 1e-6]
        for _, name in due:
            await self.send(self.protocol.mark_echo(name))

    def flush(self, t: float) -> float:
        """Drop the bot's audio not played by ``t``; returns the seconds dropped. Marks waiting
        are echoed now (as Twilio does on ``clear``)."""
        dropped = 0.0
        kept: list[Played] = []
        for p in self.played:
            if p.start_s >= t:
                dropped += p.end_s - p.start_s
                continue
            if p.end_s > t:
                n = int(round((t - p.start_s) * p.rate))
                dropped += (len(p.samples) - n) / p.rate
                p = Played(p.start_s, p.samples[:n], p.rate, p.arrived_s, p.voiced)
            kept.append(p)
        self.played = kept
        self.playback_end_s = min(self.playback_end_s, t) if kept else t
        self.voiced_until_s = min(self.voiced_until_s, self.playback_end_s)
        if self._marks:
            self._marks = [(t, name) for _, name in self._marks]
            asyncio.get_running_loop().create_task(self._echo_due(t))
        return dropped

    def heard(self, since_s: float, until_s: float | None = None) -> tuple[float, np.ndarray]:
        """The bot's audio the caller heard from ``since_s`` (to ``until_s``): ``(start_s,
        samples at the wire rate)``, silence between chunks kept; ``(since_s, empty)`` if none."""
        chunks = [p for p in self.played if p.end_s > since_s and (until_s is None or p.start_s < until_s)]
        if not chunks:
            return since_s, np.zeros(0, np.float32)
        rate = self.wire.rate
        start = max(since_s, chunks[0].start_s)
        end = max(p.end_s for p in chunks) if until_s is None else min(until_s, max(p.end_s for p in chunks))
        out = np.zeros(max(0, int(round((end - start) * rate))), np.float32)
        for p in chunks:
            i = int(round((p.start_s - start) * rate))
            seg = p.samples[max(0, -i):]
            i = max(0, i)
            n = min(len(seg), len(out) - i)
            if n > 0:
                out[i:i + n] = seg[:n]
        return start, out

    def events_since(self, since_s: float, kind: str | None = None) -> list[tuple[float, BotEvent]]:
        """The bot's events after ``since_s`` (of one ``kind``)."""
        return [(t, e) for t, e in self.log if t >= since_s and (kind is None or e.kind == kind)]
