"""``deskbench call ...`` and ``deskbench voice check``: simulated and local voice calls,
their voice report, and a speech round-trip self-test (docs/voice.md)."""
from __future__ import annotations

import argparse
import asyncio

from rich.markup import escape

from harness.cli.agent_options import EXTERNAL_HELP, add_agent_options, agent_overrides
from harness.cli.common import finish_report, progress_printer, add_config_args, build_config, console, out
from harness.cli.defaults import config_options, stated_default
from harness.cli.progress import progress_bar
from harness.cli.run_parser import add_trial_options
from harness.config import EXTERNAL_AGENTS, TEAM_AGENTS, VOICE_BOT_AGENTS

ROUND_TRIP_BOUND = 0.10   # `voice check` fails above this corpus word error rate
CHANNEL_OPTIONS = {"--tts": "voice.tts", "--telephone": "voice.telephone", "--snr": "voice.snr_db",
                   "--line": "voice.line"}
"""The config keys of the channel options of ``call simulate`` (``voice check`` reads no config)."""
SIMULATE_OPTIONS = {**CHANNEL_OPTIONS, "--dataset": "run.dataset", "--limit": "run.limit",
                    "--offset": "run.offset", "--max-turns": "run.max_turns",
                    "--concurrency": "run.concurrency", "--user": "run.user", "--name": "run.name",
                    "--trials": "run.trials", "--persona": "run.persona", "--voice-seed": "voice.seed",
                    "--turn-based": "voice.streaming",
                    "--duplex": "voice.duplex", "--caller": "voice.caller", "--compute": "voice.compute",
                    "--agent": "run.agent", "--first-audio-timeout": "voice.first_audio_timeout_s",
                    "--bot-turn-end": "voice.bot_turn_end_ms", "--turn-detection": "voice.turn_detection"}
"""The config keys of ``call simulate``'s options."""
LOCAL_OPTIONS = {"--max-turns": "run.max_turns", "--name": "run.name", "--tts": "voice.tts", "--agent": "run.agent",
                 "--first-audio-timeout": "voice.first_audio_timeout_s", "--bot-turn-end": "voice.bot_turn_end_ms",
                 "--turn-detection": "voice.turn_detection"}
"""The config keys of ``call local``'s options."""


def _voice_overrides(args: argparse.Namespace, enabled: bool = True) -> dict:
    voice = {"enabled": enabled, "telephone": True if getattr(args, "telephone", False) else None,
             "snr_db": getattr(args, "snr", None), "tts": getattr(args, "tts", None),
             "seed": getattr(args, "voice_seed", None), "line": getattr(args, "line", None),
             "caller": getattr(args, "caller", None), "compute": getattr(args, "compute", None),
             "duplex": True if getattr(args, "duplex", False) else None,
             "first_audio_timeout_s": getattr(args, "first_audio_timeout", None),
             "bot_turn_end_ms": getattr(args, "bot_turn_end", None),
             "turn_detection": getattr(args, "turn_detection", None),
             "streaming": False if getattr(args, "turn_based", False) else None}
    return {"voice": {k: v for k, v in voice.items() if v is not None}}


def cmd_call_simulate(args: argparse.Namespace) -> int:
    """``deskbench call simulate``: a SelfScore batch in which every message is spoken and
    transcribed, then its report. Returns 0, 3 when interactions failed, 130 when interrupted."""
    from harness.compose import Runtime
    from harness.selfscore.batch import arun_selfscore
    from harness.tasks.datasets import load_dataset

    extra = _voice_overrides(args)
    agent = agent_overrides(args)
    if agent:  # a team's own agent, voiced by the harness's STT and TTS (docs/agents.md)
        extra["agent"] = agent
    config = build_config(args, {"dataset": args.dataset, "limit": args.limit, "offset": args.offset,
                                 "max_turns": args.max_turns, "concurrency": args.concurrency,
                                 "name": args.name, "user": args.user, "trials": args.trials,
                                 "persona": args.persona, "agent": args.agent}, extra)
    dataset = load_dataset(config.run.dataset)
    v = config.voice
    console.print(f"[bold]deskbench[/] simulated calls: tts {v.tts}, stt {v.stt_model}, line {v.line or '-'}, telephone "
                  f"{'on' if v.telephone else 'off'}, noise {'off' if v.snr_db is None else f'{v.snr_db} dB SNR'}, "
                  f"{'streamed' if v.streaming else 'turn-based'}"
                  + (f", full duplex (caller {v.caller}, {v.compute} compute)" if v.duplex else "")
                  + (f"; agent under test {config.agent.label(config.run.agent)} ({config.run.agent})"
                     if config.run.agent in TEAM_AGENTS else "")
                  + (f", dialled in real time at {config.agent.url}" if config.run.agent in VOICE_BOT_AGENTS else "")
                  + f"; store [cyan]{config.store}[/]")
    with Runtime(config) as runtime:
        with progress_bar(args.quiet, console) as bar:
            task = bar.add_task("starting (models load on first use)", total=None)
            try:
                run_id, progress = asyncio.run(arun_selfscore(runtime, dataset, None,
                                                              progress_printer(bar, task)))
            except KeyboardInterrupt:
                console.print("[yellow]Interrupted.[/] Every finished turn is stored; resume with "
                              f"`deskbench run --store {config.store} --resume RUN`.")
                return 130
    return finish_report(config, run_id, progress, None, args.out)


