"""The live app's page flows in a real headless Chromium, with fake chat models (fast): a free
session on one's own problem, then on a drawn task. The real-model flows (studies, ratings,
answering as the agent, organiser pages) are in tests/integration/test_live_app_browser.py."""
import pytest

from harness.app_services import AppServices
from harness.config import load_config
from tests.fakes import default_responder, fake_factory
from tests.integration.test_live_app_browser import CHROMIUM, CHROMIUM_ARGS, field, wait_status
from ui.app import launch


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from pathlib import Path
    from playwright.sync_api import sync_playwright
    if not Path(CHROMIUM).exists():
        pytest.fail("browser tests need Debian's chromium: run scripts/system-deps.sh")
    cfg = load_config(overrides={"store": str(tmp_path_factory.mktemp("b") / "s.sqlite"),
                                 "app": {"port": 0}})
    services = AppServices(cfg, chat_models=fake_factory(default_responder(solve_at=None)),
                           organiser_secret="x")
    demo, url = launch(services)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(url, wait_until="domcontentloaded")
        field(page, "message").wait_for(timeout=60_000)
        yield page, services
        browser.close()
    demo.close()
    services.close()


def test_free_session_on_my_own_problem_then_on_a_drawn_task(page):
    page, services = page
    field(page, "message").fill("My bluetooth headset stutters.")
    page.locator("#send").click()
    wait_status(page, "Turn 2", 60)
    chat = page.locator("#chat").inner_text()
    assert "My bluetooth headset stutters." in chat and "Step 1" in chat
    page.locator("#draw").click()
    page.wait_for_function("document.querySelector('#scenario').innerText.includes('scenario')",
                           timeout=30_000)
    scenario = page.locator("#scenario").inner_text()
    field(page, "message").fill("In my own words: the thing from the scenario.")
    page.locator("#send").click()
    wait_status(page, "Turn 2", 60)
    runs = [r for r in services.reader.runs() if r["kind"] == "live"]
    (run,) = runs
    tasks = [i["task_id"] for i in services.reader.interactions(run["id"])]
    assert tasks[0].startswith("live-") and not tasks[1].startswith("live-")
    question = services.reader.interactions(run["id"])[1]["question"]
    assert question.strip()[:40] in scenario


def test_an_empty_message_is_refused_on_the_page(page):
    page, _ = page
    field(page, "message").fill("   ")
    page.locator("#send").click()
    assert "empty" in wait_status(page, "⚠️", 30)
