"""The voice-bot line (harness/voicebots): the wire codecs, the two protocols' messages, and
calls in real time over a real websocket to a small scripted bot defined here (a tone for speech;
the reference bot with real speech is tests/test_voice_bots_reference.py)."""
from __future__ import annotations

import asyncio
import base64
import json

import numpy as np
import pytest

from harness.voicebots.codec import MULAW_8K, PCM16_24K, WireFormatError, mulaw_decode, mulaw_encode
from harness.voicebots.line import BotLine
from harness.voicebots.listen import ListenSettings, listen
from harness.voicebots.measures import percentiles, regions, turn_measures
from harness.voicebots.protocols import BotProtocolError, RealtimeProtocol, TwilioProtocol
from tests.tone_bots import ToneBot, serving, tone


# -- codecs -----------------------------------------------------------------------------------
def test_mulaw_round_trip_keeps_the_signal_and_silence_is_0xff():
    x = tone(0.5)
    back = mulaw_decode(mulaw_encode(x))
    assert np.max(np.abs(back - x)) < 0.02          # G.711's coarsest step at this level
    assert mulaw_encode(np.zeros(3, np.float32)) == b"\xff\xff\xff"
    assert mulaw_encode(np.array([1.0, -1.0], np.float32)) == b"\x80\x00"   # the two extremes


def test_wire_formats_refuse_files_and_half_samples():
    with pytest.raises(WireFormatError, match="WAV file"):
        MULAW_8K.decode(b"RIFF\x00\x00\x00\x00WAVEfmt ")
    with pytest.raises(WireFormatError, match="16-bit"):
        PCM16_24K.decode(b"\x00\x01\x02")
    frames = MULAW_8K.frames(MULAW_8K.encode(tone(0.05), 8000))
    assert [len(f) for f in frames] == [160, 160, 160]      # 50 ms -> three 20 ms frames, the last padded