def cmd_call_local(args: argparse.Namespace) -> int:
    """``deskbench call local``: a call on this machine's microphone and speakers, stored as a
    one-task run, then its report. Returns 2 with no audio device, 0 on a hang-up before the first
    message, else 0 (3 when the interaction failed)."""
    from harness.voice.devices import NoAudioDevice, require_devices
    try:
        sd = require_devices()
    except NoAudioDevice as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 2
    from harness.cli.local_call import LocalCallRuntime, call_dataset
    from harness.selfscore.batch import arun_selfscore
    from harness.voice.call import build_link
    from harness.voice.local_call import Microphone, first_message
    bot = getattr(args, "agent", None) in VOICE_BOT_AGENTS   # the person calls the team's voice bot
    extra = _voice_overrides(args, enabled=bot)
    if bot:
        extra["agent"] = agent_overrides(args)
    config = build_config(args, {"max_turns": args.max_turns, "name": args.name, "concurrency": 1,
                                 "agent": getattr(args, "agent", None)}, extra)
    mic = Microphone(sd, args.mode)
    link = build_link(config.voice, config.store)
    print("Say what your problem is.")
    first = first_message(mic, link)
    if first is None:
        print("Hung up before the call started; nothing stored.")
        return 0
    samples, question = first
    with LocalCallRuntime(config, mic, samples, sd) as runtime:
        runtime.voice_link = link
        run_id, progress = asyncio.run(arun_selfscore(runtime, call_dataset(question)))
    return finish_report(config, run_id, progress, None, args.out)


def cmd_call_report(args: argparse.Namespace) -> int:
    """``deskbench call report RUN``: print a run's voice and call figures; returns 0, or 1 when
    the run has no voice measures."""
    from harness.study.voice_report import voice_lines
    from store import StoreReader
    config = build_config(args)
    reader = StoreReader(config.store)
    run = reader.run(args.run)
    lines = voice_lines(reader, run["id"])
    if not lines:
        out.print(f"Run {run['id']} has no voice measures (it was not a voice run).")
        return 1
    from harness.study.call_report import call_lines
    lines += call_lines(reader, run["id"])
    print("\n".join(lines).strip())
    return 0


def cmd_voice_check(args: argparse.Namespace) -> int:
    """``deskbench voice check``: speak fixed sentences, transcribe them, print each WER and the
    corpus WER; returns 0 within ``ROUND_TRIP_BOUND``, 1 above it, 2 for a bad line preset."""
    from harness.voice.lines import LineError, resolve
    from harness.voice.roundtrip import SENTENCES, corpus_wer, round_trip
    from harness.voice.stt import Transcriber
    from harness.voice.tts import Speaker

    try:
        line = resolve(args.line, args.telephone, args.snr)
    except LineError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 2
    speaker = Speaker(args.tts)
    rows = round_trip(speaker, Transcriber().load(), SENTENCES, line)
    for r in rows:
        out.print(f"WER {r.errors.wer:.2f}  tts {r.tts_ms:.0f} ms  stt {r.stt_ms:.0f} ms  "
                  f"({r.audio_s:.1f} s audio)\n  said:  {r.text}\n  heard: {r.heard}", highlight=False)
    total = corpus_wer(rows)
    ok = total <= ROUND_TRIP_BOUND
    out.print(f"{speaker.engine} -> whisper-base: {sum(r.errors.errors for r in rows)} word errors in "
              f"{sum(r.errors.reference_words for r in rows)} words (WER {total:.3f}); "
              + ("OK" if ok else f"above the {ROUND_TRIP_BOUND} bound"), highlight=False)
    return 0 if ok else 1


def _channel_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tts", choices=["piper", "espeak-ng"], help="text-to-speech engine")
    p.add_argument("--telephone", action="store_true", help="narrow-band phone line (300-3400 Hz, 8 kHz)")
    p.add_argument("--snr", type=float, metavar="DB", help="add white noise at this signal-to-noise ratio")
    p.add_argument("--line", type=_line_name, metavar="PRESET", help="line preset: clean, telephone, "
                   "telephone-noise (20 dB), packet-loss (10%% of 20 ms frames); --snr sets its noise")


