"""The simulated user: the LLM that plays the real asker of a thread (grounded in its hidden
solution and facts, deciding each outcome before it writes), the checks of its drafts, the
distinctive terms of the real fix, its personas and prompts; and the scripted user that replays fixed messages.

The face below names what other packages use (imported on first use, see harness/face.py);
README.md beside this file says what lives here and what it may import.
"""
from harness.face import lazy_face

FACE = {
    "FIX_THRESHOLD": "users",
    "FIX_THRESHOLD_WITHOUT_TERMS": "users",
    "FIX_THRESHOLD_WITH_TERMS": "users",
    "NOT_FIXED_FALLBACK": "users",
    "ScriptedUser": "users",
    "SimulatedUser": "users",
    "outcome_messages": "users",
    "OUTCOME_AGENT_CHARS": "users",
    "OUTCOME_SOLUTION_CHARS": "users",
    "fallback_version": "users",
    "outcome_version": "users",
    "Violation": "checks",
    "FAULTS": "faults",
    "faults_record": "faults",
    "faults_version": "faults",
    "message_faults": "faults",
    "user_checks_version": "checks",
    "contradicts_facts": "checks",
    "rule_violations": "checks",
    "strip_copied_instructions": "checks",
    "PERSONA_NAMES": "personas",
    "Persona": "personas",
    "persona": "personas",
    "read_reply": "checks",
    "asks_only": "fix_terms",
    "distinctive_terms": "fix_terms",
    "shared_fix_terms": "fix_terms",
}
__all__ = sorted(FACE)
__getattr__, __dir__ = lazy_face(__name__, FACE)