# -- protocols --------------------------------------------------------------------------------
def test_twilio_messages_and_what_the_bot_sends():
    p = TwilioProtocol("run:task")
    connected, start = p.opening()
    assert connected["event"] == "connected" and start["event"] == "start"
    assert start["start"]["customParameters"]["conversation_id"] == "run:task"
    assert start["start"]["mediaFormat"] == {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
    media = p.audio(b"\xff" * 160)
    assert media["media"]["track"] == "inbound" and base64.b64decode(media["media"]["payload"]) == b"\xff" * 160
    payload = base64.b64encode(mulaw_encode(tone(0.02))).decode()
    [audio] = p.parse(json.dumps({"event": "media", "streamSid": p.stream_sid, "media": {"payload": payload}}))
    assert audio.kind == "audio" and len(audio.samples) == 160
    assert p.parse(json.dumps({"event": "mark", "mark": {"name": "r1"}}))[0].name == "r1"
    assert p.parse(json.dumps({"event": "clear", "streamSid": "x"}))[0].kind == "clear"
    assert p.closing()[0]["event"] == "stop"


@pytest.mark.parametrize("message, kind, words", [
    ("not json", "malformed", "not JSON"),
    (json.dumps({"event": "media", "media": {}}), "malformed", "payload"),
    (json.dumps({"event": "media", "media": {"payload": "%%%"}}), "malformed", "base64"),
    (json.dumps({"event": "media", "media": {"payload": base64.b64encode(b"RIFF....WAVE").decode()}}),
     "wrong_format", "WAV file"),
    (json.dumps(["media"]), "malformed", "not an object"),
])
def test_twilio_messages_it_cannot_read_are_named(message, kind, words):
    with pytest.raises(BotProtocolError, match=words) as info:
        TwilioProtocol("c").parse(message)
    assert info.value.kind == kind


def test_realtime_reads_ga_and_beta_names_and_commit_mode_sends_its_own_events():
    p = RealtimeProtocol("c", turn_detection="commit")
    [update] = p.opening()
    assert update["session"]["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert update["session"]["audio"]["input"]["turn_detection"] is None
    assert [m["type"] for m in p.caller_done()] == ["input_audio_buffer.commit", "response.create"]
    assert [m["type"] for m in p.barge_in()] == ["response.cancel"]
    delta = base64.b64encode(PCM16_24K.encode(tone(0.02, 24000), 24000)).decode()
    for name in ("response.output_audio.delta", "response.audio.delta"):
        [e] = p.parse(json.dumps({"type": name, "delta": delta, "item_id": "it1"}))
        assert e.kind == "audio" and len(e.samples) == 480
    for name in ("response.output_audio_transcript.done", "response.audio_transcript.done"):
        assert p.parse(json.dumps({"type": name, "transcript": "Hello."}))[0].text == "Hello."
    assert p.parse(json.dumps({"type": "response.done", "response": {"status": "cancelled"}}))[0].status == "cancelled"
    assert p.truncate(1234.0)[0]["audio_end_ms"] == 1234
    assert RealtimeProtocol("c").caller_done() == [] and RealtimeProtocol("c").barge_in() == []
    with pytest.raises(BotProtocolError, match="16-bit"):
        p.parse(json.dumps({"type": "response.output_audio.delta", "delta": base64.b64encode(b"abc").decode()}))


def test_measures_of_a_turn():
    caller, bot = [(0.0, 2.0)], [(2.6, 4.0), (4.5, 6.0)]
    m = turn_measures(caller, bot, 2.0, 2.5, None)
    assert m["wait_ms"] == 600.0 and m["first_audio_ms"] == 500.0 and m["bot_speech_s"] == 2.9
    assert m["gaps"] == {"n": 1, "total_s": 0.5, "max_s": 0.5} and m["talk_over_s"] == 0.0
    early = turn_measures([(0.0, 2.0)], [(1.5, 3.0)], 2.0, 1.5, None)
    assert early["talk_over_s"] == 0.5 and early["wait_ms"] is None and early["spoke_early_ms"] == 500.0
    assert percentiles([100.0, 200.0, 300.0, None]) == {"n": 3, "p50": 200.0, "p95": 290.0, "max": 300.0, "mean": 200.0}
    assert regions(np.zeros(0, np.float32), 8000, 0.0) == []


# -- calls over a real websocket to a scripted bot --------------------------------------------
async def _call(bot: ToneBot, settings: ListenSettings, opener=None, caller_s: float = 0.5, path: str = "/twilio"):
    async with serving(bot) as url:
        protocol = TwilioProtocol("run:t1") if path == "/twilio" else RealtimeProtocol("run:t1")
        line = BotLine(url + path, protocol)
        await line.open()
        try:
            heard = await listen(line, tone(caller_s), 8000, settings, opener)
            await asyncio.sleep(0.1)
        finally:
            await line.hang_up()
        return line, heard


async def test_a_turn_is_heard_out_with_the_callers_wait_and_the_mark_echoed():
    bot = ToneBot()
    line, heard = await _call(bot, ListenSettings(first_audio_timeout_s=5, turn_end_s=0.5))
    assert heard.outcome == "reply"
    assert 0.55 <= len(heard.audio) / 8000 <= 0.65             # the whole reply was played
    wait = heard.audio_start_s - heard.caller_end_s
    assert 0.2 <= wait < 1.5                                  # the bot's 0.3 s endpoint + its 0.2 s delay
    assert bot.echoed == ["r1"]                               # echoed once the reply had played
    events = [m["event"] for m in bot.received]
    assert events[:2] == ["connected", "start"] and events[-1] == "stop"
    # paced in real time: about one frame per 20 ms of the call
    media = events.count("media")
    assert media == pytest.approx(line.now() / 0.02, rel=0.25)


async def test_a_bot_that_never_answers_is_a_timeout():
    _, heard = await _call(ToneBot(modes={"t1": "silent"}), ListenSettings(first_audio_timeout_s=1.0))
    assert heard.outcome == "timeout" and len(heard.audio) == 0


@pytest.mark.parametrize("mode, outcome, kind", [("close", "hung_up", None), ("malformed", "error", "malformed"),
                                                 ("wrong-format", "error", "wrong_format")])
async def test_a_bot_that_hangs_up_or_sends_what_cannot_be_read(mode, outcome, kind):
    _, heard = await _call(ToneBot(modes={"t1": mode}), ListenSettings(first_audio_timeout_s=3.0))
    assert heard.outcome == outcome
    if kind:
        assert heard.fault.kind == kind


async def test_barge_in_the_bot_clears_and_the_yield_is_measured():
    bot = ToneBot(lambda cid, turn: (tone(3.0), 8000, "a long tone"))
    opener = (tone(0.5), 8000, "Sorry, can I stop you there?")
    line, heard = await _call(bot, ListenSettings(first_audio_timeout_s=5, turn_end_s=0.5, barge_after_s=0.8), opener)
    barge = heard.barge.record()
    assert barge["yielded"] and barge["by"] == "clear"
    assert 50 <= barge["yield_ms"] <= 600          # five loud frames (100 ms) and the socket's way back
    assert barge["unplayed_dropped_s"] > 1.0       # most of the 3 s reply was never heard
    assert len(heard.audio) / 8000 < 2.2           # the caller heard the reply up to the yield only


async def test_a_bot_that_talks_on_is_recorded_as_not_yielding():
    bot = ToneBot(lambda cid, turn: (tone(1.6), 8000, "a tone"), clear_on_barge=False)
    opener = (tone(0.3), 8000, "Okay, hold on a second.")
    _, heard = await _call(bot, ListenSettings(first_audio_timeout_s=5, turn_end_s=0.5, barge_after_s=0.5), opener)
    barge = heard.barge.record()
    assert not barge["yielded"] and barge["by"] == "audio_end"
    assert len(heard.audio) / 8000 == pytest.approx(1.6, abs=0.1)


async def test_realtime_turn_with_the_bots_transcript_and_a_barge_in_it_yields_to():
    bot = ToneBot(lambda cid, turn: (tone(0.6, 24000), 24000, "Restart the router."))
    _, heard = await _call(bot, ListenSettings(first_audio_timeout_s=5, turn_end_s=0.5), path="/realtime")
    assert heard.outcome == "reply" and heard.transcript == "Restart the router."
    assert 0.55 <= len(heard.audio) / 24000 <= 0.65
    assert [m["type"] for m in bot.received[:1]] == ["session.update"]
    long = ToneBot(lambda cid, turn: (tone(3.0, 24000), 24000, "Long."))
    _, heard = await _call(long, ListenSettings(first_audio_timeout_s=5, turn_end_s=0.5, barge_after_s=0.8),
                           (tone(0.5), 8000, "Wait."), path="/realtime")
    barge = heard.barge.record()
    assert barge["yielded"] and barge["by"] == "input_audio_buffer.speech_started"
    assert any(m.get("type") == "conversation.item.truncate" for m in long.received)


async def test_a_bot_that_streams_silence_between_replies_still_ends_its_turn():
    # 0.6 s of tone, then 4 s of silence frames: the turn ends after the tone and 0.5 s of quiet
    bot = ToneBot(lambda cid, turn: (np.concatenate([tone(0.6), np.zeros(32000, np.float32)]), 8000, "x"))
    line, heard = await _call(bot, ListenSettings(first_audio_timeout_s=5, turn_end_s=0.5))
    assert heard.outcome == "reply"
    assert heard.end_s - heard.caller_end_s < 3.0      # not the 4.6 s of audio it sent
    # a bot that sends only silence has said nothing: a timeout
    quiet = ToneBot(lambda cid, turn: (np.zeros(16000, np.float32), 8000, ""))
    _, heard = await _call(quiet, ListenSettings(first_audio_timeout_s=1.0))
    assert heard.outcome == "timeout"
