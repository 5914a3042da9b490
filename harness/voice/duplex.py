"""Full-duplex simulated calls: both sides on one simulated clock (:mod:`harness.voice.timeline`),
a caller that barges in, backchannels and pauses (:mod:`harness.voice.callers`), an agent that
stops talking when it is interrupted.

One turn of the SelfScore loop is still one caller message and one agent reply; what is new
is where they lie in time and what of the reply was heard:

1. The caller starts ``think_s`` after the agent stopped (or, after a barge-in, right after
   its opener), speaks sentence by sentence (with a hesitation pause now and then) and is
   transcribed chunk by chunk (:mod:`harness.voice.chunked_stt`).
2. The agent's first audio comes ``endpoint_ms`` + the STT tail + the LLM's time to the first
   sentence + its TTS after the caller's end of speech; each later sentence plays when it is
   ready and the one before is done (:mod:`harness.voice.streaming`).
3. While the agent talks, the caller may say "mhm" (on the caller's channel; the agent keeps
   talking) or barge in: it says an opener ("Sorry, can I stop you there?"); the agent's
   barge-in detector confirms speech after ``BARGE_CONFIRM_S`` and the agent stops
   ``STOP_S`` later (the yield latency). The reply is cut at the last word that was played
   before the agent stopped (sentence boundaries exactly; inside a sentence, word ends
   estimated in proportion to characters and snapped to the quietest point); the history
   the judges read holds the transcript of the played part only, the full reply stays in
   ``extra.voice.spoken_text`` for audit. The caller's next message begins with the opener
   (and, for a remembered fact, the fact).

Everything that decides what is cut runs in the reply's speech time, so the transcripts are
the same in both compute modes; all random choices are seeded by ``voice.seed`` and the
interaction, turn and purpose. A resumed call's clock and recording restart at its first
resumed turn.
"""
from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from graphs.protocols import Agent, Message, Problem, Reply, User
from harness.voice.audio import AudioError
from harness.voice.audiostore import safe_name
from harness.voice.call import CALLER_PAUSE_S, SpeechLink, _with_voice, carry_streamed, noise_key
from harness.voice.callers import BACKCHANNELS, OPENERS, Barge, CallerPreset, barge_in
from harness.voice.streaming import SentenceSplitter, SpokenChunk, chunk_tts_figures, playback, speak_streamed
from harness.voice.timeline import Compute, Timeline
from harness.voice.vad import confirm_speech, quietest_point, speech_span
from harness.voice.wer import wer

GAP_S = 0.1              # between two sentences of the agent
OPENER_GAP_S = 0.15      # between the caller's opener and the rest of its message
BARGE_CONFIRM_S = 0.6    # the agent's detector: this much caller speech (a "mhm" is shorter)
STOP_S = 0.05            # from the detector's decision to silence (the output buffer)
FIRST_START_S = 0.3      # the caller's first words after the call connects


def call_audio_ref(run_id: str, interaction_id: str) -> str:
    """The stereo recording's path relative to the store's folder (AudioStore's folders)."""
    interaction = interaction_id.removeprefix(run_id + ":")
    return f"audio/{safe_name(run_id)}/{safe_name(interaction)}/call.wav"


@dataclass
class PendingBarge:
    """A barge-in whose opener is said; the caller's next message goes on from it."""

    barge: Barge
    opener: str
    clean_audio: np.ndarray = field(repr=False)   # the opener as spoken (before the line)
    clean_rate: int = 16000
    at_s: float = 0.0                              # clock time the opener's audio starts


@dataclass
class CallState:
    """One call's clock, timeline and what the caller has said and heard."""

    timeline: Timeline = field(default_factory=Timeline)
    floor_free_s: float = 0.0          # when the agent last stopped talking
    caller_end_s: float | None = None  # the caller's end of speech (this turn)
    stt_tail_ms: float = 0.0
    pending: PendingBarge | None = None
    agent_sentences: list[str] = field(default_factory=list)
    caller_said: list[str] = field(default_factory=list)
    facts_told: set[str] = field(default_factory=set)
    latencies_ms: list[float] = field(default_factory=list)
    yields_ms: list[float] = field(default_factory=list)
    interruptions: int = 0
    backchannels: int = 0

    def summary(self) -> dict[str, Any]:
        """The call's measures so far."""
        lat = np.asarray(self.latencies_ms or [np.nan])
        return {**self.timeline.measures(), "interruptions": self.interruptions,
                "backchannels": self.backchannels, "turns": len(self.latencies_ms),
                "response_latency_ms_p50": None if not self.latencies_ms else round(float(np.median(lat)), 1),
                "response_latency_ms_max": None if not self.latencies_ms else round(float(lat.max()), 1),
                "yield_ms_mean": None if not self.yields_ms else round(float(np.mean(self.yields_ms)), 1)}


