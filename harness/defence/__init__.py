"""The manipulation defence: rules that find text addressed to the judge (orders to a rater,
verdict JSON, fake tags, role-play) and neutralise it before it is judged.

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "RULES_VERSION": "manipulation",
    "rules_version": "manipulation",
    "screen": "manipulation",
    "turn_record": "manipulation",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
