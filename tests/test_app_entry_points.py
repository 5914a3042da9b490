"""The live app's two entry points, ``python app.py`` (a clone) and ``deskbench app`` (an installed
package), started as a user starts them: subprocesses with every role on a fake OpenAI-compatible
endpoint. Both print the address, hold a conversation through the named API, store it and stop
on SIGTERM with status 0; they share one parser and one start-up path (``ui.serve``)."""
from __future__ import annotations

import argparse
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from gradio_client import Client

import app
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_cli import role_flags
from ui.commands import build_parser

REPO = Path(__file__).resolve().parents[1]
DESKBENCH = str(Path(sys.executable).with_name("deskbench"))
ENTRY_POINTS = {"python app.py": [sys.executable, str(REPO / "app.py")], "deskbench app": [DESKBENCH, "app"]}


def options(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    return {a.option_strings[-1]: a.help for a in parser._actions
            if a.option_strings and not isinstance(a, argparse._HelpAction)}


def test_deskbench_app_has_exactly_the_options_of_app_py():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert options(sub.choices["app"]) == options(app.build_parser())
    assert {"--host", "--port", "--kb", "--show-judge-scores", "--store", "--role"} <= set(options(app.build_parser()))


def start_app(cmd: list[str], cwd: Path, env: dict | None = None,
              timeout_s: float = 180) -> tuple[subprocess.Popen, list[str], str]:
    """Start the live app as ``cmd`` (a user's command line); its process, the lines it printed
    (collected as they come) and the address it printed once it serves. The caller stops it."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    deadline, url = time.monotonic() + timeout_s, None
    while url is None and time.monotonic() < deadline and proc.poll() is None:
        m = re.search(r"deskbench live app: (http://\S+)", "".join(lines))
        url = m.group(1) if m else None
        time.sleep(0.1)
    if url is None:
        proc.kill()
        proc.wait(timeout=30)
        raise AssertionError(f"{' '.join(cmd[:2])} printed no address (exit {proc.poll()}):\n{''.join(lines)}")
    return proc, lines, url


def stop_app(proc: subprocess.Popen, lines: list[str]) -> None:
    """Stop the app with SIGTERM, as a service manager does: it must exit 0 within a minute
    (killed otherwise, and the test fails)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
            raise AssertionError("the app did not stop within 60 s of SIGTERM:\n" + "".join(lines))
        assert code == 0, "".join(lines)


@pytest.fixture(scope="module")
def endpoint():
    with FakeOpenAIServer(default_responder(solve_at=None)) as server:
        yield server.base_url


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_entry_point_serves_a_conversation_and_stops_on_sigterm(entry, endpoint, tmp_path):
    store = tmp_path / "study.sqlite"
    proc, lines, url = start_app([*ENTRY_POINTS[entry], "--port", "0", "--store", str(store), *role_flags(endpoint)],
                                 tmp_path, env={**os.environ, "DESKBENCH_ORGANISER_SECRET": "s3cret"})
    try:
        assert f"store: {store}" in "".join(lines)
        client = Client(url, verbose=False)
        view = client.predict("My printer is offline since this morning.", "plain", api_name="/live_start")
        assert "error" not in view, view
        view = client.predict(view["session"], "It is an HP LaserJet on Windows 11.", api_name="/live_send")
        assert "error" not in view, view
        agent_replies = [m["content"] for m in view["messages"] if m["role"] == "agent"]
        assert agent_replies and all(agent_replies)
    finally:
        stop_app(proc, lines)
    rows = sqlite3.connect(store).execute("select user_message, agent_message from turns").fetchall()
    assert any("HP LaserJet" in (u or "") for u, _ in rows), rows


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_entry_point_on_a_port_in_use_names_the_fix(entry, endpoint, tmp_path):
    import socket
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = subprocess.run([*ENTRY_POINTS[entry], "--port", str(port), "--store", str(tmp_path / "s.sqlite"),
                               *role_flags(endpoint)], cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr


def test_the_deskbench_script_starts_without_gradio():
    """Every command but ``app`` starts without importing Gradio and the live services (seconds
    of imports: ``deskbench --help`` took 6 s with them, 1 s without)."""
    done = subprocess.run([sys.executable, "-c", "import sys, ui.commands; ui.commands.build_parser(); "
                           "print(sorted(m for m in ('gradio', 'harness.live.services', 'ui.app') if m in sys.modules))"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_python_app_py_with_the_teams_http_agent_serves_a_conversation_with_its_trace(endpoint, tmp_path):
    """``python app.py --agent http --agent-url URL`` as the README gives it: people chat with the
    team's agent (a real HTTP agent), the judges on the fake endpoint; the turn keeps its trace."""
    import json
    from tests.agent_server import ScriptedAgent, serve
    store = tmp_path / "study.sqlite"
    bot = ScriptedAgent()
    with serve(bot) as agent_url:
        proc, lines, url = start_app([*ENTRY_POINTS["python app.py"], "--port", "0", "--store", str(store),
                                      "--agent", "http", "--agent-url", agent_url, *role_flags(endpoint)],
                                     tmp_path, env={**os.environ, "DESKBENCH_ORGANISER_SECRET": "s3cret"})
        try:
            client = Client(url, verbose=False)
            view = client.predict("My printer is offline since this morning.", "http", api_name="/live_start")
            assert "error" not in view, view
            # the question starts the session (not yet sent); the person's messages go to the agent
            view = client.predict(view["session"], "My HP LaserJet is offline.", api_name="/live_send")
            view = client.predict(view["session"], "It is on Windows 11.", api_name="/live_send")
            assert "error" not in view, view
            replies = [m["content"] for m in view["messages"] if m["role"] == "agent"]
            assert replies == ["echo 1: My HP LaserJet is offline.", "echo 2: It is on Windows 11."]
        finally:
            stop_app(proc, lines)
    assert bot.requests[-1]["turn"] == 2 and [m["role"] for m in bot.requests[-1]["messages"]] == [
        "user", "assistant", "user"]
    rows = sqlite3.connect(store).execute("select extra_json from turns order by turn_index").fetchall()
    agent = json.loads(rows[-1][0])["agent"]
    assert agent["adapter"] == "http" and agent["trace"]["tool_calls"][0]["name"] == "kb"
