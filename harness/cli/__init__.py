"""The ``deskbench`` command line: ``main`` builds the parser from one module per command group;
the helpers they share live in ``common``.

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "EXTERNAL_HELP": "agent_options",
    "add_agent_options": "agent_options",
    "agent_overrides": "agent_options",
    "add_config_args": "common",
    "build_config": "common",
    "config_options": "defaults",
    "show_defaults": "defaults",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