def _bot_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--first-audio-timeout", type=float, metavar="S", help="voice bots: seconds without "
                   "speech after the caller stops before the call ends as bot_timeout")
    p.add_argument("--bot-turn-end", type=float, metavar="MS", help="voice bots: the bot's turn is over "
                   "when its audio has played and it has been quiet this long")
    p.add_argument("--turn-detection", choices=["server_vad", "commit"], help="realtime-ws bots: the bot "
                   "finds the caller's end of speech, or the harness commits and asks for a response")


def _line_name(name: str) -> str:
    """argparse type of ``--line``: a registered preset name, else the error naming them."""
    from harness.voice.lines import LineError, preset
    try:
        return preset(name).name
    except LineError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _caller_name(name: str) -> str:
    """argparse type of ``--caller``: a caller preset name, else the error naming them."""
    from harness.voice.callers import CallerError, caller_preset
    try:
        return caller_preset(name).name
    except CallerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_voice_commands(sub) -> None:
    """Register ``call simulate``, ``call local``, ``call report`` and ``voice check`` on the CLI's
    subparsers."""
    call = sub.add_parser("call", help="voice calls: simulated call-center batches, a local call, "
                          "voice figures of a run").add_subparsers(dest="call_command", required=True)

    p = call.add_parser("simulate", help="a SelfScore batch where every message is spoken and "
                        "transcribed (speech errors propagate)")
    add_config_args(p)
    p.add_argument("--dataset", help="built-in task set name or a JSONL task file")
    # a simulated call batch is small by default: every message is spoken and transcribed
    p.add_argument("--limit", type=int, default=2, help="number of problems")
    p.add_argument("--offset", type=int, help="skip this many tasks first")
    p.add_argument("--max-turns", type=int, default=3, help="turns per call")
    p.add_argument("--concurrency", type=int, help="calls at once")
    p.add_argument("--user", choices=["llm", "scripted"], help="LLM-simulated caller or each task's followups")
    p.add_argument("--agent", choices=["plain", *EXTERNAL_AGENTS, *VOICE_BOT_AGENTS], help="who answers the "
                   "calls: the paper's plain agent" + EXTERNAL_HELP + "; a text agent, spoken and heard through "
                   "the harness's TTS and STT; twilio-ws, realtime-ws: the team's voice bot, dialled over its "
                   "websocket (--agent-url ws://...; docs/voice-bots.md)")
    add_agent_options(p)
    p.add_argument("--name", help="run name")
    add_trial_options(p)
    p.add_argument("--voice-seed", type=int, help="seed of the channel noise (and of the duplex caller)")
    _channel_args(p)
    p.add_argument("--turn-based", action="store_true", help="no streaming: the agent's whole reply, "
                   "then its speech (the pipeline before voice.streaming)")
    p.add_argument("--duplex", action="store_true", help="full-duplex calls on one simulated clock: "
                   "barge-ins, backchannels, a stereo recording per call")
    p.add_argument("--caller", type=_caller_name, metavar="PRESET", help="duplex caller behaviour: "
                   "patient, impatient, interrupting")
    p.add_argument("--compute", choices=["measured", "modelled"], help="duplex clock: measured compute "
                   "times or set per-stage latencies (deterministic)")
    _bot_args(p)
    p.add_argument("--out", help="folder for the report and exports (default next to the store)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    config_options(p, SIMULATE_OPTIONS)
    p.set_defaults(func=cmd_call_simulate)

    p = call.add_parser("local", help="talk to the agent on this machine's microphone and speakers")
    add_config_args(p)
    p.add_argument("--mode", choices=["push", "vad"], default="push",
                   help="push: Enter starts and stops each message; vad: a pause ends it")
    p.add_argument("--max-turns", type=int, default=10, help="turns of the call")
    p.add_argument("--name", help="run name")
    p.add_argument("--tts", choices=["piper", "espeak-ng"], help="text-to-speech engine")
    p.add_argument("--agent", choices=["plain", *VOICE_BOT_AGENTS], help="who answers: the paper's plain agent, "
                   "or the team's voice bot over its websocket (--agent-url ws://...; your recorded messages go "
                   "down its line, its audio is played; docs/voice-bots.md)")
    add_agent_options(p, judges=False)
    _bot_args(p)
    p.add_argument("--out", help="folder for the report and exports")
    config_options(p, LOCAL_OPTIONS)
    p.set_defaults(func=cmd_call_local)

    p = call.add_parser("report", help="voice figures of a run (mean, p50, p95 per measure)")
    add_config_args(p)
    p.add_argument("run", help="run id or name")
    p.set_defaults(func=cmd_call_report)

    voice = sub.add_parser("voice", help="offline speech self-tests").add_subparsers(
        dest="voice_command", required=True)
    p = voice.add_parser("check", help="speak fixed sentences, transcribe them, count word errors")
    _channel_args(p)
    # voice check reads no config: its channel is the flags alone
    stated_default(p, "--snr", "none: no noise")
    stated_default(p, "--line", "none: the --telephone and --snr flags alone")
    p.set_defaults(func=cmd_voice_check, tts="piper")
