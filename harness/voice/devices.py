"""Is there a microphone and are there speakers? (``sounddevice``/PortAudio). Light to
import: the CLI and the app ask before loading any model."""
from __future__ import annotations

BROWSER_HINT = ("Use the browser instead: start the app with `python app.py` and talk through "
                "the browser's microphone (docs/voice.md, \"Browser mode\").")


class NoAudioDevice(RuntimeError):
    """No microphone or speakers (or no PortAudio) on this machine."""


def _sounddevice():
    try:
        import sounddevice
    except OSError as exc:  # "PortAudio library not found"
        raise NoAudioDevice(f"PortAudio is not installed ({exc}); install it with "
                            f"`apt-get install libportaudio2`. {BROWSER_HINT}") from exc
    return sounddevice


def require_devices():
    """The ``sounddevice`` module, once a microphone and speakers are known to exist.

    Raises:
        NoAudioDevice: PortAudio is missing, or it finds no input or no output device.
    """
    sd = _sounddevice()
    devices = list(sd.query_devices())
    inputs = [d for d in devices if d.get("max_input_channels", 0) > 0]
    outputs = [d for d in devices if d.get("max_output_channels", 0) > 0]
    if not inputs or not outputs:
        missing = " and no ".join(x for x, have in (("microphone", inputs), ("speakers", outputs)) if not have)
        raise NoAudioDevice(
            f"No audio device: PortAudio finds no {missing} on this machine "
            f"({len(devices)} device(s) listed by sounddevice.query_devices()), so a local call "
            f"cannot record or play. {BROWSER_HINT}")
    return sd
