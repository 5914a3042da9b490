"""A team's voice bot called for real: the reference bot of examples/voice_bot (energy
endpointing, Whisper, the embedded model as its agent, piper; both protocols on one server) started
as the README starts it, and `deskbench call simulate --agent twilio-ws|realtime-ws` run as the
README gives it (one call of one turn; an interrupting caller on the Twilio line, so a
barge-in is likely), dialling it over a real websocket in real time. Checked: what the
user sees (exit status, the report's "Voice bot at the caller"), what the store keeps (the bot's
words as heard, its transcript and the WER against the harness's STT on Realtime, the caller's
waits, both channels' audio). The conversations are written to the test artifacts.

Two embedded llama.cpp servers, as a new user would run them: the bot's (it starts its own) and
deskbench's (its caller and judges). Slow (minutes); skip with -m 'not integration'."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import wave
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from harness.models.engine import free_port
from harness.voice.duplex import call_audio_ref
from store import StoreReader

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
DESKBENCH = str(Path(sys.executable).with_name("deskbench"))
ARTIFACTS = Path(os.environ.get("DESKBENCH_TEST_ARTIFACTS", "test-artifacts"))


@pytest.fixture(scope="module")
def bot_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m examples.voice_bot --port N`` as the README starts it (the bot starts the
    embedded model itself), until ``GET /`` answers."""
    port = free_port()
    log = tmp_path_factory.mktemp("voice-bot") / "bot.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "examples.voice_bot", "--port", str(port)], cwd=REPO,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"the voice bot exited {proc.returncode}:\n{log.read_text()[-3000:]}"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail(f"the voice bot did not answer GET / in 300 s:\n{log.read_text()[-3000:]}")
        yield f"ws://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "voice_bot.log").write_text(log.read_text())
        assert "starting deskbench's embedded model" in log.read_text()


def readme_line(kind: str) -> list[str]:
    """The README's ``deskbench call simulate --agent KIND ...`` line, as written."""
    readme = (REPO / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if f"call simulate --agent {kind}" in ln)
    return line.split("#")[0].split()[1:]   # without .venv/bin/deskbench and the comment


def simulate(tmp_path: Path, kind: str, bot: str) -> tuple[str, StoreReader]:
    """The README's line for ``kind`` with the bot's port, run from a fresh folder (its store is
    ``runs/deskbench.sqlite`` there, as a new user's)."""
    cmd = [DESKBENCH, *(a.replace("ws://127.0.0.1:8765", bot) for a in readme_line(kind))]
    assert f"{bot}/{kind.split('-')[0]}" in cmd, cmd
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, cwd=tmp_path)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert "### Voice bot at the caller" in proc.stdout, proc.stdout[-3000:]
    return proc.stdout, StoreReader(tmp_path / "runs" / "deskbench.sqlite")


def heard_turns(store_dir: Path, reader: StoreReader, kind: str) -> list[dict]:
    """The call's turns, checked; written to the test artifacts as heard."""
    (run,) = reader.runs()
    (call,) = reader.interactions(run["id"])
    assert call["status"] == "completed" and call["stop_reason"] in ("solved", "max_turns"), call
    out = []
    for t in reader.turns(call["id"]):
        extra = json.loads(t["extra_json"])
        voice = extra["agent"]["voice"]
        assert extra["agent"]["adapter"] == kind and voice["outcome"] == "reply", voice
        assert t["agent_message"].strip() and voice["heard_text"].strip(), voice
        # a wait, or (after a barge-in, the bot answering the opener) speech begun before the caller finished
        assert (voice["wait_ms"] or 0) > 0 or voice.get("spoke_early_ms"), voice
        assert voice["bot_speech_s"] > 0.5, voice
        assert (store_dir / voice["audio"]).exists() and (store_dir / extra["user"]["voice"]["audio"]).exists()
        out.append({"turn": t["turn_index"], "caller said": t["user_message"], "bot said": t["agent_message"],
                    "harness heard": voice["heard_text"], "wait_ms": voice["wait_ms"],
                    "spoke_early_ms": voice.get("spoke_early_ms"),
                    "bot_speech_s": voice["bot_speech_s"], "gaps": voice["gaps"], "talk_over_s": voice["talk_over_s"],
                    "barge_in": voice.get("barge_in"), "transcript_wer": voice.get("transcript_wer"),
                    "agent_helpfulness": t["agent_helpfulness"], "solved": t["solved"]})
    with wave.open(str(store_dir / call_audio_ref(run["id"], call["id"]))) as w:
        assert w.getnchannels() == 2 and w.getnframes() / w.getframerate() > 3.0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"voice_bot_{kind}.json").write_text(json.dumps(
        {"run": run["name"], "task": call["task_id"], "stop_reason": call["stop_reason"], "turns": out},
        indent=2, ensure_ascii=False))
    return out


def test_a_call_through_twilio_media_streams(tmp_path, bot_url):
    printed, reader = simulate(tmp_path, "twilio-ws", bot_url)
    turns = heard_turns(tmp_path / "runs", reader, "twilio-ws")
    assert all(t["transcript_wer"] is None for t in turns)   # Twilio carries no transcript
    for t in turns:
        if t["barge_in"]:   # the README's caller interrupts: the yield is measured
            assert t["barge_in"]["yield_ms"] is not None and t["barge_in"]["by"] in ("clear", "audio_end")


def test_a_call_through_the_realtime_protocol(tmp_path, bot_url):
    printed, reader = simulate(tmp_path, "realtime-ws", bot_url)
    turns = heard_turns(tmp_path / "runs", reader, "realtime-ws")
    # the judged words are the bot's own transcript; the harness's STT of its audio is compared
    assert all(t["transcript_wer"] is not None for t in turns)
    assert "The bot's own transcript against what the harness's STT heard" in printed
