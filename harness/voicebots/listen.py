"""One turn of a call to a voice bot, as the caller lives it: say the message, wait for the bot,
hear it out (or cut in), and know when the bot's turn is over.

The caller's message goes out in real time (:meth:`BotLine.say`); then, on the call's clock:

- **first audio**: the bot's first audio holding sound (above about -50 dBFS: a bot may stream
  silence) that arrived after the caller began; none within ``first_audio_timeout_s`` of the
  caller's end of speech is a **timeout** (``bot_timeout``),
  told apart from a socket the bot closed (``bot_hung_up``) and a message the protocol cannot
  read (``bot_error``);
- **the end of the bot's turn**: everything it said has played and it has been quiet (silence
  only, or nothing) for ``turn_end_s`` (no response of a Realtime bot still open);
- **barge-in**: a caller preset with ``max_talk_s`` (``impatient``, ``interrupting``) cuts in once
  the bot has talked that long (plus the preset's reaction time): it says an opener and the line
  waits for the bot to **yield**: Twilio's ``clear``; a Realtime bot's ``speech_started`` or the
  interrupted response's ``response.done``. The caller's playback is flushed there (what the bot
  sends later for that reply is not heard). A bot that does not yield before its audio runs out
  is recorded as not yielding (``yielded`` false, the yield taken at its audio's end).

Only the "too long" rule of the presets applies: the bot's words are not known while it talks.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from harness.voicebots.line import BotLine
from harness.voicebots.protocols import BotProtocolError

POLL_S = 0.05
YIELD_EVENTS = {"twilio-ws": ("clear",), "realtime-ws": ("speech_started", "response_done")}


@dataclass(frozen=True)
class ListenSettings:
    """How long the caller waits and when it cuts in."""

    first_audio_timeout_s: float = 10.0
    turn_end_s: float = 1.5
    max_reply_s: float = 300.0
    barge_after_s: float | None = None      # the preset's max_talk_s + reaction_s; None: never


@dataclass
class BargeIn:
    """A barge-in: the opener's time on the clock, and when (whether) the bot yielded."""

    opener: str
    at_s: float
    opener_end_s: float
    yield_s: float | None = None
    yielded: bool = False
    by: str = ""
    dropped_s: float = 0.0

    def record(self) -> dict:
        """The stored form (ms from the opener's start to the bot's yield)."""
        return {"opener": self.opener, "at_s": round(self.at_s, 3), "yielded": self.yielded, "by": self.by,
                "yield_ms": None if self.yield_s is None else round((self.yield_s - self.at_s) * 1000.0, 1),
                "unplayed_dropped_s": round(self.dropped_s, 3)}


@dataclass
class HeardTurn:
    """What the caller lived through in one turn."""

    caller_start_s: float
    caller_end_s: float
    end_s: float = 0.0
    outcome: str = "reply"                   # reply | timeout | hung_up | error
    fault: BotProtocolError | None = None
    close: tuple | None = None
    barge: BargeIn | None = None
    first_audio_arrived_s: float | None = None
    transcript: str = ""
    caller_heard: str | None = None
    errors: list[str] = field(default_factory=list)
    events: Counter = field(default_factory=Counter)
    audio_start_s: float = 0.0
    audio: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32), repr=False)


async def _wait(line: BotLine, seconds: float) -> None:
    line.changed.clear()
    try:
        await asyncio.wait_for(line.changed.wait(), max(0.001, min(seconds, POLL_S)))
    except asyncio.TimeoutError:
        pass


def _response_open(line: BotLine, since_s: float) -> bool:
    state = None
    for _, e in line.events_since(since_s):
        if e.kind == "response_started":
            state = True
        elif e.kind == "response_done":
            state = False
    return bool(state)


