"""`python app.py` exactly as the README starts it: a subprocess on the embedded model, no
fakes, its printed address opened in a real headless Chromium, a 2-turn conversation typed in,
both replies seen; SIGTERM then stops the app and its engine. Slow; skip with -m 'not integration'.

The app starts the engine in a warm-up thread. Before the engine spawned its servers from a
long-lived thread, the server died with that thread (PR_SET_PDEATHSIG) and the page answered
"The model did not answer ... is down"; building the app in-process never called warm-up.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.integration.test_embedded_batch import alive, children_of
from tests.integration.test_live_app_browser import CHROMIUM, CHROMIUM_ARGS, field, wait_status

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"


def plain(text: str) -> str:
    """Text without Markdown marks, one space between words (as the page shows it)."""
    return " ".join(re.sub(r"[*_`#>]", "", text or "").split())


@pytest.fixture
def app_process(tmp_path):
    """`python app.py` started from a working directory of its own (its store goes to
    runs/deskbench.sqlite there), its printed lines collected as they come."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(REPO / "app.py")], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    yield proc, lines, started, tmp_path
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "app-subprocess-output.txt").write_text("".join(lines))


def test_python_app_py_answers_two_messages_in_a_browser_and_stops_on_sigterm(app_process):
    from playwright.sync_api import sync_playwright

    proc, lines, started, cwd = app_process
    deadline = time.monotonic() + 300
    url = None
    while url is None and time.monotonic() < deadline and proc.poll() is None:
        m = re.search(r"deskbench live app: (http://\S+)", "".join(lines))
        url = m.group(1) if m else None
        time.sleep(0.2)
    assert url, f"no address printed (exit {proc.poll()}):\n{''.join(lines)}"
    assert url.startswith("http://127.0.0.1:7860")  # the README's address
    assert "organiser secret" in "".join(lines)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 1200})
        page.goto(url, wait_until="domcontentloaded")
        field(page, "message").wait_for(timeout=60_000)
        field(page, "message").fill("My printer is offline since this morning.")
        page.locator("#send").click()
        wait_status(page, "Turn 2 of")
        first_reply_s = time.monotonic() - started
        time.sleep(3)  # the warm engine, had it died with the warm-up thread, is gone by now
        field(page, "message").fill("It is an HP LaserJet on the office network. Windows 11.")
        page.locator("#send").click()
        warm_started = time.monotonic()
        wait_status(page, "Turn 3 of")
        second_reply_s = time.monotonic() - warm_started
        chat = page.locator("#chat").inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "app_subprocess_chat.png"), full_page=True)
        browser.close()
    print(f"python app.py: first reply {first_reply_s:.1f} s after start (cold), "
          f"second reply {second_reply_s:.1f} s after Send (warm)")
    assert "did not answer" not in chat and "is down" not in chat, chat
    assert "printer is offline" in chat and "HP LaserJet" in chat
    store = cwd / "runs" / "deskbench.sqlite"

    engines = children_of(proc.pid)
    assert engines, "the app has no engine process"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    deadline = time.monotonic() + 15
    while any(alive(pid) for pid in engines) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in engines), "the engine outlived the app"

    from store import StoreReader
    reader = StoreReader(store)
    (run,) = [r for r in reader.runs() if r["kind"] == "live"]
    (interaction,) = reader.interactions(run["id"])
    turns = reader.turns(interaction["id"])
    assert [t["turn_index"] for t in turns] == [1, 2]
    shown = plain(chat)
    for t in turns:  # both replies were stored, and shown on the page
        reply = plain(t["agent_message"])
        assert len(reply) > 20 and " ".join(reply.split()[:5]) in shown, (reply, chat)
    # the replies streamed: each agent call records its time to the first token
    agent_calls = [c for c in reader.db.query(
        "SELECT ttft_ms, latency_ms FROM llm_calls WHERE interaction_id=? AND role='agent' AND error IS NULL",
        (interaction["id"],))]
    assert len(agent_calls) >= 2 and all(c["ttft_ms"] and 0 < c["ttft_ms"] < c["latency_ms"] for c in agent_calls)
    print("time to first token (ms):", [round(c["ttft_ms"]) for c in agent_calls])


def test_deskbench_app_serves_the_same_app_on_the_embedded_model(tmp_path):
    """`deskbench app`, the installed package's way to start the app: the same start-up path on
    the embedded model, one message answered through the named API, stored, SIGTERM stops it."""
    from gradio_client import Client

    from tests.test_app_entry_points import start_app

    deskbench = str(Path(sys.executable).with_name("deskbench"))
    proc, lines, url = start_app([deskbench, "app", "--port", "0"], tmp_path, timeout_s=300)
    try:
        assert "organiser secret" in "".join(lines)
        client = Client(url, verbose=False)
        view = client.predict("My printer is offline since this morning.", "plain", api_name="/live_start")
        assert "error" not in view, view
        view = client.predict(view["session"], "My printer is offline since this morning. It is an HP LaserJet.",
                              api_name="/live_send")
        assert "error" not in view, view
        replies = [m["content"] for m in view["messages"] if m["role"] == "agent"]
        assert replies and len(replies[0]) > 20, view
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    from store import StoreReader
    reader = StoreReader(tmp_path / "runs" / "deskbench.sqlite")
    (run,) = [r for r in reader.runs() if r["kind"] == "live"]
    (interaction,) = reader.interactions(run["id"])
    assert reader.turns(interaction["id"])[0]["agent_message"] == replies[0]
