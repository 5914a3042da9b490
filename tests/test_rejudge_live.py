"""Re-judging live runs keeps every conversation, replayed as it was said: two participants of a
study on the same task (balanced assignment with a one-task pool), then ``deskbench rejudge``,
against a real local OpenAI-compatible endpoint."""
import asyncio

import pytest

from harness.cli.main import main
from harness.compose import Runtime
from harness.config import load_config
from harness.live.sessions import LiveSessions
from harness.live.studies import Studies, StudySpec
from harness.study.compare import turn_scores
from store import StoreReader, StoreWriter
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_cli import ROLES

TURNS = ("user_message", "agent_message", "input_tokens", "output_tokens", "cost")


@pytest.fixture
def live(tmp_path):
    with FakeOpenAIServer(default_responder(solve_at=None)) as server:
        roles = {r: {"base_url": server.base_url, "model": f"{r}-fake"} for r in ROLES}
        cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "roles": roles,
                                     "app": {"max_turns": 4, "messages_per_minute": 100}})
        runtime = Runtime(cfg)
        writer, reader = StoreWriter(cfg.store), StoreReader(cfg.store, must_exist=False)
        yield LiveSessions(runtime, writer, reader), server
        writer.close()
        runtime.close()


async def converse(live, study_id, participant_id, messages):
    """One study conversation of ``messages``, ended by the participant; its interaction id."""
    studies = Studies(live.store)
    task, agent, dataset = studies.next_assignment(study_id, participant_id)
    session = live.open(mode="user", agent=agent, study_id=study_id, participant_id=participant_id,
                        task=task, dataset=dataset.name, dataset_sha256=dataset.sha256)
    await live.begin(session)
    for text in messages:
        async for _ in live.send(session, text, participant_id=participant_id):
            pass
    await live.end(session, participant_id=participant_id)
    return live.store.session(session)["interaction_id"]


def turns_of(reader, interaction_id):
    return [{k: t[k] for k in TURNS} for t in reader.turns(interaction_id)]


def test_rejudging_a_live_run_keeps_two_conversations_on_one_task_as_they_were_said(live, tasks_file):
    live, server = live
    studies = Studies(live.store)
    sid = studies.create(StudySpec(name="One task", dataset=str(tasks_file), task_limit=1))
    alice, bob = studies.join(sid, "alice-01", True), studies.join(sid, "bob-02", True)
    said = {alice: ["My wifi keeps cutting out, Ubuntu 22.04.", "It is an AX200."],
            bob: ["wifi gone again after lunch", "Rebooted, still gone.", "Tried, no luck."]}

    async def both():
        return {pid: await converse(live, sid, pid, msgs) for pid, msgs in said.items()}
    sources = asyncio.run(both())
    reader = live.reader
    run_id = live.store.session(live.store.sessions_of(sid, alice)[0]["id"])["run_id"]
    assert {i["task_id"] for i in reader.interactions(run_id)} == {"wifi"}  # one task, twice

    n_requests = len(server.requests)
    assert main(["rejudge", "--store", live.config.store, run_id, "--role", "judge.model=judge2-fake"]) == 0
    (rejudged,) = [r for r in reader.runs() if r["kind"] == "rejudge"]
    again = reader.interactions(rejudged["id"])
    firsts = [reader.turns(i["id"])[0]["user_message"] for i in again]
    print(f"re-judged interactions: {len(again)} of {len(sources)}; their turn 1: {firsts}")
    assert len(again) == len(sources)
    assert {i["status"] for i in again} == {"completed"} and len(reader.scores(rejudged["id"])) == 2
    replayed = sorted((turns_of(reader, i["id"]) for i in again), key=len)
    originals = sorted((turns_of(reader, iid) for iid in sources.values()), key=len)
    assert replayed == originals  # every turn, turn 1 included, exactly as stored
    for turns, pid in zip(replayed, (alice, bob)):
        assert [t["user_message"] for t in turns] == said[pid]  # what the person typed
    assert {i["problem_id"] for i in again} == {i["problem_id"] for i in reader.interactions(run_id)}
    later = server.requests[n_requests:]
    assert {r["model"] for r in later} <= {"judge2-fake", "complexity-fake"}
    # the judge comparison pairs each re-judged turn with its own source turn (5 items, not 3)
    items = turn_scores(reader, run_id)
    assert len(items) == 5 and set(turn_scores(reader, rejudged["id"])) == set(items)


def test_rejudging_replays_turn_1_as_stored_not_the_task_question(tmp_path, tasks_file):
    """A voice run stores what speech recognition heard, which is not the task's question."""
    import sqlite3

    from tests.test_cli import role_flags
    store = tmp_path / "s.sqlite"
    with FakeOpenAIServer(default_responder(solve_at=None)) as server:
        assert main(["run", "--store", str(store), "--dataset", str(tasks_file), "--limit", "1",
                     "--max-turns", "2", "--quiet", *role_flags(server.base_url)]) == 0
        reader = StoreReader(store)
        (source,) = reader.runs()
        (i_src,) = reader.interactions(source["id"])
        heard = "my laptop why fi drops every few minutes on a boon to"
        with sqlite3.connect(store) as db:
            db.execute("UPDATE turns SET user_message=? WHERE interaction_id=? AND turn_index=1",
                       (heard, i_src["id"]))
        assert main(["rejudge", "--store", str(store), source["id"]]) == 0
    (rejudged,) = [r for r in reader.runs() if r["kind"] == "rejudge"]
    (i_new,) = reader.interactions(rejudged["id"])
    assert i_new["id"] == f"{rejudged['id']}:wifi"
    assert turns_of(reader, i_new["id"]) == turns_of(reader, i_src["id"])
    assert reader.turns(i_new["id"])[0]["user_message"] == heard
