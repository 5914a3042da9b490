"""The live app's spoken reply through the streamed pipeline (harness/live/speech.py):
real piper and Whisper, fake chat models (one that answers in one piece, one that streams word
by word), the real turn loop and store."""
import asyncio
import base64
import io
import json
import time
import wave
from pathlib import Path

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from harness.compose import Runtime
from harness.config import load_config
from harness.live.sessions import LiveSessions
from harness.live.speech import ReplySpeech, chunk_wav, reply_voice
from harness.live.views import reply_spoken
from harness.voice.streaming import SentenceSplitter, join_chunks
from harness.voice.tts import SpeechError, Speaker
from store import StoreReader, StoreWriter
from tests.fakes import ScriptedChatModel, default_responder

RECORDING = Path(__file__).parent / "fixtures" / "audio" / "restart-printer.wav"
REPLY = ("Sure, let me help with that. First open the printer settings and check the queue. "
         "Then restart the printer and try again.")
LAST = "Then restart the printer and try again."


def sentences(text: str, first_chunk_words: int = 4) -> list[str]:
    """The chunks the pipeline cuts ``text`` into, given in one piece."""
    splitter = SentenceSplitter(first_chunk_words)
    return splitter.feed(text) + splitter.flush()


class StreamingChatModel(ScriptedChatModel):
    """Streams its reply word by word; before word ``hold_at`` it waits (up to 60 s) until
    ``may_go()`` is true, so a test can see what happens while the reply is unfinished."""

    may_go: object = None
    hold_at: int = -1

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls += 1
        words = self.responder(messages, kwargs).split(" ")
        for i, word in enumerate(words):
            if i == self.hold_at and self.may_go is not None:
                deadline = time.monotonic() + 60
                while not self.may_go() and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
            chunk = ChatGenerationChunk(message=AIMessageChunk(word if i == 0 else " " + word))
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


def agent_factory(reply: str, streaming_model: StreamingChatModel | None = None):
    """A chat-model factory: the agent answers ``reply`` (streamed by ``streaming_model`` if
    given), the other roles as the default fakes."""
    responders = default_responder(solve_at=None)

    def factory(role, spec):
        if role == "agent" and streaming_model is not None:
            streaming_model.responder = lambda m, k: reply
            return streaming_model
        respond = (lambda m, k: reply) if role == "agent" else responders(role)
        return ScriptedChatModel(responder=respond, prompts=[])
    return factory


@pytest.fixture
def make_live(tmp_path):
    made = []

    def make(factory, voice: dict | None = None) -> LiveSessions:
        cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "voice": voice or {},
                                     "app": {"max_turns": 4, "messages_per_minute": 100}})
        runtime = Runtime(cfg, factory)
        writer, reader = StoreWriter(cfg.store), StoreReader(cfg.store, must_exist=False)
        made.append((writer, runtime))
        return LiveSessions(runtime, writer, reader)
    yield make
    for writer, runtime in made:
        writer.close()
        runtime.close()


async def speak(live: LiveSessions, question: str = "My printer is offline.", on_update=None):
    """Start a session and send the recording; returns (session id, updates, stored turn)."""
    view = await live.start(mode="user", question=question)
    updates = []
    async for update in live.send_audio(view.session_id, str(RECORDING)):
        updates.append(update)
        if on_update:
            on_update(update)
    (turn,) = live.reader.turns(live.store.session(view.session_id)["interaction_id"])
    return view.session_id, updates, turn


def agent_voice(turn) -> dict:
    return json.loads(turn["extra_json"])["agent"]["voice"]


def wav_seconds(path: Path) -> float:
    with wave.open(str(path)) as w:
        return w.getnframes() / float(w.getframerate())


