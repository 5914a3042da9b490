"""The reference voice bot of examples/voice_bot, called for real over a websocket.

The bot runs in a background thread of the test process (``BotThread``: the same server and
models as ``python -m examples.voice_bot``) with a scripted agent, real Whisper and real piper;
one test starts it as a subprocess. A raw ``websockets`` client plays the phone line: the caller's
sentences are synthesised with piper, encoded for the protocol and sent in 20 ms frames paced in
real time, silence in between. What the bot sends back is checked as the harness would see it: the
events and their order, the audio (decoded and transcribed with Whisper), barge-in, the error
events, and each fault mode. Takes seconds per call; no language model (an LLM-agent test uses a
local fake OpenAI-compatible server).
"""
from __future__ import annotations

import asyncio
import base64
import json
import re
import subprocess
import sys
import time
from collections import deque
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from examples.voice_bot.endpointer import Endpointer
from examples.voice_bot.server import BotThread
from harness.models.engine import free_port
from harness.voice.audio import STT_RATE, resample
from harness.voice.lines import LinePreset
from harness.voice.stt import Transcriber
from harness.voice.tts import Speaker
from harness.voice.vad import speech_span
from harness.voicebots.codec import MULAW_8K, PCM16_24K, WireFormat, WireFormatError

REPO = Path(__file__).resolve().parent.parent
REPLIES = ["Please restart the router, then wait one full minute before you try again.",
           "Thank you for calling. Goodbye."]
CALLER = "My laptop cannot connect to the network."
CALLER_AGAIN = "Okay, and what should I do after that?"
SID = "MZ0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def clips() -> dict[str, tuple[np.ndarray, int]]:
    """The caller's sentences, spoken by piper once for the module."""
    speaker = Speaker("piper")
    return {text: (r.samples, r.sample_rate) for text in (CALLER, CALLER_AGAIN) for r in [speaker.speak(text)]}


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-reply script."""
    path = tmp_path_factory.mktemp("voice-bot") / "script.json"
    path.write_text(json.dumps(REPLIES))
    return path


@contextmanager
def bot(script: Path, *options: str):
    """The bot in a thread; yields it with ``.lines``, its log."""
    lines: list[str] = []
    with BotThread(["--script", str(script), *options], log=lines.append) as running:
        running.lines = lines
        yield running


def transcribe(samples: np.ndarray, rate: int) -> str:
    """What Whisper hears in the bot's audio (lower case, no punctuation)."""
    text = Transcriber().transcribe(resample(samples, rate, STT_RATE), STT_RATE).text
    return re.sub(r"[^a-z ]", "", text.lower())


