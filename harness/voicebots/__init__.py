"""A team's voice bot under test, called the way a phone line calls it: Twilio Media Streams or
the OpenAI Realtime protocol over a websocket, in real time, measured at the caller
(docs/voice-bots.md).

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "BotCaller": "calls",
    "BotCalls": "calls",
    "VoiceBotAgent": "bot_agent",
    "build_bot_calls": "build",
    "check_bot": "build",
    "require_bot": "build",
    "MULAW_8K": "codec",
    "PCM16_24K": "codec",
    "WireFormat": "codec",
    "mulaw_decode": "codec",
    "mulaw_encode": "codec",
    "pcm16_decode": "codec",
    "pcm16_encode": "codec",
    "percentiles": "measures",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
