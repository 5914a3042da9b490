"""Offline voice: speech to text (faster-whisper), text to speech (piper, espeak-ng fallback),
audio checks and channels, word error rate, voice wrappers for the turn loop, local calls.

See ``harness/voice/README.md`` for the API and ``docs/voice.md`` for the user guide. Heavy
models load on first use, once per process.
"""
