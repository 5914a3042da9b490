"""The ``voice`` section of the config: simulated voice calls (docs/voice.md).

Its own module (``harness.config`` imports it): the section validates its presets against the
caller and line tables of ``harness.voice``, read on first use.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class VoiceConfig(_Strict):
    """Simulated voice calls: each message spoken, sent through the channel, transcribed (docs/voice.md)."""

    enabled: bool = Field(False, description="speak and transcribe every message of a SelfScore run")
    tts: Literal["piper", "espeak-ng"] = Field("piper", description="piper (joe voice) or Debian espeak-ng")
    stt_model: Literal["whisper-base"] = "whisper-base"
    stt_beam_size: int = Field(1, ge=1, le=10, description="1: greedy (fastest); 5: Whisper's default")
    telephone: bool = Field(False, description="narrow-band phone line: 300-3400 Hz at 8 kHz")
    snr_db: float | None = Field(None, ge=-10.0, le=80.0, description="white noise at this SNR; none: no noise")
    seed: int = Field(0, description="seed of the channel noise (per interaction and turn)")
    tts_check: bool = Field(True, description="with a degraded channel, also transcribe the clean "
                            "audio to measure TTS accuracy apart from the channel (one more STT pass)")
    line: str | None = Field(None, description="line preset (harness.voice.lines): clean, telephone, "
                             "telephone-noise, packet-loss; sets telephone and snr_db (snr_db, if "
                             "given, overrides the preset's noise); none: telephone and snr_db alone")
    streaming: bool = Field(True, description="simulated calls: the streamed pipeline (the caller "
                            "transcribed chunk by chunk as it speaks, the agent's reply streamed and "
                            "spoken sentence by sentence); false: turn-based (whole reply, then speech)")
    first_chunk_words: int = Field(4, ge=0, le=40, description="streaming: the first spoken chunk may "
                                   "end at a comma once it has this many words (0: whole sentences)")
    endpoint_ms: float = Field(0.0, ge=0.0, le=5000.0, description="streaming: the endpointer's silence "
                               "before the agent takes the turn (0: the simulation's exact end of speech)")
    duplex: bool = Field(False, description="full-duplex simulated calls on one simulated clock: the "
                         "caller may barge in, backchannel and pause; a stereo recording per call")
    caller: str = Field("patient", description="duplex caller behaviour preset (harness.voice.callers): "
                        "patient, impatient, interrupting")
    compute: Literal["measured", "modelled"] = Field(
        "measured", description="duplex clock: this machine's measured STT/LLM/TTS times, or set "
        "per-stage latencies (deterministic; harness.voice.timeline.ModelledLatency)")
    first_audio_timeout_s: float = Field(10.0, gt=0, le=600, description="voice bots: seconds after the "
                                         "caller's end of speech without any audio from the bot -> bot_timeout")
    bot_turn_end_ms: float = Field(1500.0, ge=100, le=30000, description="voice bots: the bot's turn is over "
                                   "when all its audio has played and it has been quiet this long")
    turn_detection: Literal["server_vad", "commit"] = Field(
        "server_vad", description="realtime-ws bots: server_vad (the bot finds the caller's end of speech) "
        "or commit (the harness commits the caller's audio and asks for a response)")
    judging: Literal["yield", "inline"] = Field("yield", description="during a call the judges, raters and "
        "caller yield the endpoint to the agent (harness.models.traffic); inline: they share it as in text")

    @field_validator("caller")
    @classmethod
    def _known_caller(cls, v: str) -> str:
        from harness.voice.callers import caller_preset
        return caller_preset(v).name

    @model_validator(mode="before")
    @classmethod
    def _line_sets_the_channel(cls, data: Any) -> Any:
        """A known ``line`` preset fills ``telephone`` and ``snr_db`` (``line``'s check reports others)."""
        from harness.voice.lines import PRESETS, resolve
        if isinstance(data, dict) and data.get("line") in PRESETS:
            telephone = str(data.get("telephone")).lower() in ("true", "1")
            line = resolve(data["line"], telephone, data.get("snr_db"))
            data = {**data, "telephone": line.telephone, "snr_db": line.snr_db}
        return data

    @field_validator("line")
    @classmethod
    def _known_line(cls, v: str | None) -> str | None:
        from harness.voice.lines import preset
        return v if v is None else preset(v).name
