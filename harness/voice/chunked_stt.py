"""The caller's speech transcribed as it arrives: split on pauses, each finished chunk
transcribed while later audio is still arriving at real-time pace.

The audio is not really played in real time: the chunks are transcribed one after another
(each STT pass measured), and the schedule a real-time pipeline would follow is computed from
the audio times. Chunk ``i`` is finished once ``pause_s`` of silence follows it (the last
chunk: at the end of speech plus ``endpoint_ms``); its transcription starts when it is
finished and the previous one is done. Only what is left after the end of speech counts
(``tail_ms``): with several chunks, usually just the last chunk's recognition.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from harness.voice.audio import AudioError
from harness.voice.vad import split_on_pauses


@dataclass
class ChunkedTranscript:
    """What was heard, chunk by chunk, and the pipeline's timing (ms; speech times in s)."""

    text: str
    chunks: list[dict] = field(default_factory=list)   # start_s, end_s, text, stt_ms, done_s
    speech_end_s: float = 0.0
    tail_ms: float = 0.0          # end of speech -> last chunk transcribed
    stt_ms: float = 0.0           # all STT passes together

    @property
    def measures(self) -> dict:
        """The voice measures stored with the message: chunk count, STT tail and per-chunk STT ms."""
        return {"stt_chunks": len(self.chunks), "stt_tail_ms": round(self.tail_ms, 1),
                "stt_chunk_ms": [round(c["stt_ms"], 1) for c in self.chunks]}


def schedule(chunks: list[tuple[float, float]], stt_ms: list[float], pause_s: float,
             endpoint_ms: float = 0.0) -> tuple[list[float], float]:
    """When each chunk's transcript is done (s from the audio's start) and the tail in ms."""
    done, out = 0.0, []
    for i, ((_, end), ms) in enumerate(zip(chunks, stt_ms)):
        closed = end + (endpoint_ms / 1000.0 if i == len(chunks) - 1 else pause_s)
        done = max(done, closed) + ms / 1000.0
        out.append(done)
    speech_end = chunks[-1][1] if chunks else 0.0
    return out, max(0.0, (out[-1] - speech_end) * 1000.0) if out else 0.0


async def transcribe_chunks(transcriber, samples: np.ndarray, sample_rate: int, pause_s: float = 0.25,
                            min_chunk_s: float = 1.0, endpoint_ms: float = 0.0,
                            stt_cost: Callable[[float, float], float] | None = None) -> ChunkedTranscript:
    """Transcribe ``samples`` chunk by chunk (see the module docstring).

    Args:
        transcriber: a ``harness.voice.stt.Transcriber`` (or anything with ``atranscribe``).
        stt_cost: ``(chunk seconds, measured ms) -> ms`` to put on the schedule instead of the
            measured time (a modelled clock); None: the measured time.
    """
    rate = float(sample_rate)
    spans = split_on_pauses(samples, sample_rate, pause_s, min_chunk_s) or [(0.0, len(samples) / rate)]
    pad = int(0.1 * sample_rate)   # keep a little of the silence around each chunk
    texts, measured = [], []
    for start, end in spans:
        part = samples[max(0, int(start * rate) - pad):min(len(samples), int(end * rate) + pad)]
        try:
            heard = await transcriber.atranscribe(part, sample_rate)
            texts.append(heard.text.strip())
            measured.append(heard.ms)
        except AudioError:   # a chunk too short or silent to transcribe: nothing heard
            texts.append("")
            measured.append(0.0)
    costs = [stt_cost(e - s, ms) if stt_cost else ms for (s, e), ms in zip(spans, measured)]
    done, tail = schedule(spans, costs, pause_s, endpoint_ms)
    chunks = [{"start_s": s, "end_s": e, "text": t, "stt_ms": round(m, 1), "done_s": round(d, 3)}
              for (s, e), t, m, d in zip(spans, texts, measured, done)]
    return ChunkedTranscript(" ".join(t for t in texts if t).strip(), chunks, spans[-1][1], tail,
                             sum(measured))
