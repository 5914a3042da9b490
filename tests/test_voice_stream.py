"""The streamed reply pipeline: sentences cut from a token stream, the first one spoken while
the rest is generated (a real ChatOpenAI against the fake OpenAI server, streaming), the
caller's speech transcribed chunk by chunk, and the per-stage measures in the store."""
import asyncio
import json

import numpy as np
import pytest

from graphs.protocols import Message, Problem
from harness.compose import Runtime
from harness.config import ModelSpec, load_config
from harness.models.llm import RoleClient, chat_model_for
from harness.selfscore.batch import arun_selfscore
from harness.agents.plain import PlainAgent
from harness.study.call_report import call_lines, latency_stages
from harness.tasks.datasets import load_dataset
from harness.voice.chunked_stt import schedule, transcribe_chunks
from harness.voice.streaming import SentenceSplitter, speak_streamed
from harness.voice.vad import split_on_pauses
from store import StoreReader
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder, fake_factory
from tests.test_voice_stream_fakes import RATE, ToneSpeaker, ToneTranscriber, Vocabulary, tone_link

REPLY = ("Sure, let me help with that. First open the network settings. Then toggle the adapter "
         "off and on. Finally restart the laptop.")


def _split(text, words=4, by=" "):
    s = SentenceSplitter(words)
    out = []
    for tok in text.split(by):
        out += s.feed(tok + by)
    return out + s.flush()


def test_splitter_cuts_sentences_lines_and_an_early_clause():
    assert _split(REPLY) == ["Sure, let me help with that.", "First open the network settings.",
                             "Then toggle the adapter off and on.", "Finally restart the laptop."]
    # the first chunk ends at a comma once it has 4 words; later ones only at sentence ends
    assert _split("Okay so the first thing, then we go on, and on. Next one, here.") == [
        "Okay so the first thing,", "then we go on, and on.", "Next one, here."]
    assert _split("Okay so the first thing, then.", words=0) == ["Okay so the first thing, then."]


def test_splitter_keeps_abbreviations_list_numbers_and_code_fences():
    text = "Use a tool, e.g. nmcli. Steps:\n1. Open it.\n```\nsudo x. y\nmore\n```\nDone!"
    assert _split(text, by="\n") == ["Use a tool, e.g. nmcli.", "Steps:", "1. Open it.",
                                     "```\nsudo x. y\nmore\n```", "Done!"]


def test_first_sentence_is_spoken_while_the_rest_streams():
    vocab = Vocabulary()
    with FakeOpenAIServer(lambda role: (lambda messages, body: REPLY), token_delay_s=0.03) as srv:
        spec = ModelSpec(model="agent-fake", base_url=srv.base_url)
        agent = PlainAgent(RoleClient("agent", spec, chat_model_for(spec, srv.base_url)), "help")
        spoken = asyncio.run(speak_streamed(agent, Problem("r:1", "wifi?", None, None),
                                            [Message("user", "my wifi drops")], ToneSpeaker(vocab)))
        assert srv.requests[-1]["stream"] is True
    assert spoken.streamed and spoken.reply.text == REPLY
    assert [c.text for c in spoken.chunks] == _split(REPLY)
    first = spoken.chunks[0]
    # the first sentence's audio was ready long before the model finished its reply
    assert first.audio_ms < spoken.respond_ms / 2
    assert all(a.text_ms <= b.text_ms for a, b in zip(spoken.chunks, spoken.chunks[1:]))
    m = spoken.measures()
    assert m["llm_streamed"] and m["llm_first_sentence_ms"] == pytest.approx(first.text_ms, abs=0.1)
    assert m["agent_first_audio_ms"] == pytest.approx(first.audio_ms, abs=0.1)


def test_a_reply_without_a_sentence_end_is_complete_when_the_reply_ends():
    """The text left in the splitter when the stream ends (no final full stop) was complete when
    the reply came back, not when the pipeline was finished a moment later: its text time is
    never after respond_ms (an embedded-model call once measured 4433.9 against 4433.8)."""
    reply = "Open the network settings and toggle the adapter off and on"
    with FakeOpenAIServer(lambda role: (lambda messages, body: reply), token_delay_s=0.01) as srv:
        spec = ModelSpec(model="agent-fake", base_url=srv.base_url)
        agent = PlainAgent(RoleClient("agent", spec, chat_model_for(spec, srv.base_url)), "help")
        spoken = asyncio.run(speak_streamed(agent, Problem("r:1", "wifi?", None, None),
                                            [Message("user", "my wifi drops")], ToneSpeaker(Vocabulary())))
    assert spoken.streamed and [c.text for c in spoken.chunks] == [reply]
    assert spoken.chunks[0].text_ms == spoken.respond_ms
    assert spoken.measures()["llm_first_sentence_ms"] <= round(spoken.respond_ms, 1)


def test_a_model_that_does_not_stream_speaks_after_the_whole_reply():
    factory = fake_factory(default_responder())
    spec = ModelSpec(model="agent-fake")
    agent = PlainAgent(RoleClient("agent", spec, factory("agent", spec)), "help")
    spoken = asyncio.run(speak_streamed(agent, Problem("r:1", "q", None, None), [Message("user", "hi")],
                                        ToneSpeaker(Vocabulary())))
    assert not spoken.streamed and len(spoken.chunks) == 1
    assert spoken.chunks[0].text_ms == pytest.approx(spoken.respond_ms, abs=0.5)


