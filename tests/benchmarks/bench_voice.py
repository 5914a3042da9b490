"""Offline speech figures on this machine: TTS time per sentence, STT real-time factor, and the
round-trip word error rate on the fixed sentences of ``harness.voice.roundtrip``, on a clean
line, a telephone line, and with noise at 20 and 10 dB SNR.

    .venv/bin/python tests/benchmarks/bench_voice.py [--tts piper|espeak-ng] [--beam 1]
"""
from __future__ import annotations

import argparse
import statistics
from time import perf_counter

from harness.voice.call import Channel
from harness.voice.roundtrip import SENTENCES, corpus_wer, round_trip
from harness.voice.stt import Transcriber
from harness.voice.tts import Speaker

CHANNELS = (("clean", Channel()), ("telephone", Channel(telephone=True)),
            ("noise 20 dB", Channel(snr_db=20.0)), ("noise 10 dB", Channel(snr_db=10.0)),
            ("telephone + 20 dB", Channel(telephone=True, snr_db=20.0)),
            ("telephone + 10 dB", Channel(telephone=True, snr_db=10.0)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tts", default="piper", choices=["piper", "espeak-ng"])
    ap.add_argument("--beam", type=int, default=1, help="Whisper beam size (1: greedy)")
    args = ap.parse_args()
    started = perf_counter()
    speaker, transcriber = Speaker(args.tts), Transcriber(beam_size=args.beam).load()
    speaker.speak("Warm up.")
    print(f"models loaded in {perf_counter() - started:.1f} s (tts {speaker.engine}, stt whisper-base "
          f"int8, beam {args.beam}); {len(SENTENCES)} sentences, "
          f"{sum(len(s.split()) for s in SENTENCES)} words")
    print(f"{'channel':<20} {'WER':>6} {'errors':>7} {'TTS ms/sent':>12} {'STT ms/sent':>12} {'STT RTF':>8}")
    for name, channel in CHANNELS:
        rows = round_trip(speaker, transcriber, SENTENCES, channel)
        audio = sum(r.audio_s for r in rows)
        print(f"{name:<20} {corpus_wer(rows):>6.3f} {sum(r.errors.errors for r in rows):>7} "
              f"{statistics.mean(r.tts_ms for r in rows):>12.0f} {statistics.mean(r.stt_ms for r in rows):>12.0f} "
              f"{sum(r.stt_ms for r in rows) / 1000 / audio:>8.2f}")
        for r in rows:
            if r.errors.errors:
                print(f"    said {r.text!r}\n    heard {r.heard!r}")


if __name__ == "__main__":
    main()
