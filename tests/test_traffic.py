"""The harness's bookkeeping of its own requests on an endpoint, and the agent first during a
call (harness/models/traffic.py): contention measured, the other roles waiting while the agent
answers, one of theirs cut off and sent again when the agent starts; then a simulated call on a
fake endpoint whose judges are slow: with ``voice.judging = "yield"`` the agent's reply works
alone on the endpoint and its latency is its own, inline it shares the endpoint."""
import asyncio
import json

import pytest

from harness.compose import Runtime
from harness.config import load_config
from harness.models.traffic import is_yielding, on_endpoint, yielding
from harness.selfscore.batch import arun_selfscore
from harness.study.call_report import call_lines, contention_figures
from harness.tasks.datasets import load_dataset
from store import StoreReader
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_voice_stream_fakes import tone_link


def sender(log: list, name: str, seconds: float):
    """A request that takes ``seconds``; ``log`` gets (name, 'start'|'done'|'cut')."""
    async def send():
        log.append((name, "start"))
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            log.append((name, "cut"))
            raise
        log.append((name, "done"))
        return name
    return send


def test_overlapping_requests_are_counted_as_contended_and_a_lone_one_is_not():
    async def play():
        log = []
        a = asyncio.create_task(on_endpoint("e", "agent", sender(log, "agent", 0.2)))
        await asyncio.sleep(0.1)
        j = asyncio.create_task(on_endpoint("e", "judge", sender(log, "judge", 0.2)))
        other = asyncio.create_task(on_endpoint("other", "judge", sender(log, "x", 0.2)))
        (ra, ua), (rj, uj), (_, uo) = await asyncio.gather(a, j, other)
        (_, alone) = await on_endpoint("e", "agent", sender(log, "agent2", 0.05))
        return ra, ua, rj, uj, uo, alone
    ra, ua, rj, uj, uo, alone = asyncio.run(play())
    assert (ra, rj) == ("agent", "judge")
    # they shared about 0.1 s of the endpoint; another endpoint's request is not counted
    assert 60 <= ua.contended_ms <= 160 and 60 <= uj.contended_ms <= 160
    assert uo.contended_ms == 0 and alone.contended_ms == 0
    assert ua.yielded_ms == uj.yielded_ms == 0 and not is_yielding_outside()


def is_yielding_outside() -> bool:
    async def ask():
        return is_yielding()
    return asyncio.run(ask())


def test_while_yielding_a_judge_waits_for_the_agent_and_is_cut_off_and_resent_when_it_starts():
    async def play():
        log = []
        with yielding():
            judge = asyncio.create_task(on_endpoint("e", "judge", sender(log, "judge", 0.3)))
            await asyncio.sleep(0.1)   # the judge is working when the agent asks
            agent = asyncio.create_task(on_endpoint("e", "agent", sender(log, "agent", 0.2)))
            await asyncio.sleep(0.05)  # a judge that arrives while the agent works waits
            late = asyncio.create_task(on_endpoint("e", "user", sender(log, "caller", 0.05)))
            results = await asyncio.gather(agent, judge, late)
        return log, results
    log, ((ra, ua), (rj, uj), (rl, ul)) = asyncio.run(play())
    assert (ra, rj, rl) == ("agent", "judge", "caller")
    assert log[:4] == [("judge", "start"), ("agent", "start"), ("judge", "cut"), ("agent", "done")]
    assert ("judge", "start") in log[4:] and log.count(("judge", "done")) == 1
    assert log.index(("caller", "start")) > log.index(("agent", "done"))
    assert ua.contended_ms < 20 and ua.yielded_ms == 0          # the agent had it to itself
    assert uj.yielded_ms >= 250      # 0.1 s of cut work and 0.2 s waiting for the agent
    assert ul.yielded_ms >= 100      # waited for the agent to finish


def test_without_yielding_nobody_waits_and_a_cancelled_caller_is_not_resent():
    async def play():
        log = []
        judge = asyncio.create_task(on_endpoint("e", "judge", sender(log, "judge", 0.2)))
        await asyncio.sleep(0.05)
        (_, ua) = await on_endpoint("e", "agent", sender(log, "agent", 0.05))
        (_, uj) = await judge
        with yielding():   # the caller itself gives up: the request is cancelled, not sent again
            gone = asyncio.create_task(on_endpoint("e", "judge", sender(log, "gone", 1.0)))
            await asyncio.sleep(0.05)
            gone.cancel()
            with pytest.raises(asyncio.CancelledError):
                await gone
        return log, ua, uj
    log, ua, uj = asyncio.run(play())
    assert ("judge", "cut") not in log and ua.contended_ms > 30 and uj.yielded_ms == 0
    assert log[-2:] == [("gone", "start"), ("gone", "cut")]