class DuplexHub:
    """The calls in progress (one :class:`CallState` per interaction), shared by the duplex
    user and agent of a run.

    Args:
        link: the speech link (TTS, channel, STT, audio files).
        caller: the caller's behaviour preset.
        compute: how compute time enters the clock.
        seed: seed of every random choice (think pauses, hesitations, openers, backchannels).
    """

    def __init__(self, link: SpeechLink, caller: CallerPreset, compute: Compute | None = None, seed: int = 0):
        self.link, self.caller, self.compute, self.seed = link, caller, compute or Compute(), seed
        self.calls: dict[str, CallState] = {}
        self._short: dict[str, tuple[np.ndarray, int]] = {}

    def call(self, interaction_id: str) -> CallState:
        """The :class:`CallState` of an interaction, created on first use."""
        return self.calls.setdefault(interaction_id, CallState())

    def rng(self, interaction_id: str, turn: int, purpose: str) -> np.random.Generator:
        """The generator of one choice, seeded by the seed, the task (the interaction id
        without its run), the turn and the purpose: the same in every run of the task."""
        task = interaction_id.removeprefix(self.link.run_of(interaction_id) + ":")
        return np.random.default_rng([self.seed, zlib.crc32(f"{task}|{turn}|{purpose}".encode())])

    async def spoken(self, text: str) -> tuple[np.ndarray, int]:
        """A short caller phrase (an opener, a backchannel) as spoken, synthesized once."""
        if text not in self._short:
            speech = await self.link.speaker.aspeak(text)
            self._short[text] = (speech.samples, speech.sample_rate)
        return self._short[text]

    async def short_clip(self, text: str, interaction_id: str, turn: int, purpose: str) -> tuple[np.ndarray, int]:
        """A short caller phrase as the agent hears it (through the line)."""
        samples, rate = await self.spoken(text)
        return await asyncio.to_thread(self.link.channel.apply, samples, rate,
                                       noise_key(interaction_id, turn, purpose))

    def save_recording(self, interaction_id: str) -> str | None:
        """Write the call's stereo WAV (caller left, agent right); returns its reference."""
        link, state = self.link, self.calls.get(interaction_id)
        if link.audio is None or state is None or not state.timeline.segments:
            return None
        ref = call_audio_ref(link.run_of(interaction_id), interaction_id)
        state.timeline.write_stereo(link.audio.path(ref))
        return ref


class DuplexVoiceUser:
    """The caller of a full-duplex call (see the module docstring)."""

    def __init__(self, inner: User, hub: DuplexHub):
        self.inner, self.hub = inner, hub

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        """The inner user's reply spoken on the call's clock (after its barge-in opener, if any)
        and heard by the agent through the line; a hang-up writes the call's recording."""
        hub, iid = self.hub, problem.interaction_id
        state = hub.call(iid)
        reply = await self.inner.respond(problem, history, turn_index)
        pending, state.pending = state.pending, None
        if reply.text is None:   # hung up (an opener already said stays on the recording)
            await asyncio.to_thread(hub.save_recording, iid)
            return reply
        body = reply.text
        if pending is not None and pending.barge.fact:
            body = f"I just remembered: {pending.barge.fact.strip().rstrip('.')}. {body}"
            state.facts_told.add(pending.barge.fact)
        rng, preset = hub.rng(iid, turn_index, "caller"), hub.caller
        splitter = SentenceSplitter(first_chunk_words=0)
        n = len(splitter.feed(body) + splitter.flush())
        pauses = [preset.hesitation_s if rng.random() < preset.hesitation_rate else CALLER_PAUSE_S
                  for _ in range(max(0, n - 1))]
        if pending is not None:
            start = pending.at_s
        elif not state.timeline.segments:
            start = FIRST_START_S
        else:
            start = state.floor_free_s + float(rng.uniform(*preset.think_s))
        prefix = None if pending is None else (pending.clean_audio, pending.clean_rate, pending.opener, OPENER_GAP_S)
        keep: dict = {}
        heard, measures = await carry_streamed(hub.link, body, iid, turn_index, pauses,
                                               hub.compute.stt_cost(), prefix, keep)
        state.caller_said.append(measures["spoken_text"])
        if measures.get("silent") or "heard" not in keep:
            state.caller_end_s, state.stt_tail_ms = start, 0.0
            return _with_voice(reply, heard, measures)
        clip, rate = keep["heard"], keep["rate"]
        skip = 0
        if pending is not None:   # the opener is on the timeline already
            skip = int(round((len(pending.clean_audio) / pending.clean_rate + OPENER_GAP_S) * rate))
        if skip < len(clip):
            state.timeline.add("caller", start + skip / rate, clip[skip:], rate, "speech", turn_index, body)
        state.caller_end_s = start + measures["speech_end_s"]
        state.stt_tail_ms = measures.get("stt_tail_ms", 0.0)
        measures["duplex"] = {"start_s": round(start, 3), "end_s": round(state.caller_end_s, 3),
                              "after_barge_in": pending is not None, "caller": preset.name,
                              "pauses_s": [round(p, 2) for p in pauses]}
        return _with_voice(reply, heard, measures)


