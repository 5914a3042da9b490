"""Closing and reopening a study: the Python API (harness.live.studies) and the organiser's handlers
(ui.organiser, without a browser), with fake chat models."""
import pytest

from harness.config import load_config
from harness.live.guards import LiveError
from harness.live.services import AppServices
from harness.live.studies import StudySpec
from tests.fakes import default_responder, fake_factory
from ui.organiser import OrganiserHandlers

SECRET = "organiser-secret"


@pytest.fixture
def services(tmp_path):
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"),
                                 "app": {"max_turns": 4, "messages_per_minute": 100}})
    services = AppServices(cfg, chat_models=fake_factory(default_responder(solve_at=None)),
                           organiser_secret=SECRET)
    yield services
    services.close()


async def converse(services, study_id, participant_id, text):
    """A new conversation of one turn for the participant; its session token."""
    studies, live = services.studies, services.live
    task, agent, dataset = studies.next_assignment(study_id, participant_id)
    session = live.open(mode="user", agent=agent, study_id=study_id, participant_id=participant_id,
                        task=task, dataset=dataset.name)
    await live.begin(session)
    async for _ in live.send(session, text, participant_id=participant_id):
        pass
    return session


def snapshot(services, study_id):
    """Everything the store holds of a study: its sessions, turns and judgments."""
    store = services.live.store
    sessions = store.sessions_of_study(study_id)
    return (sessions, [services.reader.turns(s["interaction_id"]) for s in sessions],
            [store.judgments(s["interaction_id"]) for s in sessions])


async def test_a_closed_study_refuses_new_codes_keeps_its_data_and_reopens(services, tasks_file):
    studies = services.studies
    sid = studies.create(StudySpec(name="Closing", dataset=str(tasks_file), task_limit=3,
                                   max_sessions=2))
    alice = studies.join(sid, "alice-01", True)
    session = await converse(services, sid, alice, "My wifi keeps dropping.")
    before = snapshot(services, sid)

    assert studies.close(sid)["status"] == "closed"
    assert studies.study(sid)["status"] == "closed"
    with pytest.raises(LiveError, match="closed to new participants"):
        studies.join(sid, "bob-02", True)
    with pytest.raises(LiveError, match="closed to new participants"):
        studies.join(sid, "bob-02", False)  # said before consent is asked for
    assert snapshot(services, sid) == before  # nothing lost, nothing added by the refusals
    assert services.live.store.participant(studies.pseudonym(sid, "bob-02")) is None

    # who joined before it closed may finish: the same code, the conversation under way, the next one
    assert studies.join(sid, "alice-01", True) == alice
    async for _ in services.live.send(session, "It is an AX200 card.", participant_id=alice):
        pass
    assert len(services.reader.turns(services.live.store.session(session)["interaction_id"])) == 2
    await converse(services, sid, alice, "Second problem: my disk is full.")

    assert studies.reopen(sid)["status"] == "open"
    bob = studies.join(sid, "bob-02", True)
    await converse(services, sid, bob, "Websites do not load.")
    assert {s["participant_id"] for s in services.live.store.sessions_of_study(sid)} == {alice, bob}
    assert studies.close(sid)["status"] == studies.close(sid)["status"] == "closed"  # idempotent


def test_closing_an_unknown_study_says_so(services):
    for change in (services.studies.close, services.studies.reopen):
        with pytest.raises(LiveError, match="No such study"):
            change("no-such-study")


def test_the_organiser_closes_and_reopens_with_the_secret_only(services, tasks_file):
    h = OrganiserHandlers(services)
    sid = services.studies.create(StudySpec(name="Handlers", dataset=str(tasks_file), task_limit=2))
    close, reopen = h.guarded(h.close_study, 3), h.guarded(h.reopen_study, 3)

    for secret in ("", "wrong", None):
        note, *_ = close(secret, sid)
        assert note.startswith("⚠️") and "secret" in note
    assert services.studies.study(sid)["status"] == "open"

    note, table, picker = close(SECRET, sid)
    assert "is closed" in note and services.studies.study(sid)["status"] == "closed"
    (row,) = [r for r in table if r[0] == sid]
    assert row[2] == "closed" and row[-1].endswith(f"?study={sid}")
    assert picker["choices"] == [(f"Handlers ({sid}, closed)", sid)]

    note, table, _ = reopen(SECRET, sid)
    assert "open again" in note and [r[2] for r in table if r[0] == sid] == ["open"]
    note, *_ = close(SECRET, "")
    assert note.startswith("⚠️") and "Choose a study" in note
    note, *_ = close(SECRET, "no-such-study")
    assert note.startswith("⚠️") and "No such study" in note
