"""The live app served for real (Gradio on loopback) and driven with gradio_client, fake models.

Checks session isolation under concurrent participants and the app's refusals.
"""
import asyncio
import concurrent.futures

import pytest
from gradio_client import Client

from harness.config import load_config
from harness.live.services import AppServices
from tests.fakes import default_responder, fake_factory
from ui.app import launch


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("app")
    cfg = load_config(overrides={"store": str(tmp / "s.sqlite"),
                                 "app": {"port": 0, "max_turns": 6, "messages_per_minute": 50}})
    services = AppServices(cfg, chat_models=fake_factory(default_responder(solve_at=None)),
                           organiser_secret="let-me-in")
    demo, url = launch(services)
    yield services, url
    demo.close()
    services.close()


def test_concurrent_participants_see_only_their_own_messages(served):
    services, url = served

    def participant(k: int) -> tuple[str, list[dict]]:
        client = Client(url, verbose=False)
        view = client.predict(f"Problem {k}: my printer {k} is offline.", "plain", api_name="/live_start")
        assert "error" not in view, view
        for turn in range(2):
            view = client.predict(view["session"], f"participant-{k} message {turn}", api_name="/live_send")
            assert "error" not in view, view
        return view["session"], view["messages"]

    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        results = list(pool.map(participant, range(5)))
    assert len({s for s, _ in results}) == 5
    for k, (_, messages) in enumerate(results):
        users = [m["content"] for m in messages if m["role"] == "user"]
        assert users == [f"participant-{k} message 0", f"participant-{k} message 1"]
        others = [f"participant-{j} " for j in range(5) if j != k]
        assert not any(o in m["content"] for m in messages for o in others)


def test_bad_input_and_unknown_sessions_are_refused_with_the_fix(served):
    _, url = served
    client = Client(url, verbose=False)
    view = client.predict("My mouse lags.", "plain", api_name="/live_start")
    assert client.predict(view["session"], "", api_name="/live_send")["error"].startswith("Type a message")
    big = client.predict(view["session"], "x" * 1_000_000, api_name="/live_send")
    assert "limit is 4,000" in big["error"]
    assert "binary" in client.predict(view["session"], "\x00\x01\x02\x03" * 10, api_name="/live_send")["error"]
    assert "No such session" in client.predict("guessed-token", "hi", api_name="/live_send")["error"]
    # nothing was stored by the refused messages
    assert client.predict(view["session"], api_name="/live_view")["turns"] == 0


def test_organiser_handlers_are_not_public_api(served):
    _, url = served
    api = Client(url, verbose=False).view_api(return_format="dict", print_info=False)
    names = set(api["named_endpoints"])
    assert {"/live_start", "/live_send", "/live_view", "/live_rate", "/live_end"} <= names
    assert not any("study" in n or "run" in n or "export" in n for n in names), names


FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "audio"


def test_spoken_message_through_the_api_is_transcribed_stored_and_answered_aloud(served):
    from gradio_client import handle_file
    import json

    services, url = served
    client = Client(url, verbose=False)
    view = client.predict("My printer is offline.", "plain", api_name="/live_start")
    result = client.predict(view["session"], handle_file(str(FIXTURES / "restart-printer.webm")),
                            api_name="/live_send_audio")
    assert "error" not in result, result
    assert "restart the printer" in result["messages"][0]["content"].lower()
    assert result["turns"] == 1 and result["reply_audio"]
    sess = services.live.store.session(view["session"])
    (turn,) = services.reader.turns(sess["interaction_id"])
    extra = json.loads(turn["extra_json"])
    root = __import__("pathlib").Path(services.config.store).parent
    assert (root / extra["user"]["voice"]["audio"]).stat().st_size > 1000
    assert (root / extra["agent"]["voice"]["audio"]).stat().st_size > 1000
    assert extra["user"]["voice"]["stt_ms"] > 0 and extra["agent"]["voice"]["tts_ms"] > 0
    # the spoken reply's voice is rated (1-5) beside its helpfulness
    rated = client.predict(view["session"], 1, 8, False, 4, 5, api_name="/live_rate")
    assert "error" not in rated, rated
    kinds = {j["kind"]: j["score"] for j in services.live.store.human_judgments(sess["interaction_id"])}
    assert kinds == {"human_agent_helpfulness": 8, "human_solved": 0, "human_tts_naturalness": 4,
                     "human_tts_comprehensibility": 5}
    assert "from 1 (bad) to 5" in client.predict(view["session"], 1, 8, False, 9, None,
                                                 api_name="/live_rate")["error"]


@pytest.mark.parametrize("name, message", [("truncated.webm", "audio"), ("empty.wav", "empty")])
def test_broken_or_empty_audio_is_refused_and_nothing_is_stored(served, tmp_path, name, message):
    from gradio_client import handle_file

    services, url = served
    path = FIXTURES / name
    if name == "empty.wav":
        path = tmp_path / name
        path.write_bytes(b"")
    client = Client(url, verbose=False)
    view = client.predict("My scanner is slow.", "plain", api_name="/live_start")
    result = client.predict(view["session"], handle_file(str(path)), api_name="/live_send_audio")
    assert message in result.get("error", "").lower(), result
    sess = services.live.store.session(view["session"])
    assert services.reader.turns(sess["interaction_id"]) == []
    audio_dir = __import__("pathlib").Path(services.config.store).parent / "audio"
    assert not list(audio_dir.rglob(f"*{sess['interaction_id'].split(':')[-1]}*/*.wav"))


def test_new_sessions_per_address_are_rate_limited(served):
    from harness.live.guards import RateLimiter

    services, url = served
    saved, services.starts = services.starts, RateLimiter(1)
    try:
        client = Client(url, verbose=False)
        assert "error" not in client.predict("Fan is loud.", "plain", api_name="/live_start")
        refused = client.predict("Fan is loud again.", "plain", api_name="/live_start")
        assert "too fast" in refused["error"]
    finally:
        services.starts = saved
