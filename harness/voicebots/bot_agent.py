"""The team's voice bot as the turn loop's ``Agent``: each turn sends the caller's speech down the
line in real time, hears the bot's turn out, and returns what the bot said with what the caller
experienced (docs/voice-bots.md).

The reply's text, which the judges read, is the bot's own transcript where it sends one (Realtime's
transcript events), else what the harness's STT heard of its audio. Both are kept, with the word
error rate between them (``transcript_wer``). A turn the bot fails ends the call: no audio within
``first_audio_timeout_s`` (``bot_timeout``; silence frames do not count), the socket closed before it said anything
(``bot_hung_up``), or a message the protocol cannot read (``bot_error``); what was heard is stored
with the failure. A socket the bot closes after it spoke keeps the turn and ends the call with
``bot_hung_up``.
"""
from __future__ import annotations

import asyncio
from typing import Any, Sequence

import numpy as np

from graphs.protocols import AgentFailure, LLMCall, Message, Problem, Reply
from harness.voice.audio import AudioError
from harness.voice.call import noise_key
from harness.voice.wer import wer
from harness.voicebots.calls import BotCalls, Call
from harness.voicebots.listen import HeardTurn, listen
from harness.voicebots.measures import regions, turn_measures

STOPS = {"timeout": "bot_timeout", "hung_up": "bot_hung_up", "error": "bot_error"}


def _turn_of(history: Sequence[Message]) -> int:
    return sum(1 for m in history if m.role == "user")


