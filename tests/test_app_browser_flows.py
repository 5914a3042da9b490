"""The live app's page flows in a real headless Chromium, with fake chat models (fast): a free
session on one's own problem, then on a drawn task. The real-model flows (studies, ratings,
answering as the agent, organiser pages) are in tests/integration/test_live_app_browser.py."""
import pytest

from harness.config import load_config
from harness.live.services import AppServices
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
    assert " ".join(question.split())[:40] in " ".join(scenario.split())  # the page collapses runs of spaces


def test_an_empty_message_is_refused_on_the_page(page):
    page, _ = page
    field(page, "message").fill("   ")
    page.locator("#send").click()
    assert "empty" in wait_status(page, "⚠️", 30)


def test_a_spoken_message_is_answered_aloud_and_its_voice_rated_on_the_page(page):
    from tests.test_app_api import FIXTURES
    page, services = page
    page.locator("#start").click()  # a new free session: the first message will be spoken
    wait_status(page, "Type your first message", 30)
    mic = page.locator("#mic")
    mic.get_by_role("button", name="Upload file").click(timeout=30_000)  # no microphone here
    # a WAV: Playwright labels .webm as video/webm, which the audio input's file filter refuses
    # (a recording made in the browser is sent as audio/webm; the API tests upload one)
    mic.locator("input[type=file]").set_input_files(str(FIXTURES / "restart-printer.wav"))
    mic.locator("[data-testid^=audio-player]").wait_for(state="attached", timeout=30_000)  # uploaded
    page.locator("#send-voice").click()
    wait_status(page, "Turn 2", 120)
    assert "restart the printer" in page.locator("#chat").inner_text().lower()
    page.locator("#voice-rating").wait_for(state="visible", timeout=30_000)
    page.locator("#naturalness").get_by_text("4 good").click()
    page.locator("#comprehensibility").get_by_text("5 excellent").click()
    page.locator("#rate").click()
    wait_status(page, "rating of reply 1 is saved", 30)
    (run,) = [r for r in services.reader.runs() if r["kind"] == "live"]
    last = services.reader.interactions(run["id"])[-1]
    kinds = {j["kind"]: j["score"] for j in services.live.store.human_judgments(last["id"])}
    assert kinds["human_tts_naturalness"] == 4 and kinds["human_tts_comprehensibility"] == 5


def test_the_rating_widgets_start_afresh_for_each_new_reply(page):
    page, services = page
    page.locator("#start").click()  # a new free session
    wait_status(page, "Type your first message", 30)
    field(page, "message").fill("My scanner is not detected.")
    page.locator("#send").click()
    wait_status(page, "Turn 2", 60)
    page.locator("#helpfulness input[type=number]").fill("9")
    page.locator("#helpfulness input[type=number]").press("Enter")
    page.locator("#solved label").nth(0).click()  # solved
    page.locator("#rate").click()
    wait_status(page, "rating of reply 1 is saved", 30)
    assert page.locator("#helpfulness input[type=number]").input_value() == "9"  # kept once saved
    field(page, "message").fill("It is still not detected.")
    page.locator("#send").click()
    wait_status(page, "Turn 3", 60)
    # the new reply's rating starts from the defaults, not from reply 1's values
    assert page.locator("#helpfulness input[type=number]").input_value() == "5"
    assert page.locator("#solved input:checked").count() == 0
    page.locator("#rate").click()
    wait_status(page, "rating of reply 2 is saved", 30)
    (run,) = [r for r in services.reader.runs() if r["kind"] == "live"]
    last = services.reader.interactions(run["id"])[-1]
    human = services.live.store.human_judgments(last["id"])
    assert {(j["kind"], j["turn_index"], j["score"]) for j in human} == {
        ("human_agent_helpfulness", 1, 9), ("human_solved", 1, 1), ("human_agent_helpfulness", 2, 5)}


def test_a_closed_study_says_so_and_refuses_a_new_code(page, tasks_file):
    from harness.live.studies import StudySpec
    page, services = page
    sid = services.studies.create(StudySpec(name="Closed study", dataset=str(tasks_file), task_limit=2))
    services.studies.close(sid)
    other = page.context.browser.new_context().new_page()  # its own local storage
    try:
        other.goto(f"{page.url.split('?')[0]}?study={sid}", wait_until="domcontentloaded")
        field(other, "participant-code").wait_for(timeout=60_000)
        other.wait_for_function("document.body.innerText.includes('closed to new participants')",
                                timeout=30_000)
        field(other, "participant-code").fill("newcomer-01")
        other.locator("#consent-agree input").check()
        other.locator("#join").click()
        assert "closed to new participants" in wait_status(other, "⚠️", 30)
        assert services.live.store.sessions_of_study(sid) == []
    finally:
        other.context.close()