async def test_a_reply_is_spoken_chunk_by_chunk_and_stored_as_one_file(make_live):
    live = make_live(agent_factory(REPLY))
    session_id, updates, turn = await speak(live)
    chunks = [u.chunk for u in updates if u.chunk is not None]
    # a fake model gives its reply in one piece: its sentences are spoken after it, in order
    assert [c.text for c in chunks] == sentences(REPLY) and len(chunks) == 3
    assert updates[-1].view is not None and all(u.view is None for u in updates[:-1])
    assert turn["agent_message"] == REPLY
    voice = agent_voice(turn)
    assert voice["pipeline"] == "streaming" and voice["spoken_chunks"] == 3
    assert voice["llm_streamed"] is False
    for key in ("llm_first_sentence_ms", "tts_first_chunk_ms", "agent_first_audio_ms",
                "time_to_first_audio_ms", "tts_ms"):
        assert voice[key] > 0, key
    assert voice["agent_first_audio_ms"] == pytest.approx(
        voice["llm_first_sentence_ms"] + voice["tts_first_chunk_ms"], abs=0.2)
    user = json.loads(turn["extra_json"])["user"]["voice"]
    assert voice["time_to_first_audio_ms"] > voice["agent_first_audio_ms"] + user["stt_ms"] * 0.9
    # the stored file is the chunks the page played, joined
    stored = Path(live.config.store).parent / voice["audio"]
    assert updates[-1].audio == str(stored)
    joined, rate = join_chunks(chunks)
    assert wav_seconds(stored) == pytest.approx(len(joined) / rate, abs=0.01)
    assert voice["audio_s"] == pytest.approx(sum(c.seconds for c in chunks), abs=0.01)
    # its voice can be rated
    assert reply_spoken(turn)
    live.rate(session_id, 1, None, None, naturalness=4, comprehensibility=5)
    kinds = {j["kind"] for j in live.store.human_judgments(turn["interaction_id"])}
    assert kinds == {"human_tts_naturalness", "human_tts_comprehensibility"}


async def test_a_streaming_model_is_heard_before_its_reply_is_finished(make_live):
    heard = []
    model = StreamingChatModel(responder=None, prompts=[], may_go=lambda: bool(heard),
                               hold_at=REPLY.split(" ").index("Then"))
    live = make_live(agent_factory(REPLY, model))
    _, updates, turn = await speak(live, on_update=lambda u: u.chunk is not None and heard.append(u))
    first = next(i for i, u in enumerate(updates) if u.chunk is not None)
    partials = [i for i, u in enumerate(updates) if u.partial is not None]
    assert first < partials[-1]                           # audio came while the text streamed
    shown = [u.partial for u in updates[:first] if u.partial is not None][-1]
    assert LAST not in shown and updates[partials[-1]].partial == REPLY
    chunks = [u.chunk for u in updates if u.chunk is not None]
    assert [c.text for c in chunks] == sentences(REPLY)
    voice = agent_voice(turn)
    assert voice["llm_streamed"] is True and voice["spoken_chunks"] == 3
    assert voice["llm_first_sentence_ms"] < voice["agent_first_audio_ms"]


@pytest.mark.parametrize("reply, spoken", [
    ("🙂👍", []),                                                   # nothing speakable at all
    ("Restart the router. 🙂👍\nThen check the cable.",                # one chunk of emoji
     ["Restart the router.", "Then check the cable."]),
])
async def test_unspeakable_text_leaves_the_text_reply_standing(make_live, reply, spoken):
    live = make_live(agent_factory(reply))
    _, updates, turn = await speak(live)
    assert turn["agent_message"] == reply
    assert [u.chunk.text for u in updates if u.chunk is not None] == spoken
    voice = agent_voice(turn)
    assert voice["spoken_chunks"] == len(spoken)
    if spoken:
        assert reply_spoken(turn) and updates[-1].audio and "tts_error" not in voice
    else:
        assert not reply_spoken(turn) and updates[-1].audio is None
        assert "Nothing to speak" in voice["tts_error"]


def test_turn_based_setting_speaks_the_stored_reply_as_one_file(make_live):
    live = make_live(agent_factory(REPLY), voice={"streaming": False})
    _, updates, turn = asyncio.run(speak(live))
    assert not any(u.chunk is not None for u in updates)
    voice = agent_voice(turn)
    assert "pipeline" not in voice and voice["tts_ms"] > 0
    assert Path(updates[-1].audio).stat().st_size > 1000 and reply_spoken(turn)


class RefusingSpeaker:
    """Real piper, except that it refuses any text holding ``refuse`` (as an engine would)."""

    def __init__(self, refuse: str):
        self.real, self.refuse = Speaker(), refuse

    async def aspeak(self, text):
        if self.refuse in text:
            raise SpeechError(f"piper produced no audio for {text!r}.")
        return await self.real.aspeak(text)


