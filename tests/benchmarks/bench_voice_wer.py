"""Word error rate by utterance length, side and line preset, with ablations of the candidate
causes of a high caller-side WER (issue 16, item 3). Real piper TTS, real Whisper base int8.

Each sentence is spoken ``--takes`` times (piper varies between takes); every condition hears
the same takes, so conditions differ only in what the condition changes. Figures per cell:
mean per-utterance WER (what a run's ``stt_wer`` mean is) / corpus WER (errors / words).

    nice -n 19 .venv/bin/python tests/benchmarks/bench_voice_wer.py [--takes 2] [--ablations]
        [--save results.json]          # also keep every transcript
    .venv/bin/python tests/benchmarks/bench_voice_wer.py --rescore results.json   # no models

Conditions: the four line presets with the shipped settings (``Transcriber()``); with
``--ablations`` also, mostly on ``telephone-noise``: silence padding before the line or before
Whisper, the telephone band without the 8 kHz round trip, a causal band filter, language
detection instead of ``language="en"``, the VAD filter, beam 5, a help-desk ``initial_prompt``,
the caller's text in sentence case with acronyms in capitals, espeak-ng's voice, and packet
loss concealed with silence. Results and the conclusion: docs/voice.md ("Recognition by
utterance length").
"""
from __future__ import annotations

import argparse
import json
import zlib
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Callable

import numpy as np

from harness.voice.audio import TELEPHONE_BAND_HZ, TELEPHONE_RATE, add_noise, resample, telephone_band
from harness.voice.lines import PRESETS, LinePreset
from harness.voice.wer import length_bucket, summarize_errors, word_errors

# (side, text): help-desk caller lines (short, often lower-case first questions with acronyms,
# as the LLM caller and the lfrqa_technology tasks write them) and agent lines, 1 to 40 words
SENTENCES: tuple[tuple[str, str], ...] = (
    ("caller", "Yes."), ("caller", "No luck."), ("caller", "Still broken."), ("caller", "Yes, I did."),
    ("caller", "It works now."), ("caller", "Thank you."), ("agent", "You're welcome."),
    ("agent", "One moment, please."),
    ("caller", "It still doesn't work."), ("caller", "I restarted it, but nothing changed."),
    ("caller", "are all https sites legitimate?"), ("caller", "is the aes iv secret?"),
    ("caller", "are no caller id calls dangerous?"), ("caller", "I can't log in anymore."),
    ("agent", "Did you restart the router?"), ("agent", "Which version of Ubuntu do you use?"),
    ("caller", "I did what you said and the problem is still there."),
    ("caller", "I rebooted the router twice and the wifi still drops every few minutes."),
    ("caller", "I ran the command, but it says permission denied."),
    ("agent", "Please open the terminal and restart the network manager service."),
    ("agent", "Can you check whether the backup finished last night?"),
    ("agent", "My laptop does not connect to the office network after the last update."),
    ("caller", "I tried the command you gave me, then I rebooted the laptop, logged in again, and the "
               "same error message came up as soon as the desktop appeared."),
    ("agent", "First, open the settings panel and select the network tab. Then remove the saved "
              "connection, reconnect with your password, and tell me whether the error appears again."),
    ("agent", "A certificate only proves that you are talking to the owner of the domain. It does not "
              "prove that the owner is honest, so a site can use HTTPS and still be a scam."),
    ("agent", "Open the printer queue, cancel every waiting job, switch the printer off for ten "
              "seconds, switch it on again and print a test page from the settings window."),
)


@dataclass
class Condition:
    """One way of hearing the takes: a line, how Whisper is run, which TTS voice speaks."""

    name: str
    line: Any                                   # .apply(samples, rate, key) -> (samples, rate)
    stt: dict[str, Any] = field(default_factory=dict)   # Transcriber keyword arguments
    tts: str = "piper"
    text: str | None = None                     # a key of TEXT_FORMS: how the text is written


ACRONYMS = {"https", "http", "aes", "iv", "id", "dns", "vpn", "ssh", "usb", "ip", "pc", "wifi"}


def cased(text: str) -> str:
    """Ablation of how the caller writes: sentence case and acronyms in capitals (the words
    are the same, so the reference is too)."""
    words = [w.upper() if w.lower().strip("?.,!") in ACRONYMS else w for w in text.split()]
    out = " ".join(words)
    return out[:1].upper() + out[1:]


