"""Offline voice: speech to text (faster-whisper), text to speech (piper, espeak-ng fallback),
audio checks and channels, word error rate, voice wrappers for the turn loop, local calls.

See ``harness/voice/README.md`` for the API and ``docs/voice.md`` for the user guide. Heavy
models load on first use, once per process.
"""
from harness.face import lazy_face

FACE = {
    "AudioError": "audio",
    "AudioStore": "audiostore",
    "CallerError": "callers",
    "Compute": "timeline",
    "DuplexHub": "duplex",
    "DuplexVoiceAgent": "duplex",
    "DuplexVoiceUser": "duplex",
    "LENGTH_BUCKETS": "wer",
    "LineError": "lines",
    "MicUser": "local_call",
    "Microphone": "local_call",
    "NoAudioDevice": "devices",
    "PRESETS": "lines",
    "PlayingAgent": "local_call",
    "SENTENCES": "roundtrip",
    "Speaker": "tts",
    "SpeechError": "tts",
    "SpeechPipeline": "streaming",
    "SpokenChunk": "streaming",
    "SpokenReply": "streaming",
    "StreamingVoiceAgent": "call",
    "StreamingVoiceUser": "call",
    "Transcriber": "stt",
    "VoiceAgent": "call",
    "VoiceUser": "call",
    "build_link": "call",
    "caller_preset": "callers",
    "chunk_tts_figures": "streaming",
    "contention": "streaming",
    "corpus_wer": "roundtrip",
    "first_message": "local_call",
    "length_bucket": "wer",
    "line_name": "lines",
    "load_audio": "audio",
    "preset": "lines",
    "require_devices": "devices",
    "resolve": "lines",
    "round_trip": "roundtrip",
    "same_text": "streaming",
    "summarize_errors": "wer",
    "wav_bytes": "audio",
    "word_errors": "wer",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