async def test_a_chunk_the_engine_refuses_gives_no_audio_and_the_others_are_spoken():
    played = []
    speech = ReplySpeech(RefusingSpeaker("settings"), on_chunk=played.append)
    speech.start()
    speech.feed(REPLY)
    spoken = await speech.finish(REPLY)
    expected = [s for s in sentences(REPLY) if "settings" not in s]
    assert [c.text for c in spoken.chunks] == [c.text for c in played] == expected
    voice = reply_voice(spoken, speech, "audio/x/1-agent.wav")
    assert voice["spoken_chunks"] == 2 and "settings" in voice["tts_chunk_errors"][0]


async def test_a_retried_stream_restarts_the_speech_and_keeps_the_final_attempt():
    played = []
    speech = ReplySpeech(Speaker(), on_chunk=played.append)
    speech.start()
    speech.feed("Sure, let me help with that. First op")
    for _ in range(600):                      # the first attempt's first sentence is heard
        if played:
            break
        await asyncio.sleep(0.05)
    final = "Sure, let me help with that. Restart the printer."
    for partial in ("Sure,", "Sure, let me help", final):   # the retry streams from the start
        speech.feed(partial)
    spoken = await speech.finish(final)
    assert [c.text for c in spoken.chunks] == sentences(final)
    assert [c.text for c in played] == [sentences(final)[0], *sentences(final)]
    assert spoken.streamed


async def test_a_chunk_reaches_the_page_as_a_playable_wav():
    from ui.helpdesk_view import audio_data_url, reply_stream
    played = []
    speech = ReplySpeech(Speaker(), on_chunk=played.append)
    speech.start()
    spoken = await speech.finish("Restart the printer.")
    (chunk,) = spoken.chunks
    url = reply_stream("k1", [audio_data_url(chunk_wav(chunk))]).split("\n")
    assert url[0] == "k1" and url[1].startswith("data:audio/wav;base64,")
    with wave.open(io.BytesIO(base64.b64decode(url[1].split(",", 1)[1]))) as w:
        assert w.getframerate() == chunk.sample_rate and w.getnframes() == len(chunk.samples)


class SlowChatModel(ScriptedChatModel):
    """A judge that takes ``seconds`` (asynchronously, so it can be cut off)."""

    seconds: float = 1.0

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        await asyncio.sleep(self.seconds)
        return self._generate(messages, stop, run_manager, **kwargs)


class PacedChatModel(StreamingChatModel):
    """Streams its reply a word every ``pace_s``: an agent that takes a while to answer."""

    pace_s: float = 0.05

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            await asyncio.sleep(self.pace_s)
            yield chunk


async def test_a_spoken_message_has_the_agent_answer_alone_while_the_judges_wait(make_live):
    """voice.judging = yield (the default): the user-helpfulness judge that starts beside the
    agent's reply waits for it (or is cut off and re-sent), so the reply the person waits for
    shares nothing; a typed message keeps the text behaviour, judge and agent side by side."""
    responders = default_responder(solve_at=None)

    def factory(role, spec):
        if role == "agent":
            return PacedChatModel(responder=lambda m, k: REPLY, prompts=[])
        if role == "judge":
            return SlowChatModel(responder=responders(role), prompts=[])
        return ScriptedChatModel(responder=responders(role), prompts=[])
    live = make_live(factory)
    session_id, _, turn = await speak(live)
    iid = live.store.session(session_id)["interaction_id"]
    spoken = [c for c in live.reader.llm_calls(iid) if c["turn_index"] == 1]
    agent = [c for c in spoken if c["role"] == "agent"]
    assert agent and all(c["contended_ms"] <= 50 for c in agent), agent
    assert agent_voice(turn)["agent_contended_share"] <= 0.05
    judged = [c for c in spoken if c["role"] == "judge"]
    assert any(c["yielded_ms"] > 500 for c in judged), judged   # waited for the agent's ~1 s
    assert {j["kind"] for j in live.reader.judgments_for_run(live.store.session(session_id)["run_id"])} \
        >= {"user_helpfulness", "agent_helpfulness"}
    async for _ in live.send(session_id, "I tried that, the printer is still offline."):
        pass
    typed = [c for c in live.reader.llm_calls(iid) if c["turn_index"] == 2]
    assert any(c["role"] == "agent" and c["contended_ms"] > 300 for c in typed), typed
    assert not any(c["yielded_ms"] for c in typed)
