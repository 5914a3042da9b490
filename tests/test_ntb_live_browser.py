"""The NoisyToolBench tab in a real headless Chromium, with fake chat models (fast): a person
opens the tab, starts a case, sees the noisy instruction and, privately, what they meant,
answers the agent's question, sees the API call and its observation, and sees the scores;
bad input is refused on the page, and a reload finds the session again. The real-model flow is tests/integration/test_embedded_ntb_live.py."""
import re

import pytest

from harness.config import load_config
from harness.live.services import AppServices
from tests.fakes import ScriptedChatModel, default_responder
from tests.integration.test_live_app_browser import CHROMIUM, CHROMIUM_ARGS, field, wait_status
from tests.test_ntb_live import CALL, CASE, date_agent
from tests.test_ntb_loop import judge_approves
from ui.app import launch


def wait_ntb_status(page, text: str, timeout_s: float = 60):
    return wait_status(page, text, timeout_s, elem_id="ntb-status")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from pathlib import Path
    from playwright.sync_api import sync_playwright
    if not Path(CHROMIUM).exists():
        pytest.fail("browser tests need Debian's chromium: run scripts/system-deps.sh")
    cfg = load_config(overrides={"store": str(tmp_path_factory.mktemp("ntb") / "s.sqlite"),
                                 "app": {"port": 0}, "ntb": {"api_simulator": False}})
    others = default_responder(solve_at=None)
    responders = {"agent": date_agent(), "judge": judge_approves}

    def factory(role, spec):
        return ScriptedChatModel(responder=responders.get(role) or others(role), prompts=[])
    services = AppServices(cfg, chat_models=factory, organiser_secret="x")
    demo, url = launch(services)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(url, wait_until="domcontentloaded")
        page.get_by_role("tab", name="NoisyToolBench").click(timeout=60_000)
        field(page, "ntb-case").wait_for(timeout=60_000)
        yield page, services
        browser.close()
    demo.close()
    services.close()


def test_a_person_answers_the_agent_sees_the_api_call_and_the_scores(page):
    page, services = page
    field(page, "ntb-case").fill("IMKI/2")
    page.locator("#ntb-start").click()
    wait_ntb_status(page, "the agent asks you a question")
    assert CASE.query[:60] in page.locator("#ntb-instruction").inner_text()
    private = page.locator("#ntb-private").inner_text()
    assert "Private" in private and CASE.clarification in private
    assert CASE.question_to_ask in page.locator("#ntb-chat").inner_text()
    field(page, "ntb-answer").fill("I mean the chart of 2022-07-20.")
    page.locator("#ntb-send").click()
    wait_ntb_status(page, "Session ended: the agent gave its final answer")
    chat = page.locator("#ntb-chat").inner_text()
    assert "I mean the chart of 2022-07-20." in chat
    assert "API call" in chat and CALL in chat and "Observation" in chat and "recorded" in chat
    assert "Final answer" in chat
    scores = re.sub(r"\s+", " ", page.locator("#ntb-scores").inner_text())
    assert "A1 A2 A3 Re Steps 1 1 1 0 3" in scores
    assert "ntb-judge-p1" in scores and "ntb-1.2" in scores
    (run,) = [r for r in services.reader.runs() if r["kind"] == "live_noisytoolbench"]
    (row,) = services.reader.scores(run["id"], "noisytoolbench")
    assert row["figures"]["case"] == "IMKI/2" and row["figures"]["A2"] == 1
    (interaction,) = services.reader.interactions(run["id"])
    steps = services.reader.turns(interaction["id"])
    assert steps[0]["user_message"] == "I mean the chart of 2022-07-20."


def test_bad_input_is_refused_on_the_page(page):
    page, _ = page
    # the session above has ended: an answer is refused, and says how to go on
    field(page, "ntb-answer").fill("one more thing")
    page.locator("#ntb-send").click()
    assert "Start a new case" in wait_ntb_status(page, "already ended")
    field(page, "ntb-case").fill("IMKI/99")
    page.locator("#ntb-start").click()
    assert "e.g. IMKI/3" in wait_ntb_status(page, "Unknown NoisyToolBench case")
    field(page, "ntb-case").fill("imki/2")
    page.locator("#ntb-start").click()
    wait_ntb_status(page, "the agent asks you a question")
    field(page, "ntb-answer").fill("   ")
    page.locator("#ntb-send").click()
    wait_ntb_status(page, "answer is empty")
    # a reload finds the session again: the browser keeps only its token
    page.reload(wait_until="domcontentloaded")
    page.get_by_role("tab", name="NoisyToolBench").click(timeout=60_000)
    wait_ntb_status(page, "the agent asks you a question")
    assert CASE.question_to_ask in page.locator("#ntb-chat").inner_text()
    assert CASE.clarification in page.locator("#ntb-private").inner_text()
    page.locator("#ntb-end").click()
    wait_ntb_status(page, "Session ended: you ended it")