async def listen(line: BotLine, samples: np.ndarray, rate: int, settings: ListenSettings,
                 opener: tuple[np.ndarray, int, str] | None = None) -> HeardTurn:
    """Say the caller's message and hear the bot's turn out (see the module docstring)."""
    start_s, end_s = line.say(samples, rate)
    turn = HeardTurn(start_s, end_s)
    await line.until(end_s)
    await line.send_all(line.protocol.caller_done())
    deadline = end_s + settings.first_audio_timeout_s
    while True:
        t = line.now()
        if line.fault is not None:
            turn.outcome, turn.fault = "error", line.fault[1]
            break
        if line.closed is not None:
            turn.outcome, turn.close = "hung_up", line.closed
            break
        reply = [p for p in line.played if p.arrived_s >= start_s and p.voiced]
        if not reply:
            if t >= deadline:
                turn.outcome = "timeout"
                break
            await _wait(line, deadline - t)
            continue
        turn.first_audio_arrived_s = reply[0].arrived_s
        if turn.barge is None and opener is not None and settings.barge_after_s is not None \
                and line.voiced_until_s > t and t - reply[0].start_s >= settings.barge_after_s:
            turn.barge = await _cut_in(line, opener)
        if turn.barge is not None:
            _check_yield(line, turn.barge, t)
            if (turn.barge.yield_s is not None or line.voiced_until_s <= t) and t >= turn.barge.opener_end_s:
                if turn.barge.yield_s is None:   # it talked to the end of its audio
                    turn.barge.yield_s, turn.barge.by = min(line.voiced_until_s, t), "audio_end"
                break
        else:
            last_arrival = max((p.arrived_s for p in line.played if p.voiced), default=t)
            quiet_since = max(line.voiced_until_s, last_arrival)
            still_open = _response_open(line, start_s)
            if t >= quiet_since + settings.turn_end_s and not still_open:
                break
            if still_open and t >= quiet_since + settings.first_audio_timeout_s:
                break   # a response left open with nothing more coming: the turn is over as heard
        if t >= end_s + settings.max_reply_s:
            break
        await _wait(line, POLL_S)
    _finish(line, turn, start_s)
    return turn


async def _cut_in(line: BotLine, opener: tuple[np.ndarray, int, str]) -> BargeIn:
    samples, rate, text = opener
    at_s, end_s = line.say(samples, rate)
    await line.until(at_s)
    await line.send_all(line.protocol.barge_in())
    return BargeIn(text, at_s, end_s)


def _check_yield(line: BotLine, barge: BargeIn, t: float) -> None:
    if barge.yield_s is not None:
        return
    kinds = YIELD_EVENTS.get(line.protocol.name, ())
    found = [(when, e) for when, e in line.events_since(barge.at_s) if e.kind in kinds]
    if found:
        when, event = found[0]
        barge.yield_s, barge.yielded, barge.by = when, True, event.raw_type
        played_ms = (when - _item_start(line, barge.at_s)) * 1000.0
        barge.dropped_s = line.flush(when) + sum(d for c, d in line.cleared if c >= barge.at_s)
        asyncio.get_running_loop().create_task(line.send_all(line.protocol.truncate(played_ms)))


def _item_start(line: BotLine, before_s: float) -> float:
    starts = [p.start_s for p in line.played if p.start_s <= before_s]
    return starts[0] if starts else before_s


def _finish(line: BotLine, turn: HeardTurn, start_s: float) -> None:
    turn.end_s = line.now()
    if turn.barge is not None and turn.barge.yield_s is not None:
        # what arrived after the yield for the interrupted reply is not played
        line.played = [p for p in line.played if not (p.arrived_s > turn.barge.yield_s and p.start_s < turn.end_s)]
    events = line.events_since(start_s)
    turn.events = Counter(e.raw_type for _, e in events)
    done = [e.text for _, e in events if e.kind == "transcript_done"]
    turn.transcript = " ".join(done) if done else "".join(e.text for _, e in events if e.kind == "transcript_delta")
    heard = [e.text for _, e in events if e.kind == "caller_heard"]
    turn.caller_heard = " ".join(heard) if heard else None
    turn.errors = [e.text for _, e in events if e.kind == "error"]
    until = turn.barge.yield_s if turn.barge is not None else None
    turn.audio_start_s, turn.audio = line.heard(start_s, until)
