"""A voice message in the live app, in a real headless Chromium: the agent's reply (a fake chat
model streaming word by word) is spoken by real piper sentence by sentence, and the page plays
the first sentence while the rest of the reply is still being written; the stored turn keeps
the whole reply's audio and the pipeline's measures."""
import json
import threading
from pathlib import Path

import pytest

from harness.config import load_config
from harness.live.services import AppServices
from tests.integration.test_live_app_browser import CHROMIUM, CHROMIUM_ARGS, wait_status
from tests.test_app_api import FIXTURES
from tests.test_live_streamed_speech import LAST, REPLY, StreamingChatModel, agent_factory, sentences
from ui.app import launch

PLAYER = "#reply-stream [data-received]"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from playwright.sync_api import sync_playwright
    if not Path(CHROMIUM).exists():
        pytest.fail("browser tests need Debian's chromium: run scripts/system-deps.sh")
    release = threading.Event()   # the agent's reply holds before its last sentence until set
    model = StreamingChatModel(responder=None, prompts=[], may_go=release.is_set,
                               hold_at=REPLY.split(" ").index("Then"))
    cfg = load_config(overrides={"store": str(tmp_path_factory.mktemp("sv") / "s.sqlite"),
                                 "app": {"port": 0}})
    services = AppServices(cfg, chat_models=agent_factory(REPLY, model), organiser_secret="x")
    demo, url = launch(services)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=[*CHROMIUM_ARGS, "--autoplay-policy=no-user-gesture-required"])
        page = browser.new_page()
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#mic").wait_for(timeout=60_000)
        yield page, services, release
        browser.close()
    demo.close()
    services.close()


def player_count(page, name: str) -> int:
    return int(page.locator(PLAYER).get_attribute(f"data-{name}") or 0)


def test_the_first_sentence_plays_while_the_reply_is_still_written(page):
    page, services, release = page
    page.locator("#start").click()
    wait_status(page, "Type your first message", 30)
    mic = page.locator("#mic")
    mic.get_by_role("button", name="Upload file").click(timeout=30_000)
    mic.locator("input[type=file]").set_input_files(str(FIXTURES / "restart-printer.wav"))
    mic.locator("[data-testid^=audio-player]").wait_for(state="attached", timeout=30_000)
    page.locator("#send-voice").click()
    # the reply holds before its last sentence: its first sentence must already be playing
    page.wait_for_function(
        "sel => { const e = document.querySelector(sel); return e && +e.dataset.started >= 1; }",
        arg=PLAYER, timeout=120_000)
    chat = page.locator("#chat").inner_text()
    assert "Sure, let me help with that." in chat and LAST not in chat
    assert "The agent is answering" in page.locator("#status").inner_text()
    release.set()
    wait_status(page, "Turn 2", 120)
    assert LAST in page.locator("#chat").inner_text()
    # every chunk reached the page and was played, in order, one after another
    page.wait_for_function(
        "sel => { const e = document.querySelector(sel); return +e.dataset.ended >= 3; }",
        arg=PLAYER, timeout=60_000)
    assert player_count(page, "received") == len(sentences(REPLY)) == 3
    assert "3 of 3 sentences played" in page.locator("#reply-stream").inner_text()
    # the whole reply is there to play again, and the stored turn holds it and the measures
    page.locator("#reply-audio audio, #reply-audio [data-testid^=audio-player]").first.wait_for(
        state="attached", timeout=30_000)
    (run,) = [r for r in services.reader.runs() if r["kind"] == "live"]
    (turn,) = services.reader.turns(services.reader.interactions(run["id"])[-1]["id"])
    voice = json.loads(turn["extra_json"])["agent"]["voice"]
    assert voice["pipeline"] == "streaming" and voice["llm_streamed"] is True
    assert voice["spoken_chunks"] == 3 and voice["agent_first_audio_ms"] > 0
    assert (Path(services.config.store).parent / voice["audio"]).stat().st_size > 1000
    page.locator("#voice-rating").wait_for(state="visible", timeout=30_000)
