"""The live app's domain: live sessions through the turn loop (a person as the user or the agent),
a person as the NoisyToolBench user, streamed speech, studies with pseudonymous participants,
results pages and exports, and the app's composition root (``services``).

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "AppServices": "services",
    "CLOSED": "studies",
    "CLOSED_MESSAGE": "studies",
    "LiveError": "guards",
    "NtbSessionView": "ntb_views",
    "SessionView": "views",
    "StudySpec": "studies",
    "agent_error_message": "team_agent",
    "agent_choices": "sessions",
    "chunk_wav": "speech",
    "reply_spoken": "views",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