class Line:
    """The client's side of a call: the caller's audio sent in real time (20 ms frames, silence
    when the caller is quiet) and everything the bot sends, kept with its arrival time."""

    def __init__(self, url: str, wire: WireFormat):
        self.url, self.wire = url, wire
        self.events: list[tuple[float, dict | str]] = []
        self.sent_frames = 0
        self._queue: deque[bytes] = deque()
        self._new = asyncio.Event()
        self._sender: asyncio.Task | None = None
        self.closed_at: float | None = None

    async def __aenter__(self) -> "Line":
        self.ws = await connect(self.url, compression=None, max_size=None)
        self._receiver = asyncio.create_task(self._receive())
        return self

    async def __aexit__(self, *exc) -> None:
        if self._sender is not None:
            self._sender.cancel()
        await self.ws.close()
        await asyncio.wait([self._receiver], timeout=10)

    def media(self, n: int, payload: str) -> dict:
        """The message carrying frame ``n``."""
        if self.wire is MULAW_8K:
            return {"event": "media", "sequenceNumber": str(n + 3), "streamSid": SID,
                    "media": {"track": "inbound", "chunk": str(n + 1), "timestamp": str(20 * n), "payload": payload}}
        return {"type": "input_audio_buffer.append", "audio": payload}

    async def send(self, event: dict | str) -> None:
        """One frame to the bot."""
        await self.ws.send(event if isinstance(event, str) else json.dumps(event))

    def start_audio(self) -> None:
        """Begin the continuous audio stream."""
        self._sender = asyncio.create_task(self._send_audio())

    async def _send_audio(self) -> None:
        started = time.monotonic()
        silence = self.wire.silence()
        try:
            while True:
                frame = self._queue.popleft() if self._queue else silence
                await self.send(self.media(self.sent_frames, base64.b64encode(frame).decode()))
                self.sent_frames += 1
                await asyncio.sleep(max(0.0, started + self.sent_frames * 0.02 - time.monotonic()))
        except ConnectionClosed:
            pass

    def say(self, text: str, clips: dict) -> float:
        """Queue a sentence; returns where its speech starts on the stream's clock (s)."""
        samples, rate = clips[text]
        at = (self.sent_frames + len(self._queue)) * 0.02 + speech_span(samples, rate)[0]
        self._queue.extend(self.wire.frames(self.wire.encode(samples, rate)))
        return at

    async def spoken(self) -> float:
        """Wait until the queued speech has been sent; returns the time."""
        while self._queue:
            await asyncio.sleep(0.02)
        return time.monotonic()

    async def _receive(self) -> None:
        try:
            async for message in self.ws:
                try:
                    event = json.loads(message)
                except ValueError:
                    event = message
                self.events.append((time.monotonic(), event))
                self._new.set()
        except ConnectionClosed:
            pass
        finally:
            self.closed_at = time.monotonic()
            self._new.set()

    @property
    def closed(self) -> bool:
        """Whether the bot's side has closed the socket."""
        return self._receiver.done()

    def find(self, kind: str, after: int = 0) -> list[tuple[int, float, dict]]:
        """(index, time, event) of each event of ``kind`` (Twilio ``event``, Realtime ``type``)."""
        return [(i, t, e) for i, (t, e) in enumerate(self.events) if i >= after and isinstance(e, dict)
                and kind in (e.get("event"), e.get("type"))]

    async def wait_for(self, kind: str, after: int = 0, timeout: float = 30.0, test=None) -> tuple[int, float, dict]:
        """The first event of ``kind`` from index ``after`` (and passing ``test``)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [x for x in self.find(kind, after) if test is None or test(x[2])]
            if found:
                return found[0]
            if self.closed:
                raise AssertionError(f"the bot closed the call before {kind}; got {self.kinds()}")
            self._new.clear()
            try:
                await asyncio.wait_for(self._new.wait(), max(0.01, deadline - time.monotonic()))
            except TimeoutError:
                raise AssertionError(f"no {kind} within {timeout} s; got {self.kinds()}") from None

    async def wait_closed(self, timeout: float = 30.0) -> float:
        """Wait until the bot closes the socket; returns when it did."""
        await asyncio.wait_for(asyncio.shield(self._receiver), timeout)
        return self.closed_at

    async def wait_text(self, timeout: float = 30.0) -> int:
        """The index of the first frame that is not JSON."""
        deadline = time.monotonic() + timeout
        while not (found := [i for i, (_, e) in enumerate(self.events) if isinstance(e, str)]):
            assert not self.closed and time.monotonic() < deadline, f"no text frame; got {self.kinds()}"
            await asyncio.sleep(0.05)
        return found[0]

    def kinds(self, after: int = 0) -> list[str]:
        """The kinds of the events received, in order (``<text>`` for a frame that is not JSON)."""
        return [e.get("event") or e.get("type") if isinstance(e, dict) else "<text>" for _, e in self.events[after:]]

    def audio(self, start: int = 0, end: int | None = None) -> bytes:
        """The audio bytes the bot sent between two event indexes."""
        out = []
        for _, e in self.events[start:end]:
            if isinstance(e, dict) and e.get("event") == "media" and "payload" in e["media"]:
                out.append(base64.b64decode(e["media"]["payload"]))
            elif isinstance(e, dict) and e.get("type") == "response.output_audio.delta" and "delta" in e:
                out.append(base64.b64decode(e["delta"]))
        return b"".join(out)


@asynccontextmanager
async def twilio_call(bot_, conversation: str = "c1"):
    """A Twilio Media Streams call: ``connected`` and ``start`` sent, the audio stream running."""
    async with Line(bot_.url("/twilio"), MULAW_8K) as line:
        await line.send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        await line.send({"event": "start", "sequenceNumber": "1", "streamSid": SID, "start": {
            "accountSid": "AC0", "streamSid": SID, "callSid": "CA0", "tracks": ["inbound"],
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            "customParameters": {"conversation_id": conversation}}})
        line.start_audio()
        yield line


@asynccontextmanager
async def realtime_call(bot_, session: dict | None = None):
    """An OpenAI Realtime call: ``session.created`` received, ``session`` sent as a session.update
    (and ``session.updated`` received), the audio stream running."""
    async with Line(bot_.url("/realtime"), PCM16_24K) as line:
        await line.wait_for("session.created", timeout=10)
        if session is not None:
            await line.send({"type": "session.update", "session": session})
            await line.wait_for("session.updated", timeout=10)
        line.start_audio()
        yield line


GA_SESSION = {"type": "realtime", "audio": {
    "input": {"format": {"type": "audio/pcm", "rate": 24000},
              "turn_detection": {"type": "server_vad", "silence_duration_ms": 600}},
    "output": {"format": {"type": "audio/pcm", "rate": 24000}}}}


# -- Twilio Media Streams --

async def test_twilio_call_is_answered_in_order_and_marked(script, clips):
    with bot(script) as b:
        async with twilio_call(b) as line:
            line.say(CALLER, clips)
            spoken = await line.spoken()
            i_mark, _, mark = await line.wait_for("mark")
            assert mark == {"event": "mark", "streamSid": SID, "mark": {"name": "reply-1"}}
            media = line.find("media", 0)
            assert media and all(m["streamSid"] == SID for _, _, m in media)
            assert media[0][1] > spoken, "the bot answered before the caller finished"
            heard = transcribe(MULAW_8K.decode(line.audio(0, i_mark)), 8000)
            assert "restart the router" in heard and "minute" in heard, heard
            await line.send({"event": "mark", "sequenceNumber": "99", "streamSid": SID, "mark": {"name": "reply-1"}})
            await asyncio.sleep(0.3)
            line.say(CALLER_AGAIN, clips)
            i2, _, mark2 = await line.wait_for("mark", after=i_mark + 1)
            assert mark2["mark"]["name"] == "reply-2" and len(line.audio(i_mark + 1, i2)) > 8000
            assert "clear" not in line.kinds(), "a turn after the mark's echo is not a barge-in"
            await line.send({"event": "stop", "sequenceNumber": "200", "streamSid": SID,
                             "stop": {"accountSid": "AC0", "callSid": "CA0"}})
    turns = [x for x in b.lines if " turn " in x]
    assert len(turns) == 2 and "network" in turns[0].lower() and REPLIES[0] in turns[0], b.lines
    assert REPLIES[1] in turns[1], turns[1]
    assert re.search(r"first audio \d+ ms after the caller stopped", turns[0]), turns[0]
    assert any("the caller hung up" in x for x in b.lines)


async def test_twilio_barge_in_clears_the_reply_and_the_caller_is_answered(script, clips):
    with bot(script) as b:
        async with twilio_call(b) as line:
            line.say(CALLER, clips)
            i_first, _, _ = await line.wait_for("media")
            await asyncio.sleep(0.2)  # the reply is playing; its mark is never echoed
            again = time.monotonic()
            line.say(CALLER_AGAIN, clips)
            i_clear, t_clear, clear = await line.wait_for("clear", after=i_first)
            assert clear == {"event": "clear", "streamSid": SID}
            assert 0.3 < t_clear - again < 3.0, t_clear - again
            i_mark, _, mark = await line.wait_for("mark", after=i_clear, test=lambda e: e["mark"]["name"] == "reply-2")
            assert "thank you for calling" in transcribe(MULAW_8K.decode(line.audio(i_clear, i_mark)), 8000)
    assert any("barge-in" in x for x in b.lines), b.lines


async def test_twilio_greeting_is_spoken_when_the_call_starts(script, clips):
    with bot(script, "--greeting", "Hello, you are through to the help desk.") as b:
        async with twilio_call(b) as line:
            i_mark, _, mark = await line.wait_for("mark", timeout=20)
            assert mark["mark"]["name"] == "greeting"
            assert "help desk" in transcribe(MULAW_8K.decode(line.audio(0, i_mark)), 8000)


async def test_two_calls_at_once_each_get_their_own_conversation(script, clips):
    with bot(script) as b:
        async with twilio_call(b, "one") as first, realtime_call(b, GA_SESSION) as second:
            first.say(CALLER, clips)
            second.say(CALLER, clips)
            _, _, mark = await first.wait_for("mark", timeout=40)
            _, _, done = await second.wait_for("response.done", timeout=40)
            assert mark["mark"]["name"] == "reply-1"
            assert done["response"]["status"] == "completed"
            assert second.find("response.output_audio_transcript.done")[0][2]["transcript"] == REPLIES[0]


# -- OpenAI Realtime --

def _order(line: Line, kinds: list[str], after: int = 0) -> list[int]:
    """The index of the first event of each kind (from ``after``), checked to be increasing."""
    found = [line.find(k, after)[0][0] if line.find(k, after) else None for k in kinds]
    assert None not in found, dict(zip(kinds, found))
    assert found == sorted(found), dict(zip(kinds, found))
    return found


async def test_realtime_server_vad_turn(script, clips):
    with bot(script) as b:
        async with realtime_call(b, GA_SESSION) as line:
            _, _, updated = line.find("session.updated")[0]
            detection = updated["session"]["audio"]["input"]["turn_detection"]
            assert detection["type"] == "server_vad" and detection["silence_duration_ms"] == 600
            assert updated["session"]["audio"]["output"]["format"] == {"type": "audio/pcm", "rate": 24000}
            speech_at = line.say(CALLER, clips)
            i_done, _, done = await line.wait_for("response.done")
    kinds = ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped", "input_audio_buffer.committed",
             "conversation.item.input_audio_transcription.completed", "response.created",
             "response.output_audio_transcript.delta", "response.output_audio.delta", "response.output_audio.done",
             "response.output_audio_transcript.done", "response.done"]
    order = _order(line, kinds)
    started, stopped, committed, heard, created = (line.events[i][1] for i in order[:5])
    assert abs(started["audio_start_ms"] - 1000 * speech_at) < 250, (started, speech_at)
    assert started["item_id"] == stopped["item_id"] == committed["item_id"] == heard["item_id"]
    assert stopped["audio_end_ms"] > started["audio_start_ms"] + 1500
    assert "connect" in heard["transcript"].lower() and "network" in heard["transcript"].lower(), heard
    response_id = created["response"]["id"]
    assert created["response"]["status"] == "in_progress"
    assert done["response"]["id"] == response_id and done["response"]["status"] == "completed"
    deltas = [e for _, _, e in line.find("response.output_audio_transcript.delta")]
    assert "".join(d["delta"] for d in deltas) == REPLIES[0]
    assert line.find("response.output_audio_transcript.done")[0][2]["transcript"] == REPLIES[0]
    assert all(e["response_id"] == response_id for _, _, e in line.find("response.output_audio.delta"))
    heard_audio = transcribe(PCM16_24K.decode(line.audio(0, i_done)), 24000)
    assert "restart the router" in heard_audio and "minute" in heard_audio, heard_audio


async def test_realtime_without_turn_detection_waits_for_commit_and_response_create(script, clips):
    beta = {"input_audio_format": "pcm16", "output_audio_format": "pcm16", "turn_detection": None}
    with bot(script) as b:
        async with realtime_call(b, beta) as line:
            _, _, updated = line.find("session.updated")[0]
            assert updated["session"]["audio"]["input"]["turn_detection"] is None
            line.say(CALLER, clips)
            await line.spoken()
            await asyncio.sleep(1.0)
            assert not line.find("response.created") and not line.find("input_audio_buffer.speech_started"), \
                "without turn detection the bot must wait for the client"
            mark = len(line.events)
            await line.send({"type": "input_audio_buffer.commit"})
            await line.send({"type": "response.create"})
            await line.wait_for("response.done", after=mark)
            order = _order(line, ["input_audio_buffer.committed",
                                  "conversation.item.input_audio_transcription.completed", "response.done"], mark)
            assert "network" in line.events[order[1]][1]["transcript"].lower()
            assert line.find("response.done")[0][2]["response"]["status"] == "completed"
            assert line.find("response.output_audio_transcript.done")[0][2]["transcript"] == REPLIES[0]
            assert not line.find("input_audio_buffer.speech_started")


async def test_realtime_bad_client_events_get_errors_and_the_call_goes_on(script, clips):
    bad = ["this is not json", {"type": "no.such.event"}, {"type": "input_audio_buffer.append", "audio": "@@@"},
           {"type": "input_audio_buffer.append", "audio": base64.b64encode(b"\x01\x02\x03").decode()},
           {"type": "input_audio_buffer.append"}, {"type": "response.cancel"}, {"type": "input_audio_buffer.commit"},
           {"type": "session.update", "session": {"audio": {"input": {"format": {"type": "audio/pcmu"}}}}}]
    with bot(script) as b:
        async with realtime_call(b) as line:
            for event in bad:
                await line.send(event)
            await line.wait_for("error", test=lambda e: e["error"]["code"] == "unsupported_audio_format")
            codes = [e["error"]["code"] for _, _, e in line.find("error")]
            assert codes == ["invalid_json", "unknown_event", "invalid_audio", "invalid_audio", "missing_field",
                             "response_cancel_not_active", "input_audio_buffer_commit_empty",
                             "unsupported_audio_format"], codes
            assert all(e["error"]["type"] == "invalid_request_error" for _, _, e in line.find("error"))
            await line.send({"type": "conversation.item.truncate", "item_id": "item_x", "content_index": 0,
                             "audio_end_ms": 0})
            await line.wait_for("conversation.item.truncated")
            line.say(CALLER, clips)
            _, _, done = await line.wait_for("response.done")
            assert done["response"]["status"] == "completed"


async def test_realtime_barge_in_cancels_the_response(script, clips):
    with bot(script) as b:
        async with realtime_call(b, GA_SESSION) as line:
            line.say(CALLER, clips)
            i_first, t_first, first = await line.wait_for("response.output_audio.delta")
            line.say(CALLER_AGAIN, clips)
            i_done, t_done, done = await line.wait_for("response.done", after=i_first)
            assert done["response"]["status"] == "cancelled" and done["response"]["id"] == first["response_id"]
            assert 0.3 < t_done - t_first < 3.0
            i_started, _, _ = await line.wait_for("input_audio_buffer.speech_started", after=i_first)
            assert i_started < i_done
            assert not [e for _, _, e in line.find("response.output_audio.delta", i_done)
                        if e["response_id"] == first["response_id"]], "audio after the response was cancelled"
            _, _, second = await line.wait_for("response.done", after=i_done + 1)
            assert second["response"]["status"] == "completed"
            assert line.find("response.output_audio_transcript.done")[-1][2]["transcript"] == REPLIES[1]


# -- fault modes, as the client sees them --

async def test_fault_hangup_closes_the_call_when_the_caller_stops(script, clips):
    with bot(script, "--fault", "hangup") as b:
        async with twilio_call(b) as line:
            line.say(CALLER, clips)
            spoken = await line.spoken()
            closed = await line.wait_closed(15)
            assert line.ws.close_code == 1000 and 0.0 < closed - spoken < 3.0, (line.ws.close_code, closed - spoken)
            assert not line.find("media") and not line.find("mark")


async def test_fault_silent_never_answers_and_keeps_the_line_open(script, clips):
    with bot(script, "--fault", "silent") as b:
        async with twilio_call(b) as line:
            line.say(CALLER, clips)
            await line.spoken()
            await asyncio.sleep(4.0)
            assert not line.closed and line.events == []
            await asyncio.wait_for(await line.ws.ping(), 5)
    assert any("silent (fault)" in x for x in b.lines), b.lines


@pytest.mark.parametrize("protocol", ["twilio", "realtime"])
async def test_fault_malformed_sends_text_that_is_not_json_then_an_event_without_audio(script, clips, protocol):
    with bot(script, "--fault", "malformed") as b:
        async with (twilio_call(b) if protocol == "twilio" else realtime_call(b)) as line:
            line.say(CALLER, clips)
            i = await line.wait_text()
            assert line.events[i][1] == "this is not JSON {{{"
            await line.wait_for("media" if protocol == "twilio" else "response.done", after=i)
            bad = line.events[i + 1][1]
            if protocol == "twilio":
                assert bad == {"event": "media", "streamSid": SID, "media": {}}
            else:
                assert bad["type"] == "response.output_audio.delta" and "delta" not in bad and bad["response_id"]
            assert not line.audio(), "the malformed reply carries no audio"


@pytest.mark.parametrize("protocol", ["twilio", "realtime"])
async def test_fault_wrong_format_sends_a_wav_file(script, clips, protocol):
    with bot(script, "--fault", "wrong-format") as b:
        async with (twilio_call(b) if protocol == "twilio" else realtime_call(b)) as line:
            line.say(CALLER, clips)
            wire = MULAW_8K if protocol == "twilio" else PCM16_24K
            i, _, _ = await line.wait_for("mark" if protocol == "twilio" else "response.done")
            payload = line.audio(0, i)
            assert payload[:4] == b"RIFF" and payload[8:12] == b"WAVE", payload[:16]
            with pytest.raises(WireFormatError, match="WAV"):
                wire.decode(payload)


async def test_fault_hangup_mid_reply_closes_half_way_through_the_audio(script, clips):
    with bot(script, "--fault", "hangup-mid-reply") as b:
        async with realtime_call(b, GA_SESSION) as line:
            line.say(CALLER, clips)
            await line.wait_for("response.output_audio.delta")
            await line.wait_closed(20)
            assert line.ws.close_code == 1000 and not line.find("response.done")
            received = len(line.audio()) / 2 / 24000
    (said,) = [x for x in b.lines if "fault hangup-mid-reply" in x]
    sent, whole = map(float, re.search(r"after ([\d.]+) s of ([\d.]+) s", said).groups())
    assert abs(received - sent) < 0.05 and abs(sent - whole / 2) < 0.15 and whole > 2.0, (received, sent, whole)


# -- the LLM agent: sentences are spoken while the reply is still being written --

async def test_llm_agent_speaks_its_first_sentence_before_the_reply_is_written(clips):
    from tests.fake_openai_server import FakeOpenAIServer
    said = "Okay. Please restart your router now and try again."
    reply = said + " Tell me if the light turns green. Sorry for the trouble."
    token_s = 0.3
    with FakeOpenAIServer(lambda role: lambda messages, body: reply, token_delay_s=token_s) as server:
        with BotThread(["--llm-url", server.base_url, "--model", "agent-fake", "--max-sentences", "2"],
                       log=[].append) as b:
            async with realtime_call(b, GA_SESSION) as line:
                line.say(CALLER, clips)
                _, t_created, _ = await line.wait_for("response.created")
                _, t_first, _ = await line.wait_for("response.output_audio.delta")
                _, _, done = await line.wait_for("response.done", timeout=40)
    writing_s = len(said.split()) * token_s
    assert t_first - t_created < writing_s - 1.2, (t_first - t_created, writing_s)
    assert done["response"]["status"] == "completed"
    assert line.find("response.output_audio_transcript.done")[0][2]["transcript"] == said, "--max-sentences 2"
    (request,) = server.requests
    assert request["stream"] is True and request["max_tokens"] == 90 and request["model"] == "agent-fake"
    system, user = request["messages"]
    assert system["role"] == "system" and "phone" in system["content"] and "markdown" in system["content"]
    assert user["role"] == "user" and "network" in user["content"].lower()


def test_llm_conversation_keeps_what_the_caller_heard():
    from examples.voice_bot.agent import LlmAgent
    conversation = LlmAgent("http://127.0.0.1:9/v1", "m").conversation()
    conversation.hear("My wifi is down.")
    conversation.said("")               # a reply cancelled before its first audio
    conversation.hear("Hello?")
    conversation.said("Sorry about that.")
    assert conversation.messages == [{"role": "user", "content": "My wifi is down. Hello?"},
                                     {"role": "assistant", "content": "Sorry about that."}]


# -- the endpointer on its own --

def _endpoint(audio: np.ndarray, rate: int) -> list:
    endpointer, events = Endpointer(rate), []
    for i in range(0, len(audio), rate // 50):
        events += endpointer.push(audio[i:i + rate // 50])
    return events


@pytest.mark.parametrize("line", ["clean", "telephone band, white noise 20 dB under the speech all along",
                                  "telephone band, white noise 20 dB under the speech in the utterance only"])
def test_endpointer_finds_the_utterance(clips, line):
    samples, rate = clips[CALLER]
    start, end = speech_span(samples, rate)
    if line == "clean":
        speech = resample(samples, rate, 8000)
    else:
        speech, _ = LinePreset("telephone", telephone=True).apply(samples, rate, "k")
    sigma = np.sqrt(np.mean(speech.astype(np.float64) ** 2) / 100)
    noise = np.random.default_rng(0).normal(0, sigma, 8000 * 3 + len(speech))
    if line.endswith("utterance only"):
        speech = np.clip(speech + noise[:len(speech)], -1, 1)
    audio = np.concatenate([np.zeros(8000), speech, np.zeros(16000)]).astype(np.float32)
    if line.endswith("all along"):  # the hiss runs through the whole call, from its first moment
        audio = np.clip(audio + noise[:len(audio)], -1, 1).astype(np.float32)
    events = _endpoint(MULAW_8K.decode(MULAW_8K.encode(audio, 8000)), 8000)
    assert [e.kind for e in events] == ["start", "confirmed", "stop"], events
    assert abs(events[0].at_s - (1.0 + start)) < 0.2, (events[0].at_s, start)
    assert -0.35 < events[2].at_s - (1.0 + end) < 0.1, (events[2].at_s, end)
    utterance = events[2].utterance
    assert utterance.start_s == events[0].at_s and utterance.seconds > end - start


def test_endpointer_ignores_hiss_and_a_short_sound(clips):
    hiss = np.random.default_rng(1).normal(0, 0.01, 8000 * 4).astype(np.float32)
    assert _endpoint(hiss, 8000) == []
    samples, rate = clips[CALLER]
    start, _ = speech_span(samples, rate)
    blip = resample(samples, rate, 8000)[int((start + 0.3) * 8000):int((start + 0.45) * 8000)]
    events = _endpoint(np.concatenate([np.zeros(8000), blip, np.zeros(16000)]).astype(np.float32), 8000)
    assert "confirmed" not in [e.kind for e in events], events


# -- the command line --

def test_the_command_line_refuses_a_bad_script_or_an_unreachable_model(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    for args in (["--script", str(bad)], ["--script", str(tmp_path / "missing.json")],
                 ["--llm-url", f"http://127.0.0.1:{free_port()}/v1"]):
        proc = subprocess.run([sys.executable, "-m", "examples.voice_bot", *args], cwd=REPO, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("voice-bot: error: "), proc.stderr


def test_the_bot_runs_as_a_module_and_answers_readiness_checks(script):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "examples.voice_bot", "--port", str(port), "--script", str(script)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
            try:
                ready = httpx.get(base + "/", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.3)
        assert (ready.status_code, ready.text) == (200, "ok")
        assert httpx.get(base + "/nowhere", timeout=5).status_code == 404
        assert httpx.get(base + "/twilio", timeout=5).status_code == 426
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert f"serving ws://127.0.0.1:{port}/twilio" in out and f"ws://127.0.0.1:{port}/realtime" in out, out
