"""Engine lifecycle with stand-in server binaries (the real server is in tests/integration)."""
import os
import stat
import sys
import textwrap

import httpx
import pytest

from harness.config import EngineConfig
from harness.models import engine as engine_mod
from harness.models.engine import EmbeddedServer, EngineError, EngineManager, find_server_binary
from harness.models.model_files import ModelFileError, ensure_model


def script(tmp_path, body: str):
    path = tmp_path / "fake-server"
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


HEALTHY = """
import sys, http.server
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"{}")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def fake_model(monkeypatch, tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(engine_mod, "ensure_model", lambda key: model)
    return model


def test_server_starts_healthy_is_shared_and_stops(tmp_path, fake_model):
    cfg = EngineConfig(server_binary=str(script(tmp_path, HEALTHY)), startup_timeout_s=20)
    manager = EngineManager(cfg)
    url = manager.base_url("qwen2.5-coder-1.5b")
    assert url == manager.base_url("qwen2.5-coder-1.5b")  # one server shared by every caller
    server = manager.servers["qwen2.5-coder-1.5b"]
    proc = server.process
    assert httpx.get(url.removesuffix("/v1") + "/health").status_code == 200
    assert "-np" in server.command(cfg.server_binary, fake_model, 1)
    manager.close()
    assert proc.poll() is not None
    with pytest.raises(httpx.HTTPError):
        httpx.get(url.removesuffix("/v1") + "/health", timeout=1)


def test_server_that_dies_at_start_gives_its_log(tmp_path, fake_model):
    bad = script(tmp_path, "import sys\nprint('error: unknown model architecture')\nsys.exit(3)\n")
    with pytest.raises(EngineError, match="exited with code 3(.|\n)*unknown model architecture"):
        EmbeddedServer("qwen2.5-coder-1.5b", EngineConfig(server_binary=str(bad))).start()


def test_server_killed_by_an_illegal_instruction_says_how_to_rebuild(tmp_path, fake_model):
    ill = script(tmp_path, "import os, signal\nprint('loading model')\nos.kill(os.getpid(), signal.SIGILL)\n")
    with pytest.raises(EngineError) as err:
        EmbeddedServer("qwen2.5-coder-1.5b", EngineConfig(server_binary=str(ill))).start()
    text = str(err.value)
    assert "illegal instruction (SIGILL)" in text and "CMAKE_ARGS=-DGGML_NATIVE=OFF" in text
    assert "loading model" in text  # the log's tail


def test_server_that_never_gets_healthy_times_out_and_is_stopped(tmp_path, fake_model):
    hang = script(tmp_path, "import time\ntime.sleep(60)\n")
    server = EmbeddedServer("qwen2.5-coder-1.5b", EngineConfig(server_binary=str(hang), startup_timeout_s=1))
    with pytest.raises(EngineError, match="not healthy after"):
        server.start()
    assert server.process is None


def test_missing_binary_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.delenv("DESKBENCH_LLAMA_SERVER", raising=False)
    monkeypatch.setattr(engine_mod.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(engine_mod.shutil, "which", lambda name: None)
    with pytest.raises(EngineError, match=r"pip install -e '\.\[engine\]'"):
        find_server_binary(str(tmp_path / "nope"))


def test_unknown_or_missing_model_is_a_clear_error(monkeypatch, tmp_path):
    with pytest.raises(ModelFileError, match="Unknown embedded model 'gpt-5'"):
        ensure_model("gpt-5")
    monkeypatch.setenv("DESKBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr("harness.models.model_files.importlib.util.find_spec", lambda name: None)
    with pytest.raises(ModelFileError, match=r"part 1 of 22 is not installed(.|\n)*\.\[model\]"):
        ensure_model("qwen2.5-coder-1.5b")


def test_model_parts_are_assembled_verified_and_cached(monkeypatch, tmp_path):
    import hashlib
    from harness.models import model_files
    for n, payload in ((1, b"hello "), (2, b"world")):
        data = tmp_path / "pkgs" / f"deskbench_fakepart{n}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"part0{n}.bin").write_bytes(payload)
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    monkeypatch.setenv("DESKBENCH_CACHE", str(tmp_path / "cache"))
    good = hashlib.sha256(b"hello world").hexdigest()
    model = model_files.EmbeddedModel("tiny", "t", "deskbench_fakepart{n}", 2, 11, good, "model")
    monkeypatch.setitem(model_files.EMBEDDED_MODELS, "tiny", model)
    path = ensure_model("tiny")
    assert path.read_bytes() == b"hello world"
    mtime = path.stat().st_mtime_ns
    assert ensure_model("tiny").stat().st_mtime_ns == mtime  # reused, not re-assembled
    monkeypatch.setitem(model_files.EMBEDDED_MODELS, "tiny2",
                        model_files.EmbeddedModel("tiny2", "t", "deskbench_fakepart{n}", 2, 11, "0" * 64, "model"))
    with pytest.raises(ModelFileError, match="force-reinstall"):
        ensure_model("tiny2")
    assert not list((tmp_path / "cache").glob("tiny2*"))  # nothing half-written is left


CHAT = HEALTHY.replace('''    def log_message(self, *a): pass''', '''    def do_POST(self):
        import json
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "hello"}}],
                           "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass''')


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url.removesuffix("/v1") + "/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_server_started_from_a_short_lived_thread_outlives_it(tmp_path, fake_model):
    """The live app starts the engine in a warm-up thread; PR_SET_PDEATHSIG is tied to the
    forking thread, so a server forked there got SIGTERM when warm-up ended."""
    import threading
    import time
    manager = EngineManager(EngineConfig(server_binary=str(script(tmp_path, HEALTHY)), startup_timeout_s=20))
    urls = []
    warm_up = threading.Thread(target=lambda: urls.append(manager.base_url("qwen2.5-coder-1.5b")))
    warm_up.start()
    warm_up.join()
    assert not warm_up.is_alive() and urls
    time.sleep(1.0)  # the signal, had it been sent, arrives at once
    try:
        assert manager.servers["qwen2.5-coder-1.5b"].alive and _healthy(urls[0])
        assert manager.restarts == []
    finally:
        manager.close()


def test_a_killed_server_is_restarted_on_its_port_on_the_next_request(tmp_path, fake_model):
    manager = EngineManager(EngineConfig(server_binary=str(script(tmp_path, HEALTHY)), startup_timeout_s=20))
    try:
        url = manager.base_url("qwen2.5-coder-1.5b")
        server = manager.servers["qwen2.5-coder-1.5b"]
        first = server.process
        first.kill()
        first.wait()
        assert not server.alive and not _healthy(url)
        assert manager.base_url("qwen2.5-coder-1.5b") == url  # same port: clients keep their URL
        assert server.alive and server.process is not first and _healthy(url)
        assert [(r["model"], r["exit_code"]) for r in manager.restarts] == [("qwen2.5-coder-1.5b", -9)]
        assert manager.heal("qwen2.5-coder-1.5b") is False  # alive: nothing to do
    finally:
        manager.close()


def test_a_refused_call_heals_the_embedded_server_and_succeeds(tmp_path, fake_model):
    import asyncio
    from langchain_core.messages import HumanMessage
    from harness.config import ModelSpec
    from harness.models.llm import RoleClient, chat_model_for
    manager = EngineManager(EngineConfig(server_binary=str(script(tmp_path, CHAT)), startup_timeout_s=20))
    try:
        key = "qwen2.5-coder-1.5b"
        spec = ModelSpec(model=key)
        client = RoleClient("agent", spec, chat_model_for(spec, manager.base_url(key)),
                            heal=lambda: manager.heal(key))
        manager.servers[key].process.kill()
        manager.servers[key].process.wait()
        msg, call = asyncio.run(client.invoke([HumanMessage("hi")], "agent:reply"))
        assert msg.content == "hello" and call.attempt == 2
        assert "restarted" in call.earlier_attempts[0].error
        assert len(manager.restarts) == 1
    finally:
        manager.close()