class DuplexVoiceAgent:
    """The agent of a full-duplex call (see the module docstring)."""

    def __init__(self, inner: Agent, hub: DuplexHub):
        self.inner, self.hub = inner, hub

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        """The inner agent's reply spoken on the call's clock, cut where the caller barges in;
        returns what the caller heard, with the duplex measures, and updates the recording."""
        hub, link, iid = self.hub, self.hub.link, problem.interaction_id
        turn = sum(1 for m in history if m.role == "user")
        state = hub.call(iid)
        spoken = await speak_streamed(self.inner, problem, history, link.speaker,
                                      link.first_chunk_words, link.stream)
        reply, chunks = spoken.reply, spoken.chunks
        measures: dict[str, Any] = {"spoken_text": reply.text or "", "channel": link.channel.describe(),
                                    "cleaned_text": spoken.cleaned_text, **spoken.measures(),
                                    "respond_ms": round(spoken.respond_ms, 1)}
        caller_end = state.caller_end_s if state.caller_end_s is not None else state.timeline.end_s
        if not chunks:
            measures.update(heard_text="", audio=None, silent=True)
            state.floor_free_s = caller_end
            return _with_voice(reply, "", measures)
        heard_chunks = [await asyncio.to_thread(link.channel.apply, c.samples, c.sample_rate,
                                                noise_key(iid, turn, "agent", i)) for i, c in enumerate(chunks)]
        rate = heard_chunks[0][1]
        times = hub.compute.reply_times(chunks)
        timed = [SpokenChunk(c.text, c.cleaned, h, r, t, a, c.tts_ms)
                 for c, (h, r), (t, a) in zip(chunks, heard_chunks, times)]
        starts_ms, stall_ms = playback(timed, GAP_S)
        origin = caller_end + (link.endpoint_ms + state.stt_tail_ms) / 1000.0
        clock = [origin + s / 1000.0 for s in starts_ms]
        # the reply's own speech time: each sentence's start and speech span
        speech_t, sentences, t = [], [], 0.0
        for c in timed:
            a, b = speech_span(c.samples, c.sample_rate)
            speech_t.append(t)
            sentences.append((c.cleaned, t + a, t + b))
            t += c.seconds + GAP_S
        facts = [f for f in problem.facts if f not in state.facts_told]
        known = " ".join([problem.question, *state.caller_said])
        barge = barge_in(hub.caller, sentences, state.agent_sentences, facts, known)
        latency = (clock[0] - caller_end) * 1000.0
        state.latencies_ms.append(latency)
        duplex: dict[str, Any] = {"start_s": round(clock[0], 3), "response_latency_ms": round(latency, 1),
                                  "stall_ms": round(stall_ms, 1), "compute": hub.compute.mode,
                                  "caller": hub.caller.name, "barge_in": None}
        until = float("inf")
        if barge is not None:
            until = await self._barge(problem, turn, state, barge, timed, speech_t, clock, duplex)
        await self._backchannels(iid, turn, state, timed, clock, speech_t, until)
        played, heard_audio, played_audio = self._played(timed, speech_t, clock, until, state, turn)
        measures["played_text"] = played
        text = await self._transcribe(heard_audio, rate)
        measures.update(heard_text=text, audio_s=round(len(played_audio) / rate, 3),
                        stt_wer=round(wer(played, text), 4) if played else 0.0,
                        tts_engine=link.speaker.engine, **chunk_tts_figures(chunks), stt_tail_ms=state.stt_tail_ms,
                        endpoint_ms=link.endpoint_ms, time_to_first_audio_ms=round(latency, 1))
        if link.audio is not None and len(played_audio) >= 0.1 * rate:
            try:
                measures["audio"] = await asyncio.to_thread(link.audio.save, played_audio, rate,
                                                            link.run_of(iid), iid, turn, "agent")
            except AudioError:
                measures["audio"] = None
        state.agent_sentences.extend(c.cleaned for c in timed)
        measures["duplex"] = duplex
        measures["call"] = state.summary()
        ref = await asyncio.to_thread(hub.save_recording, iid)
        if ref:
            measures["call_audio"] = ref
        return _with_voice(reply, text, measures)

    async def _barge(self, problem, turn, state, barge: Barge, timed, speech_t, clock, duplex) -> float:
        """Put the caller's opener on the timeline; returns the reply's speech time at which
        the agent fell silent."""
        hub, iid = self.hub, problem.interaction_id
        rng = hub.rng(iid, turn, "opener")
        options = OPENERS[barge.reason]
        opener = options[int(rng.integers(len(options)))]
        audio, rate = await hub.short_clip(opener, iid, turn, "opener")
        at = _clock_of(barge.at_s, speech_t, clock)
        onset = speech_span(audio, rate)[0]
        confirmed = confirm_speech(audio, rate, BARGE_CONFIRM_S)
        confirmed = confirmed if confirmed is not None else speech_span(audio, rate)[1]
        yield_s = (confirmed - onset) + STOP_S
        state.timeline.add("caller", at - onset, audio, rate, "barge-in", turn + 1, opener)
        clean, clean_rate = await hub.spoken(opener)
        state.pending = PendingBarge(barge, opener, clean, clean_rate, at - onset)
        state.interruptions += 1
        state.yields_ms.append(yield_s * 1000.0)
        duplex["barge_in"] = {"reason": barge.reason, "sentence": barge.sentence, "at_s": round(at, 3),
                              "yield_ms": round(yield_s * 1000.0, 1), "opener": opener,
                              **({"fact": barge.fact} if barge.fact else {})}
        return barge.at_s + yield_s

    async def _backchannels(self, iid, turn, state, timed, clock, speech_t, until) -> None:
        """A "mhm" on the caller's channel after a sentence, once the agent has talked
        ``backchannel_every_s`` since the last one (never after the last sentence or once the
        caller has barged in)."""
        every = self.hub.caller.backchannel_every_s
        if not every:
            return
        rng, since = self.hub.rng(iid, turn, "backchannel"), 0.0
        for i, c in enumerate(timed[:-1]):
            since += c.seconds
            if since >= every and speech_t[i] + c.seconds < until:
                word = BACKCHANNELS[int(rng.integers(len(BACKCHANNELS)))]
                samples, rate = await self.hub.short_clip(word, iid, turn, f"backchannel|{i}")
                state.timeline.add("caller", clock[i] + c.seconds, samples, rate, "backchannel", turn, word)
                state.backchannels += 1
                since = 0.0

    def _played(self, timed, speech_t, clock, until, state, turn):
        """Put the played audio on the timeline; returns (played text, the audio to
        transcribe (cut at a word boundary), the audio played)."""
        rate = timed[0].sample_rate
        words: list[str] = []
        heard: list[np.ndarray] = []
        played: list[np.ndarray] = []
        gap = np.zeros(int(GAP_S * rate), np.float32)
        end_clock = clock[0]
        for i, c in enumerate(timed):
            offset = until - speech_t[i]
            if offset <= 0:
                break
            if heard:
                heard.append(gap)
                played.append(gap)
            if offset >= c.seconds:
                part, cut = c.samples, c.samples
                words.append(c.cleaned)
            else:
                n_words, cut_s = _words_played(c, offset)
                part = c.samples[:int(offset * rate)]
                cut = c.samples[:int(cut_s * rate)]
                if n_words:
                    words.append(" ".join(c.cleaned.split()[:n_words]))
            state.timeline.add("agent", clock[i], part, rate, "speech", turn, c.cleaned)
            end_clock = clock[i] + len(part) / rate
            heard.append(cut)
            played.append(part)
            if offset < c.seconds:
                break
        state.floor_free_s = end_clock
        cat = (lambda xs: np.concatenate(xs).astype(np.float32) if xs else np.zeros(0, np.float32))
        return " ".join(words), cat(heard), cat(played)

    async def _transcribe(self, samples: np.ndarray, rate: int) -> str:
        try:
            return (await self.hub.link.transcriber.atranscribe(samples, rate)).text
        except AudioError:   # nothing (or under 0.1 s) was played before the barge-in
            return ""


def _clock_of(speech_s: float, speech_t: list[float], clock: list[float]) -> float:
    """The clock time of a moment of the reply's speech time."""
    i = max(0, next((k for k in range(len(speech_t)) if speech_t[k] > speech_s), len(speech_t)) - 1)
    return clock[i] + (speech_s - speech_t[i])


def _words_played(chunk: SpokenChunk, offset_s: float) -> tuple[int, float]:
    """How many words of a sentence were played in its first ``offset_s`` seconds, and where
    to cut its audio (between two words). Word ends are estimated in proportion to characters
    over the sentence's speech span and snapped to the quietest point near them."""
    words = chunk.cleaned.split()
    a, b = speech_span(chunk.samples, chunk.sample_rate)
    total = sum(len(w) + 1 for w in words)
    ends, n = [], 0
    for w in words:
        n += len(w) + 1
        ends.append(a + (b - a) * n / total)
    played = sum(1 for e in ends if e <= offset_s)
    if played == 0:
        return 0, min(a, offset_s)
    cut = quietest_point(chunk.samples, chunk.sample_rate, ends[played - 1])
    return played, min(cut, offset_s)
