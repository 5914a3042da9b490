"""The voice bot of a run from the config: ``run.agent`` (``twilio-ws``, ``realtime-ws``) names the
protocol, ``agent.url`` the bot's websocket, ``agent.headers`` the handshake's headers, the
``voice`` section the line, the caller and the waits (docs/voice-bots.md). :func:`check_bot`
dials the bot once before a run stores anything."""
from __future__ import annotations

from harness.adapters import expand_headers
from harness.agent_spec import VOICE_BOT_AGENTS
from harness.config import ConfigError
from harness.voicebots.calls import BotCalls
from harness.voicebots.listen import ListenSettings


def require_bot(config) -> None:
    """``agent.url`` is a websocket address and the run is a voice run.

    Raises:
        ConfigError: naming the fix.
    """
    kind, url = config.run.agent, config.agent.url
    if kind not in VOICE_BOT_AGENTS:
        raise ConfigError(f"run.agent {kind!r} is not a voice bot ({', '.join(VOICE_BOT_AGENTS)}).")
    if not config.voice.enabled:
        raise ConfigError(f"--agent {kind} is a voice bot: call it with `deskbench call simulate --agent "
                                  f"{kind} --agent-url ws://...` (or set [voice] enabled = true).")
    if not url:
        raise ConfigError(f"--agent {kind} needs the bot's address: pass --agent-url ws://HOST:PORT/PATH "
                                  "(or set [agent] url; docs/voice-bots.md).")
    if not url.startswith(("ws://", "wss://")):
        raise ConfigError(f"--agent-url {url}: a voice bot ({kind}) is reached over a websocket; give a "
                                  "ws:// or wss:// address, e.g. ws://localhost:8765/twilio.")
    if config.voice.duplex:
        raise ConfigError(f"--agent {kind} runs in real time against the bot; --duplex is the simulated "
                                  "clock of the harness's own agent. Leave --duplex out (--caller still applies).")


def build_bot_calls(config, link) -> BotCalls:
    """The run's :class:`BotCalls` on the harness's speech ``link``.

    Raises:
        ConfigError: see :func:`require_bot`; a header naming an unset variable.
    """
    from harness.voice.callers import caller_preset
    require_bot(config)
    spec, voice = config.agent, config.voice
    preset = caller_preset(voice.caller)
    settings = ListenSettings(
        first_audio_timeout_s=voice.first_audio_timeout_s, turn_end_s=voice.bot_turn_end_ms / 1000.0,
        barge_after_s=None if preset.max_talk_s is None else preset.max_talk_s + preset.reaction_s)
    return BotCalls(config.run.agent, spec.url, expand_headers(spec.headers), spec.label(config.run.agent), link,
                    settings, preset, voice.turn_detection, voice.seed)


def _handshake(url: str, headers: dict[str, str], timeout_s: float) -> None:
    # the synchronous client: the check runs inside a run's event loop as well as outside one
    from websockets.sync.client import connect
    with connect(url, additional_headers=headers or None, open_timeout=timeout_s):
        pass


def check_bot(config, timeout_s: float = 10.0) -> None:
    """Dial the bot once (a websocket handshake, closed at once) before a run stores anything.

    Raises:
        ConfigError: the bot cannot be reached (refused, bad host, handshake rejected, timeout).
    """
    require_bot(config)
    url = config.agent.url
    try:
        _handshake(url, expand_headers(config.agent.headers), timeout_s)
    except Exception as exc:  # OSError, InvalidStatus, InvalidURI, TimeoutError ...
        raise ConfigError(f"--agent-url {url}: cannot reach the voice bot ({type(exc).__name__}: {exc}). "
                                  "Start it, or fix the URL (host, port, path, ws/wss).") from exc