def test_chunk_schedule_leaves_only_the_last_chunk_after_the_caller_stops():
    # three chunks of speech; each transcription 500 ms; audio arrives at real-time pace
    done, tail = schedule([(0.0, 2.0), (2.5, 4.0), (4.5, 5.0)], [500, 500, 500], pause_s=0.3)
    assert done == pytest.approx([2.8, 4.8, 5.5])
    assert tail == pytest.approx(500.0)
    # a slow STT backs up: the tail grows by what is still queued
    _, tail = schedule([(0.0, 1.0), (1.5, 2.0)], [2000, 500], pause_s=0.3)
    assert tail == pytest.approx((1.3 + 2.0 + 0.5 - 2.0) * 1000)
    _, tail = schedule([(0.0, 1.0)], [400], pause_s=0.3, endpoint_ms=200)
    assert tail == pytest.approx(600.0)


def test_caller_speech_is_split_on_pauses_and_transcribed_by_chunks():
    vocab = Vocabulary()
    link = tone_link()
    link.speaker, link.transcriber = ToneSpeaker(vocab), ToneTranscriber(vocab, base_ms=100, ms_per_s=0)
    text = "My laptop wifi drops every few minutes. I tried restarting the router twice. Nothing helped."
    spoken = asyncio.run(link.speak_sentences(text))
    assert len(split_on_pauses(spoken.samples, spoken.sample_rate, 0.3, min_chunk_s=0.5)) == 3
    # "Nothing helped." is under min_chunk_s (1 s): it goes with the sentence before it
    chunks = split_on_pauses(spoken.samples, spoken.sample_rate, 0.3)
    assert len(chunks) == 2
    heard = asyncio.run(transcribe_chunks(link.transcriber, spoken.samples, spoken.sample_rate, 0.3))
    assert heard.text == spoken.cleaned
    assert len(heard.chunks) == 2 and heard.tail_ms == pytest.approx(100.0)
    assert heard.measures["stt_chunks"] == 2


def _tone_run(tmp_path, voice: dict, tasks: list[dict], responders, max_turns=2, factory=None):
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"),
                                 "run": {"limit": len(tasks), "max_turns": max_turns, "concurrency": 1},
                                 "voice": {"enabled": True, **voice}})
    with Runtime(cfg, factory or fake_factory(responders)) as runtime:
        runtime.voice_link = tone_link(cfg.store, stream=cfg.voice.streaming,
                                       endpoint_ms=cfg.voice.endpoint_ms)
        run_id, progress = asyncio.run(arun_selfscore(runtime, load_dataset(str(path))))
    assert progress.failed == 0, progress
    return cfg, run_id


def test_streamed_call_stores_the_stages_and_reports_them(tmp_path):
    responders = default_responder(solve_at=None)
    fakes = fake_factory(responders)
    with FakeOpenAIServer(lambda role: (lambda messages, body: REPLY), token_delay_s=0.01) as srv:
        def factory(role, spec):   # the agent streams from a real ChatOpenAI inside the graph
            if role != "agent":
                return fakes(role, spec)
            return chat_model_for(ModelSpec(model="agent-fake", base_url=srv.base_url), srv.base_url)
        cfg, run_id = _tone_run(tmp_path, {"endpoint_ms": 200}, [{"id": "w/1", "question": "My wifi drops."}],
                                responders, factory=factory)
    reader = StoreReader(cfg.store)
    turns = reader.turns(f"{run_id}:w/1")
    for t in turns:
        extra = json.loads(t["extra_json"])
        user, agent = extra["user"]["voice"], extra["agent"]["voice"]
        assert t["agent_message"] == agent["heard_text"] == agent["cleaned_text"]
        assert user["pipeline"] == agent["pipeline"] == "streaming" and user["stt_chunks"] >= 1
        assert agent["llm_streamed"] and agent["spoken_chunks"] == 4
        assert agent["time_to_first_audio_ms"] == pytest.approx(
            200 + user["stt_tail_ms"] + agent["agent_first_audio_ms"], abs=0.2)
        assert agent["agent_first_audio_ms"] == pytest.approx(
            agent["llm_first_sentence_ms"] + agent["tts_first_chunk_ms"], abs=0.2)
        assert agent["audio"] == f"audio/{run_id}/w_1/{t['turn_index']}-agent.wav"
    stages = latency_stages(turns)
    assert len(stages["time_to_first_audio_ms"]) == 2 and stages["endpoint_ms"] == [200.0, 200.0]
    text = "\n".join(call_lines(reader, run_id))
    assert "Latency at the caller" in text and "| stt_tail_ms | 2 |" in text


def test_turn_based_setting_keeps_the_old_pipeline(tmp_path):
    cfg, run_id = _tone_run(tmp_path, {"streaming": False}, [{"id": "w/1", "question": "My wifi drops."}],
                            default_responder(solve_at=None), max_turns=1)
    extra = json.loads(StoreReader(cfg.store).turns(f"{run_id}:w/1")[0]["extra_json"])
    assert "pipeline" not in extra["agent"]["voice"] and "stt_tail_ms" not in extra["agent"]["voice"]
    assert extra["agent"]["voice"]["time_to_first_audio_ms"] > 0


def test_vad_finds_no_chunk_in_silence():
    assert split_on_pauses(np.zeros(RATE), RATE) == []
