"""A reference phone bot for deskbench's voice-bot adapters, built from deskbench's own voice
pieces: one websocket server speaking Twilio Media Streams on ``/twilio`` and the OpenAI Realtime
API on ``/realtime``, with streaming endpointing, Whisper speech to text, an LLM (or scripted)
agent whose reply is spoken sentence by sentence with piper, barge-in, and fault modes for the
harness's fault tests. See README.md; run it with ``python -m examples.voice_bot``.
"""
