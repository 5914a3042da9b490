"""Small scripted voice bots for unit tests of the voice-bot line (harness/voicebots): a real
websocket server that hears the caller by energy (loud frames, then quiet) and answers with
audio it is given (a tone, or the tone speech of tests/test_voice_stream_fakes.py). The reference
bot with real speech is examples/voice_bot/.

``mode`` per conversation (the ``conversation_id`` of Twilio's start / Realtime's session
metadata, matched by its task id suffix): answer | silent | close | malformed | wrong-format.
"""
from __future__ import annotations

import asyncio
import base64
import json
from contextlib import asynccontextmanager
from typing import Callable

import numpy as np
from websockets.asyncio.server import serve

from harness.voicebots.codec import MULAW_8K, PCM16_24K, mulaw_decode, mulaw_encode, pcm16_decode


def tone(seconds: float, rate: int = 8000, amp: float = 0.4) -> np.ndarray:
    """A 440 Hz tone (speech-like for the energy detectors)."""
    t = np.arange(int(seconds * rate)) / rate
    return (amp * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


class ToneBot:
    """Both protocols on one server (paths ``/twilio`` and ``/realtime``; see the module docstring).

    Args:
        reply: ``(conversation id, turn) -> (samples, rate, transcript)`` of each answer.
        modes: ``{task id suffix: mode}``; others ``answer``.
        clear_on_barge: the caller speaking while the bot talks stops it (Twilio ``clear``;
            Realtime ``speech_started`` and ``response.done`` cancelled).
        delay_s: think time before answering.
    """

    def __init__(self, reply: Callable | None = None, modes: dict[str, str] | None = None,
                 clear_on_barge: bool = True, delay_s: float = 0.2):
        self.reply = reply or (lambda cid, turn: (tone(0.6), 8000, "a tone"))
        self.modes, self.clear_on_barge, self.delay_s = modes or {}, clear_on_barge, delay_s
        self.received: list[dict] = []
        self.echoed: list[str] = []
        self.conversations: list[str] = []

    def mode(self, cid: str) -> str:
        """The conversation's mode."""
        return next((m for k, m in self.modes.items() if cid.endswith(k)), "answer")

    async def handler(self, ws):
        """One call."""
        realtime = ws.request.path.startswith("/realtime")
        state = {"loud": 0, "quiet": 0, "until": 0.0, "sid": None, "cid": "", "turn": 0, "task": None}
        loop = asyncio.get_running_loop()
        if realtime:
            await ws.send(json.dumps({"type": "session.created", "session": {}}))
        async for raw in ws:
            msg = json.loads(raw)
            self.received.append(msg)
            kind = msg.get("event") or msg.get("type")
            if kind == "start":
                state["sid"], state["cid"] = msg["streamSid"], msg["start"]["customParameters"]["conversation_id"]
                self.conversations.append(state["cid"])
            elif kind == "session.update":
                state["cid"] = msg["session"]["metadata"]["conversation_id"]
                self.conversations.append(state["cid"])
            elif kind == "mark":
                self.echoed.append(msg["mark"]["name"])
            elif kind in ("media", "input_audio_buffer.append"):
                samples = (pcm16_decode(base64.b64decode(msg["audio"])) if realtime
                           else mulaw_decode(base64.b64decode(msg["media"]["payload"])))
                await self._hear(ws, samples, state, realtime, loop)

    async def _hear(self, ws, samples, state, realtime, loop):
        loud = float(np.sqrt(np.mean(samples ** 2))) > 0.05
        if loud:
            state["loud"], state["quiet"] = state["loud"] + 1, 0
            if self.clear_on_barge and loop.time() < state["until"] and state["loud"] == 5:
                if state["task"] is not None:
                    state["task"].cancel()
                if realtime:
                    await ws.send(json.dumps({"type": "input_audio_buffer.speech_started", "audio_start_ms": 0}))
                    await ws.send(json.dumps({"type": "response.done", "response": {"id": "r", "status": "cancelled"}}))
                else:
                    await ws.send(json.dumps({"event": "clear", "streamSid": state["sid"]}))
                state["until"] = 0.0
        else:
            state["quiet"] += 1
        if state["loud"] >= 5 and state["quiet"] == 15 and loop.time() >= state["until"]:
            state["loud"] = 0
            state["turn"] += 1
            state["task"] = asyncio.create_task(self._answer(ws, state, realtime))

    async def _answer(self, ws, state, realtime):
        mode = self.mode(state["cid"])
        if mode == "silent":
            return
        if mode == "close":
            await ws.close()
            return
        if mode == "malformed":
            await ws.send("{oops")
            return
        await asyncio.sleep(self.delay_s)
        samples, rate, text = self.reply(state["cid"], state["turn"])
        fmt = PCM16_24K if realtime else MULAW_8K
        if mode == "wrong-format":
            data = b"RIFF" + b"\0" * 400
        else:
            data = fmt.encode(samples, rate)
        state["until"] = asyncio.get_running_loop().time() + len(samples) / rate + 0.3
        step = fmt.rate // 10 * (2 if realtime else 1)     # 100 ms a message
        if realtime:
            await ws.send(json.dumps({"type": "response.created", "response": {"id": "r", "status": "in_progress"}}))
        for i in range(0, len(data), step):
            payload = base64.b64encode(data[i:i + step]).decode()
            await ws.send(json.dumps({"type": "response.output_audio.delta", "delta": payload, "item_id": "it"}
                                     if realtime else {"event": "media", "streamSid": state["sid"],
                                                       "media": {"payload": payload}}))
            await asyncio.sleep(0.02)
        if realtime:
            await ws.send(json.dumps({"type": "response.output_audio_transcript.done", "transcript": text}))
            await ws.send(json.dumps({"type": "response.done", "response": {"id": "r", "status": "completed"}}))
        else:
            await ws.send(json.dumps({"event": "mark", "streamSid": state["sid"], "mark": {"name": f"r{state['turn']}"}}))


@asynccontextmanager
async def serving(bot: ToneBot):
    """Serve ``bot`` on a free port; yields ``ws://127.0.0.1:PORT``."""
    async with serve(bot.handler, "127.0.0.1", 0) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"


__all__ = ["ToneBot", "serving", "tone", "mulaw_encode"]


class ThreadedBot:
    """``bot`` served from its own thread and event loop (for commands that run ``asyncio.run``
    themselves); a context manager yielding ``ws://127.0.0.1:PORT``."""

    def __init__(self, bot: ToneBot):
        self.bot = bot

    def __enter__(self) -> str:
        import threading
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.url = ""

        async def main():
            async with serving(self.bot) as url:
                self.url = url
                self.stop = asyncio.Event()
                ready.set()
                await self.stop.wait()

        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(main(),), daemon=True)
        self.thread.start()
        ready.wait(10)
        return self.url

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)