def _call(tmp_path, judging: str, work: dict[str, float]):
    """A one-turn streamed call with every role on one fake endpoint that shares its compute."""
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "w/1", "question": "My wifi drops every few minutes."}) + "\n")
    responders = default_responder(solve_at=None)
    with FakeOpenAIServer(responders, token_delay_s=0.005, work_s=work) as srv:
        roles = {r: {"base_url": srv.base_url, "model": f"{r}-fake"}
                 for r in ("agent", "user", "judge", "complexity", "extractor")}
        cfg = load_config(overrides={"store": str(tmp_path / f"{judging}.sqlite"), "roles": roles,
                                     "scoring": {"profile": "embedded"},
                                     "run": {"limit": 1, "max_turns": 2, "concurrency": 1},
                                     "voice": {"enabled": True, "judging": judging}})
        with Runtime(cfg) as runtime:
            runtime.voice_link = tone_link(cfg.store)
            run_id, progress = asyncio.run(arun_selfscore(runtime, load_dataset(str(path))))
        log = list(srv.work_log)
    assert progress.failed == 0, progress
    return StoreReader(cfg.store), run_id, log


def test_a_call_whose_judges_are_slow_keeps_the_agents_latency_its_own(tmp_path):
    work = {"agent": 0.3, "judge": 1.0}
    reader, run_id, log = _call(tmp_path, "yield", work)
    agents = [w for w in log if w["role"] == "agent" and w["finished"]]
    assert len(agents) == 2
    # on the server, every agent reply worked (almost) alone: the judges waited or were cut off
    assert all(w["shared_s"] <= 0.05 for w in agents), agents
    turns = reader.turns(f"{run_id}:w/1")
    voices = [json.loads(t["extra_json"])["agent"]["voice"] for t in turns]
    assert all(v["agent_contended_share"] <= 0.1 for v in voices), voices
    # the agent's time to its first sentence is its own work, not the judges' (1 s each)
    assert all(300 <= v["llm_first_sentence_ms"] < 300 + 1000 * 0.5 for v in voices), voices
    # every judgment is still stored, and the judge calls say what they gave up
    judgments = reader.judgments_for_run(run_id)
    assert {j["kind"] for j in judgments} >= {"user_helpfulness", "agent_helpfulness", "solved"}
    calls = reader.llm_calls(f"{run_id}:w/1")
    assert any(c["role"] == "judge" and (c["yielded_ms"] or 0) > 0 for c in calls)
    assert all(c["contended_ms"] is not None for c in calls if c["error"] is None)
    lines = "\n".join(call_lines(reader, run_id))
    assert "uncontended" in lines and "shares its endpoint with the judges" in lines

    inline_reader, inline_run, inline_log = _call(tmp_path, "inline", work)
    inline_agents = [w for w in inline_log if w["role"] == "agent" and w["finished"]]
    # inline, the user-helpfulness judge works beside the agent's reply
    assert any(w["shared_s"] > 0.1 for w in inline_agents), inline_agents
    assert not any(c["yielded_ms"] for c in inline_reader.llm_calls(f"{inline_run}:w/1"))
    figures = contention_figures(inline_reader.turns_for_run(inline_run))
    assert figures["replies"] == 2 and figures["uncontended"] < 2


def test_judge_server_puts_every_role_but_the_agent_on_a_second_embedded_server(monkeypatch):
    from harness.models import engine as engine_module
    started = []

    def start(self, port=None):
        self.port = 9000 + len(started)
        started.append((self.model_key, self.log_path.name))
        return self
    monkeypatch.setattr(engine_module.EmbeddedServer, "start", start)
    monkeypatch.setattr(engine_module.EmbeddedServer, "alive", property(lambda self: self.port is not None))
    cfg = load_config(overrides={"engine": {"judge_server": True}})
    with Runtime(cfg) as runtime:
        assert [runtime.engine_instance(r) for r in ("agent", "judge", "user", "complexity")] == \
            ["", "judges", "judges", "judges"]
        agent = runtime.engine.base_url("qwen2.5-coder-1.5b", runtime.engine_instance("agent"))
        judge = runtime.engine.base_url("qwen2.5-coder-1.5b", runtime.engine_instance("judge"))
        again = runtime.engine.base_url("qwen2.5-coder-1.5b", runtime.engine_instance("user"))
    assert agent != judge == again and len(started) == 2
    assert "judges" in started[1][1] and "judges" not in started[0][1]   # each its own log
    assert Runtime(load_config()).engine_instance("judge") == ""   # one server by default


def test_the_report_says_whether_the_agent_shares_its_endpoint():
    from harness.study.call_report import shared_endpoint_line
    embedded = {r: {"model": "qwen2.5-coder-1.5b"} for r in ("agent", "judge", "user")}
    assert "yielded it" in shared_endpoint_line({"roles": embedded, "voice": {"judging": "yield"}})
    assert "ran beside it" in shared_endpoint_line({"roles": embedded, "voice": {"judging": "inline"}})
    apart = shared_endpoint_line({"roles": embedded, "engine": {"judge_server": True}})
    assert "its own embedded server" in apart and "shares" not in apart
    own = {**embedded, "agent": {"model": "m", "base_url": "http://a/v1"}}
    assert shared_endpoint_line({"roles": own}) is None
