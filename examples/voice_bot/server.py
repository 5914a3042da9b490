"""The bot's server: one websockets server for both protocols, the command line, and a way to run
it in a background thread (tests).

Paths: ``/twilio`` (Twilio Media Streams, :mod:`.twilio`), ``/realtime`` and ``/v1/realtime``
(OpenAI Realtime, :mod:`.realtime`). A plain HTTP ``GET /`` answers 200 ``ok`` (readiness: sent
only once Whisper and piper are loaded); any other path 404, and a protocol path without a
websocket upgrade 426. Each connection is one call with its own state; the models are loaded once
per process and shared.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading
from http import HTTPStatus
from typing import Callable, Sequence
from urllib.parse import urlsplit

from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

from examples.voice_bot.agent import AgentError, LlmAgent, ScriptedAgent
from examples.voice_bot.faults import FAULT_MODES, FaultPlan
from examples.voice_bot.pipeline import BotOptions, Services
from examples.voice_bot.realtime import RealtimeCall
from examples.voice_bot.twilio import TwilioCall

ROUTES = {"/twilio": TwilioCall, "/realtime": RealtimeCall, "/v1/realtime": RealtimeCall}
DEFAULT_PORT = 8765
NAME = "voice-bot"


class SetupError(RuntimeError):
    """The bot cannot start (a bad script, an unreachable model, no speech engine): one line."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The bot's options."""
    p = argparse.ArgumentParser(prog="python -m examples.voice_bot",
                                description="A reference phone bot: Twilio Media Streams on /twilio and the "
                                            "OpenAI Realtime API on /realtime, on one websocket server.")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free port)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--script", metavar="FILE", help="a JSON list of replies, said in order each call "
                                                      "(the last one repeats)")
    who.add_argument("--llm-url", metavar="URL", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 "
                                                       "(default, with no --script: deskbench's embedded model, "
                                                       "started by the bot)")
    p.add_argument("--model", help="the model's name (default: the first GET {llm-url}/models lists)")
    p.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "none"),
                   help="the endpoint's API key (default $OPENAI_API_KEY)")
    p.add_argument("--max-tokens", type=int, default=90, help="bound on each reply's tokens (default 90: about 20 s of speech, a phone-length answer)")
    p.add_argument("--max-sentences", type=int, default=4,
                   help="say at most this many sentences a reply; the rest is not generated (default 4; 0: no limit)")
    p.add_argument("--greeting", help="said as soon as a call starts (default: none; the caller speaks first)")
    p.add_argument("--end-silence-ms", type=int, default=600,
                   help="quiet that ends the caller's utterance (default 600; Realtime's silence_duration_ms "
                        "overrides it per call)")
    p.add_argument("--barge-in-ms", type=int, default=300,
                   help="caller speech that stops the bot while it talks (default 300)")
    p.add_argument("--fault", choices=FAULT_MODES, help="misbehave on purpose (see examples/voice_bot/README.md)")
    p.add_argument("--fault-turn", type=int, default=1, help="the turn the fault starts at (default 1)")
    args = p.parse_args(argv)
    if args.end_silence_ms < 100 or args.barge_in_ms < 100 or args.fault_turn < 1 or args.max_tokens < 1 \
            or args.max_sentences < 0:
        p.error("--end-silence-ms and --barge-in-ms must be at least 100, --fault-turn and --max-tokens at least 1, "
                "--max-sentences at least 0")
    return args


def build_services(args: argparse.Namespace, log: Callable[[str], None] | None = None) -> Services:
    """The agent (checked first: a bad script or an unreachable model fails fast), then Whisper and
    piper, loaded now so that the first call does not wait for them.

    Raises:
        SetupError: the agent or a speech model cannot be used.
    """
    from harness.voice.stt import Transcriber
    from harness.voice.tts import Speaker, SpeechError
    try:
        agent = (ScriptedAgent.from_file(args.script) if args.script else
                 LlmAgent.connect(args.llm_url, args.model, args.api_key, args.max_tokens))
    except AgentError as exc:
        raise SetupError(str(exc)) from exc
    try:
        speaker = Speaker("piper")
        speaker.speak("Ready.")
        transcriber = Transcriber().load()
    except (SpeechError, OSError, RuntimeError) as exc:
        raise SetupError(f"cannot load the speech models: {exc}") from exc
    options = BotOptions(args.end_silence_ms, args.barge_in_ms, args.greeting, FaultPlan(args.fault, args.fault_turn),
                         args.max_sentences)
    services = Services(transcriber, speaker, agent, options)
    if log is not None:
        services.log = log
    return services