TEXT_FORMS: dict[str, Callable[[str], str]] = {"cased": cased}


class Telephone16k:
    """Ablation: the telephone band filtered at 16 kHz (no 8 kHz round trip), then noise."""

    def __init__(self, snr_db: float | None):
        self.snr_db = snr_db

    def apply(self, samples, rate, key):
        from scipy.signal import butter, sosfiltfilt
        x = resample(samples, rate, 16_000)
        sos = butter(4, TELEPHONE_BAND_HZ, btype="bandpass", fs=16_000, output="sos")
        x = np.clip(sosfiltfilt(sos, x), -1, 1).astype(np.float32)
        return _noise(x, self.snr_db, key), 16_000


class CausalTelephone:
    """Ablation: the telephone band with a causal filter (sosfilt, no zero-phase pass)."""

    def __init__(self, snr_db: float | None):
        self.snr_db = snr_db

    def apply(self, samples, rate, key):
        from scipy.signal import butter, sosfilt
        x = resample(samples, rate, TELEPHONE_RATE)
        sos = butter(4, TELEPHONE_BAND_HZ, btype="bandpass", fs=TELEPHONE_RATE, output="sos")
        x = np.clip(sosfilt(sos, x), -1, 1).astype(np.float32)
        return _noise(x, self.snr_db, key), TELEPHONE_RATE


class PaddedLine:
    """Ablation: ``pad_s`` of silence before and after the speech *before* the line, so the
    line's noise also covers it (the SNR still measured on the speech)."""

    def __init__(self, snr_db: float | None, pad_s: float):
        self.snr_db, self.pad_s = snr_db, pad_s

    def apply(self, samples, rate, key):
        x = telephone_band(samples, rate)
        power = float(np.mean(x.astype(np.float64) ** 2))
        pad = np.zeros(int(self.pad_s * TELEPHONE_RATE), np.float32)
        x = np.concatenate([pad, x, pad])
        if self.snr_db is not None:
            rng = np.random.default_rng([0, zlib.crc32(key.encode())])
            x = x + rng.normal(0, np.sqrt(power / 10 ** (self.snr_db / 10)), len(x))
        return np.clip(x, -1, 1).astype(np.float32), TELEPHONE_RATE


def _noise(x, snr_db, key):
    if snr_db is None:
        return x
    return add_noise(x, snr_db, np.random.default_rng([0, zlib.crc32(key.encode())]))


PROMPT = "A help-desk phone call about computers, networks, security and software."


def conditions(ablations: bool) -> list[Condition]:
    """The presets (shipped settings) and, with ``ablations``, variants of telephone-noise
    (and of clean) that each change one candidate cause."""
    out = [Condition(name, p) for name, p in PRESETS.items()]
    if not ablations:
        return out
    tn, clean = PRESETS["telephone-noise"], PRESETS["clean"]
    snr = tn.snr_db
    return out + [
        Condition("tel-noise, pad 0.5 s on the line", PaddedLine(snr, 0.5)),
        Condition("tel-noise, pad 0.5 s before Whisper", tn, {"pad_s": 0.5}),
        Condition("clean, pad 0.5 s before Whisper", clean, {"pad_s": 0.5}),
        Condition("tel-noise, band at 16 kHz", Telephone16k(snr)),
        Condition("tel-noise, causal filter", CausalTelephone(snr)),
        Condition("tel-noise, language auto", tn, {"language": None}),
        Condition("tel-noise, VAD filter", tn, {"vad_filter": True}),
        Condition("tel-noise, beam 5", tn, {"beam_size": 5}),
        Condition("tel-noise, help-desk prompt", tn, {"initial_prompt": PROMPT}),
        Condition("clean, help-desk prompt", clean, {"initial_prompt": PROMPT}),
        Condition("tel-noise, cased text", tn, text="cased"),
        Condition("clean, cased text", clean, text="cased"),
        Condition("tel-noise, espeak-ng voice", tn, tts="espeak-ng"),
        Condition("packet-loss, silence concealment", LinePreset(
            "packet-loss", telephone=True, loss_rate=0.10, concealment="silence")),
    ]


