"""The live app end to end in a real headless Chromium (Debian's, driven by Playwright), on the
real embedded model. Slow; skip with -m 'not integration'.

A participant joins a study with a code, accepts consent, chats three turns, rates the last
reply, reloads the page (the session survives), and ends; the store then holds the turns, the
LLM judgments and the human ones. Also: a person answering as the agent, and the organiser
pages refusing access without the secret. A screenshot of the chat page is saved under
``test-artifacts/``.
"""
import shutil
from pathlib import Path

import pytest

from harness.config import load_config
from harness.live.services import AppServices
from harness.live.studies import StudySpec
from ui.app import launch

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SECRET = "organiser-secret-for-tests"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.fail("browser tests need Debian's chromium: run scripts/system-deps.sh "
                    "(or apt-get install chromium)")
    tmp = tmp_path_factory.mktemp("live")
    # Three turns must happen even if the solved-check fires early: the conversation goes on.
    cfg = load_config(overrides={
        "store": str(tmp / "live.sqlite"), "run": {"stop_on_solved": False},
        "roles": {"agent": {"max_tokens": 120}, "user": {"max_tokens": 60}},
        "app": {"port": 0, "max_turns": 4}})
    services = AppServices(cfg, organiser_secret=SECRET)
    demo, url = launch(services)
    yield services, url
    demo.close()
    services.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def wait_status(page, text: str, timeout_s: float = 600, elem_id: str = "status"):
    """Wait until the status line (the element ``#elem_id``) says ``text`` (a turn on the
    embedded 1.5B model takes 20-40 s on 2 idle cores, minutes when the machine is busy)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try:
        page.wait_for_function(
            "([id, t]) => { const s = document.getElementById(id); return s && s.innerText.includes(t); }",
            arg=[elem_id, text], timeout=timeout_s * 1000)
    except PlaywrightTimeout:
        pytest.fail(f"waited {timeout_s} s for status {text!r}; it says "
                    f"{page.locator('#' + elem_id).inner_text()!r}")
    return page.locator("#" + elem_id).inner_text()


def field(page, elem_id: str):
    """The text field of a Gradio Textbox (an input or a textarea, depending on its options)."""
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first


def send(page, text: str, expect: str):
    field(page, "message").fill(text)
    page.locator("#send").click()
    return wait_status(page, expect)


def test_participant_joins_chats_rates_reloads_and_ends(app, browser):
    services, url = app
    study_id = services.studies.create(StudySpec(name="Browser study", task_limit=2, max_sessions=1))
    page = browser.new_page(viewport={"width": 1100, "height": 1400})
    page.goto(f"{url}?study={study_id}", wait_until="domcontentloaded")
    field(page, "participant-code").wait_for(timeout=60_000)
    assert "Browser study" in page.content()
    field(page, "participant-code").fill("tester-0001")
    page.locator("#join").click()
    assert "consent" in wait_status(page, "consent", 30).lower()  # refused until they agree
    page.locator("#consent-agree input").check()
    page.locator("#join").click()
    wait_status(page, "Turn 1 of 4")
    assert "Your scenario" in page.locator("#scenario").inner_text()
    send(page, "Hi, I am not sure whether every site with https in the address can be trusted.",
         "Turn 2 of 4")
    send(page, "What exactly should I check in the browser to see who owns the site?", "Turn 3 of 4")
    send(page, "I clicked the padlock and it shows the certificate. What next?", "Turn 4 of 4")
    chat_text = page.locator("#chat").inner_text()
    assert "padlock" in chat_text
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "live_chat.png"), full_page=True)

    page.locator("#helpfulness input[type=number]").fill("7")
    page.locator("#helpfulness input[type=number]").press("Enter")
    page.locator("#solved label").nth(1).click()  # not solved yet
    page.locator("#rate").click()
    wait_status(page, "rating of reply 3 is saved", 30)

    page.reload(wait_until="domcontentloaded")  # the session survives a reload
    wait_status(page, "Turn 4 of 4", 60)
    assert "padlock" in page.locator("#chat").inner_text()
    page.locator("#end").click()
    wait_status(page, "Conversation ended", 60)

    store = services.live.store
    (session,) = store.sessions_of_study(study_id)
    assert session["status"] == "ended" and session["participant_id"].startswith("p-")
    assert "tester" not in str(session)
    turns = services.reader.turns(session["interaction_id"])
    assert [t["turn_index"] for t in turns] == [1, 2, 3]
    assert all(t["agent_message"] and t["agent_helpfulness"] is not None for t in turns)
    kinds = [j["kind"] for j in store.judgments(session["interaction_id"])]
    assert kinds.count("agent_helpfulness") == 3 and kinds.count("solved") == 3
    human = store.human_judgments(session["interaction_id"])
    assert {(j["kind"], j["turn_index"], j["score"]) for j in human} == {
        ("human_agent_helpfulness", 3, 7), ("human_solved", 3, 0)}
    assert services.reader.scores(session["run_id"])  # scored like a batch interaction


def test_person_answers_as_the_agent(app, browser):
    services, url = app
    page = browser.new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#mode label").nth(1).wait_for(timeout=60_000)
    page.locator("#mode label").nth(1).click()  # I answer (I am the help-desk agent)
    page.locator("#start").click()
    wait_status(page, "answer the caller")
    first = page.locator("#chat").inner_text()
    assert len(first.strip()) > 20  # the simulated caller's question
    send(page, "Please tell me which operating system and browser you use, and paste the exact "
               "error message you see.", "Turn 2 of 4")
    page.locator("#end").click()
    wait_status(page, "Conversation ended", 60)
    runs = [r for r in services.reader.runs() if r["kind"] == "live_human_agent"]
    assert len(runs) == 1
    (interaction,) = services.reader.interactions(runs[0]["id"])
    (turn,) = services.reader.turns(interaction["id"])
    assert turn["agent_message"].startswith("Please tell me which operating system")
    assert turn["agent_helpfulness"] is not None


def test_organiser_pages_need_the_secret(app, browser):
    services, url = app
    services.live.open(mode="user", question="A run to list: my screen is blank.")  # no model call
    page = browser.new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.get_by_role("tab", name="Organiser").click()
    page.locator("#show-runs").click()
    page.wait_for_function("document.querySelector('#organiser-status').innerText.includes('secret')",
                           timeout=30_000)
    assert "live-" not in page.locator("#runs").inner_text()
    field(page, "organiser-secret").fill("wrong")
    page.locator("#show-runs").click()
    page.wait_for_timeout(1500)
    assert "live-" not in page.locator("#runs").inner_text()
    field(page, "organiser-secret").fill(SECRET)
    page.locator("#show-runs").click()
    page.wait_for_function("document.querySelector('#runs').innerText.includes('live-')",
                           timeout=30_000)
    # with the secret, an organiser creates a study and gets its link
    page.get_by_text("Create a study").click()
    page.get_by_label("Name", exact=True).fill("Organiser made")
    page.get_by_role("button", name="Create study").click()
    page.wait_for_function("document.querySelector('#organiser-status').innerText.includes('?study=')",
                           timeout=30_000)
    link = page.locator("#organiser-status").inner_text().split("join at ")[-1].strip()
    assert link.startswith(url.rstrip("/")) and any(
        s["name"] == "Organiser made" and link.endswith(s["id"]) for s in services.live.store.studies())