class VoiceBotAgent:
    """The voice bot behind :class:`BotCalls` (see the module docstring)."""

    def __init__(self, calls: BotCalls):
        self.calls = calls
        self.kind, self.name = calls.kind, calls.name
        #: the last turn's audio as the caller's line heard it ``(samples, rate)`` (a local call plays it)
        self.last_heard: tuple[np.ndarray, int] | None = None

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        """One turn of the call (see the module docstring).

        Raises:
            AgentFailure: the bot could not be reached, timed out, hung up before it spoke, or sent
                what the protocol cannot read; ``stop_reason`` says which.
        """
        iid, turn = problem.interaction_id, _turn_of(history)
        user_message = history[-1].content if history else ""
        try:
            call = await self.calls.call(iid)
        except Exception as exc:  # refused, bad host, handshake rejected or timed out
            raise AgentFailure(f"voice bot {self.name} ({self.kind}) could not be reached at {self.calls.url}: "
                               f"{type(exc).__name__}: {exc}",
                               {"adapter": self.kind, "agent": self.name, "kind": "unreachable", "turn": turn,
                                "user_message": user_message}, [self._call(0.0, "unreachable")],
                               stop_reason="bot_error") from exc
        samples, rate = self.calls.pending.pop(iid, (np.zeros(8000, np.float32), 16000))
        opener = call.opener or await self.calls.opener(call, iid, turn)
        call.opener = opener
        heard = await listen(call.line, samples, rate, self.calls.settings, opener)
        call.turns += 1
        caller = regions(samples, rate, heard.caller_start_s)
        call.timeline.add("caller", heard.caller_start_s, samples, rate, "speech", turn, user_message)
        if heard.barge is not None:
            o_samples, o_rate, o_text = opener
            call.timeline.add("caller", heard.barge.at_s, o_samples, o_rate, "barge-in", turn, o_text)
            caller += regions(o_samples, o_rate, heard.barge.at_s)
        caller_end = caller[0][1] if caller else heard.caller_end_s
        caller_end = max((b for a, b in caller if a < heard.caller_end_s), default=caller_end)
        measures = await self._measures(call, iid, turn, heard, caller, caller_end)
        if heard.outcome != "reply" and not (heard.outcome == "hung_up" and measures.get("bot_speech_s")):
            await asyncio.to_thread(self.calls.save_recording, iid)
            raise self._failure(heard, measures, turn, user_message)
        text = heard.transcript.strip() or measures["heard_text"]
        call_record = self._call(measures["wait_ms"] or 0.0, None)
        extra: dict[str, Any] = {"adapter": self.kind, "agent": self.name, "usage": "not reported",
                                 "latency_ms": measures["wait_ms"], "voice": measures,
                                 "end": heard.outcome == "hung_up"}
        if heard.outcome == "hung_up":
            extra["stop_reason"] = "bot_hung_up"
        await asyncio.to_thread(self.calls.save_recording, iid)
        return Reply(text, [call_record], extra)

    async def end_conversation(self, interaction_id: str, stop_reason: str | None = None) -> None:
        """The conversation is over: hang up and write the recording."""
        await self.calls.end_conversation(interaction_id, stop_reason)

    async def aclose(self) -> None:
        """Hang up every call still open."""
        await self.calls.aclose()

    def _call(self, latency_ms: float, error: str | None) -> LLMCall:
        return LLMCall("agent", f"agent:{self.kind}", self.name, latency_ms=latency_ms, error=error,
                       usage_reported=False)

    async def _measures(self, call: Call, iid: str, turn: int, heard: HeardTurn,
                        caller: list, caller_end: float) -> dict[str, Any]:
        link, rate = self.calls.link, call.line.wire.rate
        audio = heard.audio
        bot = regions(audio, rate, heard.audio_start_s)
        first = next((p.start_s for p in call.line.played if p.arrived_s >= heard.caller_start_s), None)
        measures: dict[str, Any] = {
            "pipeline": "voice-bot", "protocol": self.kind, "wire_format": call.line.wire.describe(),
            "channel": link.channel.describe(), "outcome": heard.outcome,
            **turn_measures(caller, bot, caller_end, first, heard.barge.record() if heard.barge else None),
            "bot_transcript": heard.transcript.strip() or None, "bot_heard": heard.caller_heard,
            "audio_s": round(len(audio) / rate, 3), "events": dict(heard.events)}
        if heard.errors:
            measures["bot_errors"] = heard.errors
        if len(audio):
            call.timeline.add("agent", heard.audio_start_s, audio, rate, "speech", turn, heard.transcript)
        text, stt_ms, ref = "", 0.0, None
        self.last_heard = None
        if bot:
            line_audio, line_rate = await asyncio.to_thread(link.channel.apply, audio, rate, noise_key(iid, turn, "agent"))
            self.last_heard = (line_audio, line_rate)
            transcript = await link.transcriber.atranscribe(line_audio, line_rate)
            text, stt_ms = transcript.text, transcript.ms
            if link.audio is not None:
                try:
                    ref = await asyncio.to_thread(link.audio.save, line_audio, line_rate, link.run_of(iid), iid, turn, "agent")
                except AudioError:
                    ref = None
        measures.update(heard_text=text, stt_ms=round(stt_ms, 1), audio=ref)
        if measures["bot_transcript"] and text:
            measures["transcript_wer"] = round(wer(measures["bot_transcript"], text), 4)
        return measures

    def _failure(self, heard: HeardTurn, measures: dict, turn: int, user_message: str) -> AgentFailure:
        stop = STOPS[heard.outcome]
        detail: dict[str, Any] = {"adapter": self.kind, "agent": self.name, "kind": stop, "turn": turn,
                                  "user_message": user_message, "heard_text": measures.get("heard_text"),
                                  "bot_transcript": measures.get("bot_transcript"), "audio": measures.get("audio"),
                                  "voice": measures}
        if heard.outcome == "timeout":
            message = (f"the bot said nothing (no audio above about -50 dBFS) within "
                       f"{self.calls.settings.first_audio_timeout_s:g} s of the caller's end of speech (turn {turn})")
        elif heard.outcome == "hung_up":
            code, reason = (heard.close or (None, None, ""))[1:]
            detail.update(close_code=code, close_reason=reason)
            message = f"the bot closed the call (code {code}{', ' + reason if reason else ''}) before it answered turn {turn}"
        else:
            fault = heard.fault
            detail.update(fault=getattr(fault, "kind", "malformed"), body=getattr(fault, "raw", ""))
            message = f"the bot sent a message the {self.kind} protocol cannot read (turn {turn}): {fault}"
        return AgentFailure(f"voice bot {self.name} ({self.kind}): {message}", detail,
                            [self._call(0.0, stop)], stop_reason=stop)