def http_check(connection: ServerConnection, request: Request) -> Response | None:
    """``GET /`` -> 200 ok; unknown paths -> 404; a protocol path without an upgrade -> 426."""
    path = urlsplit(request.path).path
    if path in ROUTES:
        if "websocket" in request.headers.get("Upgrade", "").lower():
            return None
        return connection.respond(HTTPStatus.UPGRADE_REQUIRED, f"{path} is a websocket endpoint\n")
    if path == "/":
        return connection.respond(HTTPStatus.OK, "ok")
    return connection.respond(HTTPStatus.NOT_FOUND, f"no such path {path}; use /twilio or /realtime\n")


async def serve_bot(services: Services, host: str, port: int, stop: asyncio.Future,
                    on_ready: Callable[[int], None] | None = None) -> None:
    """Serve calls until ``stop`` is done; ``on_ready(port)`` once listening."""

    async def handler(connection: ServerConnection) -> None:
        call = ROUTES[urlsplit(connection.request.path).path](connection, services)
        await call.run()

    async with serve(handler, host, port, process_request=http_check, compression=None,
                     max_size=8 * 2**20) as server:
        if on_ready is not None:
            on_ready(server.sockets[0].getsockname()[1])
        await stop


async def _serve_until_signal(services: Services, args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))

    def ready(port: int) -> None:
        base = f"ws://{args.host}:{port}"
        print(f"{NAME}: {services.agent.describe()}; fault: {services.options.fault.describe()}", flush=True)
        print(f"{NAME}: serving {base}/twilio (Twilio Media Streams) and {base}/realtime (OpenAI Realtime)",
              flush=True)

    await serve_bot(services, args.host, args.port, stop, ready)


def start_embedded_model():
    """deskbench's embedded llama.cpp server with its default model (the bot's agent when neither
    ``--script`` nor ``--llm-url`` is given); returns ``(engine, base URL)``.

    Raises:
        SetupError: the model or the server cannot be started.
    """
    from harness.config import DEFAULT_EMBEDDED_MODEL, load_config
    from harness.models.engine import EngineManager
    engine = EngineManager(load_config().engine)
    try:
        return engine, engine.base_url(DEFAULT_EMBEDDED_MODEL)
    except Exception as exc:  # a missing model file, a server that does not start
        engine.close()
        raise SetupError(f"cannot start the embedded model ({exc}); pass --llm-url URL or --script FILE") from exc


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bot until interrupted; returns the exit status (2: it could not start)."""
    args = parse_args(argv)
    engine = None
    try:
        if not args.script and not args.llm_url:
            print(f"{NAME}: starting deskbench's embedded model (pass --llm-url to use another)", flush=True)
            engine, args.llm_url = start_embedded_model()
        services = build_services(args)
        asyncio.run(_serve_until_signal(services, args))
    except SetupError as exc:
        print(f"{NAME}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{NAME}: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    finally:
        if engine is not None:
            engine.close()
    return 0


class BotThread:
    """The bot served from a background thread on a free port (tests, notebooks): the same
    services and server as ``python -m examples.voice_bot``. Use as a context manager."""

    def __init__(self, argv: Sequence[str], log: Callable[[str], None] | None = None):
        self.args = parse_args([*argv, "--port", "0"])
        self.log = log
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Future | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="voice-bot", daemon=True)

    def url(self, path: str) -> str:
        """``ws://127.0.0.1:PORT{path}``."""
        return f"ws://{self.args.host}:{self.port}{path}"

    def __enter__(self) -> "BotThread":
        self.services = build_services(self.args, self.log)
        self._thread.start()
        if not self._ready.wait(30):
            raise SetupError("the bot's server did not start within 30 s")
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(lambda: self._stop.done() or self._stop.set_result(None))
        self._thread.join(30)

    def _run(self) -> None:
        async def go() -> None:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.get_running_loop().create_future()

            def ready(port: int) -> None:
                self.port = port
                self._ready.set()
            await serve_bot(self.services, self.args.host, 0, self._stop, ready)
        asyncio.run(go())