def speak_all(engine: str, takes: int, form: str | None = None) -> dict[tuple[int, int], tuple[np.ndarray, int, str]]:
    """(sentence, take) -> (samples, rate, reference text), spoken once for every condition."""
    from harness.voice.textclean import clean_for_speech
    from harness.voice.tts import Speaker
    speaker = Speaker(engine)
    out = {}
    for i, (_, text) in enumerate(SENTENCES):
        for t in range(takes if engine == "piper" else 1):   # espeak-ng is deterministic
            r = speaker.speak(TEXT_FORMS[form](text) if form else text)
            out[(i, t)] = (r.samples, r.sample_rate, clean_for_speech(text))
    return out


def run(conds: list[Condition], takes: int) -> list[dict[str, Any]]:
    """Every condition's transcript of every take: rows for :func:`print_tables`."""
    from harness.voice.stt import Transcriber
    speech: dict[str, dict] = {}
    transcribers: dict[str, Transcriber] = {}
    rows = []
    for c in conds:
        started = perf_counter()
        voice = f"{c.tts}|{c.text}"
        if voice not in speech:
            speech[voice] = speak_all(c.tts, takes, c.text)
        key = json.dumps(c.stt, sort_keys=True)
        stt = transcribers.setdefault(key, Transcriber(**c.stt).load())
        for (i, t), (samples, rate, cleaned) in speech[voice].items():
            heard, heard_rate = c.line.apply(samples, rate, f"bench|{i}|{t}")
            text = stt.transcribe(heard, heard_rate).text
            rows.append({"condition": c.name, "sentence": i, "take": t, "side": SENTENCES[i][0],
                         "ref": cleaned, "hyp": text})
        print(f"  {c.name}: {perf_counter() - started:.0f} s", flush=True)
    return rows


def _cell(errors) -> str:
    if not errors:
        return "-"
    s = summarize_errors(errors)
    return f"{s.mean:.3f}/{s.corpus:.3f}"


def print_tables(rows: list[dict[str, Any]], score: Callable = word_errors, verbose: bool = False) -> None:
    """WER by length bucket and side per condition (mean per utterance / corpus)."""
    labels = ("1-3", "4-8", "9-20", "21+")
    print(f"\n{'condition':<42} " + " ".join(f"{b:>13}" for b in labels)
          + f" {'caller':>13} {'agent':>13} {'all':>13} {'1st word':>8}")
    for name in dict.fromkeys(r["condition"] for r in rows):
        mine = [r for r in rows if r["condition"] == name]
        errs = [(r, score(r["ref"], r["hyp"])) for r in mine]
        cells = [_cell([e for r, e in errs if length_bucket(e.reference_words) == b]) for b in labels]
        cells += [_cell([e for r, e in errs if r["side"] == side]) for side in ("caller", "agent")]
        cells.append(_cell([e for _, e in errs]))
        first = np.mean([_first_word_lost(r["ref"], r["hyp"]) for r in mine])
        print(f"{name:<42} " + " ".join(f"{c:>13}" for c in cells) + f" {first:>8.2f}")
        if verbose:
            for r, e in errs:
                if e.errors:
                    print(f"      {e.wer:.2f}  {r['ref']!r} -> {r['hyp']!r}")


def _first_word_lost(ref: str, hyp: str) -> bool:
    from harness.voice.wer import normalize
    r, h = normalize(ref), normalize(hyp)
    return bool(r) and (not h or h[0] != r[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--takes", type=int, default=2, help="piper takes per sentence (default 2)")
    ap.add_argument("--ablations", action="store_true", help="also the ablations on telephone-noise")
    ap.add_argument("--only", nargs="*", help="only the conditions with these names")
    ap.add_argument("--save", help="write every transcript to this JSON file")
    ap.add_argument("--rescore", help="print the tables of a saved JSON file (no models)")
    ap.add_argument("--verbose", action="store_true", help="list every utterance with errors")
    args = ap.parse_args()
    if args.rescore:
        with open(args.rescore) as f:
            rows = json.load(f)
    else:
        conds = [c for c in conditions(args.ablations) if not args.only or c.name in args.only]
        words = sum(len(t.split()) for _, t in SENTENCES)
        print(f"{len(SENTENCES)} sentences ({words} words) x {args.takes} piper takes; "
              f"Whisper base int8; {len(conds)} conditions", flush=True)
        rows = run(conds, args.takes)
        if args.save:
            with open(args.save, "w") as f:
                json.dump(rows, f, indent=1)
    print_tables(rows, verbose=args.verbose)


if __name__ == "__main__":
    main()
