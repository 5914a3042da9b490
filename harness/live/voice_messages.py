"""Spoken messages in a live session: the part of :class:`harness.live.sessions.LiveSessions`
that loads speech to text, text to speech and the audio files on first use, transcribes a
recording, and sends one as the person's turn with the agent's reply spoken (streamed sentence
by sentence through :mod:`harness.live.speech`, or after the turn as one file).
"""
from __future__ import annotations

import time
from typing import Any, AsyncIterator

from harness.live.guards import LiveError
from harness.live.views import LiveUpdate


class SpokenMessages:
    """Mixin of :class:`~harness.live.sessions.LiveSessions`; uses its ``config``, ``limiter``,
    ``reader``, ``store``, ``_speech``, ``_session``, ``send`` and ``view``."""

    def _voice(self):
        """Speech to text, text to speech and the audio files (models load on first use)."""
        if self._speech is None:
            from harness.voice.audiostore import AudioStore
            from harness.voice.stt import Transcriber
            from harness.voice.tts import Speaker
            self._speech = (Transcriber(), Speaker(), AudioStore(self.config.store))
        return self._speech

    async def transcribe(self, audio: Any) -> str:
        """The words of a recording, nothing stored (to open a session by voice).

        Raises:
            LiveError: broken or silent audio, or no words recognised.
        """
        from harness.voice.audio import AudioError, load_audio
        if audio is None:
            raise LiveError("No recording: record your message (or upload an audio file) first.")
        try:
            samples = load_audio(audio)
        except AudioError as exc:
            raise LiveError(str(exc)) from exc
        heard = await self._voice()[0].atranscribe(samples)
        if not heard.text.strip():
            raise LiveError("No words were recognised in the recording. Speak closer to the "
                            "microphone (or type your message) and send again.")
        return heard.text

    async def send_audio(self, session_id: str, audio: Any, participant_id: str | None = None,
                         rate_key: str | None = None) -> AsyncIterator[LiveUpdate]:
        """A spoken message (a recording from the browser, any format): kept as a WAV,
        transcribed, sent as the person's turn; the agent's reply is spoken and its audio file
        referenced from the turn (``extra_json`` -> ``agent`` -> ``voice``). The last update
        carries ``audio``, the reply's WAV.

        With ``voice.streaming`` (the default) the reply is spoken sentence by sentence while
        it streams: updates with ``chunk`` carry each sentence's audio as soon as it is ready,
        and the stored WAV is the chunks joined, with the pipeline's stage times
        (:mod:`harness.live.speech`). Without it the whole stored reply is spoken after
        the turn, as one file.

        Raises:
            LiveError: no recording, broken or silent audio, or no words recognised (nothing
                is stored), and everything :meth:`send` refuses.
        """
        from harness.voice.audio import AudioError
        from harness.voice.tts import SpeechError

        received = time.perf_counter()
        sess = self._session(session_id, participant_id)
        if sess["mode"] != "user" or sess["status"] != "active":
            raise LiveError("Speaking is for an active conversation in which you are the user.")
        if audio is None:
            raise LiveError("No recording: record your message (or upload an audio file) first.")
        self.limiter.check(rate_key or participant_id or session_id)
        stt, tts, files = self._voice()
        iid, run_id = sess["interaction_id"], sess["run_id"]
        turn = len(self.reader.turns(iid)) + 1
        try:
            ref, samples = files.save_recording(audio, run_id, iid, turn, "user")
        except AudioError as exc:
            raise LiveError(str(exc)) from exc
        heard = await stt.atranscribe(samples)
        if not heard.text.strip():
            files.path(ref).unlink(missing_ok=True)
            raise LiveError("No words were recognised in the recording. Speak closer to the "
                            "microphone (or type your message) and send again.")
        voice = {"audio": ref, "stt_ms": heard.ms, "audio_s": heard.seconds, "heard_text": heard.text}
        if self.config.voice.streaming:
            from harness.live.speech import speak_while_streaming
            async for update in speak_while_streaming(
                    self, session_id, heard.text, voice, turn, tts, files, received,
                    participant_id=participant_id, rate_key=rate_key):
                yield update
            return
        last = None
        async for update in self.send(session_id, heard.text, participant_id, rate_key, voice=voice):
            if update.view is None:
                yield update
            last = update
        view = last.view
        stored = next((t for t in view.turns if t["turn_index"] == turn), None)
        if stored is None or not stored["agent_message"]:
            yield last
            return
        out = files.path(files.relative(run_id, iid, turn, "agent"))
        try:
            speech = await tts.aspeak(stored["agent_message"], out)
        except SpeechError as exc:  # nothing speakable (e.g. only code): the text stands
            self.store.merge_turn_extra(iid, turn, "agent", {"voice": {"tts_error": str(exc)}})
            yield LiveUpdate(view=await self.view(session_id))
            return
        self.store.merge_turn_extra(iid, turn, "agent", {"voice": {
            "audio": files.relative(run_id, iid, turn, "agent"), "tts_ms": speech.ms,
            "tts_first_audio_ms": speech.first_audio_ms, "spoken_text": speech.cleaned_text}})
        yield LiveUpdate(view=await self.view(session_id), audio=str(out))
